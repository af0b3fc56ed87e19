/* EVO_SM90_RESCALE_ALWAYS A/B and the row-sum work's bound (docs/perf-notes.md, "The vendor kernel beside ours"): the
 * large problems' fp8 genomes (192 keys at head dim 128, 256 at 64), each beside PROBE 32 (no row-sum GEMMs; with
 * -DEVO_SM90_NO_TINY=1 also no FP16 term: no row-sum work at all), results wrong by design */
#define SM90_GENOMES(X) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,256,2,2,0,5,1,1,0,56,2)
#define SM90_PROBES(X) X(128,64,2,192,2,2,0,5,1,1,0,56,2,32) X(64,64,2,256,2,2,0,5,1,1,0,56,2,32)
