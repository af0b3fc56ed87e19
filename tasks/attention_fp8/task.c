/* task.c — the FP8 attention forward task, host side: its shape fields and options, the knobs of attention_fp8.cu
 * and their legal values, rendering a genome into NVRTC name expressions, the host-side
 * can_implement check (threads, shared memory, arch), which variant serves a shape, FLOP count, the table. */
#include "attention.h"

#include "attn_dispatch_host.h"
#include "attn_gate.h"
#include "attn_ref.h"
#include "attn_sm90_host.h"
#include "task_gpu.h"
#include "templates.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define AN_FN static inline
#include "attn_numerics.h"

/* ---- problem description ---- */

static const long long head_dims[] = {64, 128};
static const char *const format_names[] = {"e4m3", "u8sim", NULL};

static const evo_field attention_shape_fields[ATTN_N_FIELDS] = {
    [ATTN_BATCH] = {.name = "batch", .type = EVO_FIELD_INT, .min = 1, .max = 65535, .dflt = EVO_FIELD_REQUIRED},
    [ATTN_HEADS] = {.name = "heads", .type = EVO_FIELD_INT, .min = 1, .max = 65535, .dflt = EVO_FIELD_REQUIRED},
    [ATTN_SEQ] = {.name = "seq", .type = EVO_FIELD_INT, .min = 1, .max = 1 << 20, .dflt = EVO_FIELD_REQUIRED},
    [ATTN_DIM] = {.name = "head_dim",
                  .type = EVO_FIELD_INT,
                  .min = INT32_MIN,
                  .max = INT32_MAX,
                  .allowed = head_dims,
                  .n_allowed = 2,
                  .dflt = EVO_FIELD_REQUIRED},
    [ATTN_CAUSAL] = {.name = "causal",
                     .type = EVO_FIELD_BOOL,
                     .dflt = 0,
                     .axis = true,
                     .axis_default = {0, 1},
                     .n_axis_default = 2,
                     .doc = "key j is masked for query i when j > i"},
    [ATTN_SCALE] = {.name = "softmax_scale",
                    .type = EVO_FIELD_REAL,
                    .rmin = 0,
                    .rmax = 1e6,
                    .dflt = 0,
                    .axis = true,
                    .axis_cheap = true,
                    .axis_default = {0},
                    .n_axis_default = 1,
                    .doc = "scale of the scores; 0: the config's softmax_scale"},
};

static const evo_field attention_options[ATTN_N_OPTIONS] = {
    [ATTN_OPT_FORMAT] = {.name = "format",
                         .type = EVO_FIELD_ENUM,
                         .names = format_names,
                         .dflt = EVO_FORMAT_E4M3,
                         .doc = "8-bit encoding of Q, K, V"},
    [ATTN_OPT_SCALE] = {.name = "softmax_scale",
                        .type = EVO_FIELD_REAL,
                        .rmin = 0,
                        .rmax = 1e6,
                        .dflt = 0,
                        .doc = "scale of the scores; 0: 1/sqrt(head_dim)"},
};

static const evo_field attention_variant_attrs[ATTN_N_VATTRS] = {
    [ATTN_V_DIM] = {.name = "head_dim", .type = EVO_FIELD_INT, .min = 1, .max = 1024},
    [ATTN_V_FORMAT] = {.name = "format", .type = EVO_FIELD_ENUM, .names = format_names},
    [ATTN_V_ROWS] = {.name = "rows_per_block", .type = EVO_FIELD_INT, .min = 0, .max = 1 << 16},
    [ATTN_V_MIN_WAVES] = {.name = "min_waves", .type = EVO_FIELD_INT, .min = 0, .max = 1000},
    [ATTN_V_FAMILY] = {.name = "family", .type = EVO_FIELD_INT, .min = 0, .max = 1},
    [ATTN_V_WG_ROWS] = {.name = "wg_rows", .type = EVO_FIELD_INT, .min = 0, .max = 1024},
    [ATTN_V_TILE_N] = {.name = "tile_n", .type = EVO_FIELD_INT, .min = 0, .max = 1024},
    [ATTN_V_PERSIST] = {.name = "persist", .type = EVO_FIELD_INT, .min = 0, .max = 2},
    [ATTN_V_ROLE] = {.name = "role", .type = EVO_FIELD_INT, .min = 0, .max = ATTN_ROLE_TRANSPOSE},
};

const char *evo_attn_format_name(int format) { return format >= 0 && format < 2 ? format_names[format] : "?"; }

int evo_attn_format(const evo_config *cfg) { return (int)cfg->options[ATTN_OPT_FORMAT]; }

