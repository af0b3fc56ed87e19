/* causal_mask.cu — planted_base.cuh with PLANT_CAUSAL_OFF_BY_ONE planted.
 * Run: evo check tests/planted/causal_mask.cu --config tests/data/planted.yaml */
#define PLANT_CAUSAL_OFF_BY_ONE
#include "planted_base.cuh"
