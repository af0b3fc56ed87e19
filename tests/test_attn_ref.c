/* test_attn_ref.c — the CPU number formats, quantizer, generator, FP64 reference attention and metrics
 * (engine/core/numerics.h, tasks/attention_fp8/attn_ref.h) on fixed values, exhaustive sweeps and independent oracles.
 * Run: ctest --test-dir build -R test_attn_ref --output-on-failure
 */
#include "attn_ref.h"
#include "check.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* ---- fp16 ---- */

static void test_half_fixed(void)
{
    CHECK_EQ_INT(evo_ref_float_to_half(1.0f), 0x3c00);
    CHECK_EQ_INT(evo_ref_float_to_half(-2.0f), 0xc000);
    CHECK_EQ_INT(evo_ref_float_to_half(65504.0f), 0x7bff);
    CHECK_EQ_INT(evo_ref_float_to_half(65519.0f), 0x7bff);
    CHECK_EQ_INT(evo_ref_float_to_half(65520.0f), 0x7c00); /* the tie above the largest half goes to even: inf */
    CHECK_EQ_INT(evo_ref_float_to_half(1e6f), 0x7c00);
    CHECK_EQ_INT(evo_ref_float_to_half(INFINITY), 0x7c00);
    CHECK_EQ_INT(evo_ref_float_to_half(-INFINITY), 0xfc00);
    CHECK_EQ_INT(evo_ref_float_to_half(NAN), 0x7e00);
    CHECK_EQ_INT(evo_ref_float_to_half(0.0f), 0x0000);
    CHECK_EQ_INT(evo_ref_float_to_half(-0.0f), 0x8000);
    CHECK_EQ_INT(evo_ref_float_to_half(0.1f), 0x2e66);
    CHECK_EQ_INT(evo_ref_float_to_half(0x1p-14f), 0x0400); /* smallest normal */
    CHECK_EQ_INT(evo_ref_float_to_half(0x1p-24f), 0x0001); /* smallest subnormal */
    CHECK_EQ_INT(evo_ref_float_to_half(-0x1p-24f), 0x8001);
    CHECK_EQ_INT(evo_ref_float_to_half(0x1p-25f), 0x0000);                 /* tie between 0 and 2^-24: even is 0 */
    CHECK_EQ_INT(evo_ref_float_to_half(0x1.000002p-25f), 0x0001);          /* just above the tie */
    CHECK_EQ_INT(evo_ref_float_to_half(0x3p-25f), 0x0002);                 /* tie between 1 and 2 units: 2 */
    CHECK_EQ_INT(evo_ref_float_to_half(0x5p-25f), 0x0002);                 /* tie between 2 and 3 units: 2 */
    CHECK_EQ_INT(evo_ref_float_to_half(1.0f + 0x1p-11f), 0x3c00);          /* tie: even mantissa 0x000 */
    CHECK_EQ_INT(evo_ref_float_to_half(1.0f + 0x3p-11f), 0x3c02);          /* tie: even mantissa 0x002 */
    CHECK_EQ_INT(evo_ref_float_to_half(0x1.ffcp-15f), 0x0400);             /* 1023.5 units rounds up into the normals */
    CHECK_EQ_INT(evo_ref_double_to_half(0x1p-1050), 0x0000);               /* a double subnormal */
    CHECK_EQ_INT(evo_ref_double_to_half(1.0 + 0x1p-11 + 0x1p-40), 0x3c01); /* above the tie, below float precision */

    CHECK(evo_ref_half_to_float(0x3c00) == 1.0f);
    CHECK(evo_ref_half_to_float(0x3555) == 0.333251953125f);
    CHECK(evo_ref_half_to_float(0x0001) == 0x1p-24f);
    CHECK(evo_ref_half_to_float(0x03ff) == 0x3ffp-24f);
    CHECK(evo_ref_half_to_float(0x0400) == 0x1p-14f);
    CHECK(evo_ref_half_to_float(0x7bff) == 65504.0f);
    CHECK(evo_ref_half_to_float(0xc000) == -2.0f);
    CHECK_EQ_INT(fbits(evo_ref_half_to_float(0x8000)), 0x80000000u);
    CHECK(isinf(evo_ref_half_to_float(0x7c00)) && evo_ref_half_to_float(0x7c00) > 0);
    CHECK(isinf(evo_ref_half_to_float(0xfc00)) && evo_ref_half_to_float(0xfc00) < 0);
    CHECK(isnan(evo_ref_half_to_float(0x7e00)) && isnan(evo_ref_half_to_float(0xfc01)));
}

