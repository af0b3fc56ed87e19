/* good_fp8.cu — planted_base.cuh with PLANT_P_E4M3 and no fault: P rounded to e4m3 as an fp8-class kernel does;
 * passes `--accuracy fp8`, fails the exact class.
 * Run: evo check tests/planted/good_fp8.cu --config tests/data/planted.yaml --accuracy fp8 */
#ifndef PLANT_P_E4M3
#define PLANT_P_E4M3
#endif
#include "planted_base.cuh"
