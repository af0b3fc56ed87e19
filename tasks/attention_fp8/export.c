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

/* The twins of an sm_90a variant, for "evo_attn_sm90<...>" with PIPE 2 and V_PATH 1: the same name with V_PATH 2
 * (vpath 2: V given in FP16, evo_attention_forward_v16) or, when its Q·Kᵀ is FP16 (QK_MODE 2), V_PATH 3 (vpath 3: K
 * and V given in FP16, evo_attention_forward_kv16) into buf, the same arithmetic; false for every other kernel. */
static bool fp16_twin(const char *expr, int vpath, char *buf, size_t len)
{
    int a[13];
    if (sscanf(expr, "evo_attn_sm90<%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d>", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5],
               &a[6], &a[7], &a[8], &a[9], &a[10], &a[11], &a[12]) != 13 ||
        a[5] != 2 || a[7] != 1 || (vpath == 3 && a[6] != 2))
        return false;
    const int n = snprintf(buf, len, "evo_attn_sm90<%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d>", a[0], a[1], a[2], a[3],
                           a[4], a[5], a[6], vpath, a[8], a[9], a[10], a[11], a[12]);
    return n > 0 && (size_t)n < len;
}

static bool is_convert(const evo_variant *y) { return attn_role_is_pre(y->attr[ATTN_V_ROLE]); }

/* What a convert variant writes into the workspace before each call (the two kinds: attention.h). */
static const char *convert_what(const evo_variant *y)
{
    return y->attr[ATTN_V_ROLE] == ATTN_ROLE_TRANSPOSE ? "V to Vᵀ (V_PATH 5)" : "K and V to FP16";
}

/* "template __global__ void NAME(...);" for a kernel and, when it has them, its FP16 twins. */
static void append_instantiations(evo_str *o, const char *expr, bool sm90)
{
    static const char *const what[] = {"its FP16-V twin", "its FP16-K-and-V twin"};
    char twin[256];
    if (strcmp(expr, ATTN_CONVERT_NAME) == 0) {
        evo_str_appendf(o,
                        "template __global__ void %s(const unsigned char *, const unsigned char *, unsigned short *, "
                        "unsigned short *, unsigned long long); /* K and V to FP16 (V_PATH 3) */\n",
                        expr);
        return;
    }
    if (strcmp(expr, ATTN_TRANSPOSE_NAME) == 0) {
        evo_str_appendf(o,
                        "template __global__ void %s(const unsigned char *, unsigned char *, int, int, int); "
                        "/* V to Vᵀ (V_PATH 5) */\n",
                        expr);
        return;
    }
    evo_str_appendf(o,
                    sm90 ? "template __global__ void %s(const __grid_constant__ evo_attn_params, "
                           "const __grid_constant__ evo_attn_tmaps);\n"
                         : "template __global__ void %s(const evo_attn_params);\n",
                    expr);
    for (int vpath = 2; vpath <= 3 && sm90; vpath++)
        if (fp16_twin(expr, vpath, twin, sizeof twin))
            evo_str_appendf(o,
                            "template __global__ void %s(const __grid_constant__ evo_attn_params, "
                            "const __grid_constant__ evo_attn_tmaps); /* %s */\n",
                            twin, what[vpath - 2]);
}

/* ", (const void *)TWIN" or ", nullptr" for each twin, then what the launcher writes first (the variant table's
 * `convert`: 1 K and V in FP16, 2 Vᵀ): the variant table's last three columns. A kernel with V_PATH 3 (role KV16)
 * is its own FP16-K-and-V entry; one with V_PATH 5 (role VT) has no twin. */
static void append_twin_column(evo_str *o, const evo_variant *y)
{
    const char *expr = y->name_expr;
    char twin[256];
    if (y->attr[ATTN_V_ROLE] == ATTN_ROLE_KV16) {
        evo_str_appendf(o, ", nullptr, (const void *)%s, 1", expr);
        return;
    }
    if (y->attr[ATTN_V_ROLE] == ATTN_ROLE_VT) {
        evo_str_append(o, ", nullptr, nullptr, 2");
        return;
    }
    for (int vpath = 2; vpath <= 3; vpath++) {
        if (fp16_twin(expr, vpath, twin, sizeof twin))
            evo_str_appendf(o, ", (const void *)%s", twin);
        else
            evo_str_append(o, ", nullptr");
    }
    evo_str_append(o, ", 0");
}

