/* PINGPONG 2 (docs/perf-notes.md, "The vendor kernel's schedule"): no Q·Kᵀ ahead of P·V (OVERLAP 0), the two
 * consumer warpgroups' softmaxes taking turns one way (named barrier 6), 256-key tiles, beside the fp8 dispatching
 * file's entries (V_PATH 4 twin before each V_PATH 5 genome, for the bench's check) and OVERLAP 1 at 256 keys
 * (head dim 64 only: at 128 it spills) */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,1,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,0,1,1,1,0,56,2) X(64,64,2,192,4,2,0,4,1,1,0,56,2) X(64,64,2,192,4,2,0,5,1,1,0,56,2) X(64,64,2,256,2,2,0,4,1,1,0,56,2) X(64,64,2,256,2,2,0,5,1,1,0,56,2) X(64,64,2,256,2,2,0,4,0,2,0,56,2) X(64,64,2,256,2,2,0,5,0,2,0,56,2) X(64,64,2,256,2,2,1,4,0,2,0,56,2) X(64,64,2,256,2,2,1,4,0,2,0,56,1) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,256,2,2,0,4,0,2,0,56,2) X(128,64,2,256,2,2,0,5,0,2,0,56,2) X(128,64,1,128,2,2,1,4,1,0,0,56,1)
#define SM90_PROBES(X)
