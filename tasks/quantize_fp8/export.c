/* export.c — the quantize_fp8 task's standalone .cu (evo_task.export_body, see engine/report/export.h): a header with
 * the launcher's signature and the provenance, evo_quantize_abi.h and the template inlined, the genome's knobs and the
 * explicit instantiations of its kernels for every problem class a user may call it with (head dims 64 and 128 and
 * the config's, fp16 and bf16, rotated or not: the self-test checks each bit for bit), the timed shapes, then
 * tasks/quantize_fp8/quantize_export_harness.cu (launcher and self-test). */
#include "quantize.h"

#include "export.h"
#include "templates.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ABI_HEADER "evo_quantize_abi.h"
#define HARNESS "quantize_export_harness.cu"

static const char *const kernel_of_role[] = {"evo_quant_rotate", "evo_quant_absmax", "evo_quant"};

/* The main variant's knobs (every variant of a program carries the genome's). */
/* The genome's knobs as its kernels carry them. A variant without rotation carries FUSED_ROT canonically as 1, so
 * FUSED_ROT comes from a rotating variant, else from the genome's text (a config without rotated shapes renders
 * none, and the export still instantiates the rotated classes). */
static evo_quant_knobs genome_knobs(const evo_program *prog, const char *genome)
{
    evo_quant_knobs k = evo_qz_knobs_of(&prog->variants[0]);
    bool rotating = false;
    for (int i = prog->n_variants - 1; i >= 0; i--)
        if (prog->variants[i].attr[QZ_V_ROLE] == EVO_QUANT_K_MAIN) {
            k = evo_qz_knobs_of(&prog->variants[i]);
            if ((rotating = prog->variants[i].attr[QZ_V_ROTATE] != 0)) break;
        }
    const char *f = strstr(genome, "FUSED_ROT=");
    if (!rotating && f && (f == genome || f[-1] == ',')) k.fused_rot = atoi(f + strlen("FUSED_ROT="));
    return k;
}

static void append_header(evo_str *o, const evo_export_ctx *x)
{
    const evo_candidate_rec *c = &x->src->cand;
    const char *f = x->file_name;
    evo_str_appendf(
        o,
        "/* %s — an FP8 quantizer found by evo, specialised to one genome.\n"
        " * fp16/bf16 X [B, H, S, D] -> e4m3 codes + one float scale per (batch, head), optionally rotated\n"
        " * first (incoherent processing); the rule of evo_quantize_abi.h, bit for bit. Standalone: plain nvcc\n"
        " * builds it, without evo, its templates folder or -I.\n"
        " *\n"
        " *   nvcc -arch=%s -O3 -c %s                                   the launcher, to link\n"
        " *   nvcc -arch=%s -O3 -shared -Xcompiler -fPIC %s -o libevo_quant.so    for ctypes\n"
        " *   nvcc -arch=%s -O3 -DEVO_SELFTEST %s -o selftest && ./selftest     check and time\n"
        " *\n"
        " * Launcher (extern \"C\"; the contracts are in the launcher section below):\n"
        " *   unsigned long long evo_quantize_scratch_bytes(int in_dtype, int rotate, int batch, int heads,\n"
        " *                                                 int seq, int head_dim);\n"
        " *   int evo_quantize_forward(const void *x, int in_dtype, int rotate, void *codes, float *scales,\n"
        " *                            int batch, int heads, int seq, int head_dim, void *scratch,\n"
        " *                            unsigned long long scratch_bytes, cudaStream_t stream);\n"
        " *   const char *evo_quantize_genome(void);\n"
        " *\n"
        " * Provenance\n",
        f, c->arch, f, c->arch, f, c->arch, f);
    evo_export_provenance_begin(o, x);
    evo_str_appendf(o, " *   task          %s, arch %s\n", c->task, c->arch);
    evo_export_provenance_end(o, x,
                              "codes and scales against the reference quantizer, bit for bit (rel-L2: the fraction of "
                              "codes that differ)");
    evo_str_append(o, " */\n");
}

#define QZ_MAX_ENTRIES 16 /* genomes in one file */

/* One genome of the file: its candidate, the program rendered from it and the config of its run. */
typedef struct {
    const evo_candidate_rec *cand;
    const evo_program *prog;
    const evo_config *cfg;
} qz_entry;

