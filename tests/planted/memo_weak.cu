/* memo_weak.cu — planted_base.cuh with PLANT_MEMO_WEAK planted: outputs cached across launches, keyed on the
 * per-head scales and the parameters only, so inputs that changed but kept their scales get a stale output.
 * Expected: INCORRECT at the output of a timed launch. Run: evo check tests/planted/memo_weak.cu
 * --config tests/data/planted.yaml */
#define PLANT_MEMO_WEAK
#include "planted_base.cuh"