double evo_attn_softmax_scale(const evo_config *cfg, const evo_shape *s)
{
    const double own = evo_field_load(&s->task->shape_fields[ATTN_SCALE], s->v[ATTN_SCALE]);
    const double x = own > 0 ? own : cfg->options[ATTN_OPT_SCALE];
    return x > 0 ? x : 1.0 / sqrt((double)s->v[ATTN_DIM]);
}

static bool attention_shape_check(const evo_shape *s, char *why, size_t why_len)
{
    const double elems = (double)s->v[ATTN_BATCH] * s->v[ATTN_HEADS] * s->v[ATTN_SEQ] * s->v[ATTN_DIM];
    if (elems <= 2147483647.0) return true;
    snprintf(why, why_len, "batch*heads*seq*head_dim = %.0f elements, more than 2^31-1 per tensor", elems);
    return false;
}

/* FAMILY picks the template: 0 attention_fp8.cu (mma.sync, any arch from sm_80), 1 attention_fp8_sm90.cu (wgmma +
 * TMA, sm_90 only). The next fourteen knobs are family 0's template parameters after <HEAD_DIM, FORMAT> (and its
 * large-problem variant); the H_ knobs are family 1's after <D>, in order. A genome carries both sets; the family
 * it does not use ignores the other's knobs (the rendered program, and so the candidate, is the same). */
static const char *const attention_knobs[] = {
    "TILE_M",   "TILE_N",    "WARPS_M",     "WARPS_N",  "STAGES",          "SWIZZLE",    "PV_MMA",
    "QK_8BIT",  "F16_SMEM",  "MIN_BLOCKS",  "FAST_EXP", "CAUSAL_PAIR",     "BIG_TILE_M", "BIG_TILE_N",
    "FAMILY",   "H_WG_ROWS", "H_CONSUMERS", "H_TILE_N", "H_STAGES",        "H_PIPE",     "H_QK_MODE",
    "H_V_PATH", "H_OVERLAP", "H_PINGPONG",  "H_O_ACC",  "H_PRODUCER_REGS", "H_PERSIST",  NULL,
};
/* What a config that leaves a knob out gets; the first eleven must be written. BIG_TILE_M and BIG_TILE_N are not
 * template parameters: they describe the genome's large-problem variant (big_variant below). A config without
 * FAMILY searches family 0 alone; the H_ defaults are the fastest family 1 genome measured at (4,16,4096,128). */
static const int attention_defaults[] = {
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    EVO_KNOB_REQUIRED,
    0,
    0,
    64,
    ATTN_FAMILY_MMA,
    64,
    2,
    128,
    4,
    2,
    1,
    0,
    1,
    1,
    0,
    40,
    0,
};

/* The values the template can be instantiated with, knob by knob (static_asserts in attention_fp8.cu and
 * can_implement below hold the rules between knobs), in the order of attention_knobs. */
static const int warps_n_set[] = {1, 2, 4};
static const int big_tile_m_set[] = {0, 128, 256};
static const int h_wg_rows_set[] = {64, 128}, h_tile_n_set[] = {64, 128, 192, 256}, h_regs_set[] = {24, 32, 40, 56};
static const int h_v_path_set[] = {0, 1, 3, 4, 5}; /* 2 is no genome: the FP16-V entry of an exported file */
static const evo_knob_legal attention_legal[] = {
    {16, 256, 16, NULL, 0},       /* TILE_M      */
    {16, 256, 16, NULL, 0},       /* TILE_N      */
    {1, 8, 1, NULL, 0},           /* WARPS_M     */
    {0, 0, 0, warps_n_set, 3},    /* WARPS_N     */
    {1, 4, 1, NULL, 0},           /* STAGES      */
    {0, 1, 1, NULL, 0},           /* SWIZZLE     */
    {0, 1, 1, NULL, 0},           /* PV_MMA      */
    {0, 1, 1, NULL, 0},           /* QK_8BIT     */
    {0, 2, 1, NULL, 0},           /* F16_SMEM    */
    {1, 32, 1, NULL, 0},          /* MIN_BLOCKS  */
    {0, 1, 1, NULL, 0},           /* FAST_EXP    */
    {0, 1, 1, NULL, 0},           /* CAUSAL_PAIR */
    {0, 0, 0, big_tile_m_set, 3}, /* BIG_TILE_M  */
    {16, 256, 16, NULL, 0},       /* BIG_TILE_N  */
    {0, 1, 1, NULL, 0},           /* FAMILY      */
    {0, 0, 0, h_wg_rows_set, 2},  /* H_WG_ROWS   */
    {1, 3, 1, NULL, 0},           /* H_CONSUMERS */
    {0, 0, 0, h_tile_n_set, 4},   /* H_TILE_N    */
    {2, 4, 1, NULL, 0},           /* H_STAGES    */
    {0, 2, 1, NULL, 0},           /* H_PIPE      */
    {0, 2, 1, NULL, 0},           /* H_QK_MODE   */
    {0, 0, 0, h_v_path_set, 5},   /* H_V_PATH    */
    {0, 1, 1, NULL, 0},           /* H_OVERLAP   */
    {0, 1, 1, NULL, 0},           /* H_PINGPONG  */
    {0, 1, 1, NULL, 0},           /* H_O_ACC     */
    {0, 0, 0, h_regs_set, 4},     /* H_PRODUCER_REGS */
    {0, 2, 1, NULL, 0},           /* H_PERSIST   */
};
_Static_assert(EVO_ARRAY_LEN(attention_legal) == EVO_ARRAY_LEN(attention_knobs) - 1, "one legal set per knob");
/* FAMILY and the H_ knobs, the tail of attention_knobs: they came after databases of family 0 genomes, so a config
 * without them keeps the genome text (evo_task.optional_knobs). */
