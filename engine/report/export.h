/* export.h — one stored candidate becomes a standalone .cu file: the kernel specialised to its genome, an extern "C"
 * launcher, a provenance header and a self-test under -DEVO_SELFTEST (docs/usage.md, "Exporting a kernel").
 *
 * Call order: evo_export_pick (which candidate, with the evaluation and the run that measured it), then
 * evo_export_render (the file's text), then write it where the caller likes; evo_export_default_name gives
 * <task>-<arch>-<shortid>.cu. Nothing here writes to the store or to disk.
 *
 * The genome is rendered with the config of the run that measured it (runs.config_text), so the exported kernel is
 * the one that was timed: the template must be the same text (its SHA-256 is compared with the candidate's) and the
 * render must give the same compile key, or the export says why not. Only candidates with an OK evaluation in a
 * run are exported; `evo check` files (genome "file:NAME") are hand-written and standalone already.
 *
 * The file's text is the task's (evo_task.export_body): attention writes a provenance header, its ABI header and
 * template inlined verbatim, explicit instantiations of the variants, the variant table, then its launcher and
 * self-test. The helpers below give every task the same provenance block and template inlining.
 *
 * Ownership: evo_export_src and evo_export_out own their contents; free with the matching _free (zeroed records
 * are fine). Thread-safety: none of their own; the store handle is used by one thread at a time.
 */
#ifndef EVO_EXPORT_H
#define EVO_EXPORT_H

#include "evo.h"
#include "config.h"
#include "store.h"
#include "task.h"
#include "util.h"

#include <stddef.h>

typedef struct {
    evo_candidate_rec cand;
    evo_eval_rec eval; /* its best OK evaluation (what `evo elite` shows for it) */
    evo_run_rec run;   /* the run that made eval */
    char note[512];    /* "" or why better-ranked elites were passed over (hand-written files) */
    const char *taken; /* how id was read ("row id", "key prefix", "full key"); NULL for the top elite */
} evo_export_src;

/* id NULL: the top elite of accuracy class `accuracy` (NULL: exact) of the latest run's task, arch and shape set,
 * passing over `evo check` files (note says which). Else the candidate id names, read as `how` says
 * (evo_store_find_candidate; its class is its own). Errors: EVO_E_NOTFOUND (no run, no elite — naming the classes
 * that have some —, unknown id, no passing evaluation: the message gives its latest verdict), EVO_E_USAGE
 * (ambiguous prefix or id, a hand-written file, an evaluation made outside a run), store errors. */
evo_status evo_export_pick(evo_store *st, const char *id, evo_cand_ref how, const char *accuracy, evo_export_src *out,
                           evo_err *err);
void evo_export_src_free(evo_export_src *s);

typedef struct {
    char *text;         /* the .cu file, NUL-terminated */
    char warning[512];  /* "" or a caveat worth showing (the compile key recomputed here differs) */
    char nvcc_arch[64]; /* how nvcc must target the file: "-arch=sm_90", "-gencode=arch=compute_90a,code=sm_90a" */
    char genome[1024];  /* the genome as the file names it: the run's space's text (an older text's inactive knobs
                           dropped, space.h) */
} evo_export_out;

/* nvcc's target option for arch: -arch=sm_NN, or for an arch-specific target (sm_90a) the -gencode form, which
 * alone keeps nvcc from also building a compute_90 PTX the arch-specific instructions do not assemble for. */
void evo_export_nvcc_arch(const char *arch, char *buf, size_t n);

/* The quoted value of `#define NAME "value"` at the start of a line of an exported file's text (EVO_EXPORT_ARCH,
 * EVO_EXPORT_GENOME, ...), into out (n bytes); false when there is none or it does not fit. */
bool evo_export_define(const char *text, const char *name, char *out, size_t n);

/* exported_at: the date written into the header (ISO 8601); NULL: now. Errors: EVO_E_DB (the run stored no config
 * text, or its genome does not fit it), EVO_E_CONFIG (the stored config no longer parses), EVO_E_NOTFOUND (the
 * template changed since the candidate was measured), EVO_E_USAGE (a task export does not know). */
evo_status evo_export_render(const evo_export_src *src, const char *exported_at, evo_export_out *out, evo_err *err);
void evo_export_out_free(evo_export_out *o);

/* What a task's export_body gets: the candidate with its evaluation and run, the config of that run, the rendered
 * program, the NVRTC options as one line, what the compile-key check found, the export date and the file name. */
typedef struct evo_export_ctx {
    const evo_export_src *src;
    const evo_config *cfg;
    const evo_program *prog;
    const char *options;
    const char *key_check;
    const char *exported_at;
    const char *file_name;
} evo_export_ctx;

/* Provenance lines of the file's top comment, for a task's export_body: begin writes genome and key; end writes
 * template, compiler, key check, where and when it was measured, config, export, fitness, the per-shape table,
 * what the errors are measured against (errors_are) and the tolerances. */
void evo_export_provenance_begin(evo_str *o, const evo_export_ctx *x);
void evo_export_provenance_end(evo_str *o, const evo_export_ctx *x, const char *errors_are);
/* The template text with its `#include "header"` line turned into a comment (the header is inlined above it). */
void evo_export_append_template(evo_str *o, const char *text, const char *header);
/* The usual body of a standalone file, in this order: top comment (header, the task's), `#include <cuda_runtime.h>`,
 * the ABI header abi verbatim, the program with its #include of abi inlined, the genome's section (the task's),
 * then the harness (launcher and self-test, "the same in every exported <what>"). abi and harness are names in the
 * embedded template tree. */
