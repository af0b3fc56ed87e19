/* The sm_90a kernels of both shipped dispatching files (variants/attention_fp8-sm_90-dispatch{,-fp8}.cu, 13:25) and
 * the V_PATH 4 twins the bench's check compares each V_PATH 5 genome with (listed before it): an A/B of a template
 * revision on what the library runs (`SM90_AB_TEMPLATE=scratch/prev/attention_fp8_sm90.cu
 * SM90_LIST=tools/bench/sm90_lists/ship.h SM90_TIME_ARGS="--time --no-baseline --reps 30" tools/gpu_ci.sh sm90ab`) */
#define SM90_GENOMES(X) X(64,64,1,128,2,2,0,4,1,0,1,56,0) X(64,64,2,128,2,2,0,1,1,0,0,56,1) X(64,64,2,128,2,2,0,1,1,1,0,56,1) X(64,64,2,128,2,2,0,4,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,3,128,4,2,0,4,1,0,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(128,64,1,128,2,2,0,4,1,0,1,56,0) X(128,64,2,192,2,2,0,4,1,1,0,56,1) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,128,2,2,2,3,1,1,0,56,1) X(128,64,2,128,2,2,2,3,1,1,0,56,2)
#define SM90_PROBES(X)
