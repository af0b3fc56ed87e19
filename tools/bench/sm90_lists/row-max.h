/* What the row maxima cost: the fp8 class's large-problem genomes beside PROBE 16 (no FMNMX trees, no shuffles, every
 * offset 0; results wrong by design); tools/gpu_ci.sh sm90list, and ncu's pipe use of one launch of each
 * (docs/perf-notes.md, "The row maxima: ...") */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,3,128,2,2,0,5,1,0,0,56,0)
#define SM90_PROBES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2,16) X(64,64,2,128,4,2,0,5,1,1,0,56,2,16) X(64,64,3,128,2,2,0,5,1,0,0,56,0,16)
