/* trap.cu — planted_base.cuh with PLANT_TRAP planted.
 * Run: evo check tests/planted/trap.cu --config tests/data/planted.yaml */
#define PLANT_TRAP
#include "planted_base.cuh"
