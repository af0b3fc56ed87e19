/* head_v_scale.cu — planted_base.cuh with PLANT_HEAD_V_SCALE: head 5 (of at least 6) with a V scale 10 % off.
 * Run: evo check tests/planted/head_v_scale.cu --config tests/data/planted.yaml [--accuracy fp8] */
#define PLANT_HEAD_V_SCALE
#include "planted_base.cuh"