/* The head dims a file serves: 64, 128 and every one of the entries' configs. */
static int file_dims(const qz_entry *e, int n, int *dims)
{
    int nd = 2;
    dims[0] = 64, dims[1] = 128;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < e[k].cfg->n_shapes + e[k].cfg->correctness.n_shapes; i++) {
            const evo_config *cfg = e[k].cfg;
            const evo_shape *s = i < cfg->n_shapes ? &cfg->shapes[i] : &cfg->correctness.shapes[i - cfg->n_shapes];
            int seen = 0;
            for (int j = 0; j < nd; j++) seen |= dims[j] == (int)s->v[QZ_DIM];
            if (!seen && nd < 8) dims[nd++] = (int)s->v[QZ_DIM];
        }
    return nd;
}

/* The entries' knobs, kernels and variant rows (one row per entry and (head dim, dtype, rotate) class the genome
 * can build; each kernel instantiated once), the dispatch table (n_buckets rows of rotate, size class, entry; none:
 * every call runs entry 0), then under EVO_SELFTEST the timed shapes with evo's medians. n: 1 to QZ_MAX_ENTRIES. */
static void append_entries(evo_str *o, const qz_entry *e, int n, const char *genome, const char *key, const char *arch,
                           const long long (*buckets)[3], int n_buckets, const evo_shape *const *timed,
                           const double *timed_us, int n_timed, long long run_id)
{
    evo_str_append(o, "\n/* ==== the genomes (written by evo export) ==== */\n#define EVO_EXPORT_GENOME ");
    evo_export_append_cstring(o, genome);
    evo_str_append(o, "\n#define EVO_EXPORT_KEY ");
    evo_export_append_cstring(o, key);
    evo_str_append(o, "\n#define EVO_EXPORT_ARCH ");
    evo_export_append_cstring(o, arch);
    evo_str_appendf(o, "\n#define EVO_EXPORT_ENTRIES %d\n\n", n);
    evo_quant_knobs k[QZ_MAX_ENTRIES];
    for (int i = 0; i < n; i++) k[i] = genome_knobs(e[i].prog, e[i].cand->genome);
    int dims[8];
    const int nd = file_dims(e, n, dims);
    const int arch_n = atoi(arch + 3); /* "sm_90" -> 90 */
    evo_str rows = {0}, seen = {0};
    evo_str_append(&seen, "\n");
    for (int i = 0; i < n; i++)
        for (int di = 0; di < nd; di++)
            for (int bf = 0; bf < 2; bf++)
                for (int rot = 0; rot < 2; rot++) {
                    evo_quant_knobs kk = k[i];
                    if (!rot) kk.fused_rot = 1; /* canonical: FUSED_ROT means nothing without a rotation */
                    char why[160];
                    if (evo_quant_check(&kk, dims[di], rot, arch_n, why, sizeof why) != 0) continue;
                    char args[160];
                    snprintf(args, sizeof args, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", dims[di], bf, rot, kk.vec,
                             kk.warps, kk.mode, kk.cluster, kk.keep, kk.unroll, kk.iters, kk.cvt, kk.cache,
                             kk.fused_rot);
                    const int roles[3] = {EVO_QUANT_K_MAIN, kk.mode == EVO_QUANT_MODE_SPLIT ? EVO_QUANT_K_ABSMAX : -1,
                                          rot && !kk.fused_rot ? EVO_QUANT_K_ROTATE : -1};
                    char names[3][200];
                    for (int r = 0; r < 3; r++) {
                        snprintf(names[r], sizeof names[r], "NULL");
                        if (roles[r] < 0) continue;
                        snprintf(names[r], sizeof names[r], "%s<%s>", kernel_of_role[roles[r]], args);
                        char line[640];
                        snprintf(line, sizeof line, "\n%s\n", names[r]);
                        if (strstr(evo_str_cstr(&seen), line)) continue; /* two genomes may share a kernel */
                        evo_str_append(&seen, line + 1);
                        evo_str_appendf(o, "template __global__ void %s(const evo_quant_params);\n", names[r]);
                    }
                    evo_str_appendf(&rows, "    {%d, %d, %d, %s, %s, %s, %d},\n", dims[di], bf, rot, names[0], names[1],
                                    names[2], i);
                }
    evo_str_free(&seen);
    evo_str_append(
        o,
        "\nnamespace evo_export {\n\n"
        "/* vec, warps, mode, cluster, keep, unroll, iters, cvt, cache, fused_rot, slack; the genome and its key */\n"
        "struct qentry {\n"
        "    evo_quant_knobs knobs;\n"
        "    const char *genome, *key;\n"
        "};\n"
        "static const qentry entries[] = {\n");
    for (int i = 0; i < n; i++) {
        evo_str_appendf(o, "    {{%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d}, ", k[i].vec, k[i].warps, k[i].mode,
                        k[i].cluster, k[i].keep, k[i].unroll, k[i].iters, k[i].cvt, k[i].cache, k[i].fused_rot,
                        k[i].slack);
        evo_export_append_cstring(o, e[i].cand->genome);
        evo_str_append(o, ", ");
        evo_export_append_cstring(o, e[i].cand->key);
        evo_str_append(o, "},\n");
    }
    evo_str_append(o, "};\n\n"
                      "struct qvariant {\n"
                      "    int head_dim, in_dtype, rotate;\n"
                      "    void (*main)(const evo_quant_params);\n"
                      "    void (*absmax)(const evo_quant_params);   /* mode split; NULL otherwise */\n"
                      "    void (*rotate_k)(const evo_quant_params); /* rotate with fused_rot = 0; NULL otherwise */\n"
                      "    int entry;                                /* the genome: an index of entries */\n"
                      "};\n"
                      "static const qvariant variants[] = {\n");
    evo_str_append(o, evo_str_cstr(&rows));
    evo_str_free(&rows);
    evo_str_append(o, "};\n\n"
                      "/* Dispatch: a call runs the entry of the bucket with its rotation and the nearest size class\n"
                      " * (evo_quant_size_class of all its elements; ties: the smaller class), else of the nearest\n"
                      " * bucket of the other rotation; with no bucket, entry 0. */\n"
                      "struct qbucket {\n"
                      "    int rotate, size_class, entry;\n"
                      "};\n"
                      "static const qbucket buckets[] = {\n");
    for (int b = 0; b < n_buckets; b++)
        evo_str_appendf(o, "    {%lld, %lld, %lld},\n", buckets[b][0], buckets[b][1], buckets[b][2]);
    if (n_buckets == 0) evo_str_append(o, "    {0, 0, 0}, /* unused */\n");
    evo_str_appendf(o,
                    "};\n"
                    "static const int n_buckets = %d;\n\n"
                    "#ifdef EVO_SELFTEST\n"
                    "/* The timed shapes of run %lld's config, with the median evo measured (µs) for the entry that\n"
                    " * serves them. */\n"
                    "struct qshape {\n"
                    "    const char *name;\n"
                    "    int batch, heads, seq, head_dim, in_dtype, rotate;\n"
                    "    double evo_median_us;\n"
                    "};\n"
                    "static const qshape timed_shapes[] = {\n",
                    n_buckets, run_id);
    for (int i = 0; i < n_timed; i++) {
        const evo_shape *s = timed[i];
        evo_str_append(o, "    {");
        evo_export_append_cstring(o, s->name);
        evo_str_appendf(o, ", %lld, %lld, %lld, %lld, %lld, %lld, %.2f},\n", s->v[QZ_BATCH], s->v[QZ_HEADS],
                        s->v[QZ_SEQ], s->v[QZ_DIM], s->v[QZ_DTYPE], s->v[QZ_ROTATE],
                        isfinite(timed_us[i]) ? timed_us[i] : 0.0);
    }
    const evo_config *cfg = e[0].cfg;
    evo_str_appendf(o,
                    "};\n"
                    "static const int timing_warmup = %d, timing_repetitions = %d, timing_flush_l2 = %d;\n"
                    "#endif\n\n"
                    "} // namespace evo_export\n",
                    cfg->timing.warmup, cfg->timing.repetitions < 30 ? 30 : cfg->timing.repetitions,
                    cfg->timing.flush_l2 ? 1 : 0);
}