evo_status evo_export_assemble(const evo_export_ctx *x, const char *abi, const char *harness, const char *what,
                               void (*header)(evo_str *o, const evo_export_ctx *x),
                               void (*genome)(evo_str *o, const evo_export_ctx *x), evo_str *o, evo_err *err);
/* text, each line `#include "NAME"` of an embedded file (templates.h) replaced by that file's text (a harness may
 * share code with evo and the file stays standalone). */
void evo_export_append_inlined(evo_str *o, const char *text);
/* s as a C string literal. */
void evo_export_append_cstring(evo_str *o, const char *s);
/* The stored result of shape sh in e (matched by its text), NULL when none. */
const evo_shape_result *evo_export_result_for(const evo_eval_rec *e, const evo_shape *sh);

/* "<task>-<arch>-<first 8 hex of the key>.cu" */
void evo_export_default_name(const evo_export_src *src, char *buf, size_t n);

/* ---- a dispatching export (`evo export --dispatch`): the winner of every bucket in one file ----
 *
 * evo_export_dispatch_pick reads the per-shape elites (store.h, evo_store_shape_elites) of the latest run's task and
 * arch in one accuracy class and every stricter one (a task's classes run strictest first, and a looser class
 * admits the kernels of a stricter one), on the GPU model of that run (when the store holds several), groups the timed shapes
 * into the task's buckets (task->bucket) and picks each bucket's winner: among the searched candidates measured on
 * every shape of the bucket, the one with the least total median time over them (one shape: its fastest; ties: the
 * smaller key). Each distinct winner becomes an entry, rendered with the config of the run that measured it and
 * checked as a single export is (render_checked). evo_export_dispatch_render then hands the whole table to the task's
 * export_dispatch_body. Ownership: the context owns everything in it; free with evo_export_dispatch_free. */
typedef struct {
    evo_export_src src;  /* the winner, the evaluation of its winning result, the run that made it */
    evo_config *cfg;     /* that run's config */
    evo_program prog;    /* the genome rendered with it (accuracy set on every variant) */
    char options[1024];  /* the NVRTC options, as one line */
    char key_check[160]; /* what the compile-key check found */
} evo_export_entry;

typedef struct {
    evo_bucket bucket;
    evo_shape shape;  /* the bucket's first timed shape (by name): its fields stand for the bucket */
    char shapes[256]; /* every timed shape of the bucket, by name, comma-separated */
    int entry;        /* the winner: an index of entries */
    double median_us; /* the winner's total median over the bucket's shapes, µs */
    double speedup;   /* ... and its speedup on them (baseline total / its total) */
    char gpu[128];    /* the GPU of the winning result on the first shape */
} evo_export_bucket_row;

typedef struct {
    evo_shape shape;
    double median_us; /* the bucket winner's median on it */
    int bucket;       /* an index of buckets */
} evo_export_timed;

typedef struct evo_export_dispatch_ctx {
    evo_export_entry *entries;
    int n_entries;
    evo_export_bucket_row *buckets; /* sorted by bucket key */
    int n_buckets;
    evo_export_timed *timed; /* every timed shape of every bucket, bucket order */
    int n_timed;
    evo_run_rec scope; /* the latest run of the task: its config gives tolerances and timing settings */
    evo_config *cfg;
    char accuracy[32];
    char model[128];                     /* the GPU model the times are of ("" when the store holds one) */
    const char *exported_at, *file_name; /* set by evo_export_dispatch_render */
} evo_export_dispatch_ctx;

/* Errors: EVO_E_NOTFOUND (no run, no per-shape elite of the class), EVO_E_USAGE (the task has no buckets or no
 * dispatching export), and those of evo_export_render. */
evo_status evo_export_dispatch_pick(evo_store *st, const char *accuracy, evo_export_dispatch_ctx *out, evo_err *err);
/* The file's text; out->nvcc_arch is sm_90a's when any entry is compiled for it. */
evo_status evo_export_dispatch_render(evo_export_dispatch_ctx *d, const char *exported_at, evo_export_out *out,
                                      evo_err *err);
void evo_export_dispatch_free(evo_export_dispatch_ctx *d);
/* One entry's genome rendered with the config of its run (e->cfg, e->prog, e->options, e->key_check), checked as
 * evo_export_render checks a single one; a compile-key caveat goes to warning. */
evo_status evo_export_entry_render(evo_export_entry *e, char *warning, size_t warning_len, evo_err *err);
/* The lines of a dispatching file's top comment that say where its buckets come from (the store's per-shape elites,
 * the class, the GPU model) and how each winner was chosen. */
void evo_export_dispatch_buckets_intro(evo_str *o, const evo_export_dispatch_ctx *d);
/* "<task>-<arch>-dispatch.cu" for the exact class, "<task>-<arch>-dispatch-<class>.cu" for another */
void evo_export_dispatch_default_name(const evo_export_dispatch_ctx *d, char *buf, size_t n);

#endif
