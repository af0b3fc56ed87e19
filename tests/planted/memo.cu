/* memo.cu — planted_base.cuh with PLANT_MEMO planted: outputs cached across launches, keyed on the content of the
 * inputs (not their pointers), with a fast copy path. Its outputs are always right; with inputs that repeat, its
 * timing shows the copy, not the work. Expected: OK or REGRESSED, timed at its true cost (within 10 % of good.cu).
 * Run: evo check tests/planted/memo.cu tests/planted/good.cu --config tests/data/planted.yaml */
#define PLANT_MEMO
#include "planted_base.cuh"