/* Every half decodes and re-encodes to itself; every midpoint between neighbours rounds to the even one and the
 * doubles on either side of it round to the nearer one. */
static void test_half_exhaustive(void)
{
    int bad_round_trip = 0, bad_mid = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = evo_ref_half_to_float((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            if (!isnan(f) || (evo_ref_float_to_half(f) & 0x7fff) <= 0x7c00) bad_round_trip++;
            continue;
        }
        if (evo_ref_float_to_half(f) != h) bad_round_trip++;
        if ((h & 0x7fff) >= 0x7c00) continue;
        uint16_t up = (uint16_t)(h + 1); /* next larger magnitude, same sign; 0x7bff + 1 is inf */
        double lo = evo_ref_half_to_float((uint16_t)h);
        double hi = (up & 0x7fff) == 0x7c00 ? copysign(65536.0, lo) : evo_ref_half_to_float(up);
        double mid = (lo + hi) / 2; /* exact: both have at most 11 significant bits */
        uint16_t even = (h & 1) ? up : (uint16_t)h;
        if (evo_ref_double_to_half(mid) != even) bad_mid++;
        if (evo_ref_double_to_half(nextafter(mid, lo)) != h) bad_mid++;
        if (evo_ref_double_to_half(nextafter(mid, hi)) != up) bad_mid++;
        if (evo_ref_float_to_half(nextafterf((float)mid, (float)lo)) != h) bad_mid++;
        if (evo_ref_float_to_half(nextafterf((float)mid, (float)hi)) != up) bad_mid++;
    }
    CHECK_EQ_INT(bad_round_trip, 0);
    CHECK_EQ_INT(bad_mid, 0);
}

