/* The offset-keeping softmax experiment's list (EVO_SM90_KEEP_OFFSET 1-3, SLACK, PSHIFT: build switches measured on
 * 2026-11-29 and removed from the template, docs/data/keep-offset-h200-2026-11-29T0935.log; docs/perf-notes.md, "The
 * row maxima"): the fp8 class's large-problem genomes with their V_PATH 4 twins, three consumers at both head dims */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,0,4,1,1,0,56,2) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(128,64,2,128,4,2,1,5,1,1,0,56,2) X(128,64,3,64,2,2,0,4,1,0,0,56,0) X(128,64,3,64,2,2,0,5,1,0,0,56,0) X(128,64,3,64,4,2,0,5,1,0,0,56,0) X(64,64,2,128,4,2,0,4,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,0) X(64,64,3,128,2,2,0,5,1,0,0,56,0) X(64,64,2,128,2,2,0,4,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,1)
#define SM90_PROBES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2,16) X(64,64,2,128,4,2,0,5,1,1,0,56,2,16) X(64,64,3,128,2,2,0,5,1,0,0,56,0,16)
