/* Each consumer warp's output rows staged in shared memory and stored 16 bytes a lane (`SM90_AB_FLAGS_B=-DEVO_SM90_O_SMEM=1
 * SM90_LIST=tools/bench/sm90_lists/o-smem.h SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh sm90ab`):
 * the fp8 file's persistent entries at head dim 64 and the 192-key winner at both (the staging rows fit beside
 * them: 18.4 KB at 64, 34.8 KB at 128), each V_PATH 5 genome after its V_PATH 4 twin */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,0,1,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,2)
#define SM90_PROBES(X)
