/* attn_sm90_host.c — legality, launch geometry, name expressions and tensor maps of the sm_90a attention family
 * (see attn_sm90_host.h). The shared-memory formula mirrors Sm90Cfg in attention_fp8_sm90.cu.
 */
#include "attn_sm90_host.h"

#include <stdio.h>
#include <string.h>

/* cuTensorMapEncodeTiled's enum values (cuda.h, CUDA 12 and 13). */
enum {
    TMAP_UINT8 = 0,
    TMAP_FLOAT16 = 6,
    TMAP_INTERLEAVE_NONE = 0,
    TMAP_SWIZZLE_64B = 2,
    TMAP_SWIZZLE_128B = 3,
    TMAP_L2_PROMOTION_128B = 2,
    TMAP_OOB_FILL_ZERO = 0,
};

static int in_list(int v, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v) return 1;
    return 0;
}

static int align1024(int x) { return (x + 1023) / 1024 * 1024; }

/* V_PATH 2, 3: V given in FP16, loaded by the TMA thread (no raw V ring; FP16 tensor maps). */
static int v_given_f16(const evo_sm90_genome *g) { return g->v_path == 2 || g->v_path == 3; }
/* V_PATH 4, 5: e4m3 P̃ whose row sums come from the P·V GEMM (8 rows of ones in every Vᵀ column block). */
static int gemm_sums(const evo_sm90_genome *g) { return g->v_path == 4 || g->v_path == 5; }
/* The producer warpgroup's warps 1-3 convert or transpose (K to FP16 with QK_MODE 2; V unless it arrives by TMA as
 * it is used: V_PATH 2, 3 and 5); otherwise the producer is the one TMA thread */
static int producer_transforms(const evo_sm90_genome *g)
{
    return g->qk_mode == 2 || !(v_given_f16(g) || g->v_path == 5);
}

/* The shared memory of a plan with qb Q buffers (and FP16 copies) and os bytes of output staging rows:
 * sm90_smem_plan() of the template */
static int smem_plan(int q_bytes, int rings, int q16_bytes, int stages, int qb, int os)
{
    return align1024(qb * q_bytes) + rings + qb * q16_bytes + os + (3 + 7 * stages + (qb == 2 ? 3 : 0)) * 8 + 1024;
}
/* The template's measurement override of the output staging rows (0: none); tools/bench builds pass the same -D to
 * both sides */
#ifndef EVO_SM90_O_SMEM
#define EVO_SM90_O_SMEM (-1)
#endif

int attn_sm90_threads(const evo_sm90_genome *g) { return (g->consumers + (g->pipe == 2)) * 128; }

int attn_sm90_rows_per_block(const evo_sm90_genome *g) { return g->wg_rows * g->consumers; }

int attn_sm90_smem_bytes(const evo_sm90_genome *g, int d)
{
    const int q_bytes = attn_sm90_rows_per_block(g) * d, kv = g->tile_n * d;
    /* V_PATH 1: FP16 V plus a 64-column block of ones (the row sums of P come out of the P·V GEMM) */
    /* V_PATH 4: e4m3 Vᵀ blocks of D + 8 rows (8 rows of ones), the stage rounded up to 1 KiB */
    const int vt = gemm_sums(g) ? align1024(g->tile_n * (d + 8)) : g->v_path ? g->tile_n * (d + 64) * 2 : kv;
    const int nx = g->pipe == 2 ? g->stages : 1;
    const int q16 = g->qk_mode == 2 ? 2 * q_bytes : 0, k16 = g->qk_mode == 2 ? 2 * kv : 0;
    /* the raw rings: V_PATH 2 and 3 load V in FP16 (no raw V), V_PATH 3 K too (no raw K) */
    const int kr = g->v_path == 3 ? 0 : kv, vr = v_given_f16(g) || g->v_path == 5 ? 0 : kv; /* 5: Vᵀ by TMA */
    const int rings = g->stages * (kr + vr) + nx * vt + nx * k16;
    /* two Q buffers and FP16 copies where a block walks several items with the producer and FP16 Q·Kᵀ, if they fit
     * (Sm90Cfg::QB) */
    const int qb = g->pipe == 2 && g->qk_mode == 2 && g->persist != 0 &&
                           smem_plan(q_bytes, rings, q16, g->stages, 2, 0) <= 227 * 1024
                       ? 2
                       : 1;
    /* the output staging rows with the producer, if they fit beside that (Sm90Cfg::OS): 16 rows of D halves + 16
     * bytes for each consumer warp */
    const int os_want = g->pipe == 2 && EVO_SM90_O_SMEM != 0 ? g->consumers * 4 * 16 * (2 * d + 16) : 0;
    const int os = smem_plan(q_bytes, rings, q16, g->stages, qb, os_want) <= 227 * 1024 ? os_want : 0;
    return smem_plan(q_bytes, rings, q16, g->stages, qb, os);
}

