/* causal_leak.cu — planted_base.cuh with PLANT_CAUSAL_LEAK: the causal mask off by one the other way: key i+1 leaks into row i.
 * Run: evo check tests/planted/causal_leak.cu --config tests/data/planted.yaml [--accuracy fp8] */
#define PLANT_CAUSAL_LEAK
#include "planted_base.cuh"
