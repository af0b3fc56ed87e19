/* task.h — a kernel family evo can search, as one table of functions (adding a task = one file + one entry in
 * evo_tasks). The first and only task today is "attention_fp8" (task_attention.c).
 *
 * Host side (no GPU): which knobs the template takes, how a genome becomes a program (source + one NVRTC name
 * expression per kernel variant the shapes need), which genomes cannot work on a device (checked before
 * compiling), how to launch a variant on a shape, and how many FLOPs a shape costs.
 * GPU side (worker process only): see worker.h; it reaches the task through the same table.
 *
 * All functions are pure with respect to their arguments and thread-safe.
 */
#ifndef EVO_TASK_H
#define EVO_TASK_H

#include "config.h"
#include "evo.h"
#include "space.h"

#include <stdbool.h>

/* Limits of the target device; from the driver in the worker, or a table per arch for `evo compile`. */
typedef struct {
    char arch[16];          /* "sm_90" */
    int sm_major, sm_minor;
    int max_threads_per_block;
    int max_smem_per_block_optin; /* bytes, after cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) */
    int max_regs_per_thread;
    int max_regs_per_block;
    int sm_count;
    int l2_bytes;
} evo_device_limits;

/* Known limits of an architecture when no device is present ("sm_80", "sm_89", "sm_90"). */
evo_status evo_device_limits_for_arch(const char *arch, evo_device_limits *out, evo_err *err);

/* One kernel of a rendered program: the variant serving one head dimension. */
typedef struct {
    int head_dim;
    evo_format format;
    char name_expr[512]; /* NVRTC name expression, or the extern "C" name for hand-written kernels */
    int threads, rows_per_block, smem_bytes; /* launch geometry: grid (ceil(S/rows), H, B) */
    int min_waves; /* 0: the variant for every problem of its head dim; w > 0: preferred when its grid has at least
                      w x (the GPU's SM count) blocks, counting half for causal problems (the large-problem form of
                      a genome; evo_variant_pick) */
} evo_variant;

#define EVO_MAX_VARIANTS 4
#define EVO_KNOB_REQUIRED (-2147483647 - 1)

/* The variant for a problem of head dim d: among those serving d, the one with the largest min_waves whose grid
 * (ceil(S/rows) x H x B blocks; half of that for a causal problem, whose work is half) reaches min_waves x sm_count;
 * -1 when none serves d. */
int evo_variant_pick(const evo_variant *v, int n, int head_dim, int batch, int heads, int seq, int causal,
                     int sm_count);

typedef struct {
    char *source;      /* complete program text (owned) */
    char program_name[64];
    evo_variant variants[EVO_MAX_VARIANTS];
    int n_variants;
} evo_program;

void evo_program_free(evo_program *p);

/* The values a knob can take in its template (its parameter block and static_asserts): lo..hi in steps of step, or,
 * when set is not NULL, exactly the n_set values of set. Config loading refuses any other value with file:line and
 * key, so a genome the template cannot instantiate never enters a space. */
typedef struct {
    int lo, hi, step;
    const int *set;
    int n_set;
} evo_knob_legal;

bool evo_knob_legal_has(const evo_knob_legal *l, int v);
/* "1..4", "16..256 in steps of 16", "0, 128, 256" (NUL-terminated, cut to n). */
void evo_knob_legal_format(const evo_knob_legal *l, char *buf, size_t n);

typedef struct evo_task {
    const char *name;          /* "attention_fp8"                                        */
    const char *template_file; /* file in templates/                                     */
    const char *const *knobs;  /* knob names the template takes, NULL-terminated; a config declares these (in
                                  any order) and no others                                */
    const int *knob_defaults;  /* per knob: the value a config that leaves the knob out gets (a one-value
                                  domain), or EVO_KNOB_REQUIRED                          */
    const evo_knob_legal *knob_legal; /* per knob: the values the template takes (NULL: any integer) */
    /* Before compiling: EVO_V_OK, EVO_V_INVALID (the template cannot be instantiated so), or EVO_V_RESOURCE_FAIL
     * (threads or shared memory over lim); *why says which rule or limit. */
    evo_verdict (*can_implement)(const evo_config *cfg, const evo_genome *g, const evo_device_limits *lim, char *why,
                                 size_t why_len);
    /* Render the program for genome g: one variant per head dimension used by the config's shapes. */
    evo_status (*render)(const evo_config *cfg, const evo_genome *g, evo_program *out, evo_err *err);
    /* Floating-point operations of one forward pass on shape s (causal counts the unmasked half). */
    double (*flops)(const evo_shape *s);
} evo_task;

/* NULL when unknown. */
const evo_task *evo_task_find(const char *name);
extern const evo_task *const evo_tasks[]; /* NULL-terminated */

#endif
