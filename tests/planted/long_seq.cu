/* long_seq.cu — planted_base.cuh with PLANT_LONG_SEQ planted: keys past the 2048th are ignored, so it is right on
 * every sequence up to 2048 (the longest timed one) and wrong beyond. Expected: INCORRECT on the S = 4097 case.
 * Run: evo check tests/planted/long_seq.cu --config tests/data/planted.yaml */
#define PLANT_LONG_SEQ
#include "planted_base.cuh"
