/* The persistent grid's causal order: the fp8 and exact files' causal entries (and their 192-key twins at head dim
 * 64), timed causal only (`--causal-only`), built once with the template as it is and once with the template before
 * the snake order (every wave walked forwards) to compare; the outputs' bits do not depend on the order */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,0,1,1,0,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,2,3,1,1,0,56,1) X(128,64,2,128,2,2,2,3,1,1,0,56,1)
#define SM90_PROBES(X)
