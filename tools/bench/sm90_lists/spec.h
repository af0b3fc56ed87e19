/* FP16 P's exponentials against the offsets as they stand, beside the row maxima (`SM90AB_TAG=spec
 * SM90_AB_FLAGS_B=-DEVO_SM90_SPEC=1 SM90_LIST=tools/bench/sm90_lists/spec.h SM90_TIME_ARGS="--time --no-baseline
 * --reps 30" tools/gpu_ci.sh sm90ab`): the exact file's sm_90a entry at both head dims with the persistent order and
 * without, and the fp8 file's one-consumer FP16-P·V entry (V_PATH 1) */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,0) X(64,64,1,128,2,2,0,1,1,0,0,56,1)
#define SM90_PROBES(X)
