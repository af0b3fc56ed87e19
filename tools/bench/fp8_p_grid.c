/* fp8_p_grid.c — how P is scaled and summed in an FP8 attention kernel, emulated on the CPU with the FP8 model's
 * own arithmetic (attn_numerics.h: e4m3 codes, k-steps of 32 with the 13-bit accumulator): (1) the end-to-end RMSE
 * of each P grid on FlashAttention-3's outlier inputs against FP64, and (2) the fp8 gate's per-element bound on the
 * gate's own inputs (evo's generator and quantizer), a kernel of one P grid and tiling against the model of another.
 * Data: docs/data/fp8-p-grid-cpu-2026-11-28.txt; the findings: docs/results.md, "The fp8 accuracy class".
 *
 *   cc -O2 -std=gnu11 -I tasks/attention_fp8 -I engine/core -I engine/config tools/bench/fp8_p_grid.c \
 *      tasks/attention_fp8/attn_ref.c engine/core/numerics.c engine/core/evo.c -lm -o fp8_p_grid
 *   ./fp8_p_grid rmse HEADS S D               one head after another, outlier inputs (seeded), every grid
 *   ./fp8_p_grid gate B H S D DIST SEED CAUSAL [SOFTMAX_SCALE]
 *                                             DIST: the generator's distribution, or 100 + a structural probe's
 *                                             number (attn_numerics.h; its own softmax scale unless one is given)
 *                                             worst element / bound of each grid and tiling against the model
 *                                             (the project's model, or with MODEL=max448 a 128-key exact-max one;
 *                                             GRIDS=0,2 and TILES=64,8192 pick grids and tiles)
 */
#include "attn_ref.h"
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float e4r(float x) { return evo_ref_e4m3_decode(evo_ref_e4m3_encode(x)); }
#define AN_FN static inline
#define AN_E4M3_ROUND(x) e4r(x)
#include "attn_numerics.h"

/* A P grid: the row offset (integer ⌈max⌉ or the exact max), the scale (2^8 or 448) and the row sum (0: of the
 * unrounded p; 1: of P̃; 2: of P̃ where it is not 0, of p where it rounded to 0). */
typedef struct {
    const char *name;
    int exact_max;
    double offset;
    int sum_rounded;
    int o_acc; /* P·V of each key tile into a fresh accumulator, added to O in FP32 (H_O_ACC) */
} grid;

static const grid GRIDS[] = {
    {"ceil+8 (the model)", 0, 8.0, 0},
    {"ceil+log2(448)", 0, 8.807354922057604, 0},
    {"ceil+8, l = sum P~", 0, 8.0, 1},
    {"ceil+log2(448), l = sum P~", 0, 8.807354922057604, 1},
    {"exact max+log2(448)", 1, 8.807354922057604, 0},
    {"exact max+log2(448), l = sum P~", 1, 8.807354922057604, 1},
    /* later additions keep the indices above (GRIDS= in docs/data) */
    {"ceil+8, l = sum (P~ or p if P~ = 0)", 0, 8.0, 2},
    {"ceil+8, l = sum (P~ or p), O in FP32", 0, 8.0, 2, 1},
};
#define N_GRIDS (int)(sizeof GRIDS / sizeof GRIDS[0])