enum { KNOB_FAMILY = 14, KNOB_H_FIRST = 15, N_H_KNOBS = 12 };
_Static_assert(EVO_ARRAY_LEN(attention_knobs) == KNOB_H_FIRST + N_H_KNOBS + 1, "FAMILY and 12 H_ knobs end the list");

typedef struct {
    int tile_m, tile_n, warps_m, warps_n, stages, swizzle, pv_mma, qk_8bit, f16_smem, min_blocks, fast_exp, causal_pair;
    int big_tile_m, big_tile_n;
} attn_genome;

static void attn_read(const evo_config *cfg, const evo_genome *g, attn_genome *a)
{
    const evo_space *s = cfg->space;
    a->tile_m = evo_genome_get(s, g, "TILE_M", 64);
    a->tile_n = evo_genome_get(s, g, "TILE_N", 64);
    a->warps_m = evo_genome_get(s, g, "WARPS_M", 4);
    a->warps_n = evo_genome_get(s, g, "WARPS_N", 1);
    a->stages = evo_genome_get(s, g, "STAGES", 2);
    a->swizzle = evo_genome_get(s, g, "SWIZZLE", 1);
    a->pv_mma = evo_genome_get(s, g, "PV_MMA", 1);
    a->qk_8bit = evo_genome_get(s, g, "QK_8BIT", 0);
    a->f16_smem = evo_genome_get(s, g, "F16_SMEM", 0);
    a->min_blocks = evo_genome_get(s, g, "MIN_BLOCKS", 1);
    a->fast_exp = evo_genome_get(s, g, "FAST_EXP", 1);
    a->causal_pair = evo_genome_get(s, g, "CAUSAL_PAIR", 0);
    a->big_tile_m = evo_genome_get(s, g, "BIG_TILE_M", 0);
    a->big_tile_n = evo_genome_get(s, g, "BIG_TILE_N", 64);
}

/* Knob i of attention_knobs, or its default when the config's space has no such knob. */
static int knob_at(const evo_config *cfg, const evo_genome *g, int i)
{
    return evo_genome_get(cfg->space, g, attention_knobs[i], attention_defaults[i]);
}

static int attn_family(const evo_config *cfg, const evo_genome *g) { return knob_at(cfg, g, KNOB_FAMILY); }

/* Family 1's knobs: the H_ knobs in evo_sm90_genome's field order. */
static evo_sm90_genome sm90_read(const evo_config *cfg, const evo_genome *g)
{
    int v[N_H_KNOBS];
    for (int i = 0; i < N_H_KNOBS; i++) v[i] = knob_at(cfg, g, KNOB_H_FIRST + i);
    return (evo_sm90_genome){.wg_rows = v[0],
                             .consumers = v[1],
                             .tile_n = v[2],
                             .stages = v[3],
                             .pipe = v[4],
                             .qk_mode = v[5],
                             .v_path = v[6],
                             .overlap = v[7],
                             .pingpong = v[8],
                             .o_acc = v[9],
                             .producer_regs = v[10],
                             .persist = v[11]};
}

/* The large-problem variant of a genome with BIG_TILE_M > 0, at head dim 64: BIG_TILE_M rows per block with 32
 * rows per warp (each K/V fragment serves two row tiles), BIG_TILE_N keys per tile, one warp per key tile, all the
 * registers it wants, no causal pairing; the other knobs as the genome's. Chosen for problems with at least one
 * wave of such blocks (evo_variant_pick). */
static attn_genome big_variant(const attn_genome *a)
{
    attn_genome b = *a;
    b.tile_m = a->big_tile_m;
    b.warps_m = a->big_tile_m / 32;
    b.warps_n = 1;
    b.tile_n = a->big_tile_n;
    b.min_blocks = 1;
    b.causal_pair = 0; /* its blocks are few and long: pairing would leave SMs idle (and costs registers) */
    return b;
}

