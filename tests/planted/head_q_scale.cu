/* head_q_scale.cu — planted_base.cuh with PLANT_HEAD_Q_SCALE: head 5 (of at least 6) with a Q scale 10 % off.
 * Run: evo check tests/planted/head_q_scale.cu --config tests/data/planted.yaml [--accuracy fp8] */
#define PLANT_HEAD_Q_SCALE
#include "planted_base.cuh"
