/* Three consumer warpgroups against the shipped two-consumer entries (`SM90_LIST=tools/bench/sm90_lists/consumers3-wide.h
 * SM90_ARGS... tools/gpu_ci.sh sm90list`): at head dim 128 with 64-key tiles (whose accumulators fit three warpgroups'
 * registers), at head dim 64 with 128- and 64-key tiles, V_PATH 5, the persistent orders; beside the 192-key
 * two-consumer winners of both head dims. Three softmaxes side by side per scheduler instead of two. */
#define SM90_GENOMES(X) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,3,64,2,2,0,5,1,0,0,56,2) X(128,64,3,64,4,2,0,5,1,0,0,56,2) X(128,64,3,64,2,2,0,5,1,0,0,56,1) X(128,64,3,64,2,2,1,5,1,0,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,3,128,2,2,0,5,1,0,0,56,2) X(64,64,3,128,4,2,0,5,1,0,0,56,2) X(64,64,3,64,2,2,0,5,1,0,0,56,2) X(64,64,3,128,2,2,0,5,1,0,0,56,1)
#define SM90_PROBES(X)