/* At head dim 128 a warp owns 16 rows: 32 rows would need 128 accumulator registers for O alone and every such
 * kernel spills. So the D = 128 variant of a genome with TILE_M / WARPS_M = 32 is instantiated with TILE_M / 2
 * (same warps, twice the blocks); docs/templates.md states the rule. */
static attn_genome attn_for_dim(const attn_genome *a, int d)
{
    attn_genome e = *a;
    if (d == 128 && a->warps_m > 0 && a->tile_m / a->warps_m == 32) e.tile_m = a->tile_m / 2;
    return e;
}

/* Must equal AttnCfg<...>::SMEM in attention_fp8.cu (the kernel traps when launched with less). */
static int attn_smem_bytes(const attn_genome *a, int d)
{
    const int nw = a->warps_m * a->warps_n, rpw = a->tile_m / a->warps_m, mt = rpw / 16;
    const int kw = a->tile_n / a->warps_n;
    const int v16 = a->f16_smem >= 1, k16 = a->f16_smem >= 2 && !a->qk_8bit;
    const int pipe = a->tile_m * d + 2 * a->stages * a->tile_n * d + (v16 + k16) * a->tile_n * d * 2 +
                     (a->pv_mma ? 0 : nw * (rpw * kw + rpw) * 4);
    const int merge = (a->warps_n - 1) * a->warps_m * 32 * (mt * (d / 8) * 4 + 4 * mt) * 4;
    return pipe > merge ? pipe : merge;
}

/* Head dimensions the config's shapes need, ascending. */
static int attn_head_dims(const evo_config *cfg, int dims[2])
{
    int has64 = 0, has128 = 0;
    for (int i = 0; i < cfg->n_shapes; i++)
        has64 |= cfg->shapes[i].v[ATTN_DIM] == 64, has128 |= cfg->shapes[i].v[ATTN_DIM] == 128;
    for (int i = 0; i < cfg->correctness.n_shapes; i++)
        has64 |= cfg->correctness.shapes[i].v[ATTN_DIM] == 64, has128 |= cfg->correctness.shapes[i].v[ATTN_DIM] == 128;
    int n = 0;
    if (has64) dims[n++] = 64;
    if (has128) dims[n++] = 128;
    return n;
}

/* Family 1: Hopper (sm_90) only, e4m3 only, and attn_sm90_check's rules at every head dim the config needs, on the
 * genome that head dim's kernel is built with (attn_sm90_at_dim). */
static evo_verdict sm90_can_implement(const evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                                      char *why, size_t why_len)
{
    if (lim->sm_major != 9 || lim->sm_minor != 0) {
        snprintf(why, why_len, "FAMILY=1 (wgmma + TMA) runs on sm_90 (H100, H200) only, not %s", lim->arch);
        return EVO_V_INVALID;
    }
    if (evo_attn_format(cfg) != EVO_FORMAT_E4M3) {
        snprintf(why, why_len, "FAMILY=1 takes format e4m3 only (u8sim is no wgmma type)");
        return EVO_V_INVALID;
    }
    const evo_sm90_genome g1 = sm90_read(cfg, g);
    int dims[2];
    const int nd = attn_head_dims(cfg, dims);
    for (int i = 0; i < nd; i++) {
        const evo_sm90_genome h = attn_sm90_at_dim(&g1, dims[i]);
        if (attn_sm90_threads(&h) > lim->max_threads_per_block) {
            snprintf(why, why_len, "%d threads per block > %d on %s", attn_sm90_threads(&h), lim->max_threads_per_block,
                     lim->arch);
            return EVO_V_RESOURCE_FAIL;
        }
        const char *bad = attn_sm90_check(&h, dims[i], lim->max_smem_per_block_optin);
        if (!bad) continue;
        snprintf(why, why_len, "FAMILY=1 at head dim %d: %s", dims[i], bad);
        return strstr(bad, "shared memory") ? EVO_V_RESOURCE_FAIL : EVO_V_INVALID;
    }
    return EVO_V_OK;
}

/* Family 1 runs on sm_90 only (sm90_can_implement): elsewhere a space with FAMILY keeps to family 0. */
static const char *attention_arch_rule(const evo_config *cfg, const char *arch, char *why, size_t why_len)
{
    const int k = evo_space_find_knob(cfg->space, "FAMILY");
    if (k < 0 || !arch || !strcmp(arch, "sm_90")) return NULL;
    bool has_sm90 = false;
    for (int i = 0; i < evo_space_domain_size(cfg->space, k); i++)
        has_sm90 |= evo_space_value(cfg->space, k, i) == ATTN_FAMILY_SM90;
    if (!has_sm90) return NULL;
    snprintf(why, why_len, "FAMILY=1 (wgmma + TMA) runs on sm_90 (H100, H200) only, not %s", arch);
    return "FAMILY == 0";
}

