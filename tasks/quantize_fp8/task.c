/* task.c — the FP8 quantizer task, host side: fp16/bf16 [B, H, S, D] -> e4m3 codes + one scale per (batch, head),
 * optionally rotated first (incoherent processing). Its shape fields, the knobs of quantize_fp8.cu and their legal
 * values, the host-side check (evo_quant_check of the ABI), rendering a genome into the kernels of its launch plan
 * for every (head dim, dtype, rotate) the config's shapes have, the bytes a shape moves, the table. */
#include "quantize.h"

#include "task_gpu.h"
#include "templates.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

/* ---- problem description ---- */

static const long long head_dims[] = {32, 64, 128, 256};
static const char *const dtype_names[] = {"fp16", "bf16", NULL};
static const char *const role_names[] = {"rotate", "absmax", "main", NULL}; /* EVO_QUANT_K_* */

static const evo_field quantize_shape_fields[QZ_N_FIELDS] = {
    [QZ_BATCH] = {.name = "batch", .type = EVO_FIELD_INT, .min = 1, .max = 65535, .dflt = EVO_FIELD_REQUIRED},
    [QZ_HEADS] = {.name = "heads", .type = EVO_FIELD_INT, .min = 1, .max = 65535, .dflt = EVO_FIELD_REQUIRED},
    [QZ_SEQ] = {.name = "seq", .type = EVO_FIELD_INT, .min = 1, .max = 1 << 22, .dflt = EVO_FIELD_REQUIRED},
    [QZ_DIM] = {.name = "head_dim",
                .type = EVO_FIELD_INT,
                .min = INT32_MIN,
                .max = INT32_MAX,
                .allowed = head_dims,
                .n_allowed = 4,
                .dflt = EVO_FIELD_REQUIRED},
    [QZ_DTYPE] =
        {.name = "dtype", .type = EVO_FIELD_ENUM, .names = dtype_names, .dflt = EVO_QUANT_IN_F16, .doc = "input dtype"},
    [QZ_ROTATE] = {.name = "rotate",
                   .type = EVO_FIELD_BOOL,
                   .dflt = 0,
                   .doc = "rotate every row by the fixed Hadamard·signs/sqrt(D) first (incoherent processing)"},
};

static const evo_field quantize_variant_attrs[QZ_N_VATTRS] = {
    [QZ_V_ROLE] = {.name = "role", .type = EVO_FIELD_ENUM, .names = role_names},
    [QZ_V_DIM] = {.name = "head_dim", .type = EVO_FIELD_INT, .min = 1, .max = 256},
    [QZ_V_DTYPE] = {.name = "dtype", .type = EVO_FIELD_ENUM, .names = dtype_names},
    [QZ_V_ROTATE] = {.name = "rotate", .type = EVO_FIELD_BOOL},
    [QZ_V_KNOBS + 0] = {.name = "vec", .type = EVO_FIELD_INT, .min = 0, .max = 64},
    [QZ_V_KNOBS + 1] = {.name = "warps", .type = EVO_FIELD_INT, .min = 0, .max = 64},
    [QZ_V_KNOBS + 2] = {.name = "mode", .type = EVO_FIELD_INT, .min = 0, .max = 8},
    [QZ_V_KNOBS + 3] = {.name = "cluster", .type = EVO_FIELD_INT, .min = 0, .max = 16},
    [QZ_V_KNOBS + 4] = {.name = "keep", .type = EVO_FIELD_INT, .min = 0, .max = 16},
    [QZ_V_KNOBS + 5] = {.name = "unroll", .type = EVO_FIELD_INT, .min = 0, .max = 8},
    [QZ_V_KNOBS + 6] = {.name = "iters", .type = EVO_FIELD_INT, .min = 0, .max = 8},
    [QZ_V_KNOBS + 7] = {.name = "cvt", .type = EVO_FIELD_INT, .min = 0, .max = 1},
    [QZ_V_KNOBS + 8] = {.name = "cache", .type = EVO_FIELD_INT, .min = 0, .max = 1},
    [QZ_V_KNOBS + 9] = {.name = "fused_rot", .type = EVO_FIELD_INT, .min = 0, .max = 1},
    [QZ_V_KNOBS + 10] = {.name = "slack", .type = EVO_FIELD_INT, .min = 0, .max = 8},
};

