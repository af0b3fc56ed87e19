/* Genomes the register rule admits since PERSIST needs 32 free registers with V_PATH 4 and 5 (not 48): 192-key tiles
 * and three consumers with the persistent orders, beside the shipped V_PATH 5 entries (tools/gpu_ci.sh sm90list;
 * docs/perf-notes.md, "192-key tiles with the persistent order") */
#define SM90_GENOMES(X) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,1) X(128,64,2,192,4,2,0,5,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,192,3,2,0,5,1,1,0,56,2) X(64,64,2,192,4,2,0,5,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,1) X(64,64,3,128,2,2,0,5,1,0,0,56,0) X(64,64,3,128,2,2,0,5,1,0,0,56,2) X(64,64,3,128,2,2,0,5,1,0,0,56,1) X(64,64,3,128,3,2,0,5,1,0,0,56,2)
#define SM90_PROBES(X)
