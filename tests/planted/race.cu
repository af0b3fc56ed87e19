/* race.cu — planted_base.cuh with PLANT_RACE planted.
 * Run: evo check tests/planted/race.cu --config tests/data/planted.yaml */
#define PLANT_RACE
#include "planted_base.cuh"
