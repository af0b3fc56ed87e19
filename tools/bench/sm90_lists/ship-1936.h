/* The sm_90a kernels of both dispatching files in variants/ (2026-11-29 19:36 fp8, 13:25 exact), each V_PATH 5 genome
 * after its V_PATH 4 twin (the bench's check compares them): an A/B of a template switch on what the library runs,
 * e.g. SM90_LIST=tools/bench/sm90_lists/ship-1936.h SM90_AB_FLAGS_B=-DEVO_SM90_SWITCH=1
 * SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh sm90ab sm90bits (the unsigned ring arithmetic of
 * 2026-11-29 was measured on it: docs/data/ustage-ab-h200-2026-11-29T2049.md) */
#define SM90_GENOMES(X) X(64,64,1,128,2,2,0,4,1,0,1,40,0) X(64,64,2,128,2,2,0,4,1,1,0,56,2) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,256,2,2,0,4,1,1,0,56,2) X(64,64,2,256,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,1,128,2,2,0,4,1,0,1,40,0) X(128,64,2,128,2,2,1,4,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,2)
#define SM90_PROBES(X)