static evo_verdict attention_can_implement(const evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                                           char *why, size_t why_len)
{
    if (attn_family(cfg, g) == ATTN_FAMILY_SM90) return sm90_can_implement(cfg, g, lim, why, why_len); /* legal: 0, 1 */
    attn_genome a;
    attn_read(cfg, g, &a);
    const int rpw = a.warps_m > 0 ? a.tile_m / a.warps_m : 0;
    if (a.warps_m <= 0 || a.tile_m % a.warps_m != 0 || (rpw != 16 && rpw != 32)) {
        snprintf(why, why_len, "TILE_M/WARPS_M = %d/%d: each warp must own 16 or 32 rows", a.tile_m, a.warps_m);
        return EVO_V_INVALID;
    }
    if (a.warps_n <= 0 || a.tile_n % (16 * a.warps_n) != 0) {
        snprintf(why, why_len, "TILE_N/WARPS_N = %d/%d: each warp's key slice must be a multiple of 16", a.tile_n,
                 a.warps_n);
        return EVO_V_INVALID;
    }
    if (!a.pv_mma && (a.warps_n != 1 || a.f16_smem)) {
        snprintf(why, why_len, "PV_MMA=0 (FMA P·V) takes WARPS_N=1 and F16_SMEM=0");
        return EVO_V_INVALID;
    }
    if (a.f16_smem < 0 || a.f16_smem > 2) {
        snprintf(why, why_len, "F16_SMEM=%d: 0 (none), 1 (V) or 2 (K and V)", a.f16_smem);
        return EVO_V_INVALID;
    }
    if (a.big_tile_m != 0 && a.big_tile_m != 128 && a.big_tile_m != 256) {
        snprintf(why, why_len, "BIG_TILE_M=%d: 0 (no large-problem variant), 128 or 256", a.big_tile_m);
        return EVO_V_INVALID;
    }
    if (a.big_tile_m && (a.big_tile_n < 16 || a.big_tile_n % 16 != 0)) {
        snprintf(why, why_len, "BIG_TILE_N=%d: a multiple of 16", a.big_tile_n);
        return EVO_V_INVALID;
    }
    if (a.stages < 1 || a.stages > 4) {
        snprintf(why, why_len, "STAGES=%d: the pipeline is 1 to 4 deep", a.stages);
        return EVO_V_INVALID;
    }
    const int threads = a.warps_m * a.warps_n * 32;
    if (threads > lim->max_threads_per_block) {
        snprintf(why, why_len, "%d threads per block > %d on %s", threads, lim->max_threads_per_block, lim->arch);
        return EVO_V_RESOURCE_FAIL;
    }
    if (a.qk_8bit && evo_attn_format(cfg) == EVO_FORMAT_E4M3 && lim->sm_major * 10 + lim->sm_minor < 89) {
        snprintf(why, why_len, "QK_8BIT=1 with e4m3 needs the FP8 mma of sm_89 or newer (target %s)", lim->arch);
        return EVO_V_INVALID;
    }
    int dims[2];
    const int nd = attn_head_dims(cfg, dims);
    for (int i = 0; i < nd + (a.big_tile_m && nd > 0 && dims[0] == 64); i++) {
        const bool big = i == nd;
        const int d = big ? 64 : dims[i];
        const attn_genome e = big ? big_variant(&a) : attn_for_dim(&a, d);
        if (big && e.warps_m * 32 > lim->max_threads_per_block) {
            snprintf(why, why_len, "the large-problem variant's %d threads > %d", e.warps_m * 32,
                     lim->max_threads_per_block);
            return EVO_V_RESOURCE_FAIL;
        }
        const int smem = attn_smem_bytes(&e, d);
        if (smem > lim->max_smem_per_block_optin) {
            snprintf(why, why_len, "%d bytes of shared memory at head dim %d%s > %d on %s", smem, d,
                     big ? " (large-problem variant)" : "", lim->max_smem_per_block_optin, lim->arch);
            return EVO_V_RESOURCE_FAIL;
        }
    }
    return EVO_V_OK;
}

