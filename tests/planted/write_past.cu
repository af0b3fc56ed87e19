/* write_past.cu — planted_base.cuh with PLANT_WRITE_PAST planted.
 * Run: evo check tests/planted/write_past.cu --config tests/data/planted.yaml */
#define PLANT_WRITE_PAST
#include "planted_base.cuh"
