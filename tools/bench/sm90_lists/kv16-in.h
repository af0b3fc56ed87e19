/* The exact class's K and V converted inside the attention kernel (build switch EVO_SM90_KV16_IN, a measurement):
 * the shipped exact entry (QK_MODE 2, V_PATH 3, PERSIST 2) at both head dims, whose non-causal problems then run
 * without evo_kv16_convert, beside its PERSIST 1 twin (unchanged by the switch: a control).
 * SM90_LIST=tools/bench/sm90_lists/kv16-in.h SM90_AB_FLAGS_B=-DEVO_SM90_KV16_IN=1 tools/gpu_ci.sh sm90ab sm90bits */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,1)
#define SM90_PROBES(X)