/* One query row on decoded codes, keys in tiles of `tile` (the online softmax's blocks), the model's k-steps. */
static void row(const grid *g, int tile, const float *q, const float *k, const float *v, int n, int d, float qk,
                float sl, float vs, float *out)
{
    float acc[128], tacc[128] = {0}, x2[8192], pt[AN_FP8_KSTEP], x[AN_FP8_KSTEP], m = 0, l = 0;
    int started = 0;
    for (int t = 0; t < d; t++) acc[t] = 0;
    for (int b0 = 0; b0 < n; b0 += tile) {
        const int b1 = n < b0 + tile ? n : b0 + tile;
        float mb = 0;
        for (int j = b0; j < b1; j++) {
            x2[j - b0] = an_logit2(q, k + (size_t)j * d, d, qk, sl, 0);
            mb = j == b0 || x2[j - b0] > mb ? x2[j - b0] : mb;
        }
        const float mc = g->exact_max ? mb : ceilf(mb);
        if (!started || mc > m) {
            if (started) {
                const float r = (float)an_exp2((double)m - mc);
                l *= r;
                for (int t = 0; t < d; t++) acc[t] *= r;
            }
            m = mc, started = 1;
        }
        for (int s0 = b0; s0 < b1; s0 += AN_FP8_KSTEP) {
            const int nn = b1 - s0 < AN_FP8_KSTEP ? b1 - s0 : AN_FP8_KSTEP;
            for (int j = 0; j < nn; j++) {
                const float p = (float)an_exp2((double)x2[s0 + j - b0] - m + g->offset);
                pt[j] = e4r(p);
                l += g->sum_rounded == 1 || (g->sum_rounded == 2 && pt[j] != 0.0f) ? pt[j] : p;
            }
            for (int t = 0; t < d; t++) {
                for (int j = 0; j < nn; j++) x[j] = pt[j] * v[(size_t)(s0 + j) * d + t];
                (g->o_acc ? tacc : acc)[t] = an_kstep((g->o_acc ? tacc : acc)[t], x, nn);
            }
        }
        if (g->o_acc)
            for (int t = 0; t < d; t++) acc[t] += tacc[t], tacc[t] = 0;
    }
    for (int t = 0; t < d; t++) out[t] = (acc[t] * vs) / l;
}

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}
static double nrand(void)
{
    const double u = fmax(urand(), 1e-300), w = urand();
    return sqrt(-2 * log(u)) * cos(2 * M_PI * w);
}

/* Whether item is one of the comma-separated list. */
static int listed(const char *list, const char *item)
{
    const size_t n = strlen(item);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, item, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* Whether grid gi is in GRIDS (every grid when unset; the model, grid 0, always: the others are relative to it). */
static int picked(int gi)
{
    char gs[16];
    snprintf(gs, sizeof gs, "%d", gi);
    return gi == 0 || !getenv("GRIDS") || listed(getenv("GRIDS"), gs);
}

static int rmse(int heads, int s, int d)
{
    const size_t n = (size_t)s * d;
    float *x[3], *c[3], sc[3], *out = malloc(n * sizeof *out);
    double *ref = malloc(n * sizeof *ref), *sr = malloc((size_t)s * sizeof *sr), se[N_GRIDS] = {0};
    for (int t = 0; t < 3; t++) x[t] = malloc(n * sizeof(float)), c[t] = malloc(n * sizeof(float));
    for (int h = 0; h < heads; h++) {
        for (int t = 0; t < 3; t++) { /* fp16 N(0,1) + N(0,100)·Bernoulli(0.001), one scale a head */
            float amax = 0;
            for (size_t i = 0; i < n; i++) {
                const float a = (float)nrand() + (urand() < 0.001 ? (float)(10 * nrand()) : 0.0f);
                x[t][i] = evo_ref_half_to_float(evo_ref_float_to_half(a));
                amax = fmaxf(amax, fabsf(x[t][i]));
            }
            sc[t] = amax / 448.0f;
            for (size_t i = 0; i < n; i++) c[t][i] = e4r(x[t][i] / sc[t]);
        }
        const double scale = 1.0 / sqrt(d);
        for (int i = 0; i < s; i++) { /* FP64 on the fp16 inputs */
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < s; j++) {
                double a = 0;
                for (int t = 0; t < d; t++) a += (double)x[0][(size_t)i * d + t] * x[1][(size_t)j * d + t];
                sr[j] = a * scale, mx = fmax(mx, sr[j]);
            }
            for (int j = 0; j < s; j++) sr[j] = exp(sr[j] - mx), sum += sr[j];
            for (int t = 0; t < d; t++) {
                double o = 0;
                for (int j = 0; j < s; j++) o += sr[j] * x[2][(size_t)j * d + t];
                ref[(size_t)i * d + t] = o / sum;
            }
        }
        const float qk = sc[0] * sc[1], sl = (float)scale * 1.4426950408889634f;
        for (int gi = 0; gi < N_GRIDS; gi++) {
            if (!picked(gi)) continue;
            for (int i = 0; i < s; i++) row(&GRIDS[gi], 128, c[0] + (size_t)i * d, c[1], c[2], s, d, qk, sl, sc[2], out + (size_t)i * d);
            for (size_t i = 0; i < n; i++) se[gi] += (out[i] - ref[i]) * (out[i] - ref[i]);
        }
    }
    printf("end to end, %d head(s) of S %d, D %d, outlier inputs: RMSE against FP64 (fp16 output)\n", heads, s, d);
    for (int gi = 0; gi < N_GRIDS; gi++)
        if (picked(gi)) printf("  %-36s %.4e  (%+.1f %% vs the model)\n", GRIDS[gi].name, sqrt(se[gi] / ((double)n * heads)),
               100 * (sqrt(se[gi] / se[0]) - 1));
    return 0;
}

