/* The A/B of the softmax's order for V_PATH 4 and 5 (the key pairs of both row halves in turn, now the template's only
 * form; docs/perf-notes.md, "The vendor kernel beside ours", docs/data/exp-order-ab-h200-2026-11-29T1758.log): the
 * large problems' fp8 genomes and the 2048-key presets' */
#define SM90_GENOMES(X) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,256,2,2,0,5,1,1,0,56,2) X(64,64,2,192,2,2,0,4,1,1,0,56,2)
#define SM90_PROBES(X)