/* One genome: entry 0 alone, no dispatch table. */
static void append_genome_section(evo_str *o, const evo_export_ctx *x)
{
    const evo_candidate_rec *c = &x->src->cand;
    const evo_config *cfg = x->cfg;
    const qz_entry e = {c, x->prog, cfg};
    const evo_shape *timed[EVO_MAX_SHAPES]; /* a config holds at most EVO_MAX_SHAPES timed shapes */
    double us[EVO_MAX_SHAPES];
    for (int i = 0; i < cfg->n_shapes; i++) {
        const evo_shape_result *r = evo_export_result_for(&x->src->eval, &cfg->shapes[i]);
        timed[i] = &cfg->shapes[i];
        us[i] = r && isfinite(r->median_us) ? r->median_us : 0.0;
    }
    append_entries(o, &e, 1, c->genome, c->key, c->arch, NULL, 0, timed, us, cfg->n_shapes, (long long)x->src->run.id);
}

evo_status evo_qz_export_body(const evo_export_ctx *x, evo_str *o, evo_err *err)
{
    return evo_export_assemble(x, ABI_HEADER, HARNESS, "quantizer", append_header, append_genome_section, o, err);
}

/* ---- a dispatching quantizer (`evo export --dispatch`): every bucket's winner in one file ---- */

