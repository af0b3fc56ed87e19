/* What V_PATH 4 and 5's row-sum GEMMs (four QGMMA 64x8x32 a tile beside P·V) cost: the fp8 class's large-problem
 * genomes beside PROBE 32 (no row-sum GEMMs) and 48 (neither those nor the row maxima), results wrong by design; and
 * 192-key tiles at head dim 128 (tools/gpu_ci.sh sm90list; docs/perf-notes.md) */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,0) X(128,64,2,192,3,2,0,5,1,1,0,56,0) X(128,64,2,128,2,2,0,5,1,1,0,56,0) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,3,128,2,2,0,5,1,0,0,56,0)
#define SM90_PROBES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2,32) X(128,64,2,128,2,2,0,5,1,1,0,56,2,48) X(64,64,2,128,4,2,0,5,1,1,0,56,2,32) X(64,64,3,128,2,2,0,5,1,0,0,56,0,32) X(64,64,3,128,2,2,0,5,1,0,0,56,0,48)
