/* Three consumer warpgroups at head dim 64 (192-row blocks, TILE_N 128, PERSIST 0; persist-192.h has them with the
 * persistent orders) beside the shipped two-consumer V_PATH 5 genomes (tools/gpu_ci.sh sm90list) */
#define SM90_GENOMES(X) X(64,64,2,128,4,2,0,5,1,1,0,56,2) X(64,64,2,128,4,2,0,5,1,1,0,56,0) X(64,64,3,128,2,2,0,5,1,0,0,56,0) X(64,64,3,128,4,2,0,5,1,0,0,56,0) X(64,64,3,128,3,2,0,5,0,0,0,56,0) X(64,64,3,128,2,2,0,5,1,0,0,40,0) X(64,64,3,64,3,2,0,5,1,0,0,56,0) X(128,64,2,128,2,2,0,5,1,1,0,56,2) X(128,64,2,128,2,2,0,5,1,0,0,56,0)
#define SM90_PROBES(X)
