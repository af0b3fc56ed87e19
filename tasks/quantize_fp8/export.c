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

/* Instantiations and the variant table: for (head dim, dtype, rotate) the plan's kernels. */
static void append_genome_section(evo_str *o, const evo_export_ctx *x)
{
    const evo_candidate_rec *c = &x->src->cand;
    const evo_config *cfg = x->cfg;
    const evo_quant_knobs k = genome_knobs(x->prog, c->genome);
    evo_str_append(o, "\n/* ==== this genome (written by evo export) ==== */\n#define EVO_EXPORT_GENOME ");
    evo_export_append_cstring(o, c->genome);
    evo_str_append(o, "\n#define EVO_EXPORT_KEY ");
    evo_export_append_cstring(o, c->key);
    evo_str_append(o, "\n#define EVO_EXPORT_ARCH ");
    evo_export_append_cstring(o, c->arch);
    evo_str_appendf(o,
                    "\n\n/* vec, warps, mode, cluster, keep, unroll, iters, cvt, cache, fused_rot, slack */\n"
                    "static const evo_quant_knobs evo_export_knobs = {%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d};\n\n",
                    k.vec, k.warps, k.mode, k.cluster, k.keep, k.unroll, k.iters, k.cvt, k.cache, k.fused_rot, k.slack);
    int dims[8] = {64, 128}, nd = 2;
    for (int i = 0; i < cfg->n_shapes + cfg->correctness.n_shapes; i++) {
        const evo_shape *s = i < cfg->n_shapes ? &cfg->shapes[i] : &cfg->correctness.shapes[i - cfg->n_shapes];
        int seen = 0;
        for (int j = 0; j < nd; j++) seen |= dims[j] == (int)s->v[QZ_DIM];
        if (!seen && nd < 8) dims[nd++] = (int)s->v[QZ_DIM];
    }
    const int arch = atoi(c->arch + 3); /* "sm_90" -> 90 */
    evo_str rows = {0};
    for (int di = 0; di < nd; di++)
        for (int bf = 0; bf < 2; bf++)
            for (int rot = 0; rot < 2; rot++) {
                evo_quant_knobs kk = k;
                if (!rot) kk.fused_rot = 1; /* canonical: FUSED_ROT means nothing without a rotation */
                char why[160];
                if (evo_quant_check(&kk, dims[di], rot, arch, why, sizeof why) != 0) continue;
                char args[160];
                snprintf(args, sizeof args, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", dims[di], bf, rot, kk.vec,
                         kk.warps, kk.mode, kk.cluster, kk.keep, kk.unroll, kk.iters, kk.cvt, kk.cache, kk.fused_rot);
                const int roles[3] = {EVO_QUANT_K_MAIN, kk.mode == EVO_QUANT_MODE_SPLIT ? EVO_QUANT_K_ABSMAX : -1,
                                      rot && !kk.fused_rot ? EVO_QUANT_K_ROTATE : -1};
                char names[3][200];
                for (int r = 0; r < 3; r++) {
                    snprintf(names[r], sizeof names[r], "NULL");
                    if (roles[r] < 0) continue;
                    snprintf(names[r], sizeof names[r], "%s<%s>", kernel_of_role[roles[r]], args);
                    evo_str_appendf(o, "template __global__ void %s(const evo_quant_params);\n", names[r]);
                }
                evo_str_appendf(&rows, "    {%d, %d, %d, %s, %s, %s},\n", dims[di], bf, rot, names[0], names[1],
                                names[2]);
            }
    evo_str_append(o, "\nnamespace evo_export {\n\n"
                      "struct qvariant {\n"
                      "    int head_dim, in_dtype, rotate;\n"
                      "    void (*main)(const evo_quant_params);\n"
                      "    void (*absmax)(const evo_quant_params);   /* mode split; NULL otherwise */\n"
                      "    void (*rotate_k)(const evo_quant_params); /* rotate with fused_rot = 0; NULL otherwise */\n"
                      "};\n"
                      "static const qvariant variants[] = {\n");
    evo_str_append(o, evo_str_cstr(&rows));
    evo_str_free(&rows);
    evo_str_appendf(o,
                    "};\n\n"
                    "#ifdef EVO_SELFTEST\n"
                    "/* The timed shapes of run %lld's config, with the median evo measured (µs). */\n"
                    "struct qshape {\n"
                    "    const char *name;\n"
                    "    int batch, heads, seq, head_dim, in_dtype, rotate;\n"
                    "    double evo_median_us;\n"
                    "};\n"
                    "static const qshape timed_shapes[] = {\n",
                    (long long)x->src->run.id);
    for (int i = 0; i < cfg->n_shapes; i++) {
        const evo_shape *s = &cfg->shapes[i];
        const evo_shape_result *r = evo_export_result_for(&x->src->eval, s);
        evo_str_append(o, "    {");
        evo_export_append_cstring(o, s->name);
        evo_str_appendf(o, ", %lld, %lld, %lld, %lld, %lld, %lld, %.2f},\n", s->v[QZ_BATCH], s->v[QZ_HEADS],
                        s->v[QZ_SEQ], s->v[QZ_DIM], s->v[QZ_DTYPE], s->v[QZ_ROTATE],
                        r && isfinite(r->median_us) ? r->median_us : 0.0);
    }
    evo_str_appendf(o,
                    "};\n"
                    "static const int timing_warmup = %d, timing_repetitions = %d, timing_flush_l2 = %d;\n"
                    "#endif\n\n"
                    "} // namespace evo_export\n",
                    cfg->timing.warmup, cfg->timing.repetitions < 30 ? 30 : cfg->timing.repetitions,
                    cfg->timing.flush_l2 ? 1 : 0);
}

evo_status evo_qz_export_body(const evo_export_ctx *x, evo_str *o, evo_err *err)
{
    return evo_export_assemble(x, ABI_HEADER, HARNESS, "quantizer", append_header, append_genome_section, o, err);
}
