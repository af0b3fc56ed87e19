/* ignore_scale.cu — planted_base.cuh with PLANT_IGNORE_SCALE planted: always 1/sqrt(head_dim), whatever
 * softmax_scale the caller passes. Expected: INCORRECT on a case with another scale (correctness.softmax_scales).
 * Run: evo check tests/planted/ignore_scale.cu --config tests/data/planted.yaml */
#define PLANT_IGNORE_SCALE
#include "planted_base.cuh"