#define VARIANT_V16_FIELD \
    "    const void *v16_kernel; /* family 1 with V_PATH 1: the same kernel taking V in FP16 (V_PATH 2), which\n" \
    "                               evo_attention_forward_v16 runs; nullptr otherwise */\n" \
    "    const void *kv16_kernel; /* family 1 with QK_MODE 2 and V_PATH 1: taking K and V in FP16 (V_PATH 3),\n" \
    "                                which evo_attention_forward_kv16 runs; a V_PATH 3 kernel itself; nullptr\n" \
    "                                otherwise */\n" \
    "    int convert; /* 1: a V_PATH 3 kernel: evo_attention_forward converts K and V to FP16 into a workspace\n" \
    "                    first (evo_kv16_convert, timed with it by evo); 2: a V_PATH 5 kernel: it writes Vᵀ into\n" \
    "                    the workspace first (evo_vt_transpose) */\n"

/* The arch nvcc must target: the program's own ("sm_90a") or the run's. */
static const char *export_arch(const evo_export_ctx *x) { return x->prog->arch[0] ? x->prog->arch : x->src->cand.arch; }

/* The header's build lines for file f and nvcc's arch flags na (both headers, one-genome and dispatching). */
static void append_build_lines(evo_str *o, const char *na, const char *f)
{
    evo_str_appendf(o,
                    " *\n"
                    " *   nvcc %s -O3 -c %s                                  the launcher, to link\n"
                    " *   nvcc %s -O3 -shared -Xcompiler -fPIC %s -o libevo_attn.so    for ctypes\n"
                    " *   nvcc %s -O3 -DEVO_SELFTEST %s -o selftest && ./selftest    check and time\n"
                    " *   (selftest [--check-only] [--shape NAME] [--reps N]; exit 0 only when every check passed)\n",
                    na, f, na, f, na, f);
}