/* Registers a consumer thread has: 255 with one consumer warpgroup (or none with a producer), otherwise what
 * setmaxnreg gives (RegSplit in the kernel), or the launch-bounds cap without a producer. */
static int consumer_regs(const evo_sm90_genome *g)
{
    const int r0 = 65536 / attn_sm90_threads(g) / 8 * 8;
    if (g->pipe != 2 || g->consumers == 1) return r0 > 255 ? 255 : r0;
    const int rc = ((g->consumers + 1) * r0 - g->producer_regs) / g->consumers / 8 * 8;
    return rc > 256 ? 256 : rc;
}

/* Live accumulator registers of a consumer thread: S (TILE_N/2 per m64 tile), O (D/2; (D+8)/2 with V_PATH 1 and 4,
 * whose P·V also sums P), the P·V tile accumulator (O_ACC), V_PATH 4's tile row sums (4), the P fragments (e4m3:
 * TILE_N/8, f16: TILE_N/4) and Q's fragments (QK_MODE 1: D/8). */
static int accumulator_regs(const evo_sm90_genome *g, int d)
{
    const int mt = g->wg_rows / 64, o = (g->v_path ? d + 8 : d) / 2;
    const int p_regs = g->v_path && !gemm_sums(g) ? g->tile_n / 4 : g->tile_n / 8;
    return mt *
           (g->tile_n / 2 + o + (g->o_acc ? o : 0) + (gemm_sums(g) ? 4 : 0) + p_regs + (g->qk_mode == 1 ? d / 8 : 0));
}

int attn_sm90_reg_slack(const evo_sm90_genome *g, int d) { return consumer_regs(g) - accumulator_regs(g, d); }

/* A consumer compiles without spills when its accumulators leave 32 of its registers free, 48 with PERSIST except
 * with V_PATH 4 and 5; two 64-row consumer warpgroups with V_PATH 4 and 5 need 24 (28 with Q in registers, QK_MODE 1)
 * (measured with ptxas 13.0: tools/sm90_nvrtc_check --slack 32,47 --persist and --slack 24,31; docs/perf-notes.md). */
static int regs_fit(const evo_sm90_genome *g, int d)
{
    int need = g->persist && !gemm_sums(g) ? 48 : 32;
    if (gemm_sums(g) && g->consumers == 2 && g->wg_rows == 64) need = g->qk_mode == 1 ? 28 : 24;
    return attn_sm90_reg_slack(g, d) >= need;
}

