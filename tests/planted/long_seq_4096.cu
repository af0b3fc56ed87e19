/* long_seq_4096.cu — planted_base.cuh with PLANT_LONG_SEQ_4096: keys past 4096 dropped.
 * Run: evo check tests/planted/long_seq_4096.cu --config tests/data/planted.yaml [--accuracy fp8] */
#define PLANT_LONG_SEQ_4096
#include "planted_base.cuh"
