/* timing_cheat.cu — planted_base.cuh with PLANT_TIMING_CHEAT planted.
 * Run: evo check tests/planted/timing_cheat.cu --config tests/data/planted.yaml */
#define PLANT_TIMING_CHEAT
#include "planted_base.cuh"