static void append_header(evo_str *o, const evo_export_ctx *x)
{
    const evo_candidate_rec *c = &x->src->cand;
    const evo_config *cfg = x->cfg;
    const char *f = x->file_name;
    char na[64];
    evo_export_nvcc_arch(export_arch(x), na, sizeof na);
    evo_str_appendf(o,
                    "/* %s — an FP8 attention forward kernel found by evo, specialised to one genome.\n"
                    " * Standalone: plain nvcc builds it, without evo, its templates folder or -I.\n",
                    f);
    append_build_lines(o, na, f);
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
           " *   int evo_attention_forward_v16(...the same arguments, v: FP16 values...);\n"
           " *   int evo_attention_v16_supported(int batch, int heads, int seq, int head_dim, int causal);\n"
           " * V given in FP16 (v_scale still multiplies it): served by the FP16-V twin of an sm_90a kernel that\n"
           " * multiplies P·V in FP16 (V_PATH 1), cudaErrorNotSupported by every other kernel.\n"
           " *   int evo_attention_forward_kv16(...the same arguments, k and v: FP16 values...);\n"
           " *   int evo_attention_kv16_supported(int batch, int heads, int seq, int head_dim, int causal);\n"
           " * K and V given in FP16 (k_scale, v_scale still multiply them; NULL: 1): served by the FP16-K-and-V\n"
           " * twin of an sm_90a kernel with FP16 Q·Kᵀ and P·V (QK_MODE 2, V_PATH 1), and by a V_PATH 3 kernel.\n"
           " *   size_t evo_attention_workspace_bytes(int batch, int heads, int seq, int head_dim, int causal);\n"
           " *   int evo_attention_forward_ws(...the arguments of evo_attention_forward..., void *workspace,\n"
           " *                                size_t workspace_bytes, cudaStream_t stream);\n"
           " * A V_PATH 3 kernel takes K and V in FP16, converted from the codes every call into a workspace of\n"
           " * that many bytes, a V_PATH 5 kernel Vᵀ, transposed from the codes every call (0 bytes for every other\n"
           " * kernel): the caller's, or one evo_attention_forward allocates and frees on the stream\n"
           " * (cudaMallocAsync).\n"
           " *\n"
           " * Provenance\n");
    evo_export_provenance_begin(o, x);
    evo_str_appendf(o, " *   task          %s, format %s, arch %s, head dims", c->task,
                    evo_attn_format_name(evo_attn_format(cfg)), c->arch);
    for (int v = 0; v < x->prog->n_variants; v++)
        if (!is_convert(&x->prog->variants[v])) evo_str_appendf(o, " %lld", x->prog->variants[v].attr[ATTN_V_DIM]);
    evo_str_append(o, "\n");
    evo_export_provenance_end(o, x, "against the FP32 reference on the dequantized inputs (e2e: on the fp16 inputs)");
    evo_str_append(o, is_sm90(x) ? " *\n * Variants (the sm_90a family: launch rules in attention_fp8_sm90.cu below):\n"
                                 : " *\n * Variants (grid: ceil(S / rows) x H x B):\n");
    for (int v = 0; v < x->prog->n_variants; v++) {
        const evo_variant *y = &x->prog->variants[v];
        if (is_convert(y)) {
            evo_str_appendf(o,
                            " *   before each: %s, %d threads: %s into the workspace\n"
                            " *                 (evo_attention_workspace_bytes; evo_attention_forward allocates it)\n",
                            y->name_expr, y->threads, convert_what(y));
            continue;
        }
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
    for (int v = 0; v < x->prog->n_variants; v++) append_instantiations(o, x->prog->variants[v].name_expr, is_sm90(x));
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
        "    int accuracy;  /* its accuracy class: 0 exact, 1 fp8 (the self-test judges it by that class's rule) */\n" VARIANT_V16_FIELD
        "};\n"
        "static const variant variants[] = {\n");
    for (int v = 0; v < x->prog->n_variants; v++) {
        const evo_variant *y = &x->prog->variants[v];
        if (is_convert(y)) continue;
        evo_str_appendf(o, "    {%lld, (const void *)%s, %d, %lld, %d, %lld, %lld, %lld, %lld, %lld, %lld",
                        y->attr[ATTN_V_DIM], y->name_expr, y->threads, y->attr[ATTN_V_ROWS], y->smem_bytes,
                        y->attr[ATTN_V_MIN_WAVES], y->attr[ATTN_V_FAMILY], y->attr[ATTN_V_WG_ROWS],
                        y->attr[ATTN_V_TILE_N], y->attr[ATTN_V_PERSIST], (long long)y->accuracy);
        append_twin_column(o, y);
        evo_str_append(o, "},\n");
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

/* ---- the dispatching export (evo export --dispatch): every bucket's winner in one file ---- */

#define DISPATCH_H "attn_dispatch_host.h"

static bool entry_sm90(const evo_export_entry *e)
{
    return e->prog.n_variants > 0 && e->prog.variants[0].attr[ATTN_V_FAMILY] == ATTN_FAMILY_SM90;
}

/* Entry e serves head dim `dim` in some bucket: only those variants go into the file. */
static bool entry_serves_dim(const evo_export_dispatch_ctx *d, int e, long long dim)
{
    for (int b = 0; b < d->n_buckets; b++)
        if (d->buckets[b].entry == e && d->buckets[b].bucket.key[0] == dim) return true;
    return false;
}

/* Variant y of entry e goes into the file: it serves a head dim of the entry's buckets, or converts K and V for such a
 * variant (every entry in the file serves some head dim). */
static bool entry_keeps(const evo_export_dispatch_ctx *d, int e, const evo_variant *y)
{
    return is_convert(y) || entry_serves_dim(d, e, y->attr[ATTN_V_DIM]);
}

static bool any_family(const evo_export_dispatch_ctx *d, bool sm90)
{
    for (int i = 0; i < d->n_entries; i++)
        if (entry_sm90(&d->entries[i]) == sm90) return true;
    return false;
}

static const char *dispatch_arch(const evo_export_dispatch_ctx *d)
{
    for (int i = 0; i < d->n_entries; i++)
        if (d->entries[i].prog.arch[0]) return d->entries[i].prog.arch;
    return d->scope.arch ? d->scope.arch : "sm_90";
}

static const char *entry_accuracy(const evo_export_entry *e)
{
    return e->src.eval.accuracy ? e->src.eval.accuracy : EVO_ACCURACY_EXACT;
}

static void append_dispatch_header(evo_str *o, const evo_export_dispatch_ctx *d)
{
    const char *f = d->file_name;
    char na[64];
    evo_export_nvcc_arch(dispatch_arch(d), na, sizeof na);
    evo_str_appendf(o,
                    "/* %s — FP8 attention forward kernels found by evo: the winner of every bucket of\n"
                    " * problems, one launcher that picks among them. Standalone: plain nvcc builds it.\n",
                    f);
    append_build_lines(o, na, f);
    evo_str_append(
        o,
        " *\n"
        " * Launcher: evo_attention_forward as in every exported attention file (evo_attention_abi.h's layout and\n"
        " * formats; returns the launch's cudaError_t, cudaErrorInvalidValue for a head dim no entry serves), plus\n"
        " *   int evo_attention_dispatch(int batch, int heads, int seq, int head_dim, int causal);  the entry it runs\n"
        " *   int evo_attention_entries(void);  const char *evo_attention_entry_genome(int entry);\n"
        " * and evo_attention_forward_v16 / evo_attention_v16_supported (V given in FP16: the entry's sm_90a kernels\n"
        " * that multiply P·V in FP16 have an FP16-V twin; cudaErrorNotSupported where the problem's kernel has none),\n"
        " * evo_attention_forward_kv16 / evo_attention_kv16_supported (K and V given in FP16: the same for the\n"
        " * kernels whose Q·Kᵀ is FP16 too), evo_attention_workspace_bytes / evo_attention_forward_ws (an entry with\n"
        " * V_PATH 3 converts K and V to FP16, one with V_PATH 5 transposes V, into a workspace every call: the\n"
        " * caller's, or one evo_attention_forward allocates on the stream; 0 bytes for every other entry).\n"
        " *\n"
        " * Dispatch (attn_dispatch_host.h below): a problem is in bucket (head dim, causal, seq class, batch·heads\n"
        " * class), classes powers of two (seq 1..256, 257..512, 513..1024, ...; batch·heads 1..8, 9..16, 17..32,\n"
        " * ...), and runs its bucket's winner. A problem in no bucket of the table runs the nearest bucket of its\n"
        " * head dim: the same causal setting first, then the fewest class steps |Δseq| + |Δbatch·heads|, then the\n"
        " * fewest seq steps, then the smaller bucket. Within the entry, the variant is chosen as in a single file\n"
        " * (head dim; the large-problem variant when its grid fills the device).\n"
        " *\n");
    evo_export_dispatch_buckets_intro(o, d);
    evo_str_appendf(o, " *   %-40s %5s %-8s %-6s %9s %10s  %s\n", "bucket", "entry", "key", "class", "speedup",
                    "median µs", "shapes; GPU");
    for (int b = 0; b < d->n_buckets; b++) {
        const evo_export_bucket_row *r = &d->buckets[b];
        const evo_export_entry *e = &d->entries[r->entry];
        evo_str_appendf(o, " *   %-40s %5d %-8.8s %-6s %8.3fx %10.2f  %s; %s\n", r->bucket.label, r->entry,
                        e->src.cand.key, entry_accuracy(e), r->speedup, r->median_us, r->shapes, r->gpu);
    }
    evo_str_append(o, " *\n * Entries\n");
    for (int i = 0; i < d->n_entries; i++) {
        const evo_export_entry *e = &d->entries[i];
        evo_str_appendf(o, " *   entry %d: candidate %lld, key %s, accuracy class %s, family %d\n", i,
                        (long long)e->src.cand.id, e->src.cand.key, entry_accuracy(e), entry_sm90(e) ? 1 : 0);
        evo_str_appendf(o, " *     genome      %s\n", e->src.cand.genome);
        evo_str_appendf(o, " *     measured    run %lld generation %d, %s, %s\n", (long long)e->src.run.id,
                        e->src.eval.generation, e->src.eval.gpu ? e->src.eval.gpu : "?",
                        e->src.eval.created_at ? e->src.eval.created_at : "?");
        evo_str_appendf(o, " *     template    %s, SHA-256 %s\n", e->prog.program_name, e->src.cand.template_hash);
        evo_str_appendf(o, " *     compiled by NVRTC %s with %s\n", e->src.cand.nvrtc_version, e->options);
        evo_str_appendf(o, " *     key check   %s\n", e->key_check);
        for (int v = 0; v < e->prog.n_variants; v++) {
            const evo_variant *y = &e->prog.variants[v];
            if (is_convert(y)) {
                evo_str_appendf(o, " *     before each: %s: %s into the workspace\n", y->name_expr, convert_what(y));
                continue;
            }
            if (!entry_serves_dim(d, i, y->attr[ATTN_V_DIM])) continue;
            evo_str_appendf(o, " *     head dim %3lld: %s, %d threads, %lld rows per block, %d bytes of smem%s\n",
                            y->attr[ATTN_V_DIM], y->name_expr, y->threads, y->attr[ATTN_V_ROWS], y->smem_bytes,
                            y->attr[ATTN_V_MIN_WAVES] ? " (large problems)" : "");
        }
    }
    evo_str_appendf(o,
                    " *\n * Tolerances and timing settings of the self-test: the config of run %lld (the latest).\n"
                    " * Exported %s by evo %s.\n */\n",
                    (long long)d->scope.id, d->exported_at, EVO_VERSION);
}

static void append_dispatch_section(evo_str *o, const evo_export_dispatch_ctx *d, int format)
{
    evo_str g = {0}, k = {0};
    evo_str_append(&g, "dispatch:");
    evo_str_append(&k, "dispatch:");
    for (int i = 0; i < d->n_entries; i++) {
        evo_str_appendf(&g, " %s%s", i ? "| " : "", d->entries[i].src.cand.genome);
        evo_str_appendf(&k, "%s%.8s", i ? "," : " ", d->entries[i].src.cand.key);
    }
    evo_str_append(o, "\n/* ==== the entries (written by evo export --dispatch) ==== */\n#define EVO_EXPORT_GENOME ");
    evo_export_append_cstring(o, g.p);
    evo_str_append(o, "\n#define EVO_EXPORT_KEY ");
    evo_export_append_cstring(o, k.p);
    evo_str_free(&g);
    evo_str_free(&k);
    evo_str_append(o, "\n#define EVO_EXPORT_ARCH ");
    evo_export_append_cstring(o, dispatch_arch(d));
    const bool sm90 = any_family(d, true);
    evo_str_appendf(o, "\n#define EVO_EXPORT_FORMAT %s\n#define EVO_EXPORT_SM90 %d\n#define EVO_EXPORT_DISPATCH 1\n\n",
                    format == EVO_FORMAT_E4M3 ? "EVO_FORMAT_E4M3" : "EVO_FORMAT_U8SIM", sm90);
    if (sm90) {
        const char *h = NULL, *c_text = NULL;
        evo_template_get(SM90_HOST_H, &h, NULL, NULL); /* present: evo_attn_export_dispatch_body checked */
        evo_template_get(SM90_HOST_C, &c_text, NULL, NULL);
        evo_str_appendf(o, "/* ==== %s, verbatim but for its #include of %s ==== */\n", SM90_HOST_H, ABI_HEADER);
        evo_export_append_template(o, h, ABI_HEADER);
        evo_str_appendf(o, "/* ==== %s, verbatim but for its #include of %s ==== */\n", SM90_HOST_C, SM90_HOST_H);
        evo_export_append_template(o, c_text, SM90_HOST_H);
        evo_str_append(o, "\n");
    }
    const char *dh = NULL;
    evo_template_get(DISPATCH_H, &dh, NULL, NULL);
    evo_str_appendf(o, "/* ==== %s, verbatim ==== */\n", DISPATCH_H);
    evo_str_append(o, dh);
    evo_str_append(
        o, "\n/* ==== dispatch table: bucket (head dim, causal, seq class, batch·heads class) -> entry ==== */\n"
           "static const attn_dispatch_bucket evo_dispatch_buckets[] = {\n");
    for (int b = 0; b < d->n_buckets; b++) {
        const evo_bucket *x = &d->buckets[b].bucket;
        evo_str_appendf(o, "    {%lld, %lld, %lld, %lld, %d}, /* %s */\n", x->key[0], x->key[1], x->key[2], x->key[3],
                        d->buckets[b].entry, x->label);
    }
    evo_str_appendf(o,
                    "};\nstatic const int evo_dispatch_n_buckets = %d;\n"
                    "/* ==== end of the dispatch table ==== */\n\n",
                    d->n_buckets);
    /* explicit instantiations: one per distinct kernel (two genomes may share one) */
    for (int i = 0; i < d->n_entries; i++) {
        const evo_export_entry *e = &d->entries[i];
        for (int v = 0; v < e->prog.n_variants; v++) {
            const evo_variant *y = &e->prog.variants[v];
            if (!entry_keeps(d, i, y)) continue;
            bool seen = false;
            for (int j = 0; j <= i && !seen; j++)
                for (int w = 0; w < d->entries[j].prog.n_variants && !seen; w++) {
                    if (j == i && w >= v) break;
                    seen = entry_keeps(d, j, &d->entries[j].prog.variants[w]) &&
                           strcmp(d->entries[j].prog.variants[w].name_expr, y->name_expr) == 0;
                }
            if (!seen) append_instantiations(o, y->name_expr, entry_sm90(e));
        }
    }
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
        "    int entry;     /* the entry (genome) it belongs to */\n" VARIANT_V16_FIELD "};\n"
        "static const variant variants[] = {\n");
    for (int i = 0; i < d->n_entries; i++) {
        const evo_export_entry *e = &d->entries[i];
        for (int v = 0; v < e->prog.n_variants; v++) {
            const evo_variant *y = &e->prog.variants[v];
            if (is_convert(y) || !entry_serves_dim(d, i, y->attr[ATTN_V_DIM])) continue;
            evo_str_appendf(o, "    {%lld, (const void *)%s, %d, %lld, %d, %lld, %lld, %lld, %lld, %lld, %lld, %d",
                            y->attr[ATTN_V_DIM], y->name_expr, y->threads, y->attr[ATTN_V_ROWS], y->smem_bytes,
                            y->attr[ATTN_V_MIN_WAVES], y->attr[ATTN_V_FAMILY], y->attr[ATTN_V_WG_ROWS],
                            y->attr[ATTN_V_TILE_N], y->attr[ATTN_V_PERSIST], (long long)y->accuracy, i);
            append_twin_column(o, y);
            evo_str_append(o, "},\n");
        }
    }
    evo_str_append(o, "};\n\nstruct entry {\n    const char *genome, *key;\n    int accuracy; /* 0 exact, 1 fp8 */\n"
                      "};\nstatic const entry entries[] = {\n");
    for (int i = 0; i < d->n_entries; i++) {
        const evo_export_entry *e = &d->entries[i];
        evo_str_append(o, "    {");
        evo_export_append_cstring(o, e->src.cand.genome);
        evo_str_append(o, ", ");
        evo_export_append_cstring(o, e->src.cand.key);
        evo_str_appendf(o, ", %d},\n", e->prog.n_variants ? e->prog.variants[0].accuracy : 0);
    }
    evo_str_append(
        o, "};\n\n"
           "#ifdef EVO_SELFTEST\n"
           "/* Every bucket's timed shapes, with the median evo measured for its winner (µs) and that winner. */\n"
           "struct shape {\n"
           "    const char *name;\n"
           "    int batch, heads, seq, head_dim, causal;\n"
           "    double evo_median_us;\n"
           "    int entry;\n"
           "};\n"
           "static const shape timed_shapes[] = {\n");
    for (int i = 0; i < d->n_timed; i++) {
        const evo_shape *s = &d->timed[i].shape;
        evo_str_append(o, "    {");
        evo_export_append_cstring(o, s->name);
        evo_str_appendf(o, ", %lld, %lld, %lld, %lld, %lld, %.2f, %d},\n", s->v[ATTN_BATCH], s->v[ATTN_HEADS],
                        s->v[ATTN_SEQ], s->v[ATTN_DIM], s->v[ATTN_CAUSAL],
                        isfinite(d->timed[i].median_us) ? d->timed[i].median_us : 0.0,
                        d->buckets[d->timed[i].bucket].entry);
    }
    const evo_config *cfg = d->cfg;
    const evo_tolerance *t = &cfg->correctness.tol;
    evo_str_appendf(
        o,
        "};\n\n"
        "/* Correctness tolerances and timing settings of run %lld's config. */\n"
        "static const double tol_rel_l2 = %.9g, tol_atol = %.9g, tol_rtol = %.9g, tol_max_frac_over = %.9g;\n"
        "static const double cfg_softmax_scale = %.9g; /* 0: 1/sqrt(head_dim) */\n"
        "static const int timing_warmup = %d, timing_repetitions = %d, timing_flush_l2 = %d;\n"
        "#endif\n\n"
        "} // namespace evo_export\n",
        (long long)d->scope.id, t->rel_l2, t->atol, t->rtol, t->max_frac_over, cfg->options[ATTN_OPT_SCALE],
        cfg->timing.warmup, cfg->timing.repetitions, cfg->timing.flush_l2 ? 1 : 0);
}