/* Family 1: one kernel per head dim, compiled for sm_90a (its wgmma and setmaxnreg exist there only). */
static evo_status sm90_render(const evo_config *cfg, const evo_genome *g, evo_program *out, evo_err *err)
{
    const char *text;
    evo_status s = evo_template_get("attention_fp8_sm90.cu", &text, NULL, err);
    if (s != EVO_OK) return s;
    memset(out, 0, sizeof *out);
    out->source = evo_strdup(text);
    snprintf(out->program_name, sizeof out->program_name, "attention_fp8_sm90.cu");
    snprintf(out->arch, sizeof out->arch, "sm_90a");
    const evo_sm90_genome g1 = sm90_read(cfg, g);
    int dims[2];
    const int nd = attn_head_dims(cfg, dims);
    for (int i = 0; i < nd; i++) {
        const evo_sm90_genome h = attn_sm90_at_dim(&g1, dims[i]); /* three consumers may be two at head dim 128 */
        evo_variant *v = &out->variants[out->n_variants++];
        v->attr[ATTN_V_DIM] = dims[i];
        v->attr[ATTN_V_FORMAT] = EVO_FORMAT_E4M3;
        v->attr[ATTN_V_ROWS] = attn_sm90_rows_per_block(&h);
        v->attr[ATTN_V_MIN_WAVES] = 0;
        v->attr[ATTN_V_FAMILY] = ATTN_FAMILY_SM90;
        v->attr[ATTN_V_WG_ROWS] = h.wg_rows;
        v->attr[ATTN_V_TILE_N] = h.tile_n;
        v->attr[ATTN_V_PERSIST] = h.persist;
        v->attr[ATTN_V_ROLE] = h.v_path == 3 ? ATTN_ROLE_KV16 : h.v_path == 5 ? ATTN_ROLE_VT : ATTN_ROLE_ATTN;
        v->threads = attn_sm90_threads(&h);
        v->smem_bytes = attn_sm90_smem_bytes(&h, dims[i]);
        if (attn_sm90_name_expr(&h, dims[i], v->name_expr, sizeof v->name_expr) < 0) {
            evo_program_free(out);
            return evo_fail(err, EVO_E_INTERNAL, "name expression too long");
        }
    }
    if ((g1.v_path == 3 || g1.v_path == 5) && nd > 0) { /* K and V to FP16 (3) or V to Vᵀ (5) before the attention
                                                          kernels, every call (timed with them) */
        evo_variant *v = &out->variants[out->n_variants++];
        v->attr[ATTN_V_DIM] = dims[0];
        v->attr[ATTN_V_FORMAT] = EVO_FORMAT_E4M3;
        v->attr[ATTN_V_FAMILY] = ATTN_FAMILY_SM90;
        v->attr[ATTN_V_ROLE] = g1.v_path == 3 ? ATTN_ROLE_CONVERT : ATTN_ROLE_TRANSPOSE;
        v->threads = ATTN_CONVERT_THREADS;
        snprintf(v->name_expr, sizeof v->name_expr, "%s", g1.v_path == 3 ? ATTN_CONVERT_NAME : ATTN_TRANSPOSE_NAME);
    }
    return EVO_OK;
}

static evo_status attention_render(const evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                                   evo_program *out, evo_err *err)
{
    (void)lim;
    if (attn_family(cfg, g) == ATTN_FAMILY_SM90) return sm90_render(cfg, g, out, err);
    const char *text;
    evo_status s = evo_template_get("attention_fp8.cu", &text, NULL, err);
    if (s != EVO_OK) return s;
    memset(out, 0, sizeof *out);
    out->source = evo_strdup(text);
    snprintf(out->program_name, sizeof out->program_name, "attention_fp8.cu");
    attn_genome a;
    attn_read(cfg, g, &a);
    int dims[2];
    const int nd = attn_head_dims(cfg, dims);
    for (int i = 0; i < nd + (a.big_tile_m && nd > 0 && dims[0] == 64); i++) {
        const bool big = i == nd;
        const attn_genome e = big ? big_variant(&a) : attn_for_dim(&a, dims[i]);
        evo_variant *v = &out->variants[out->n_variants++];
        const int d = big ? 64 : dims[i];
        v->attr[ATTN_V_DIM] = d;
        v->attr[ATTN_V_MIN_WAVES] = big ? 1 : 0;
        v->attr[ATTN_V_FORMAT] = evo_attn_format(cfg);
        v->attr[ATTN_V_ROWS] = e.tile_m;
        v->threads = e.warps_m * e.warps_n * 32;
        v->smem_bytes = attn_smem_bytes(&e, d);
        snprintf(v->name_expr, sizeof v->name_expr, "evo_attn_fwd<%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d>", d,
                 evo_attn_format(cfg), e.tile_m, e.tile_n, e.warps_m, e.warps_n, e.stages, e.swizzle, e.pv_mma,
                 e.qk_8bit, e.f16_smem, e.min_blocks, e.fast_exp, e.causal_pair);
    }
    return EVO_OK;
}