const char *attn_sm90_check(const evo_sm90_genome *g, int d, int max_smem_optin)
{
    static const int wg_rows[] = {64, 128}, tiles[] = {64, 128, 192, 256}, regs[] = {24, 32, 40, 56};
    if (d != 64 && d != 128) return "head dim must be 64 or 128";
    if (!in_list(g->wg_rows, wg_rows, 2)) return "WG_ROWS must be 64 or 128";
    if (g->consumers < 1 || g->consumers > 3) return "CONSUMERS must be 1, 2 or 3";
    if (!in_list(g->tile_n, tiles, 4)) return "TILE_N must be 64, 128, 192 or 256";
    if (g->stages < 2 || g->stages > 4) return "STAGES must be 2, 3 or 4";
    if (g->pipe < 0 || g->pipe > 2) return "PIPE must be 0 (cp.async), 1 (TMA ring) or 2 (producer warpgroup)";
    if (g->qk_mode < 0 || g->qk_mode > 2)
        return "QK_MODE must be 0 (e4m3, Q in smem), 1 (e4m3, Q in registers) or 2 (FP16)";
    if (g->v_path < 0 || g->v_path > 5)
        return "V_PATH must be 0 (e4m3), 1 (FP16), 2 (V given in FP16), 3 (K and V given in FP16), 4 (e4m3, the row "
               "sum from the GEMM) or 5 (4 with Vᵀ given)";
    if (v_given_f16(g) && g->pipe != 2) return "V_PATH=2 and 3 need PIPE=2 (the TMA thread loads the FP16 V)";
    if (g->v_path == 4 && g->pipe != 2) return "V_PATH=4 needs PIPE=2 (the producer writes Vᵀ and its ones)";
    if (g->v_path == 5 && g->pipe != 2) return "V_PATH=5 needs PIPE=2 (the TMA thread loads Vᵀ)";
    if (g->v_path == 3 && g->qk_mode != 2) return "V_PATH=3 needs QK_MODE=2 (K given in FP16 to the FP16 Q·Kᵀ)";
    if (g->overlap != 0 && g->overlap != 1) return "OVERLAP must be 0 or 1";
    if (g->overlap && g->pipe != 2) return "OVERLAP=1 needs PIPE=2";
    if (g->pingpong != 0 && g->pingpong != 1) return "PINGPONG must be 0 or 1";
    if (g->pingpong && !(g->overlap && g->consumers == 2)) return "PINGPONG=1 needs OVERLAP=1 and CONSUMERS=2";
    if (g->o_acc != 0 && g->o_acc != 1) return "O_ACC must be 0 or 1";
    if (!in_list(g->producer_regs, regs, 4)) return "PRODUCER_REGS must be 24, 32, 40 or 56";
    if (g->persist < 0 || g->persist > 2)
        return "PERSIST must be 0, 1 (tile by tile over the heads) or 2 (head by head)";
    if (attn_sm90_smem_bytes(g, d) > max_smem_optin) return "shared memory over the device's opt-in limit";
    /* setmaxnreg leaves the producer warpgroup PRODUCER_REGS (PIPE 2, two consumers or more). Measured with ptxas
     * 13.0: its transforms need 40, 56 with PERSIST (docs/perf-notes.md) and 56 where they convert Q and K to FP16
     * beside the transpose of V (QK_MODE 2 with V_PATH 0 or 4: 33 of 54 such genomes spilled at 40 with 64- or
     * 192-key tiles, docs/data/nvrtc-qk2-transpose-2026-11-29.log; with the transpose's steps unrolled (its addresses
     * from immediates) 128- and 256-key tiles too, docs/data/nvrtc-transpose-2026-11-29.log); a producer that only
     * issues TMA needs 24, 32 with PERSIST 2, where 24 spilled in 24 of 39 sampled genomes (tools/sm90_nvrtc_check
     * --producer-below 56 --vpath 5, docs/data/nvrtc-tma-producer-2026-11-29.log) */
    if (g->pipe == 2 && g->consumers >= 2) {
        const int tr = producer_transforms(g), both = g->qk_mode == 2 && (g->v_path == 0 || g->v_path == 4);
        const int need = tr ? (g->persist || both ? 56 : 40) : g->persist == 2 ? 32 : 24;
        if (g->producer_regs < need)
            return tr ? "PRODUCER_REGS too small: the producer's transforms spill (40 needed; 56 with PERSIST, or "
                        "with FP16 scores beside the transpose of V)"
                      : "PRODUCER_REGS too small: the persistent TMA producer spills (32 needed with PERSIST 2)";
    }
    /* FP16 scores with a persistent producer warpgroup: its loop state beside the K conversion spills at head dim 64
     * with V_PATH 0, 4 and 5 (39 of 350 sampled genomes); V_PATH 1 and 3, and PIPE 0 and 1, compile clean
     * (tools/sm90_nvrtc_check --persist --qk 2, docs/data/nvrtc-qk2-persist-2026-11-29.log) */
    if (g->persist && g->qk_mode == 2 && g->pipe == 2 && g->v_path != 1 && g->v_path != 3)
        return "PERSIST with QK_MODE=2 and a producer warpgroup spills unless V_PATH is 1 or 3";
    if (!regs_fit(g, d)) return "accumulators do not fit the consumer's registers";
    return NULL;
}

evo_sm90_genome attn_sm90_at_dim(const evo_sm90_genome *g, int d)
{
    evo_sm90_genome h = *g;
    if (d == 128 && g->consumers == 3 && g->pipe == 2 && !regs_fit(g, d)) {
        h.consumers = 2;
        if (!regs_fit(&h, d)) h = *g; /* two do not fit either: g is illegal */
    } else if (d == 128 && g->consumers == 2 && g->tile_n == 256 && g->pipe == 2 && !regs_fit(g, d)) {
        h.tile_n = 192;
        if (!regs_fit(&h, d)) h = *g; /* 192 keys do not fit either: g is illegal */
    }
    return h;
}

void attn_sm90_grid(const evo_sm90_genome *g, int batch, int heads, int seq, int sm_count, unsigned grid[3])
{
    const int rows = attn_sm90_rows_per_block(g);
    const unsigned nq = (unsigned)((seq + rows - 1) / rows);
    if (g->persist) {
        const unsigned long long items = (unsigned long long)nq * (unsigned)heads * (unsigned)batch;
        grid[0] = (unsigned)(items < (unsigned long long)sm_count ? items : (unsigned long long)sm_count);
        grid[1] = grid[2] = 1;
    } else {
        grid[0] = nq;
        grid[1] = (unsigned)heads;
        grid[2] = (unsigned)batch;
    }
}