static bool quantize_shape_check(const evo_shape *s, char *why, size_t why_len)
{
    const double heads = (double)s->v[QZ_BATCH] * s->v[QZ_HEADS], head = (double)s->v[QZ_SEQ] * s->v[QZ_DIM];
    if (heads > 65535) {
        snprintf(why, why_len, "batch*heads = %.0f: the quantizer takes at most 65535 heads", heads);
        return false;
    }
    if (head >= 2147483648.0 || heads * head > 4294967295.0) {
        snprintf(why, why_len, "seq*head_dim = %.0f per head, %.0f elements: more than the quantizer indexes", head,
                 heads * head);
        return false;
    }
    return true;
}

/* ---- knobs ---- */

/* In the order of evo_quant_knobs (the ABI's). */
static const char *const quantize_knobs[] = {"VEC",   "WARPS", "MODE",  "CLUSTER",   "KEEP",  "UNROLL",
                                             "ITERS", "CVT",   "CACHE", "FUSED_ROT", "SLACK", NULL};
static const char *const quantize_launch_knobs[] = {"SLACK", NULL}; /* the plan's lag; not a template argument */
static const int quantize_defaults[] = {
    EVO_KNOB_REQUIRED, EVO_KNOB_REQUIRED, EVO_KNOB_REQUIRED, 1, 0, EVO_KNOB_REQUIRED, 1, 1, 0, 1, 1};
static const int vec_set[] = {8, 16, 32}, warps_set[] = {2, 4, 8, 16, 32}, cluster_set[] = {1, 2, 4, 8, 16};
static const int keep_set[] = {0, 1, 2, 4, 8, 16}, pow2_8_set[] = {1, 2, 4, 8}, slack_set[] = {0, 1, 2, 4, 8};
/* The values quantize_fp8.cu's static_asserts (and evo_quant_check) allow, in the order of quantize_knobs. */
static const evo_knob_legal quantize_legal[] = {
    {0, 0, 0, vec_set, 3},     /* VEC */
    {0, 0, 0, warps_set, 5},   /* WARPS */
    {0, 8, 1, NULL, 0},        /* MODE */
    {0, 0, 0, cluster_set, 5}, /* CLUSTER */
    {0, 0, 0, keep_set, 6},    /* KEEP */
    {0, 0, 0, pow2_8_set, 4},  /* UNROLL */
    {0, 0, 0, pow2_8_set, 4},  /* ITERS */
    {0, 1, 1, NULL, 0},        /* CVT */
    {0, 1, 1, NULL, 0},        /* CACHE */
    {0, 1, 1, NULL, 0},        /* FUSED_ROT */
    {0, 0, 0, slack_set, 5},   /* SLACK */
};
_Static_assert(EVO_ARRAY_LEN(quantize_legal) == EVO_ARRAY_LEN(quantize_knobs) - 1, "one legal set per knob");

static evo_quant_knobs knobs_of_genome(const evo_config *cfg, const evo_genome *g)
{
    int v[11];
    for (int k = 0; k < 11; k++) v[k] = evo_genome_get(cfg->space, g, quantize_knobs[k], quantize_defaults[k]);
    return (evo_quant_knobs){.vec = v[0],
                             .warps = v[1],
                             .mode = v[2],
                             .cluster = v[3],
                             .keep = v[4],
                             .unroll = v[5],
                             .iters = v[6],
                             .cvt = v[7],
                             .cache = v[8],
                             .fused_rot = v[9],
                             .slack = v[10]};
}

evo_quant_knobs evo_qz_knobs_of(const evo_variant *v)
{
    const long long *a = v->attr + QZ_V_KNOBS;
    return (evo_quant_knobs){.vec = (int)a[0],
                             .warps = (int)a[1],
                             .mode = (int)a[2],
                             .cluster = (int)a[3],
                             .keep = (int)a[4],
                             .unroll = (int)a[5],
                             .iters = (int)a[6],
                             .cvt = (int)a[7],
                             .cache = (int)a[8],
                             .fused_rot = (int)a[9],
                             .slack = (int)a[10]};
}