/* A hand-written kernel defines one extern "C" entry point per head dimension the config's shapes need. */
static evo_status attention_handwritten(const evo_config *cfg, evo_program *out, evo_err *err)
{
    (void)err;
    memset(out, 0, sizeof *out);
    int dims[2];
    const int nd = attn_head_dims(cfg, dims);
    for (int i = 0; i < nd; i++) {
        evo_variant *v = &out->variants[out->n_variants++];
        snprintf(v->name_expr, sizeof v->name_expr, "evo_attn_d%d", dims[i]);
        v->attr[ATTN_V_DIM] = dims[i];
        v->attr[ATTN_V_FORMAT] = evo_attn_format(cfg);
    }
    return EVO_OK;
}

static bool attention_serves(const evo_variant *v, const evo_shape *s)
{
    return !attn_role_is_pre(v->attr[ATTN_V_ROLE]) && v->attr[ATTN_V_DIM] == s->v[ATTN_DIM];
}

static void attention_variant_label(const evo_variant *v, char *buf, size_t n)
{
    if (attn_role_is_pre(v->attr[ATTN_V_ROLE])) {
        snprintf(buf, n, "%s", v->attr[ATTN_V_ROLE] == ATTN_ROLE_TRANSPOSE ? "vt" : "kv16");
        return;
    }
    snprintf(buf, n, "d%lld%s", v->attr[ATTN_V_DIM],
             v->attr[ATTN_V_FAMILY] == ATTN_FAMILY_SM90 ? "wg"
             : v->attr[ATTN_V_MIN_WAVES]                ? "big"
                                                        : "");
}

/* Among the variants of the shape's head dim, the one with the largest min_waves whose grid (ceil(S/rows) x H x B
 * blocks; half of that for a causal problem, whose work is half) reaches min_waves x sm_count. The exported
 * launcher (export_harness.cu) applies the same rule. */
static int attention_pick(const evo_variant *v, int n, const evo_shape *s, int sm_count)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        const long long rows = v[i].attr[ATTN_V_ROWS];
        if (!attention_serves(&v[i], s) || rows <= 0) continue;
        long long blocks = (s->v[ATTN_SEQ] + rows - 1) / rows * s->v[ATTN_HEADS] * s->v[ATTN_BATCH];
        if (s->v[ATTN_CAUSAL]) blocks /= 2;
        if (blocks < v[i].attr[ATTN_V_MIN_WAVES] * sm_count) continue;
        if (best < 0 || v[i].attr[ATTN_V_MIN_WAVES] > v[best].attr[ATTN_V_MIN_WAVES]) best = i;
    }
    return best;
}

/* Q·Kᵀ and P·V: 2 FLOPs per multiply-add each; causal computes the lower triangle, diagonal included. */
static double attention_flops(const evo_shape *s)
{
    const double bh = (double)s->v[ATTN_BATCH] * s->v[ATTN_HEADS], n = (double)s->v[ATTN_SEQ];
    const double pairs = s->v[ATTN_CAUSAL] ? n * (n + 1) / 2.0 : n * n;
    return 4.0 * bh * pairs * (double)s->v[ATTN_DIM];
}

/* ---- accuracy classes and probes (attn_gate.h, attn_numerics.h) ---- */

static const char *const attention_accuracy[] = {EVO_ACCURACY_EXACT, "fp8", NULL};

/* fp8: a sm_90a genome whose Q·Kᵀ (QK_MODE 0, 1) or P·V (V_PATH 0, 4, 5) runs on e4m3 tensor cores; everything else
 * (family 0, the FP16 paths) multiplies and adds at FP16 precision or better. */
static int attention_genome_accuracy(const evo_config *cfg, const evo_genome *g)
{
    if (attn_family(cfg, g) != ATTN_FAMILY_SM90) return ATTN_ACC_EXACT;
    const evo_sm90_genome h = sm90_read(cfg, g);
    return h.qk_mode < 2 || h.v_path == 0 || h.v_path == 4 || h.v_path == 5 ? ATTN_ACC_FP8 : ATTN_ACC_EXACT;
}

static const evo_probe attention_probes[AN_PROBE_COUNT] = {
    [AN_PROBE_HEADS] = {"heads", "every head with its own scales of Q, K and V; each head judged on its own"},
    [AN_PROBE_NEEDLE] = {"needle", "key i+1 aligned with query i: a causal mask that leaks one key fails"},
    [AN_PROBE_LAST_KEY] = {"last_key", "the last key dominates every row: dropped keys fail"},
    [AN_PROBE_MODERATE] = {"moderate", "logits of std 1.5 at softmax scales 0.5, 1 and 2 / sqrt(head_dim)"},
    [AN_PROBE_INTEGERS] = {"integers", "small integers, softmax scale ln 2: every P exact in e4m3"},
};

