/* The next work item's head, tile and scales loaded an item early (`SM90_AB_FLAGS_B=-DEVO_SM90_ITEM_AHEAD=1
 * SM90_LIST=tools/bench/sm90_lists/item-ahead.h SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh
 * sm90ab`): the persistent entries of both dispatching files at both head dims, each V_PATH 5 genome after its
 * V_PATH 4 twin (the check compares their bits) */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,0,1,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,3,128,4,2,0,4,1,0,0,56,1) X(128,64,2,192,2,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,1)
#define SM90_PROBES(X)
