/* Q·Kᵀ(j+1) issued before the softmax of tile j, into a second score buffer (`SM90AB_TAG=look
 * SM90_AB_FLAGS_B=-DEVO_SM90_LOOKAHEAD=1 SM90_LIST=tools/bench/sm90_lists/lookahead.h SM90_TIME_ARGS="--time
 * --no-baseline --reps 30" tools/gpu_ci.sh sm90ab sm90bits`): head-dim-64 genomes of both files' kind whose two
 * score buffers fit (128-key tiles: the 192-key ones spill with it) — fp8: the long entry (QK_MODE 1, V_PATH 4,
 * PERSIST 1), V_PATH 4 and 5 with PERSIST 2; exact: QK_MODE 2, V_PATH 3, PERSIST 2 — each V_PATH 5 genome after its
 * V_PATH 4 twin */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,1,4,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,0,4,1,1,0,56,2) X(64,64,2,128,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,2)
#define SM90_PROBES(X)