static int attention_probe_cases(const evo_config *cfg, const evo_shape *s, int probe, evo_shape *out, int max)
{
    (void)cfg;
    const evo_field *f = &attention_shape_fields[ATTN_SCALE];
    const int d = (int)s->v[ATTN_DIM];
    const int n = probe == AN_PROBE_MODERATE ? 3 : 1;
    for (int i = 0; i < n && i < max; i++) {
        out[i] = *s;
        const float sm = evo_ref_probe_softmax_scale(probe, i, d);
        if (sm != 0.0f) out[i].v[ATTN_SCALE] = evo_field_store(f, (double)sm);
    }
    return n < max ? n : max;
}

/* The range a class of attn_dispatch_host.h holds: lo..hi (lo = 1 for the lowest class). */
static long long class_lo(int k, int lowest) { return k <= lowest ? 1 : (1LL << (k - 1)) + 1; }
static long long class_hi(int k) { return 1LL << k; }

/* The dispatch bucket of a shape (attn_dispatch_host.h): head dim, causal, and the power-of-two classes of seq and of
 * batch·heads; the label says the ranges. */
static bool attention_bucket(const evo_shape *s, evo_bucket *out)
{
    const int sk = attn_dispatch_class(s->v[ATTN_SEQ], ATTN_SEQ_CLASS_MIN);
    const int bk = attn_dispatch_class(s->v[ATTN_BATCH] * s->v[ATTN_HEADS], ATTN_BH_CLASS_MIN);
    memset(out, 0, sizeof *out);
    out->key[0] = s->v[ATTN_DIM];
    out->key[1] = s->v[ATTN_CAUSAL] != 0;
    out->key[2] = sk;
    out->key[3] = bk;
    snprintf(out->label, sizeof out->label, "d%lld %s seq %lld..%lld bh %lld..%lld", s->v[ATTN_DIM],
             s->v[ATTN_CAUSAL] ? "causal" : "non-causal", class_lo(sk, ATTN_SEQ_CLASS_MIN), class_hi(sk),
             class_lo(bk, ATTN_BH_CLASS_MIN), class_hi(bk));
    return true;
}

static const char *const attention_headers[] = {"evo_attention_abi.h", NULL};

evo_status evo_attn_export_body(const struct evo_export_ctx *x, evo_str *out, evo_err *err);
evo_status evo_attn_export_dispatch_body(const struct evo_export_dispatch_ctx *x, evo_str *out, evo_err *err);
extern const evo_task_gpu evo_attn_gpu;

const evo_task evo_task_attention_fp8 = {
    .name = "attention_fp8",
    .summary = "FP8 attention forward: 8-bit Q, K, V with per-head scales, FP32 accumulation, FP16 output",
    .template_file = "attention_fp8.cu",
    .headers = attention_headers,
    .knobs = attention_knobs,
    .knob_defaults = attention_defaults,
    .knob_legal = attention_legal,
    .optional_knobs = &attention_knobs[KNOB_FAMILY],
    .shape_fields = attention_shape_fields,
    .n_shape_fields = ATTN_N_FIELDS,
    .options = attention_options,
    .n_options = ATTN_N_OPTIONS,
    .variant_attrs = attention_variant_attrs,
    .n_variant_attrs = ATTN_N_VATTRS,
    .shape_check = attention_shape_check,
    .can_implement = attention_can_implement,
    .arch_rule = attention_arch_rule,
    .render = attention_render,
    .handwritten = attention_handwritten,
    .serves = attention_serves,
    .pick = attention_pick,
    .variant_label = attention_variant_label,
    .work = attention_flops,
    .rate_unit = "TFLOP/s",
    .rate_key = "tflops",
    .rate_scale = 1e12,
    .export_body = evo_attn_export_body,
    .bucket = attention_bucket,
    .export_dispatch_body = evo_attn_export_dispatch_body,
    .torch_module = evo_attn_torch_module,
    .torch_companion = "variants/quantize_fp8-%s-*.cu",
    .torch_option = "quantizer",
    .torch_option_help = "the quantizer to put in front (a .cu evo export wrote; default: the one file\n"
                         "variants/quantize_fp8-<arch>-*.cu here, else among those installed with evo)",
    .torch_module_name = "evo_fp8",
    .kernel_prefix = "evo_attn",
    .accuracy_classes = attention_accuracy,
    .genome_accuracy = attention_genome_accuracy,
    .gate_version = 2, /* 2: accuracy classes, structural probes, per-head checks */
    .probes = attention_probes,
    .n_probes = AN_PROBE_COUNT,
    .probe_cases = attention_probe_cases,
    .gpu = &evo_attn_gpu,
};