static void append_dispatch_header(evo_str *o, const evo_export_dispatch_ctx *d)
{
    const char *f = d->file_name, *arch = d->entries[0].src.cand.arch;
    evo_str_appendf(
        o,
        "/* %s — FP8 quantizers found by evo: the winner of every bucket of problems, one launcher that\n"
        " * picks among them. fp16/bf16 X [B, H, S, D] -> e4m3 codes + one float scale per (batch, head), optionally\n"
        " * rotated first (incoherent processing); the rule of evo_quantize_abi.h, bit for bit, whichever genome runs.\n"
        " * Standalone: plain nvcc builds it, without evo, its templates folder or -I.\n"
        " *\n"
        " *   nvcc -arch=%s -O3 -c %s                                   the launcher, to link\n"
        " *   nvcc -arch=%s -O3 -shared -Xcompiler -fPIC %s -o libevo_quant.so    for ctypes\n"
        " *   nvcc -arch=%s -O3 -DEVO_SELFTEST %s -o selftest && ./selftest     check and time\n"
        " *\n"
        " * Launcher: as in every exported quantizer (evo_quantize_forward, evo_quantize_forward_multi,\n"
        " * evo_quantize_scratch_bytes, evo_quantize_scratch_zero_bytes, evo_quantize_genome), plus\n"
        " *   int evo_quantize_dispatch(int in_dtype, int rotate, int batch, int heads, int seq, int head_dim);\n"
        " * the entry a call runs (-1: none can), and evo_quantize_entries(), evo_quantize_entry_genome(entry).\n"
        " *\n"
        " * Dispatch: a call is in bucket (rotated or not, size class: 2^(k-1)+1 .. 2^k of all the elements it\n"
        " * quantizes, k >= %d) and runs its bucket's winner; a call in no bucket runs the bucket of its rotation with\n"
        " * the nearest size class (ties: the smaller), or with none of its rotation the nearest of the other. Scratch\n"
        " * sizes follow the entry, so evo_quantize_scratch_bytes answers for the call as it will run.\n"
        " *\n",
        f, arch, f, arch, f, arch, f, EVO_QUANT_SIZE_CLASS_MIN);
    evo_export_dispatch_buckets_intro(o, d);
    evo_str_appendf(o, " *   %-36s %5s %-8s %9s %10s  %s\n", "bucket", "entry", "key", "speedup", "median µs",
                    "shapes; GPU");
    for (int b = 0; b < d->n_buckets; b++) {
        const evo_export_bucket_row *r = &d->buckets[b];
        evo_str_appendf(o, " *   %-36s %5d %-8.8s %8.3fx %10.2f  %s; %s\n", r->bucket.label, r->entry,
                        d->entries[r->entry].src.cand.key, r->speedup, r->median_us, r->shapes, r->gpu);
    }
    evo_str_append(o, " *\n * Entries\n");
    for (int i = 0; i < d->n_entries; i++) {
        const evo_export_entry *e = &d->entries[i];
        evo_str_appendf(o, " *   entry %d: candidate %lld, key %s\n", i, (long long)e->src.cand.id, e->src.cand.key);
        evo_str_appendf(o, " *     genome      %s\n", e->src.cand.genome);
        evo_str_appendf(o, " *     measured    run %lld on %s, %s\n", (long long)e->src.run.id,
                        e->src.eval.gpu ? e->src.eval.gpu : "?", e->src.eval.created_at ? e->src.eval.created_at : "?");
        evo_str_appendf(o, " *     compile key %s\n", e->key_check);
    }
    evo_str_appendf(o,
                    " *\n * Exported %s by evo %s. Errors (self-test): codes and scales against the reference\n"
                    " * quantizer, bit for bit.\n */\n",
                    d->exported_at ? d->exported_at : "?", EVO_VERSION);
}

