/* The tiles run on across work items (consumer_ws with OVERLAP: the last P·V of an item and the first Q·Kᵀ of the
 * next in one turn) with two Q buffers for e4m3 Q too, against the template before (one turn each, two Q buffers for
 * FP16 Q alone): the fp8 file's entries, the exact file's persistent entry at head dim 64, a QK_MODE 1 genome and a
 * non-persistent one (one item a block: unchanged but for the code's shape), each V_PATH 5 genome after its V_PATH 4
 * twin (the check compares their bits); every shape (`tools/gpu_ci.sh sm90ab`) */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,0,1,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,0,1,1,0,0,56,1) X(64,64,3,128,4,2,0,4,1,0,0,56,1) X(128,64,2,192,2,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,2,3,1,1,0,56,2) X(64,64,2,128,2,2,1,1,1,1,1,56,1) X(128,64,2,128,2,2,0,4,1,1,0,56,0) X(128,64,2,128,2,2,0,5,1,1,0,56,0)
#define SM90_PROBES(X)
