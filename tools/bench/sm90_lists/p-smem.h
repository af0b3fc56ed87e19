/* PROBE 64 (P·V's A operand, P̃, from shared memory: timing only, wrong results) beside the same genomes as shipped and
 * with PROBE 32 (no row-sum GEMMs, which PROBE 64 leaves out too): does the tensor cores' reading of P̃ from the
 * consumer warps' registers slow the softmax running beside it? (tools/gpu_ci.sh sm90list, --big-only) */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,2)
#define SM90_PROBES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2,32) X(128,64,2,128,2,2,0,5,1,1,0,56,2,64) X(64,64,2,128,4,2,0,5,1,1,0,56,2,32) X(64,64,2,128,4,2,0,5,1,1,0,56,2,64)
