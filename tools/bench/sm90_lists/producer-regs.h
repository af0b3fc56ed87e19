/* A TMA-only producer (V_PATH 5, e4m3 scores) with 24 or 32 registers instead of 56: the consumers get 240 or 232
 * (attn_sm90_check's producer rule, docs/templates.md); the 192-key genomes of the fp8 file's large-problem entries
 * beside the same with fewer producer registers (tools/gpu_ci.sh sm90list; not yet run on a GPU) */
#define SM90_GENOMES(X) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,32,2) X(128,64,2,192,2,2,0,5,1,1,0,24,1) X(128,64,2,128,2,2,0,5,1,1,0,32,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,32,2) X(64,64,2,192,2,2,0,5,1,1,0,24,1) X(64,64,3,128,2,2,0,5,1,0,0,24,0) X(64,64,3,128,2,2,0,5,1,0,0,32,2)
#define SM90_PROBES(X)
