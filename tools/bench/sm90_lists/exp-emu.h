/* the softmax's exponentials partly on the FMA pipe (build with -DEVO_SM90_EXP_EMU=0..3, docs/perf-notes.md): the fp8
 * class's large-problem shapes, V_PATH 4 and 5 and the FP16-P·V winner (tools/gpu_ci.sh sm90list; a V_PATH 5
 * genome after its V_PATH 4 twin, which its bits are checked against) */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,0,4,1,1,0,56,2) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(128,64,2,128,2,2,0,1,1,0,0,56,2) X(64,64,2,128,4,2,0,4,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,0,1,1,0,0,56,2)
#define SM90_PROBES(X)