/* ---- problem classes: one (head dim, dtype, rotate) per set of kernels ---- */

typedef struct {
    int dim, dtype, rotate;
} qclass;

static int classes_of(const evo_config *cfg, qclass *out, int max)
{
    int n = 0;
    for (int i = 0; i < cfg->n_shapes + cfg->correctness.n_shapes; i++) {
        const evo_shape *s = i < cfg->n_shapes ? &cfg->shapes[i] : &cfg->correctness.shapes[i - cfg->n_shapes];
        const qclass c = {(int)s->v[QZ_DIM], (int)s->v[QZ_DTYPE], (int)s->v[QZ_ROTATE]};
        int j = 0;
        while (j < n && memcmp(&out[j], &c, sizeof c) != 0) j++;
        if (j == n && n < max) out[n++] = c;
    }
    return n;
}

static int arch_number(const evo_device_limits *lim) { return lim->sm_major * 10 + lim->sm_minor; }

static evo_verdict quantize_can_implement(const evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                                          char *why, size_t why_len)
{
    const evo_quant_knobs k = knobs_of_genome(cfg, g);
    qclass cls[8];
    const int n = classes_of(cfg, cls, 8);
    for (int i = 0; i < n; i++)
        if (evo_quant_check(&k, cls[i].dim, cls[i].rotate, arch_number(lim), why, why_len) != 0) return EVO_V_INVALID;
    if (32 * k.warps > lim->max_threads_per_block) {
        snprintf(why, why_len, "%d threads per block > %d on %s", 32 * k.warps, lim->max_threads_per_block, lim->arch);
        return EVO_V_RESOURCE_FAIL;
    }
    /* What depends on the shape (mode 5: a CTA's share of a head in shared memory; mode 4: its ring): the plan of
     * every shape the config checks or times, before any GPU time is spent. */
    for (int i = 0; i < cfg->n_shapes + cfg->correctness.n_shapes; i++) {
        const evo_shape *s = i < cfg->n_shapes ? &cfg->shapes[i] : &cfg->correctness.shapes[i - cfg->n_shapes];
        evo_quant_knobs ks = k;
        if (!s->v[QZ_ROTATE]) ks.fused_rot = 1;
        evo_quant_plan plan;
        char reason[200];
        if (evo_quant_plan_make(&ks, (int)s->v[QZ_BATCH], (int)s->v[QZ_HEADS], (int)s->v[QZ_SEQ], (int)s->v[QZ_DIM],
                                (int)s->v[QZ_ROTATE], arch_number(lim), lim->sm_count > 0 ? lim->sm_count : 1, &plan,
                                reason, sizeof reason) != 0) {
            snprintf(why, why_len, "shape %s: %s", s->name, reason);
            return EVO_V_RESOURCE_FAIL;
        }
    }
    return EVO_V_OK;
}

static void set_knob_attrs(evo_variant *v, const evo_quant_knobs *k)
{
    const int a[11] = {k->vec,   k->warps, k->mode,  k->cluster,   k->keep, k->unroll,
                       k->iters, k->cvt,   k->cache, k->fused_rot, k->slack};
    for (int i = 0; i < 11; i++) v->attr[QZ_V_KNOBS + i] = a[i];
}

static const char *const kernel_names[] = {"evo_quant_rotate", "evo_quant_absmax", "evo_quant"}; /* by role */

