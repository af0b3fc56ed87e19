/* Two Q buffers for the persistent grids (Sm90Cfg::QB): the fp8 file's entries and the exact file's persistent one at
 * head dim 64 (at 128 its FP16 copies do not fit twice), every shape, built once with one Q buffer (each item's Q,
 * and the K tiles behind it, loaded only after the previous item's Q was released) and once with two
 * (`tools/gpu_ci.sh sm90ab`; docs/data/q-ring-ab-h200-2026-11-29T1258.log, where B had two for e4m3 Q as well: the
 * rule `QK_MODE != 1` in Sm90Cfg::QB; the template keeps two for FP16 Q alone) */
#define SM90_GENOMES(X) X(64,64,2,128,2,2,0,1,1,1,0,56,1) X(64,64,2,128,4,2,0,4,1,1,0,56,1) X(64,64,2,192,2,2,0,4,1,1,0,56,2) X(64,64,2,192,2,2,0,5,1,1,0,56,2) X(128,64,2,192,2,2,0,4,1,1,0,56,2) X(128,64,2,192,2,2,0,5,1,1,0,56,2) X(64,64,2,128,2,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,0,1,1,0,0,56,1) X(64,64,3,128,4,2,0,4,1,0,0,56,1) X(128,64,2,192,2,2,0,4,1,1,0,56,1) X(64,64,2,128,2,2,2,3,1,1,0,56,2)
#define SM90_PROBES(X)
