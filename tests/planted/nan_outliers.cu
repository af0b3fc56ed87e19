/* nan_outliers.cu — planted_base.cuh with PLANT_NO_MAX planted.
 * Run: evo check tests/planted/nan_outliers.cu --config tests/data/planted.yaml */
#define PLANT_NO_MAX
#include "planted_base.cuh"