int attn_sm90_name_expr(const evo_sm90_genome *g, int d, char *buf, size_t len)
{
    const int n = snprintf(buf, len, "evo_attn_sm90<%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d>", d, g->wg_rows,
                           g->consumers, g->tile_n, g->stages, g->pipe, g->qk_mode, g->v_path, g->overlap, g->pingpong,
                           g->o_acc, g->producer_regs, g->persist);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* A [B·H, S, D] tensor of bytes as a 3-D map {D, S, B·H}, box {D, rows, 1}: rows past S read as zeros. */
static int encode_one(evo_tmap *m, unsigned long long addr, const evo_attn_params *p, unsigned rows,
                      evo_tmap_encode_fn encode)
{
    const unsigned long long d = (unsigned long long)p->head_dim, s = (unsigned long long)p->seq;
    const unsigned long long dim[3] = {d, s, (unsigned long long)p->batch * (unsigned long long)p->heads};
    const unsigned long long stride[2] = {d, s * d};
    const unsigned box[3] = {(unsigned)d, rows, 1}, estride[3] = {1, 1, 1};
    memset(m, 0, sizeof *m);
    return encode(m, TMAP_UINT8, 3, (void *)(size_t)addr, dim, stride, box, estride, TMAP_INTERLEAVE_NONE,
                  p->head_dim == 128 ? TMAP_SWIZZLE_128B : TMAP_SWIZZLE_64B, TMAP_L2_PROMOTION_128B,
                  TMAP_OOB_FILL_ZERO);
}

/* V_PATH 2 (and K with V_PATH 3): p->v is FP16 [B·H, S, D]: a 3-D map {D, S, B·H} of 2-byte elements, box {64, rows, 1} (one 128-byte
 * column block; the kernel loads D/64 of them per tile), 128-byte swizzle, rows past S read as zeros. */
static int encode_v16(evo_tmap *m, unsigned long long addr, const evo_attn_params *p, unsigned rows,
                      evo_tmap_encode_fn encode)
{
    const unsigned long long d = (unsigned long long)p->head_dim, s = (unsigned long long)p->seq;
    const unsigned long long dim[3] = {d, s, (unsigned long long)p->batch * (unsigned long long)p->heads};
    const unsigned long long stride[2] = {2 * d, 2 * s * d};
    const unsigned box[3] = {64, rows, 1}, estride[3] = {1, 1, 1};
    memset(m, 0, sizeof *m);
    return encode(m, TMAP_FLOAT16, 3, (void *)(size_t)addr, dim, stride, box, estride, TMAP_INTERLEAVE_NONE,
                  TMAP_SWIZZLE_128B, TMAP_L2_PROMOTION_128B, TMAP_OOB_FILL_ZERO);
}

/* V_PATH 5: p->v is Vᵀ, [B·H, D, S16] bytes (S16 = S rounded up to 16): a 3-D map {S16, D, B·H}, box {VB, D, 1}
 * (one column block of the stage: VB = 128 keys, 64 where TILE_N is not a multiple of 128), VB-byte swizzle, keys
 * past S16 read as zeros. */
static int encode_vt(evo_tmap *m, unsigned long long addr, const evo_attn_params *p, unsigned tile_n,
                     evo_tmap_encode_fn encode)
{
    const unsigned long long d = (unsigned long long)p->head_dim, s16 = attn_sm90_vt_seq(p->seq);
    const unsigned long long dim[3] = {s16, d, (unsigned long long)p->batch * (unsigned long long)p->heads};
    const unsigned long long stride[2] = {s16, s16 * d};
    const unsigned vb = tile_n % 128 == 0 ? 128 : 64, box[3] = {vb, (unsigned)d, 1}, estride[3] = {1, 1, 1};
    memset(m, 0, sizeof *m);
    return encode(m, TMAP_UINT8, 3, (void *)(size_t)addr, dim, stride, box, estride, TMAP_INTERLEAVE_NONE,
                  vb == 128 ? TMAP_SWIZZLE_128B : TMAP_SWIZZLE_64B, TMAP_L2_PROMOTION_128B, TMAP_OOB_FILL_ZERO);
}

int attn_sm90_vt_seq(int seq) { return (seq + 15) / 16 * 16; }

int attn_sm90_fill_tmaps(evo_attn_tmaps *t, const evo_attn_params *p, const evo_sm90_genome *g,
                         evo_tmap_encode_fn encode)
{
    int r = encode_one(&t->q, (unsigned long long)(size_t)p->q, p, (unsigned)g->wg_rows, encode);
    if (r == 0)
        r = g->v_path == 3 ? encode_v16(&t->k, (unsigned long long)(size_t)p->k, p, (unsigned)g->tile_n, encode)
                           : encode_one(&t->k, (unsigned long long)(size_t)p->k, p, (unsigned)g->tile_n, encode);
    if (r == 0)
        r = v_given_f16(g)   ? encode_v16(&t->v, (unsigned long long)(size_t)p->v, p, (unsigned)g->tile_n, encode)
            : g->v_path == 5 ? encode_vt(&t->v, (unsigned long long)(size_t)p->v, p, (unsigned)g->tile_n, encode)
                             : encode_one(&t->v, (unsigned long long)(size_t)p->v, p, (unsigned)g->tile_n, encode);
    return r;
}
