/* What a work item's start and end cost (`TRACE_ITEMS=4,8,2048,64,0 TRACE_LIST=tools/bench/sm90_lists/trace-items.h
 * tools/gpu_ci.sh trace`): the fp8 file's long and stress entries, the large problems' 192-key winner and the exact
 * file's persistent entry, at head dim 64 */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,0,1,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,2)
#define SM90_PROBES(X)
