/* export.c — the attention_fp8 task's standalone .cu (evo_task.export_body, see engine/report/export.h): a header
 * with the launcher's signature and the provenance, evo_attention_abi.h and the template inlined, explicit
 * instantiations of the variants, the variant table and the timed shapes, then export_harness.cu (launcher,
 * self-test). */
#include "attention.h"

#include "export.h"
#include "templates.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ABI_HEADER "evo_attention_abi.h"
#define HARNESS "export_harness.cu"
#define SM90_HOST_H "attn_sm90_host.h"
#define SM90_HOST_C "attn_sm90_host.c"

/* Family 1 (the sm_90a template): its kernels take tensor maps, which attn_sm90_host.c makes. */
static bool is_sm90(const evo_export_ctx *x)
{
    return x->prog->n_variants > 0 && x->prog->variants[0].attr[ATTN_V_FAMILY] == ATTN_FAMILY_SM90;
}

/* The arch nvcc must target: the program's own ("sm_90a") or the run's. */
static const char *export_arch(const evo_export_ctx *x) { return x->prog->arch[0] ? x->prog->arch : x->src->cand.arch; }

static void append_header(evo_str *o, const evo_export_ctx *x)
{
    const evo_candidate_rec *c = &x->src->cand;
    const evo_config *cfg = x->cfg;
    const char *f = x->file_name;
    char na[64];
    evo_export_nvcc_arch(export_arch(x), na, sizeof na);
    evo_str_appendf(o,
                    "/* %s — an FP8 attention forward kernel found by evo, specialised to one genome.\n"
                    " * Standalone: plain nvcc builds it, without evo, its templates folder or -I.\n"
                    " *\n"
                    " *   nvcc %s -O3 -c %s                                  the launcher, to link\n"
                    " *   nvcc %s -O3 -shared -Xcompiler -fPIC %s -o libevo_attn.so    for ctypes\n"
                    " *   nvcc %s -O3 -DEVO_SELFTEST %s -o selftest && ./selftest    check and time\n"
                    " *   (selftest [--check-only] [--shape NAME] [--reps N]; exit 0 only when every check passed)\n",
                    f, na, f, na, f, na, f);
    evo_str_append(
        o, " *\n"
           " * Launcher (extern \"C\"; device pointers; layout [B, H, S, D] contiguous; scales: one float per\n"
           " * (batch, head), index b*H + h; returns the launch's cudaError_t as int, cudaErrorInvalidValue\n"
           " * for a head dim without a variant; asynchronous on `stream`):\n"
           " *   int evo_attention_forward(const void *q, const void *k, const void *v, const float *q_scale,\n"
           " *                             const float *k_scale, const float *v_scale, void *o, int batch,\n"
           " *                             int heads, int seq, int head_dim, int causal, float softmax_scale,\n"
           " *                             cudaStream_t stream);\n"
           " *   const char *evo_attention_genome(void);   int evo_attention_format(void);  (0 e4m3, 1 u8sim)\n"
           " * q, k, v hold 8-bit codes (format below, rules in evo_attention_abi.h); o is fp16. causal: key j\n"
           " * is masked for query i when j > i.\n"
           " *\n"
           " * Provenance\n");
    evo_export_provenance_begin(o, x);
    evo_str_appendf(o, " *   task          %s, format %s, arch %s, head dims", c->task,
                    evo_attn_format_name(evo_attn_format(cfg)), c->arch);
    for (int v = 0; v < x->prog->n_variants; v++) evo_str_appendf(o, " %lld", x->prog->variants[v].attr[ATTN_V_DIM]);
    evo_str_append(o, "\n");
    evo_export_provenance_end(o, x, "against the FP32 reference on the dequantized inputs (e2e: on the fp16 inputs)");
    evo_str_append(o, is_sm90(x) ? " *\n * Variants (the sm_90a family: launch rules in attention_fp8_sm90.cu below):\n"
                                 : " *\n * Variants (grid: ceil(S / rows) x H x B):\n");
    for (int v = 0; v < x->prog->n_variants; v++) {
        const evo_variant *y = &x->prog->variants[v];
        evo_str_appendf(
            o,
            " *   head dim %3lld: %s\n *                 %d threads, %lld rows per block, %d bytes of dynamic "
            "shared memory\n",
            y->attr[ATTN_V_DIM], y->name_expr, y->threads, y->attr[ATTN_V_ROWS], y->smem_bytes);
    }
    evo_str_append(o, " */\n");
}