/* The kernels of each class's plan: main, then absmax (mode split), then rotate (a separate rotation). */
static evo_status quantize_render(const evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                                  evo_program *out, evo_err *err)
{
    const char *text;
    evo_status s = evo_template_get("quantize_fp8.cu", &text, NULL, err);
    if (s != EVO_OK) return s;
    memset(out, 0, sizeof *out);
    out->source = evo_strdup(text);
    snprintf(out->program_name, sizeof out->program_name, "quantize_fp8.cu");
    const evo_quant_knobs gk = knobs_of_genome(cfg, g);
    qclass cls[8];
    const int n = classes_of(cfg, cls, 8);
    for (int i = 0; i < n; i++) {
        evo_quant_knobs k = gk;
        if (!cls[i].rotate) k.fused_rot = 1; /* canonical: FUSED_ROT means nothing without a rotation */
        const int roles[3] = {EVO_QUANT_K_MAIN, k.mode == EVO_QUANT_MODE_SPLIT ? EVO_QUANT_K_ABSMAX : -1,
                              cls[i].rotate && !k.fused_rot ? EVO_QUANT_K_ROTATE : -1};
        for (int r = 0; r < 3; r++) {
            if (roles[r] < 0) continue;
            if (out->n_variants == EVO_MAX_VARIANTS)
                return evo_fail(err, EVO_E_CONFIG, "quantize_fp8: the config's shapes need more than %d kernels",
                                EVO_MAX_VARIANTS);
            evo_variant *v = &out->variants[out->n_variants++];
            v->attr[QZ_V_ROLE] = roles[r];
            v->attr[QZ_V_DIM] = cls[i].dim;
            v->attr[QZ_V_DTYPE] = cls[i].dtype;
            v->attr[QZ_V_ROTATE] = cls[i].rotate;
            set_knob_attrs(v, &k);
            v->threads = 32 * k.warps + (roles[r] == EVO_QUANT_K_MAIN && k.mode == EVO_QUANT_MODE_PIPED ? 32 : 0);
            /* mode resident: its deepest ring, the most dynamic shared memory its plans launch with */
            /* modes staged and piped: the most a share of a head or a ring may take; mode streamed: its warps'
             * deepest rings */
            v->smem_bytes =
                roles[r] == EVO_QUANT_K_MAIN && k.mode == EVO_QUANT_MODE_RESIDENT
                    ? (int)((unsigned long long)evo_quant_ring(&k, arch_number(lim), 1) * evo_quant_chunk_bytes(&k))
                : roles[r] == EVO_QUANT_K_MAIN && k.mode == EVO_QUANT_MODE_STAGED
                    ? (int)evo_quant_smem_budget(arch_number(lim))
                : roles[r] == EVO_QUANT_K_MAIN && k.mode == EVO_QUANT_MODE_PIPED
                    ? (int)evo_quant_smem_budget(arch_number(lim)) - 1024 /* see evo_quant_piped */
                : roles[r] == EVO_QUANT_K_MAIN && k.mode == EVO_QUANT_MODE_STREAMED
                    ? (int)((unsigned long long)evo_quant_warp_ring(&k, arch_number(lim), 1) * k.warps *
                            (evo_quant_warp_chunk_bytes(&k) + 8ull))
                : roles[r] == EVO_QUANT_K_MAIN && k.mode == EVO_QUANT_MODE_LOCAL && k.keep == 1 && cls[i].rotate &&
                        k.fused_rot
                    ? (int)evo_quant_smem_budget(arch_number(lim)) /* the kept floats' slots, as many as fit */
                    : 0;
            snprintf(v->name_expr, sizeof v->name_expr, "%s<%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d>",
                     kernel_names[roles[r]], cls[i].dim, cls[i].dtype, cls[i].rotate, k.vec, k.warps, k.mode, k.cluster,
                     k.keep, k.unroll, k.iters, k.cvt, k.cache, k.fused_rot);
        }
    }
    return EVO_OK;
}

static evo_status quantize_handwritten(const evo_config *cfg, evo_program *out, evo_err *err)
{
    (void)cfg, (void)out;
    return evo_fail(err, EVO_E_USAGE,
                    "quantize_fp8: evo check runs hand-written attention_fp8 kernels only; search quantizers with "
                    "evo run --config configs/quantize.yaml");
}

bool evo_qz_serves(const evo_variant *v, const evo_shape *s)
{
    return v->attr[QZ_V_ROLE] == EVO_QUANT_K_MAIN && v->attr[QZ_V_DIM] == s->v[QZ_DIM] &&
           v->attr[QZ_V_DTYPE] == s->v[QZ_DTYPE] && v->attr[QZ_V_ROTATE] == s->v[QZ_ROTATE];
}