#ifdef __FLT16_MANT_DIG__
/* The compiler's own _Float16 conversion is an independent oracle. */
static void test_half_vs_compiler(void)
{
    evo_rng r;
    evo_rng_seed(&r, 7);
    int bad = 0;
    for (int i = 0; i < 2000000; i++) {
        uint64_t w = evo_rng_next(&r);
        float f;
        uint32_t u = (uint32_t)w;
        memcpy(&f, &u, sizeof f);
        double d = ldexp((double)(w >> 11) * 0x1p-53, (int)(w % 60) - 40) * ((w >> 10) & 1 ? -1 : 1);
        _Float16 hf = (_Float16)f, hd = (_Float16)d;
        uint16_t bf, bd;
        memcpy(&bf, &hf, 2);
        memcpy(&bd, &hd, 2);
        if (!isnan(f) && evo_ref_float_to_half(f) != bf) bad++;
        if (evo_ref_double_to_half(d) != bd) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}
#endif

/* ---- e4m3 ---- */

static void test_e4m3_fixed(void)
{
    CHECK_EQ_INT(evo_ref_e4m3_encode(448.0f), 0x7e);
    CHECK_EQ_INT(evo_ref_e4m3_encode(1.0f), 0x38);
    CHECK_EQ_INT(evo_ref_e4m3_encode(0.001953125f), 0x01); /* 2^-9, smallest subnormal */
    CHECK_EQ_INT(evo_ref_e4m3_encode(500.0f), 0x7e);       /* saturates */
    CHECK_EQ_INT(evo_ref_e4m3_encode(-500.0f), 0xfe);
    CHECK_EQ_INT(evo_ref_e4m3_encode(INFINITY), 0x7e);
    CHECK_EQ_INT(evo_ref_e4m3_encode(-INFINITY), 0xfe);
    CHECK_EQ_INT(evo_ref_e4m3_encode(NAN), 0x7f);
    CHECK_EQ_INT(evo_ref_e4m3_encode(-1.75f), 0xbe); /* sign 1, exponent 7, mantissa 110 */
    CHECK_EQ_INT(evo_ref_e4m3_encode(-1.5f), 0xbc);
    CHECK_EQ_INT(evo_ref_e4m3_encode(0.0f), 0x00);
    CHECK_EQ_INT(evo_ref_e4m3_encode(-0.0f), 0x80);
    CHECK_EQ_INT(evo_ref_e4m3_encode(0x1p-6f), 0x08);  /* smallest normal */
    CHECK_EQ_INT(evo_ref_e4m3_encode(0x7p-9f), 0x07);  /* largest subnormal */
    CHECK_EQ_INT(evo_ref_e4m3_encode(0x1p-10f), 0x00); /* tie between 0 and 2^-9: even is 0 */
    CHECK_EQ_INT(evo_ref_e4m3_encode(0x1.000002p-10f), 0x01);
    CHECK_EQ_INT(evo_ref_e4m3_encode(0x3p-10f), 0x02); /* tie between 1 and 2 units */
    CHECK_EQ_INT(evo_ref_e4m3_encode(0xfp-10f), 0x08); /* tie between 7 units and 2^-6: even mantissa */
    CHECK_EQ_INT(evo_ref_e4m3_encode(1.0625f), 0x38);  /* tie between 1 and 1.125 */
    CHECK_EQ_INT(evo_ref_e4m3_encode(1.1875f), 0x3a);  /* tie between 1.125 and 1.25 */
    CHECK_EQ_INT(evo_ref_e4m3_encode(1.0626f), 0x39);
    CHECK_EQ_INT(evo_ref_e4m3_encode(464.0f), 0x7e);    /* tie between 448 and the NaN slot */
    CHECK_EQ_INT(evo_ref_e4m3_encode(440.0f), 0x7e);    /* tie between 416 and 448: 448 is even */
    CHECK_EQ_INT(evo_ref_e4m3_encode(0x1p-127f), 0x00); /* a float subnormal */
    CHECK_EQ_INT(evo_ref_e4m3_encode(-0x1p-12f), 0x80);

    CHECK(evo_ref_e4m3_decode(0x7e) == 448.0f);
    CHECK(evo_ref_e4m3_decode(0xfe) == -448.0f);
    CHECK(evo_ref_e4m3_decode(0x38) == 1.0f);
    CHECK(evo_ref_e4m3_decode(0x01) == 0x1p-9f);
    CHECK(evo_ref_e4m3_decode(0x07) == 0x7p-9f);
    CHECK(evo_ref_e4m3_decode(0x08) == 0x1p-6f);
    CHECK(evo_ref_e4m3_decode(0xbe) == -1.75f);
    CHECK(evo_ref_e4m3_decode(0x00) == 0.0f);
    CHECK_EQ_INT(fbits(evo_ref_e4m3_decode(0x80)), 0x80000000u);
    CHECK(isnan(evo_ref_e4m3_decode(0x7f)) && isnan(evo_ref_e4m3_decode(0xff)));
}

/* Brute force: the nearest finite code, ties to the even code, beyond 448 saturated. */
static uint8_t e4m3_oracle(float x)
{
    if (isnan(x)) return 0x7f;
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double a = fabs((double)x);
    int best = 0;
    double best_d = INFINITY;
    for (int c = 0; c <= 0x7e; c++) {
        double d = fabs(a - evo_ref_e4m3_decode((uint8_t)c));
        if (d < best_d || (d == best_d && !(c & 1))) {
            best = c;
            best_d = d;
        }
    }
    if (a > 448.0) best = 0x7e;
    return (uint8_t)(sign | best);
}

static void test_e4m3_sweep(void)
{
    int bad_round_trip = 0;
    for (int c = 0; c < 256; c++) {
        if ((c & 0x7f) == 0x7f) continue;
        if (evo_ref_e4m3_encode(evo_ref_e4m3_decode((uint8_t)c)) != c) bad_round_trip++;
    }
    CHECK_EQ_INT(bad_round_trip, 0);

    /* midpoints between neighbouring codes and the floats next to them */
    int bad_mid = 0;
    for (int c = 0; c < 0x7e; c++) {
        float lo = evo_ref_e4m3_decode((uint8_t)c), hi = evo_ref_e4m3_decode((uint8_t)(c + 1));
        float mid = (lo + hi) / 2;
        for (int s = 0; s < 2; s++) {
            float m = s ? -mid : mid;
            if (evo_ref_e4m3_encode(m) != e4m3_oracle(m)) bad_mid++;
            if (evo_ref_e4m3_encode(nextafterf(m, 0.0f)) != e4m3_oracle(nextafterf(m, 0.0f))) bad_mid++;
            if (evo_ref_e4m3_encode(nextafterf(m, m * 2)) != e4m3_oracle(nextafterf(m, m * 2))) bad_mid++;
        }
        if (evo_ref_e4m3_encode(mid) != ((c & 1) ? c + 1 : c)) bad_mid++;
    }
    CHECK_EQ_INT(bad_mid, 0);

    evo_rng r;
    evo_rng_seed(&r, 11);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        float x = (float)ldexp(evo_rng_uniform(&r) * 2 - 1, (int)evo_rng_below(&r, 24) - 14);
        if (evo_ref_e4m3_encode(x) != e4m3_oracle(x)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* ---- u8sim ---- */

static void test_u8sim(void)
{
    CHECK_EQ_INT(evo_ref_u8sim_encode(448.0f, 1.0f), 255);
    CHECK_EQ_INT(evo_ref_u8sim_encode(-448.0f, 1.0f), 1);
    CHECK_EQ_INT(evo_ref_u8sim_encode(0.0f, 1.0f), 128);
    CHECK_EQ_INT(evo_ref_u8sim_encode(224.0f, 1.0f), 192); /* 191.5 */
    CHECK_EQ_INT(evo_ref_u8sim_encode(-224.0f, 1.0f), 65); /* 64.5 rounds away from zero */
    CHECK_EQ_INT(evo_ref_u8sim_encode(1000.0f, 1.0f), 255);
    CHECK_EQ_INT(evo_ref_u8sim_encode(-1000.0f, 1.0f), 0);
    CHECK_EQ_INT(evo_ref_u8sim_encode(NAN, 1.0f), 128);
    CHECK_EQ_INT(evo_ref_u8sim_encode(1.0f, 1.0f / 448.0f), 255);
    CHECK_EQ_INT(evo_ref_u8sim_encode(0.5f, 2.0f / 448.0f), 160); /* 0.25 * 127 + 128 = 159.75 */
    CHECK(evo_ref_u8sim_decode(255, 1.0f) == 448.0f);
    CHECK(evo_ref_u8sim_decode(128, 1.0f) == 0.0f);
    CHECK(evo_ref_u8sim_decode(1, 1.0f) == -448.0f);
    CHECK(evo_ref_u8sim_decode(0, 1.0f) == (-128.0f / 127.0f) * 448.0f);
    CHECK(evo_ref_u8sim_decode(255, 0.5f) == 224.0f);

    /* A value whose y lands exactly on n + 0.5 with n even: roundf goes up where round-to-even would not. */
    int found = 0;
    for (int n = 130; n < 250 && !found; n += 2) {
        float x0 = (float)((n + 0.5 - 128) / 127 * 448);
        for (int k = -8; k <= 8; k++) {
            float x = x0;
            for (int s = 0; s < abs(k); s++) x = nextafterf(x, k < 0 ? 0.0f : 1000.0f);
            volatile float t = x / 448.0f, p = t * 127.0f, y = p + 128.0f;
            if (y == (float)n + 0.5f) {
                CHECK_EQ_INT(evo_ref_u8sim_encode(x, 1.0f), n + 1);
                found = 1;
                break;
            }
        }
    }
    CHECK(found);
}

/* ---- quantizer ---- */

static float e4m3_half_step(float a) /* half the distance to the next code above |a| (a <= 448) */
{
    if (a < 0x1p-6f) return 0x1p-10f;
    int e;
    frexpf(a, &e); /* a in [2^(e-1), 2^e) */
    return ldexpf(1.0f, e - 1 - 4);
}

static void test_quantize(void)
{
    /* head 0 all zeros (one of them negative), head 1 with a known absmax */
    enum { N = 64 };
    uint16_t x[2 * N];
    uint8_t codes[2 * N];
    float scales[2], deq[2 * N];
    for (int i = 0; i < N; i++) x[i] = (i == 5) ? 0x8000 : 0;
    for (int i = 0; i < N; i++) x[N + i] = evo_ref_float_to_half((float)(i - 32) / 16.0f);
    x[N + 7] = evo_ref_float_to_half(-7.0f);
    for (int fmt = 0; fmt < 2; fmt++) {
        memset(codes, 0xaa, sizeof codes);
        evo_ref_quantize(x, 2, N, fmt, codes, scales);
        CHECK(scales[0] == 1.0f); /* not 1/448: an all-zero head keeps scale 1 */
        CHECK(scales[1] == 7.0f / 448.0f);
        evo_ref_dequantize(codes, scales, 2, N, fmt, deq);
        int nonzero = 0;
        for (int i = 0; i < N; i++) nonzero += deq[i] != 0.0f;
        CHECK_EQ_INT(nonzero, 0);
        CHECK_EQ_INT(codes[0], fmt == EVO_FORMAT_E4M3 ? 0x00 : 128);
        CHECK_EQ_INT(codes[5], fmt == EVO_FORMAT_E4M3 ? 0x80 : 128);
        CHECK_EQ_INT(codes[N + 7], fmt == EVO_FORMAT_E4M3 ? 0xfe : 1); /* the absmax element maps to -448 */
        CHECK(deq[N + 7] == -7.0f);
        CHECK(deq[N + 32] == 0.0f);
    }
    CHECK(evo_ref_head_scale(x + N, N) == 7.0f / 448.0f);

    /* random heads: error within half a step of each format (plus float rounding of the scale arithmetic) */
    enum { HEADS = 6, HE = 77 * 64 };
    uint16_t *xr = malloc(sizeof(uint16_t) * HEADS * HE);
    uint8_t *cr = malloc(HEADS * HE);
    float *dr = malloc(sizeof(float) * HEADS * HE), sr[HEADS];
    for (int dist = 0; dist < 5; dist++) {
        evo_ref_gen_inputs(xr, (size_t)HEADS * HE, HE, 3, EVO_TENSOR_K, dist);
        for (int fmt = 0; fmt < 2; fmt++) {
            evo_ref_quantize(xr, HEADS, HE, fmt, cr, sr);
            evo_ref_dequantize(cr, sr, HEADS, HE, fmt, dr);
            int bad = 0, saw_max = 0;
            for (int h = 0; h < HEADS; h++) {
                for (size_t i = (size_t)h * HE; i < (size_t)(h + 1) * HE; i++) {
                    float v = evo_ref_half_to_float(xr[i]);
                    float step = fmt == EVO_FORMAT_E4M3 ? e4m3_half_step(fabsf(v) / sr[h]) * sr[h]
                                                        : 0.5f * 448.0f * sr[h] / 127.0f;
                    if (!(fabsf(dr[i] - v) <= step * 1.0001f + 4 * FLT_EPSILON * fabsf(v))) bad++;
                    if (fabsf(v) == sr[h] * 448.0f || fabsf(v) / 448.0f == sr[h]) saw_max++;
                }
            }
            CHECK_EQ_INT(bad, 0);
            CHECK(saw_max >= HEADS - (dist == 3));
            if (dist == 3) CHECK(sr[0] == 1.0f);
        }
    }
    free(xr);
    free(cr);
    free(dr);
}

/* ---- generator ---- */

/* The first values of each distribution for seed 42, tensor Q: any change to the generator shows up here, and the
 * GPU test checks that evo_gen_inputs reproduces evo_ref_gen_value. */
static void test_gen_fixed(void)
{
    static const uint16_t expect[5][8] = {
        {0xb976, 0x3d21, 0x3134, 0x360e, 0x3b82, 0x36ff, 0xbb9d, 0x38c7}, /* normal */
        {0x385a, 0xb393, 0x3696, 0x3281, 0xbbb7, 0x3a7c, 0x2971, 0xb931}, /* uniform */
        {0xb976, 0x3d21, 0x3134, 0x360e, 0x3b82, 0x36ff, 0xbb9d, 0x38c7}, /* outliers: none among these */
        {0x0000, 0x0000, 0x0000, 0x0000, 0x3b82, 0x36ff, 0xbb9d, 0x38c7}, /* zero_head, head_elems 4 */
        {0xcd1f, 0x50cf, 0x44e1, 0x49ad, 0x4f09, 0x4a8f, 0xcf23, 0x4c7b}, /* large: 30 x normal */
    };
    for (int dist = 0; dist < 5; dist++)
        for (int i = 0; i < 8; i++)
            CHECK_EQ_INT(evo_ref_gen_value(42, EVO_TENSOR_Q, dist, 4, (uint64_t)i), expect[dist][i]);
    /* the first outliers of that tensor: -10.9766 at 785 (0.400146 without it), -6.25781 at 2285 */
    CHECK_EQ_INT(evo_ref_gen_value(42, EVO_TENSOR_Q, 0, 4, 785), 0x3667);
    CHECK_EQ_INT(evo_ref_gen_value(42, EVO_TENSOR_Q, 2, 4, 785), 0xc97d);
    CHECK_EQ_INT(evo_ref_gen_value(42, EVO_TENSOR_Q, 2, 4, 2285), 0xc642);
    int changed = 0;
    for (uint64_t i = 0; i < 785; i++)
        changed += evo_ref_gen_value(42, EVO_TENSOR_Q, 2, 4, i) != evo_ref_gen_value(42, EVO_TENSOR_Q, 0, 4, i);
    CHECK_EQ_INT(changed, 0);
    CHECK(evo_ref_gen_value(42, EVO_TENSOR_K, 0, 4, 0) != 0xb976);
}

/* The generator's own log and cosine against libm: the values may differ only where libm's double lies within
 * a hair of a half rounding boundary (or is a rounding error away from an exact zero). Also the moments of each
 * distribution. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t word(uint64_t seed, uint32_t tensor, uint32_t stream, uint64_t i)
{
    uint64_t key = mix(mix(seed + 0x9e3779b97f4a7c15ull) + (((uint64_t)tensor << 8) | stream) * 0xd1b54a32d192ed03ull);
    return mix(key + (i + 1) * 0x9e3779b97f4a7c15ull);
}
static double libm_normal(uint64_t w)
{
    double u1 = (double)((w >> 32) + 1) * 0x1p-32;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * (double)(uint32_t)w * 0x1p-32);
}

static void test_gen_distributions(void)
{
    enum { N = 1 << 20 };
    int mismatch = 0, near_tie = 0;
    double max_rel = 0;
    for (uint64_t i = 0; i < N; i++) {
        double d = libm_normal(word(9, EVO_TENSOR_V, 0, i));
        uint16_t got = evo_ref_gen_value(9, EVO_TENSOR_V, 0, 0, i);
        double g = evo_ref_half_to_float(got);
        if (got != evo_ref_double_to_half(d)) {
            mismatch++;
            /* libm's cos(2*pi*3/4) is -1.8e-16 where the quarter-turn reduction gives +0 exactly */
            if (evo_ref_double_to_half(d * (1 + 1e-13)) == got || evo_ref_double_to_half(d * (1 - 1e-13)) == got ||
                (fabs(d) < 1e-12 && g == 0))
                near_tie++;
        }
        if (fabs(d) > 1e-3) max_rel = fmax(max_rel, fabs(g - d) / fabs(d));
    }
    CHECK_EQ_INT(mismatch, near_tie);
    CHECK(mismatch < 4);
    CHECK(max_rel <= 0x1p-11 * 1.0001); /* half rounding only */

    uint16_t *x = malloc(sizeof(uint16_t) * N);
    for (int dist = 0; dist < 5; dist++) {
        evo_ref_gen_inputs(x, N, 4096, 1, EVO_TENSOR_Q, dist);
        double s1 = 0, s2 = 0, s4 = 0, mx = 0;
        long zeros = 0, big = 0;
        for (int i = 0; i < N; i++) {
            double v = evo_ref_half_to_float(x[i]);
            s1 += v;
            s2 += v * v;
            s4 += v * v * v * v;
            mx = fmax(mx, fabs(v));
            zeros += (x[i] & 0x7fff) == 0;
            big += fabs(v) > 8;
        }
        double mean = s1 / N, var = s2 / N - mean * mean;
        switch (dist) {
            case 0:
                CHECK_NEAR(mean, 0, 0.005);
                CHECK_NEAR(var, 1, 0.01);
                CHECK_NEAR(s4 / N, 3, 0.05); /* normal kurtosis */
                CHECK(mx > 4.5 && mx < 7);
                break;
            case 1:
                CHECK_NEAR(mean, 0, 0.005);
                CHECK_NEAR(var, 1.0 / 3, 0.005);
                CHECK(mx <= 1.0 && mx > 0.999);
                break;
            case 2: /* 0.1% outliers with standard deviation 10: about 1049 draws, ~43% of them beyond 8 */
                CHECK_NEAR(var, 1 + 0.001 * 100, 0.03);
                CHECK(big > 300 && big < 600);
                CHECK(mx > 20 && mx < 80);
                break;
            case 3:
                CHECK(zeros >= 4096 && zeros < 4096 + 10);
                for (int i = 0; i < 4096; i++) CHECK_EQ_INT(x[i], 0);
                CHECK(x[4096] != 0 || x[4097] != 0);
                CHECK_NEAR(var, 1, 0.01);
                break;
            case 4:
                CHECK_NEAR(var, 900, 9);
                CHECK(mx > 120 && mx < 220);
                break;
        }
    }
    /* ids and seeds give different streams, the index is the only state */
    CHECK(evo_ref_gen_value(1, 0, 0, 0, 5) != evo_ref_gen_value(1, 1, 0, 0, 5) ||
          evo_ref_gen_value(1, 0, 0, 0, 6) != evo_ref_gen_value(1, 1, 0, 0, 6));
    CHECK(evo_ref_gen_value(1, 0, 0, 0, 5) != evo_ref_gen_value(2, 0, 0, 0, 5) ||
          evo_ref_gen_value(1, 0, 0, 0, 6) != evo_ref_gen_value(2, 0, 0, 0, 6));
    CHECK_EQ_INT(x[1000], evo_ref_gen_value(1, EVO_TENSOR_Q, 4, 4096, 1000)); /* x holds dist 4 now */
    free(x);
}

