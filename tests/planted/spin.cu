/* spin.cu — planted_base.cuh with PLANT_SPIN planted.
 * Run: evo check tests/planted/spin.cu --config tests/data/planted.yaml */
#define PLANT_SPIN
#include "planted_base.cuh"
