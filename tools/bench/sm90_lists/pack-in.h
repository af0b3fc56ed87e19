/* P̃'s fragment packed inside the softmax's exponentials (EVO_SM90_PACK_IN of commit ebe2d28; measured 5-14 % slower,
 * docs/data/pack-in-ab-h200-2026-11-29T2137.md, and removed): the two-consumer V_PATH 4 genomes at head dim 64 whose
 * second fragment fits (128-key tiles; 192 keys spill 8 bytes with it)
 * (SM90AB_TAG=packin SM90_LIST=tools/bench/sm90_lists/pack-in.h SM90_AB_FLAGS_B=-DEVO_SM90_PACK_IN=1
 * SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh sm90ab sm90bits) */
#define SM90_GENOMES(X) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,4,1,1,0,56,2)
#define SM90_PROBES(X)