/* ---- reference attention ---- */

static void test_ref_attention(void)
{
    /* S = 1: the output is v */
    {
        float q[4] = {3, -1, 2, 0.5f}, k[4] = {1, 2, 3, 4}, v[4] = {1, -2, 3.5f, 4};
        double o[4];
        for (int causal = 0; causal < 2; causal++) {
            evo_ref_attention(q, k, v, o, 1, 1, 1, 4, causal, 0.5);
            for (int t = 0; t < 4; t++) CHECK(o[t] == v[t]);
        }
    }
    /* two keys with equal scores: the average of their values */
    {
        float q[2 * 2] = {1, 2, -3, 0.25f}, k[2 * 2] = {0.5f, -1, 0.5f, -1}, v[2 * 2] = {1, 10, 3, -20};
        double o[4];
        evo_ref_attention(q, k, v, o, 1, 1, 2, 2, 0, 0.7);
        for (int i = 0; i < 2; i++) {
            CHECK_NEAR(o[i * 2 + 0], 2.0, 1e-15);
            CHECK_NEAR(o[i * 2 + 1], -5.0, 1e-15);
        }
    }
    /* 3x3 by hand: q_i = (i+1, 0), k_j = (j, 5), softmax_scale ln 2 -> weights 2^((i+1) j) */
    {
        float q[6] = {1, 0, 2, 0, 3, 0}, k[6] = {0, 5, 1, 5, 2, 5}, v[6] = {7, 0, 14, -1, 21, -2};
        double o[6];
        evo_ref_attention(q, k, v, o, 1, 1, 3, 2, 1, log(2.0));
        CHECK_NEAR(o[0], 7.0, 1e-12);
        CHECK_NEAR(o[1], 0.0, 1e-12);
        CHECK_NEAR(o[2], (7 + 4 * 14) / 5.0, 1e-12); /* row 1 sees keys 0, 1: weights 1, 4 */
        CHECK_NEAR(o[3], -4 / 5.0, 1e-12);
        CHECK_NEAR(o[4], (7 + 8 * 14 + 64 * 21) / 73.0, 1e-12);
        CHECK_NEAR(o[5], (-8 - 64 * 2) / 73.0, 1e-12);
        evo_ref_attention(q, k, v, o, 1, 1, 3, 2, 0, log(2.0));
        CHECK_NEAR(o[0], (7 + 2 * 14 + 4 * 21) / 7.0, 1e-12);
        CHECK_NEAR(o[1], (-2 - 4 * 2) / 7.0, 1e-12);
        CHECK_NEAR(o[2], (7 + 4 * 14 + 16 * 21) / 21.0, 1e-12);
        CHECK_NEAR(o[3], (-4 - 16 * 2) / 21.0, 1e-12);
        CHECK_NEAR(o[4], (7 + 8 * 14 + 64 * 21) / 73.0, 1e-12);
    }
    /* huge logits (1e6 and more) stay finite: one-hot on the largest key */
    {
        enum { S = 5, D = 64 };
        float q[S * D], k[S * D], v[S * D];
        double o[S * D];
        for (int j = 0; j < S; j++)
            for (int t = 0; t < D; t++) {
                q[j * D + t] = 1000.0f;
                k[j * D + t] = 1000.0f * (float)(j + 1);
                v[j * D + t] = (float)(j * 100 + t);
            }
        for (int causal = 0; causal < 2; causal++) {
            evo_ref_attention(q, k, v, o, 1, 1, S, D, causal, 0.125);
            int bad = 0;
            for (int i = 0; i < S; i++)
                for (int t = 0; t < D; t++) {
                    int last = causal ? i : S - 1;
                    if (!isfinite(o[i * D + t]) || o[i * D + t] != (double)v[last * D + t]) bad++;
                }
            CHECK_EQ_INT(bad, 0);
        }
    }
    /* batches and heads: each (b, h) slice equals the single-head computation on that slice */
    {
        enum { B = 2, H = 3, S = 9, D = 8, HE = S * D };
        float q[B * H * HE], k[B * H * HE], v[B * H * HE];
        double o[B * H * HE], o1[HE];
        uint16_t t[B * H * HE];
        evo_ref_gen_inputs(t, B * H * HE, HE, 5, 0, 0);
        for (int i = 0; i < B * H * HE; i++) q[i] = evo_ref_half_to_float(t[i]);
        evo_ref_gen_inputs(t, B * H * HE, HE, 5, 1, 0);
        for (int i = 0; i < B * H * HE; i++) k[i] = evo_ref_half_to_float(t[i]);
        evo_ref_gen_inputs(t, B * H * HE, HE, 5, 2, 0);
        for (int i = 0; i < B * H * HE; i++) v[i] = evo_ref_half_to_float(t[i]);
        evo_ref_attention(q, k, v, o, B, H, S, D, 1, 1.0 / sqrt(D));
        int bad = 0;
        for (int bh = 0; bh < B * H; bh++) {
            evo_ref_attention(q + bh * HE, k + bh * HE, v + bh * HE, o1, 1, 1, S, D, 1, 1.0 / sqrt(D));
            for (int i = 0; i < HE; i++) bad += o1[i] != o[bh * HE + i];
        }
        CHECK_EQ_INT(bad, 0);
        CHECK(o[HE] != o[0]);
    }
}

