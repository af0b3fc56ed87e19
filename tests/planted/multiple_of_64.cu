/* multiple_of_64.cu — planted_base.cuh with PLANT_MULTIPLE_OF_64 planted.
 * Run: evo check tests/planted/multiple_of_64.cu --config tests/data/planted.yaml */
#define PLANT_MULTIPLE_OF_64
#include "planted_base.cuh"
