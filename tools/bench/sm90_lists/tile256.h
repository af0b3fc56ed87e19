/* 256-key tiles at head dim 64 (OVERLAP 1, ping-pong: two consumers, 24 free registers), beside the fp8 dispatching
 * file's entries (V_PATH 4 twin before each V_PATH 5 genome, for the bench's check); measured 2026-11-29 17:31 with
 * PINGPONG 2 genomes too (docs/data/pp2-256-h200-2026-11-29T1731.log; PINGPONG 2 is in the history, 9d37fa7) */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,1,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,0,1,1,1,0,56,2) X(64,64,2,192,4,2,0,4,1,1,0,56,2) X(64,64,2,192,4,2,0,5,1,1,0,56,2) X(64,64,2,256,2,2,0,4,1,1,0,56,2) X(64,64,2,256,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2)
#define SM90_PROBES(X)
