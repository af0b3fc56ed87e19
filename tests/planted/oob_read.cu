/* oob_read.cu — planted_base.cuh with PLANT_OOB_READ planted.
 * Run: evo check tests/planted/oob_read.cu --config tests/data/planted.yaml */
#define PLANT_OOB_READ
#include "planted_base.cuh"
