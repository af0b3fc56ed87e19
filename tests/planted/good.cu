/* good.cu — planted_base.cuh as is: the correct kernel every planted one departs from.
 * Run: evo check tests/planted/good.cu --config tests/data/planted.yaml */
#include "planted_base.cuh"
