/* P·V and the row sums of V_PATH 4 in one wgmma (kernels with O_ACC; measured as the build switch EVO_SM90_PV_FUSED of
 * 2026-11-29, docs/data/pv-fused-ab-h200-2026-11-29T2104.md, then made the template's form): the fp8 library's small entry
 * (one consumer, O_ACC) at both head dims, two-consumer O_ACC genomes with 128- and 192-key tiles, and their O_ACC 0
 * twins (which the switch leaves alone: the same process's reference)
 * (SM90AB_TAG=fused SM90_LIST=tools/bench/sm90_lists/pv-fused.h SM90_AB_FLAGS_B=-DEVO_SM90_PV_FUSED=1
 * SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh sm90ab sm90bits) */
#define SM90_GENOMES(X) X(64,64,1,128,2,2,0,4,1,0,1,40,0) X(128,64,1,128,2,2,0,4,1,0,1,40,0) X(64,64,2,128,2,2,0,4,1,1,1,56,2) X(64,64,2,192,2,2,0,4,1,1,1,56,2) X(64,64,2,128,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,4,1,1,0,56,2)
#define SM90_PROBES(X)
