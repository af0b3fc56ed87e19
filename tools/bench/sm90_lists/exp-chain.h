/* EVO_SM90_EXP_CHAIN A/B (docs/perf-notes.md, "The vendor kernel beside ours"): the large problems' fp8 genomes, the
 * 192-key one at head dim 128 and the 256-key one at 64 */
#define SM90_GENOMES(X) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,256,2,2,0,5,1,1,0,56,2)
#define SM90_PROBES(X)