evo_status evo_attn_export_dispatch_body(const evo_export_dispatch_ctx *d, evo_str *o, evo_err *err)
{
    const char *text, *harness = NULL, *abi = NULL;
    evo_status s = EVO_OK;
    if (any_family(d, true) && ((s = evo_template_get(SM90_HOST_H, &text, NULL, err)) != EVO_OK ||
                                (s = evo_template_get(SM90_HOST_C, &text, NULL, err)) != EVO_OK))
        return s;
    if ((s = evo_template_get(DISPATCH_H, &text, NULL, err)) != EVO_OK ||
        (s = evo_template_get(HARNESS, &harness, NULL, err)) != EVO_OK ||
        (s = evo_template_get(ABI_HEADER, &abi, NULL, err)) != EVO_OK)
        return s;
    const int format = d->n_entries ? evo_attn_format(d->entries[0].cfg) : EVO_FORMAT_E4M3;
    for (int i = 1; i < d->n_entries; i++)
        if (evo_attn_format(d->entries[i].cfg) != format)
            return evo_fail(err, EVO_E_USAGE,
                            "export --dispatch: the winners were measured in two formats (%s in run %lld, %s in run "
                            "%lld); one file has one input format: export the runs of one format (evo merge them "
                            "apart) or one kernel with --best",
                            evo_attn_format_name(format), (long long)d->entries[0].src.run.id,
                            evo_attn_format_name(evo_attn_format(d->entries[i].cfg)),
                            (long long)d->entries[i].src.run.id);
    append_dispatch_header(o, d);
    evo_str_appendf(o, "\n#include <cuda_runtime.h>\n\n/* ==== %s, verbatim ==== */\n", ABI_HEADER);
    evo_str_append(o, abi);
    /* each family's template once: every entry of a family was measured with this text (its SHA-256 was checked) */
    for (int fam = 0; fam < 2; fam++)
        for (int i = 0; i < d->n_entries; i++) {
            if (entry_sm90(&d->entries[i]) != (fam == 1)) continue;
            evo_str_appendf(o, "\n/* ==== %s, verbatim but for its #include of the header above ==== */\n",
                            d->entries[i].prog.program_name);
            evo_export_append_template(o, d->entries[i].prog.source, ABI_HEADER);
            break;
        }
    append_dispatch_section(o, d, format);
    evo_str_appendf(o, "\n/* ==== launcher and self-test, the same in every exported kernel (%s) ==== */\n", HARNESS);
    evo_export_append_inlined(o, harness);
    return EVO_OK;
}
