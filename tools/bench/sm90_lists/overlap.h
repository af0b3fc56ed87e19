/* the softmax beside P·V (docs/perf-notes.md, "The softmax waited for P·V"): the fp8 dispatching file's sm_90a entries
 * and the large problems' V_PATH 4/5 pairs, built from the template before and after (tools/gpu_ci.sh sm90list) */
#define SM90_GENOMES(X) X(128,64,2,128,4,2,0,4,1,1,0,56,2) X(128,64,2,128,4,2,0,5,1,1,0,56,2) X(128,64,2,128,2,2,0,4,1,1,0,56,2) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(128,64,2,128,2,2,0,1,1,0,0,56,2) X(64,64,2,128,4,2,0,4,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,0,1,1,0,0,56,1) X(64,64,1,128,4,2,0,4,1,0,0,56,0)
#define SM90_PROBES(X)