evo_status evo_qz_export_dispatch_body(const evo_export_dispatch_ctx *d, evo_str *o, evo_err *err)
{
    if (d->n_entries < 1 || d->n_entries > QZ_MAX_ENTRIES)
        return evo_fail(err, EVO_E_USAGE, "export --dispatch: %d winners; a quantizer file holds 1 to %d", d->n_entries,
                        QZ_MAX_ENTRIES);
    const char *abi = NULL, *harness = NULL;
    evo_status s = evo_template_get(ABI_HEADER, &abi, NULL, err);
    if (s == EVO_OK) s = evo_template_get(HARNESS, &harness, NULL, err);
    if (s != EVO_OK) return s;
    append_dispatch_header(o, d);
    evo_str_appendf(o, "\n#include <cuda_runtime.h>\n\n/* ==== %s, verbatim ==== */\n", ABI_HEADER);
    evo_str_append(o, abi);
    /* one template text: every entry was measured with it (its SHA-256 was checked) */
    evo_str_appendf(o, "\n/* ==== %s, verbatim but for its #include of the header above ==== */\n",
                    d->entries[0].prog.program_name[0] ? d->entries[0].prog.program_name : "quantize_fp8.cu");
    evo_export_append_template(o, d->entries[0].prog.source, ABI_HEADER);
    qz_entry e[QZ_MAX_ENTRIES];
    evo_str genome = {0};
    evo_str_appendf(&genome, "dispatch of %d:", d->n_entries);
    for (int i = 0; i < d->n_entries; i++) {
        e[i] = (qz_entry){&d->entries[i].src.cand, &d->entries[i].prog, d->entries[i].cfg};
        evo_str_appendf(&genome, "%s %s", i ? " |" : "", d->entries[i].src.cand.genome);
    }
    long long(*rows)[3] = calloc((size_t)(d->n_buckets ? d->n_buckets : 1), sizeof *rows);
    const evo_shape **timed = calloc((size_t)(d->n_timed ? d->n_timed : 1), sizeof *timed);
    double *us = calloc((size_t)(d->n_timed ? d->n_timed : 1), sizeof *us);
    if (!rows || !timed || !us) {
        free(rows), free(timed), free(us), evo_str_free(&genome);
        return evo_fail(err, EVO_E_NOMEM, "export --dispatch: out of memory");
    }
    for (int b = 0; b < d->n_buckets; b++)
        rows[b][0] = d->buckets[b].bucket.key[0], rows[b][1] = d->buckets[b].bucket.key[1],
        rows[b][2] = d->buckets[b].entry;
    for (int i = 0; i < d->n_timed; i++) timed[i] = &d->timed[i].shape, us[i] = d->timed[i].median_us;
    append_entries(o, e, d->n_entries, evo_str_cstr(&genome), "dispatch", d->entries[0].src.cand.arch,
                   (const long long(*)[3])rows, d->n_buckets, timed, us, d->n_timed, (long long)d->scope.id);
    free(rows), free(timed), free(us), evo_str_free(&genome);
    evo_str_appendf(o, "\n/* ==== launcher and self-test, the same in every exported quantizer (%s) ==== */\n",
                    HARNESS);
    evo_export_append_inlined(o, harness);
    return EVO_OK;
}
