/* p_scale_twice.cu — planted_base.cuh with PLANT_P_SCALE_TWICE: P's e4m3 scale (2^8) applied twice (an fp8-class kernel).
 * Run: evo check tests/planted/p_scale_twice.cu --config tests/data/planted.yaml [--accuracy fp8] */
#define PLANT_P_SCALE_TWICE
#include "planted_base.cuh"