static int quantize_pick(const evo_variant *v, int n, const evo_shape *s, int sm_count)
{
    (void)sm_count;
    for (int i = 0; i < n; i++)
        if (evo_qz_serves(&v[i], s)) return i;
    return -1;
}

static void quantize_variant_label(const evo_variant *v, char *buf, size_t n)
{
    snprintf(buf, n, "d%lld%s%s%s", v->attr[QZ_V_DIM], v->attr[QZ_V_DTYPE] ? " bf16" : "",
             v->attr[QZ_V_ROTATE] ? " rot" : "",
             v->attr[QZ_V_ROLE] == EVO_QUANT_K_MAIN     ? ""
             : v->attr[QZ_V_ROLE] == EVO_QUANT_K_ABSMAX ? " absmax"
                                                        : " rotate");
}

/* The fewest bytes a quantization moves: every input element read once (2 bytes), every code written once (1 byte),
 * one float scale per head written. Bandwidth = these bytes / time. */
static double quantize_bytes(const evo_shape *s)
{
    const double heads = (double)s->v[QZ_BATCH] * s->v[QZ_HEADS];
    return heads * (double)s->v[QZ_SEQ] * s->v[QZ_DIM] * 3.0 + heads * 4.0;
}

/* The dispatch bucket of a shape (evo_quantize_abi.h, evo_quant_size_class): rotated or not, and the power-of-two
 * class of its elements; the label says the range. */
static bool quantize_bucket(const evo_shape *s, evo_bucket *out)
{
    const unsigned long long n = (unsigned long long)s->v[QZ_BATCH] * (unsigned long long)s->v[QZ_HEADS] *
                                 (unsigned long long)s->v[QZ_SEQ] * (unsigned long long)s->v[QZ_DIM];
    const int k = evo_quant_size_class(n);
    memset(out, 0, sizeof *out);
    out->key[0] = s->v[QZ_ROTATE] != 0;
    out->key[1] = k;
    if (k == EVO_QUANT_SIZE_CLASS_MIN)
        snprintf(out->label, sizeof out->label, "%s, up to 2^%d elements", out->key[0] ? "rotated" : "plain", k);
    else
        snprintf(out->label, sizeof out->label, "%s, 2^%d+1..2^%d elements", out->key[0] ? "rotated" : "plain", k - 1,
                 k);
    return true;
}

static const char *const quantize_headers[] = {"evo_quantize_abi.h", NULL};

evo_status evo_qz_export_body(const struct evo_export_ctx *x, evo_str *out, evo_err *err);
evo_status evo_qz_export_dispatch_body(const struct evo_export_dispatch_ctx *x, evo_str *out, evo_err *err);
extern const evo_task_gpu evo_qz_gpu;

const evo_task evo_task_quantize_fp8 = {
    .name = "quantize_fp8",
    .summary = "FP8 quantizer: fp16/bf16 [B,H,S,D] -> e4m3 codes + per-head scales, optionally Hadamard-rotated",
    .template_file = "quantize_fp8.cu",
    .headers = quantize_headers,
    .knobs = quantize_knobs,
    .knob_defaults = quantize_defaults,
    .knob_legal = quantize_legal,
    .launch_knobs = quantize_launch_knobs,
    .shape_fields = quantize_shape_fields,
    .n_shape_fields = QZ_N_FIELDS,
    .options = NULL,
    .n_options = 0,
    .variant_attrs = quantize_variant_attrs,
    .n_variant_attrs = QZ_N_VATTRS,
    .shape_check = quantize_shape_check,
    .can_implement = quantize_can_implement,
    .render = quantize_render,
    .handwritten = quantize_handwritten,
    .serves = evo_qz_serves,
    .pick = quantize_pick,
    .variant_label = quantize_variant_label,
    .work = quantize_bytes,
    .rate_unit = "GB/s",
    .rate_key = "gbps",
    .rate_scale = 1e9,
    .export_body = evo_qz_export_body,
    .bucket = quantize_bucket,
    .export_dispatch_body = evo_qz_export_dispatch_body,
    .kernel_prefix = "evo_quant",
    .gpu = &evo_qz_gpu,
};
