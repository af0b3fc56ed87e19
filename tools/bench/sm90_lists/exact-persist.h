/* The exact class's large-problem genomes (FP16 scores, K and V converted to FP16 every call: QK_MODE 2, V_PATH 3)
 * with the persistent orders, which attn_sm90_check refused until 2026-11-29 ("PERSIST with QK_MODE 2 spills", no
 * longer so for V_PATH 3: docs/data/nvrtc-qk2-persist-2026-11-29.log), beside PERSIST 0, and a 192-key tile at head
 * dim 64 (tools/gpu_ci.sh sm90list; sm90_bench times the conversion with the kernel; not yet run on a GPU) */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,2,3,1,1,0,56,0) X(128,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,1) X(64,64,2,128,2,2,2,3,1,1,0,56,0) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,1) X(64,64,3,64,2,2,2,3,1,0,0,56,0) X(64,64,3,64,2,2,2,3,1,0,0,56,2) X(64,64,2,192,2,2,2,3,1,1,0,56,0)
#define SM90_PROBES(X)
