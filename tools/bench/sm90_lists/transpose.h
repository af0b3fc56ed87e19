/* The V transpose of the producer's transform warps with its addresses from lane bases, immediates and one XOR a
 * step (transpose_v_steps): the fp8 library's V_PATH 4 entries at head dim 64 (stress, long, small; 128- and
 * 192-key tiles, one and two consumers, PERSIST 0/1/2), the head-dim-128 V_PATH 4 twin of the large-problem
 * entry, a V_PATH 0 genome; A/B against the template before it
 * (SM90_AB_TEMPLATE=scratch/ab/attention_fp8_sm90.cu SM90_LIST=tools/bench/sm90_lists/transpose.h
 * SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh sm90ab sm90bits); also the list for the transform
 * warps' other switches (their suspend-time hint: docs/data/hint-ab-h200-2026-11-29T2055.md) */
#define SM90_GENOMES(X) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,1,128,2,2,1,4,1,0,0,56,0) X(64,64,2,128,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,128,2,2,0,0,1,1,0,56,1)
#define SM90_PROBES(X)
