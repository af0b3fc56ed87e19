/* The attention kernel of a two-kernel call (V_PATH 3: K and V to FP16 first; V_PATH 5: Vᵀ first) started while the
 * first kernel runs (`SM90AB_TAG=pdl SM90_AB_FLAGS_B=-DEVO_SM90_PDL=1 SM90_LIST=tools/bench/sm90_lists/pdl.h
 * SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh sm90ab`): the exact file's entries and the fp8
 * file's V_PATH 5 winner at both head dims, after its V_PATH 4 twin */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2)
#define SM90_PROBES(X)
