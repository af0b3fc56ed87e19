/* clock traces of the consumer warpgroups (tools/gpu_ci.sh trace: sm90_bench --trace, a -DEVO_SM90_TRACE=1 build;
 * docs/perf-notes.md, "What each warpgroup waits for"): the fp8 class's large-problem genomes, one-consumer genomes
 * (a softmax with no other beside it), a 192-key tile and three consumers at head dim 64 */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(128,64,1,128,2,2,0,5,1,0,0,56,0) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,1,128,4,2,0,5,1,0,0,56,0) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,3,128,2,2,0,5,1,0,0,56,0)
#define SM90_PROBES(X)