static void append_genome_section(evo_str *o, const evo_export_ctx *x)
{
    const evo_candidate_rec *c = &x->src->cand;
    const evo_config *cfg = x->cfg;
    evo_str_append(o, "\n/* ==== this genome (written by evo export) ==== */\n#define EVO_EXPORT_GENOME ");
    evo_export_append_cstring(o, c->genome);
    evo_str_append(o, "\n#define EVO_EXPORT_KEY ");
    evo_export_append_cstring(o, c->key);
    evo_str_append(o, "\n#define EVO_EXPORT_ARCH ");
    evo_export_append_cstring(o, export_arch(x));
    evo_str_appendf(o, "\n#define EVO_EXPORT_FORMAT %s\n#define EVO_EXPORT_SM90 %d\n\n",
                    evo_attn_format(cfg) == EVO_FORMAT_E4M3 ? "EVO_FORMAT_E4M3" : "EVO_FORMAT_U8SIM", is_sm90(x));
    if (is_sm90(x)) { /* the host side of the sm_90a family: tensor maps and grid (the same code evo runs) */
        const char *h = NULL, *c_text = NULL;
        evo_template_get(SM90_HOST_H, &h, NULL, NULL); /* both present: evo_attn_export_body checked */
        evo_template_get(SM90_HOST_C, &c_text, NULL, NULL);
        evo_str_appendf(o, "/* ==== %s, verbatim but for its #include of %s ==== */\n", SM90_HOST_H, ABI_HEADER);
        evo_export_append_template(o, h, ABI_HEADER);
        evo_str_appendf(o, "/* ==== %s, verbatim but for its #include of %s ==== */\n", SM90_HOST_C, SM90_HOST_H);
        evo_export_append_template(o, c_text, SM90_HOST_H);
        evo_str_append(o, "\n");
    }
    for (int v = 0; v < x->prog->n_variants; v++)
        evo_str_appendf(o,
                        is_sm90(x) ? "template __global__ void %s(const __grid_constant__ evo_attn_params, "
                                     "const __grid_constant__ evo_attn_tmaps);\n"
                                   : "template __global__ void %s(const evo_attn_params);\n",
                        x->prog->variants[v].name_expr);
    evo_str_append(
        o,
        "\nnamespace evo_export {\n\n"
        "struct variant {\n"
        "    int head_dim;\n"
        "    const void *kernel; /* family 0: (evo_attn_params); family 1: (evo_attn_params, evo_attn_tmaps) */\n"
        "    int threads, rows_per_block, smem_bytes; /* family 0 grid: ceil(S / rows_per_block) x H x B */\n"
        "    int min_waves; /* > 0: the large-problem variant, for grids of min_waves x SMs blocks or more */\n"
        "    int family;    /* 0 mma.sync (attention_fp8.cu), 1 wgmma + TMA (attention_fp8_sm90.cu, sm_90a) */\n"
        "    int wg_rows, tile_n, persist; /* family 1: the tensor maps' boxes and the grid */\n"
        "    int accuracy;  /* its accuracy class: 0 exact, 1 fp8 (the self-test judges it by that class's rule) */\n"
        "};\n"
        "static const variant variants[] = {\n");
    for (int v = 0; v < x->prog->n_variants; v++) {
        const evo_variant *y = &x->prog->variants[v];
        evo_str_appendf(o, "    {%lld, (const void *)%s, %d, %lld, %d, %lld, %lld, %lld, %lld, %lld, %lld},\n",
                        y->attr[ATTN_V_DIM], y->name_expr, y->threads, y->attr[ATTN_V_ROWS], y->smem_bytes,
                        y->attr[ATTN_V_MIN_WAVES], y->attr[ATTN_V_FAMILY], y->attr[ATTN_V_WG_ROWS],
                        y->attr[ATTN_V_TILE_N], y->attr[ATTN_V_PERSIST], (long long)y->accuracy);
    }
    evo_str_appendf(o,
                    "};\n\n"
                    "#ifdef EVO_SELFTEST\n"
                    "/* The timed shapes of run %lld's config, with the median evo measured (µs). */\n"
                    "struct shape {\n"
                    "    const char *name;\n"
                    "    int batch, heads, seq, head_dim, causal;\n"
                    "    double evo_median_us;\n"
                    "};\n"
                    "static const shape timed_shapes[] = {\n",
                    (long long)x->src->run.id);
    for (int i = 0; i < cfg->n_shapes; i++) {
        const evo_shape *s = &cfg->shapes[i];
        const evo_shape_result *r = evo_export_result_for(&x->src->eval, s);
        evo_str_append(o, "    {");
        evo_export_append_cstring(o, s->name);
        evo_str_appendf(o, ", %lld, %lld, %lld, %lld, %lld, %.2f},\n", s->v[ATTN_BATCH], s->v[ATTN_HEADS],
                        s->v[ATTN_SEQ], s->v[ATTN_DIM], s->v[ATTN_CAUSAL],
                        r && isfinite(r->median_us) ? r->median_us : 0.0);
    }
    const evo_tolerance *t = &cfg->correctness.tol;
    evo_str_appendf(
        o,
        "};\n\n"
        "/* Correctness tolerances and timing settings of that config. */\n"
        "static const double tol_rel_l2 = %.9g, tol_atol = %.9g, tol_rtol = %.9g, tol_max_frac_over = %.9g;\n"
        "static const double cfg_softmax_scale = %.9g; /* 0: 1/sqrt(head_dim) */\n"
        "static const int timing_warmup = %d, timing_repetitions = %d, timing_flush_l2 = %d;\n"
        "#endif\n\n"
        "} // namespace evo_export\n",
        t->rel_l2, t->atol, t->rtol, t->max_frac_over, cfg->options[ATTN_OPT_SCALE], cfg->timing.warmup,
        cfg->timing.repetitions, cfg->timing.flush_l2 ? 1 : 0);
}

evo_status evo_attn_export_body(const evo_export_ctx *x, evo_str *o, evo_err *err)
{
    const char *text;
    evo_status s = EVO_OK;
    if (is_sm90(x) && ((s = evo_template_get(SM90_HOST_H, &text, NULL, err)) != EVO_OK ||
                       (s = evo_template_get(SM90_HOST_C, &text, NULL, err)) != EVO_OK))
        return s;
    return evo_export_assemble(x, ABI_HEADER, HARNESS, "kernel", append_header, append_genome_section, o, err);
}
