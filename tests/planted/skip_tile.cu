/* skip_tile.cu — planted_base.cuh with PLANT_SKIP_TILE planted.
 * Run: evo check tests/planted/skip_tile.cu --config tests/data/planted.yaml */
#define PLANT_SKIP_TILE
#include "planted_base.cuh"