/* ---- metrics ---- */

static void test_metrics(void)
{
    evo_metrics m;
    float ref[4] = {1, 2, 3, 4};
    double out[4] = {1, 2.5, NAN, 4};
    evo_ref_compare(out, EVO_ELEM_F64, ref, EVO_ELEM_F32, 4, 0.1, 0.0, &m);
    CHECK_EQ_INT(m.n, 4);
    CHECK_EQ_INT(m.n_over, 2);
    CHECK_EQ_INT(m.n_nonfinite, 1);
    CHECK_EQ_INT(m.n_finite, 3);
    CHECK_EQ_INT(m.first_bad, 1);
    CHECK(m.max_abs == 0.5);
    CHECK(m.sum_sq_diff == 0.25);
    CHECK(m.sum_sq_ref == 21.0);
    CHECK_NEAR(m.rel_l2, sqrt(0.25 / 21), 1e-15);
    CHECK_NEAR(m.rmse, sqrt(0.25 / 3), 1e-15);
    CHECK(m.frac_over == 0.5);

    /* relative tolerance: 4.3 vs 4 passes at rtol 0.1, 2.5 vs 2 does not */
    double out2[4] = {1, 2.5, 3, 4.3};
    evo_ref_compare(out2, EVO_ELEM_F64, ref, EVO_ELEM_F32, 4, 0.0, 0.1, &m);
    CHECK_EQ_INT(m.n_over, 1);
    CHECK_EQ_INT(m.first_bad, 1);
    CHECK_EQ_INT(m.n_nonfinite, 0);

    /* ||ref|| = 0: rel_l2 falls back to the absolute L2 */
    uint16_t out3[2] = {evo_ref_float_to_half(0.375f), evo_ref_float_to_half(-0.5f)};
    double ref3[2] = {0, 0};
    evo_ref_compare(out3, EVO_ELEM_F16, ref3, EVO_ELEM_F64, 2, 1.0, 0.0, &m);
    CHECK_NEAR(m.rel_l2, 0.625, 1e-15);
    CHECK_EQ_INT(m.n_over, 0);
    CHECK_EQ_INT(m.first_bad, -1);

    /* infinity in the output; a non-finite reference is bad too but is not the candidate's non-finite */
    uint16_t out4[3] = {0x7c00, 0x3c00, 0x3c00};
    float ref4[3] = {1, 1, INFINITY};
    evo_ref_compare(out4, EVO_ELEM_F16, ref4, EVO_ELEM_F32, 3, 1e-3, 1e-3, &m);
    CHECK_EQ_INT(m.n_nonfinite, 1);
    CHECK_EQ_INT(m.n_over, 2);
    CHECK_EQ_INT(m.n_finite, 1);
    CHECK_EQ_INT(m.first_bad, 0);
    CHECK(m.max_abs == 0.0);

    evo_compare_acc acc;
    evo_ref_compare_acc_init(&acc);
    CHECK(acc.first_bad == ~0ull && acc.n_over == 0 && acc.sum_sq_ref == 0.0);
    acc.sum_sq_diff = 4;
    acc.sum_sq_ref = 16;
    acc.n_finite = 100;
    acc.n_over = 5;
    acc.first_bad = 17;
    evo_ref_metrics_from_acc(&acc, 200, &m);
    CHECK(m.rel_l2 == 0.5 && m.rmse == 0.2 && m.frac_over == 0.025 && m.first_bad == 17);
}

int main(void)
{
    test_half_fixed();
    test_half_exhaustive();
#ifdef __FLT16_MANT_DIG__
    test_half_vs_compiler();
#endif
    test_e4m3_fixed();
    test_e4m3_sweep();
    test_u8sim();
    test_quantize();
    test_gen_fixed();
    test_gen_distributions();
    test_ref_attention();
    test_metrics();
    return check_result();
}
