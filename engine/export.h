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
 * The file is self-contained: templates/evo_attention_abi.h and the task's template inlined verbatim (the
 * template's #include of the ABI header becomes a comment), explicit instantiations of the variants (one per head
 * dim of the config's shapes), the variant table, then templates/export_harness.cu (launcher and self-test).
 * Only the attention_fp8 task is exportable: the launcher is its ABI.
 *
 * Ownership: evo_export_src and evo_export_out own their contents; free with the matching _free (zeroed records
 * are fine). Thread-safety: none of their own; the store handle is used by one thread at a time.
 */
#ifndef EVO_EXPORT_H
#define EVO_EXPORT_H

#include "evo.h"
#include "store.h"

#include <stddef.h>

typedef struct {
    evo_candidate_rec cand;
    evo_eval_rec eval; /* its best OK evaluation (what `evo elite` shows for it) */
    evo_run_rec run;   /* the run that made eval */
    char note[512];    /* "" or why better-ranked elites were passed over (hand-written files) */
} evo_export_src;

/* id NULL: the top elite of the latest run's task, arch and shape set, passing over `evo check` files (note says
 * which). Else a candidate id or key prefix as evo_store_get_candidate takes it. Errors: EVO_E_NOTFOUND (no run,
 * no elite, unknown id, no passing evaluation: the message gives its latest verdict), EVO_E_USAGE (ambiguous
 * prefix, a hand-written file, an evaluation made outside a run), store errors. */
evo_status evo_export_pick(evo_store *st, const char *id, evo_export_src *out, evo_err *err);
void evo_export_src_free(evo_export_src *s);

typedef struct {
    char *text;        /* the .cu file, NUL-terminated */
    char warning[512]; /* "" or a caveat worth showing (the compile key recomputed here differs) */
} evo_export_out;

/* exported_at: the date written into the header (ISO 8601); NULL: now. Errors: EVO_E_DB (the run stored no config
 * text, or its genome does not fit it), EVO_E_CONFIG (the stored config no longer parses), EVO_E_NOTFOUND (the
 * template changed since the candidate was measured), EVO_E_USAGE (a task export does not know). */
evo_status evo_export_render(const evo_export_src *src, const char *exported_at, evo_export_out *out, evo_err *err);
void evo_export_out_free(evo_export_out *o);

/* "<task>-<arch>-<first 8 hex of the key>.cu" */
void evo_export_default_name(const evo_export_src *src, char *buf, size_t n);

#endif
