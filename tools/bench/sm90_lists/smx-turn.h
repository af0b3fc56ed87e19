/* The two consumer warpgroups taking turns at the softmax once their GEMMs are done (`SM90AB_TAG=smxt
 * SM90_AB_FLAGS_B=-DEVO_SM90_SMX_TURN=1 SM90_LIST=tools/bench/sm90_lists/smx-turn.h SM90_TIME_ARGS="--time
 * --no-baseline --reps 20" tools/gpu_ci.sh sm90ab sm90bits`): the shipped ping-pong genomes of both head dims — fp8
 * 192-key V_PATH 4/5 with PERSIST 2, the long entry (QK_MODE 1, V_PATH 4, PERSIST 1), the exact genome — each V_PATH
 * 5 genome after its V_PATH 4 twin */
#define SM90_GENOMES(X) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,2) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,1,4,1,1,0,56,1) X(64,64,2,128,2,2,2,3,1,1,0,56,2)
#define SM90_PROBES(X)