/* The decoded codes of head bh into qf, kf, vf. */
static void decode_head(uint8_t *const c[3], size_t bh, size_t hn, float *qf, float *kf, float *vf)
{
    for (size_t i = 0; i < hn; i++) {
        qf[i] = evo_ref_e4m3_decode(c[0][bh * hn + i]), kf[i] = evo_ref_e4m3_decode(c[1][bh * hn + i]);
        vf[i] = evo_ref_e4m3_decode(c[2][bh * hn + i]);
    }
}

/* Every head of grid g at tile `tile` into out (the codes and scales of the gate's quantizer). */
static void emulate(const grid *g, int tile, uint8_t *const c[3], float *const sc[3], int bhs, int s, int d, int causal,
                    double sm, float *qf, float *kf, float *vf, float *out)
{
    const size_t hn = (size_t)s * d;
    for (int bh = 0; bh < bhs; bh++) {
        decode_head(c, (size_t)bh, hn, qf, kf, vf);
        const float qk = sc[0][bh] * sc[1][bh], sl = (float)sm * 1.4426950408889634f;
        for (int i = 0; i < s; i++)
            row(g, tile, qf + (size_t)i * d, kf, vf, causal ? i + 1 : s, d, qk, sl, sc[2][bh], out + bh * hn + (size_t)i * d);
    }
}

static int gate(int b, int h, int s, int d, int dist, int seed, int causal, double sm)
{
    const size_t hn = (size_t)s * d, n = hn * b * h;
    uint16_t *x = malloc(n * sizeof *x);
    uint8_t *c[3];
    float *sc[3], *dq[3], *mo = malloc(n * sizeof *mo), *ko = malloc(n * sizeof *ko);
    float *qf = malloc(hn * sizeof *qf), *kf = malloc(hn * sizeof *kf), *vf = malloc(hn * sizeof *vf);
    double *ref = malloc(n * sizeof *ref);
    for (int t = 0; t < 3; t++) {
        if (dist >= 100) /* a structural probe (100 + its number in attn_numerics.h) */
            evo_ref_gen_probe(x, n, dist - 100, (uint64_t)seed, (uint32_t)t, s, d);
        else
            evo_ref_gen_inputs(x, n, hn, (uint64_t)seed, (uint32_t)t, dist);
        c[t] = malloc(n), sc[t] = malloc((size_t)(b * h) * sizeof(float)), dq[t] = malloc(n * sizeof(float));
        evo_ref_quantize(x, (size_t)(b * h), hn, EVO_FORMAT_E4M3, c[t], sc[t]);
        evo_ref_dequantize(c[t], sc[t], (size_t)(b * h), hn, EVO_FORMAT_E4M3, dq[t]);
    }
    evo_ref_attention(dq[0], dq[1], dq[2], ref, b, h, s, d, causal, sm);
    const char *model = getenv("MODEL");
    if (model && !strcmp(model, "max448")) /* a model of exact maxima in 128-key blocks */
        emulate(&GRIDS[4], 128, c, sc, b * h, s, d, causal, sm, qf, kf, vf, mo);
    else /* the project's model (bit for bit the gate's) */
        evo_ref_fp8_model(c[0], sc[0], c[1], sc[1], c[2], sc[2], mo, b, h, s, d, causal, (float)sm, 0);
    static const int tiles[] = {32, 64, 128, 256, 8192};
    const char *only_g = getenv("GRIDS"), *only_t = getenv("TILES"); /* e.g. GRIDS=0,2,4 TILES=64,8192 */
    for (int gi = 0; gi < N_GRIDS; gi++)
        for (int ti = 0; ti < 5; ti++) {
            char gs[16], ts[16];
            snprintf(gs, sizeof gs, "%d", gi), snprintf(ts, sizeof ts, "%d", tiles[ti]);
            if ((only_g && !listed(only_g, gs)) || (only_t && !listed(only_t, ts))) continue;
            emulate(&GRIDS[gi], tiles[ti], c, sc, b * h, s, d, causal, sm, qf, kf, vf, ko);
            double worst = 0, wk = 0, wm = 0;
            int wh = -1, wr = -1;
            for (int bh = 0; bh < b * h; bh++) { /* the gate's element bound on each head */
                double mm = 0, mk = 0, mref = 0;
                int rk = -1;
                for (size_t e = bh * hn; e < (bh + 1) * hn; e++) {
                    mm = fmax(mm, fabs(mo[e] - ref[e])), mref = fmax(mref, fabs(ref[e]));
                    if (fabs(ko[e] - ref[e]) > mk) mk = fabs(ko[e] - ref[e]), rk = (int)((e - bh * hn) / d);
                }
                const double ratio = mk / (AN_FP8_K * mm + AN_FP8_ABS_ATOL * mref);
                if (ratio > worst) worst = ratio, wh = bh, wr = rk, wk = mk, wm = mm;
            }
            printf("  %-36s tile %4d: worst element / bound %.3f (head %d row %d: %.4f, the model's max %.4f)\n",
                   GRIDS[gi].name, tiles[ti], worst, wh, wr, wk, wm);
        }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "rmse")) return rmse(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    if ((argc == 9 || argc == 10) && !strcmp(argv[1], "gate")) {
        const int d = atoi(argv[5]);
        if (atoi(argv[4]) > 8192 || d > 128) return fprintf(stderr, "S <= 8192, D <= 128\n"), 2;
        const int dist = atoi(argv[6]);
        if (dist < 0 || (dist > 4 && dist < 100) || dist >= 100 + AN_PROBE_COUNT)
            return fprintf(stderr, "DIST: 0-4 (a distribution) or 100-%d (a probe)\n", 99 + AN_PROBE_COUNT), 2;
        printf("gate, (%s,%s,%s,%s) dist %s seed %s causal %s:\n", argv[2], argv[3], argv[4], argv[5], argv[6], argv[7],
               argv[8]);
        const double sm = argc == 10 ? atof(argv[9])
                          : dist >= 100 ? (double)evo_ref_probe_softmax_scale(dist - 100, 0, d)
                                        : 1.0 / sqrt(d);
        return gate(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), d, dist, atoi(argv[7]), atoi(argv[8]), sm);
    }
    fprintf(stderr, "usage: fp8_p_grid rmse HEADS S D | fp8_p_grid gate B H S D DIST SEED CAUSAL [SOFTMAX_SCALE]\n");
    return 2;
}
