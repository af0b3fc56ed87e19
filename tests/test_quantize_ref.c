/* test_quantize_ref.c — the quantize_fp8 task's CPU reference (tasks/quantize_fp8/quantize_ref.h): bf16, the sign
 * vector, the rotation (exact cases, FP64 dense product, inverse), the kernels' fast quotient against division,
 * and per-head codes on chosen values (448, subnormals, ties, zero heads, saturation, bf16, tiny bf16 heads).
 * Run: ctest --test-dir build -R test_quantize_ref --output-on-failure
 * EVO_QUANT_EXHAUSTIVE=1 also checks the fast quotient on every fp16 and bf16 (value, absmax) pair (minutes).
 */
#include "quantize_ref.h"

#include "attn_ref.h"
#include "check.h"

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
static float bitsf(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- bf16 ---- */

static void test_bf16(void)
{
    CHECK_EQ_INT(evo_qref_float_to_bf16(1.0f), 0x3f80);
    CHECK_EQ_INT(evo_qref_float_to_bf16(-2.0f), 0xc000);
    CHECK_EQ_INT(evo_qref_float_to_bf16(0.0f), 0x0000);
    CHECK_EQ_INT(evo_qref_float_to_bf16(-0.0f), 0x8000);
    CHECK_EQ_INT(evo_qref_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);    /* tie: even mantissa */
    CHECK_EQ_INT(evo_qref_float_to_bf16(1.0f + 0x3p-8f), 0x3f82);    /* tie: even mantissa */
    CHECK_EQ_INT(evo_qref_float_to_bf16(1.0f + 0x1.01p-8f), 0x3f81); /* above the tie */
    CHECK_EQ_INT(evo_qref_float_to_bf16(3.0e38f), 0x7f62);
    CHECK_EQ_INT(evo_qref_float_to_bf16(0x1.ffp127f), 0x7f80); /* the tie above the largest bf16: even is inf */
    CHECK_EQ_INT(evo_qref_float_to_bf16(0x1.fefffep127f), 0x7f7f);
    CHECK_EQ_INT(evo_qref_float_to_bf16(INFINITY), 0x7f80);
    CHECK_EQ_INT(evo_qref_float_to_bf16(-INFINITY), 0xff80);
    CHECK_EQ_INT(evo_qref_float_to_bf16(NAN), 0x7fc0);
    CHECK_EQ_INT(evo_qref_float_to_bf16(0x1p-133f), 0x0001); /* smallest bf16 subnormal */
    CHECK(evo_qref_bf16_to_float(0x3f80) == 1.0f);
    CHECK(evo_qref_bf16_to_float(0xc0a0) == -5.0f);
    CHECK(evo_qref_bf16_to_float(0x0001) == 0x1p-133f);
    CHECK(evo_qref_in_to_float(0x3c00, EVO_QUANT_IN_F16) == 1.0f);
    CHECK(evo_qref_in_to_float(0x3c00, EVO_QUANT_IN_BF16) == 0x1p-7f);
    int bad = 0;
    for (uint32_t b = 0; b < 0x10000u; b++) { /* every non-NaN pattern survives the round trip */
        if ((b & 0x7fffu) > 0x7f80u) continue;
        if (evo_qref_float_to_bf16(evo_qref_bf16_to_float((uint16_t)b)) != b) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* ---- signs and rotation ---- */

static void test_signs(void)
{
    /* splitmix64 words computed independently (Python) from the seed in evo_quantize_abi.h */
    CHECK(evo_quant_sign_word(0) == 0x60159a8d7ad7eefbull);
    CHECK(evo_quant_sign_word(1) == 0x66580f1337f4f3ecull);
    CHECK(evo_quant_sign_word(2) == 0xf73276ef64554580ull);
    CHECK(evo_quant_sign_word(3) == 0xeb04fb3743dade4cull);
    const int first[16] = {-1, -1, 1, -1, -1, -1, -1, -1, 1, -1, -1, -1, 1, -1, -1, -1};
    for (int i = 0; i < 16; i++) CHECK_EQ_INT(evo_qref_sign(i), first[i]);
    int neg = 0;
    for (int i = 0; i < 128; i++) neg += evo_qref_sign(i) < 0;
    CHECK_EQ_INT(neg, 72);
    CHECK(evo_quant_rsqrt_d(64) == 0.125f);
    CHECK(evo_quant_rsqrt_d(128) == 0x1.6a09e6p-4f);
    CHECK(evo_quant_rsqrt_d(32) == 0x1.6a09e6p-3f);
    CHECK(evo_quant_rsqrt_d(48) == 0.0f);
    /* the float constants are the nearest floats to 1/sqrt(D) */
    CHECK(fabs((double)evo_quant_rsqrt_d(128) - 1.0 / sqrt(128.0)) <= 0.5 * 0x1p-27);
}

static int popcount_u(unsigned v)
{
    int c = 0;
    for (; v; v &= v - 1) c++;
    return c;
}

/* H[j][i] = (-1)^popcount(i & j); y = H·(s∘x)/sqrt(D) in double. */
static void rotate_dense(const float *x, double *y, int d)
{
    for (int j = 0; j < d; j++) {
        double acc = 0.0;
        for (int i = 0; i < d; i++) acc += (popcount_u((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * evo_qref_sign(i) * x[i];
        y[j] = acc / sqrt((double)d);
    }
}

static void test_rotation(void)
{
    float v[256];
    /* a unit vector e_k: y_j = s_k * (-1)^popcount(j & k) / sqrt(D), exactly */
    const int dims[] = {32, 64, 128, 256};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        int d = dims[di];
        for (int k = 0; k < d; k += 7) {
            memset(v, 0, sizeof v);
            v[k] = 1.0f;
            evo_qref_rotate_row(v, d);
            int bad = 0;
            for (int j = 0; j < d; j++) {
                float want =
                    (float)(evo_qref_sign(k) * (popcount_u((unsigned)(j & k)) & 1 ? -1 : 1)) * evo_quant_rsqrt_d(d);
                bad += fbits(v[j]) != fbits(want);
            }
            CHECK_EQ_INT(bad, 0);
        }
    }
    /* small integers: every butterfly is exact, so y = RN(integer sum * c) */
    for (int d = 32; d <= 256; d *= 2) {
        for (int i = 0; i < d; i++) v[i] = (float)((i * 37) % 11 - 5);
        double y[256];
        rotate_dense(v, y, d);
        float x0[256];
        memcpy(x0, v, sizeof x0);
        evo_qref_rotate_row(v, d);
        int bad = 0;
        for (int j = 0; j < d; j++) {
            double sum = 0.0;
            for (int i = 0; i < d; i++)
                sum += (popcount_u((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * evo_qref_sign(i) * x0[i];
            float want = (float)sum * evo_quant_rsqrt_d(d);
            bad += fbits(v[j]) != fbits(want);
            bad += fabs((double)v[j] - y[j]) > 1e-6 * (1.0 + fabs(y[j]));
        }
        CHECK_EQ_INT(bad, 0);
    }
    /* random rows: close to the FP64 dense product, norm kept, and the inverse s∘(H·y)/sqrt(D) gives x back */
    uint64_t st = 12345;
    for (int trial = 0; trial < 20; trial++) {
        int d = dims[trial % 4];
        float x[256];
        for (int i = 0; i < d; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (float)((double)(st >> 11) * 0x1p-53 * 20.0 - 10.0);
            v[i] = x[i];
        }
        double y[256], n0 = 0.0, n1 = 0.0, err = 0.0, back_err = 0.0;
        rotate_dense(x, y, d);
        evo_qref_rotate_row(v, d);
        for (int j = 0; j < d; j++) {
            err = fmax(err, fabs((double)v[j] - y[j]));
            n0 += (double)x[j] * x[j];
            n1 += (double)v[j] * v[j];
        }
        for (int i = 0; i < d; i++) {
            double acc = 0.0;
            for (int j = 0; j < d; j++) acc += (popcount_u((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * v[j];
            back_err = fmax(back_err, fabs(evo_qref_sign(i) * acc / sqrt((double)d) - x[i]));
        }
        CHECK(err < 1e-4);
        CHECK(fabs(n1 - n0) < 1e-5 * n0);
        CHECK(back_err < 1e-4);
    }
}

/* ---- the fast quotient ---- */

/* Mismatches of evo_qref_quot_fast against a / s over fp16 (or bf16) values a and absmax values m_lo..m_hi (step):
 * in the float bits when |a| and |a/s| are at least 2^-100 (remainders exact, no subnormal quotient), in the e4m3
 * code always (below that, both are far under e4m3's smallest step and encode as a zero of a's sign). */
static int exact_regime(float a, float s) { return fabsf(a) >= 0x1p-100f && fabsf(a / s) >= 0x1p-100f; }

/* steps: 2 for evo_qref_quot_fast, 1 for evo_qref_quot_fast1 (claimed for these fp16/bf16 pairs only) */
static long quotient_sweep(int in_dtype, uint32_t m_lo, uint32_t m_hi, uint32_t step, int steps)
{
    long bad = 0;
    for (uint32_t mb = m_lo; mb <= m_hi; mb += step) {
        float m = evo_qref_in_to_float((uint16_t)mb, in_dtype);
        if (!(m > 0.0f) || isinf(m)) continue;
        float s = evo_qref_scale(m);
        if (!evo_qref_scale_fast(s)) continue;
        float inv = 1.0f / s;
        for (uint32_t ab = 0; ab < 0x10000u; ab++) {
            float a = evo_qref_in_to_float((uint16_t)ab, in_dtype);
            if (isnan(a) || isinf(a) || fabsf(a) > m) continue;
            float q = steps == 1 ? evo_qref_quot_fast1(a, s, inv) : evo_qref_quot_fast(a, s, inv), d = a / s;
            if (exact_regime(a, s) ? fbits(q) != fbits(d) : evo_ref_e4m3_encode(q) != evo_ref_e4m3_encode(d)) bad++;
        }
    }
    return bad;
}

static void test_quotient(void)
{
    /* every fp16 value against every 61st fp16 absmax, and bf16 likewise */
    for (int steps = 1; steps <= 2; steps++) {
        CHECK_EQ_INT(quotient_sweep(EVO_QUANT_IN_F16, 1, 0x7bff, 61, steps), 0);
        CHECK_EQ_INT(quotient_sweep(EVO_QUANT_IN_BF16, 0x0d80, 0x7280, 97, steps), 0);
        if (getenv("EVO_QUANT_EXHAUSTIVE")) {
            CHECK_EQ_INT(quotient_sweep(EVO_QUANT_IN_F16, 1, 0x7bff, 1, steps), 0);
            CHECK_EQ_INT(quotient_sweep(EVO_QUANT_IN_BF16, 1, 0x7f7f, 1, steps), 0);
        }
    }
    /* the one-correction form is not exact for every float: a plain product already misses midpoints (e.g. fp16
     * 0x0027 at the scale of absmax 0x0034 lands on 336, the midpoint of 320 and 352, which a*inv overshoots) */
    {
        float m = evo_qref_in_to_float(0x0034, EVO_QUANT_IN_F16), a = evo_qref_in_to_float(0x0027, EVO_QUANT_IN_F16);
        float s = evo_qref_scale(m), inv = 1.0f / s;
        CHECK_EQ_INT(fbits(a / s), fbits(336.0f));
        CHECK(fbits(a * inv) != fbits(a / s));
        CHECK_EQ_INT(fbits(evo_qref_quot_fast1(a, s, inv)), fbits(336.0f));
        CHECK(evo_ref_e4m3_encode(a * inv) != evo_ref_e4m3_encode(a / s));
    }
    /* random floats: a in [-absmax, absmax], scales across the whole fast range */
    uint64_t st = 99;
    long bad = 0, tiny = 0;
    for (int i = 0; i < 2000000; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        float s = bitsf((uint32_t)((st >> 32) % (120u << 23)) + (67u << 23)); /* 2^-60 .. 2^60 */
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        float a = bitsf((uint32_t)(st >> 32)), u = (float)((double)(st & 0xffffffu) * 0x1p-23 - 1.0);
        if (isnan(a) || isinf(a)) continue;
        a = fmodf(a, 448.0f * s); /* any bits below 448*s */
        float b = u * 448.0f * s; /* uniform in [-448*s, 448*s) */
        if (!evo_qref_scale_fast(s)) continue;
        float qa = evo_qref_quot_fast(a, s, 1.0f / s), qb = evo_qref_quot_fast(b, s, 1.0f / s);
        bad += exact_regime(a, s) ? fbits(qa) != fbits(a / s) : evo_ref_e4m3_encode(qa) != evo_ref_e4m3_encode(a / s);
        bad += exact_regime(b, s) ? fbits(qb) != fbits(b / s) : evo_ref_e4m3_encode(qb) != evo_ref_e4m3_encode(b / s);
        tiny += !exact_regime(a, s);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(tiny > 1000); /* the code-only regime was visited */
    /* signed zeros keep their sign */
    CHECK_EQ_INT(fbits(evo_qref_quot_fast(-0.0f, 0.75f, 1.0f / 0.75f)), 0x80000000u);
    CHECK_EQ_INT(fbits(evo_qref_quot_fast(0.0f, 0.75f, 1.0f / 0.75f)), 0x00000000u);
    CHECK(evo_qref_scale_fast(0x1p-60f) && evo_qref_scale_fast(0x1p60f));
    CHECK(!evo_qref_scale_fast(0x1.fffffep-61f) && !evo_qref_scale_fast(INFINITY));
}

/* ---- quantization ---- */

static uint16_t h16(float x) { return evo_ref_float_to_half(x); }

static void test_codes_fp16(void)
{
    /* one head whose absmax is 448: scale 1, so every code is e4m3(x) itself */
    enum { S = 2, D = 32 };
    uint16_t x[S * D];
    uint8_t c[S * D];
    float scale;
    const float vals[] = {448.0f,   -448.0f,   0.0f,    -0.0f,   1.0f,    -1.75f,    0x1p-9f, 0x1p-10f,
                          0x3p-10f, -0x5p-10f, 1.0625f, 1.1875f, 0x1p-6f, 0x1.cp-7f, 240.0f,  232.0f};
    const uint8_t want[] = {0x7e, 0xfe, 0x00, 0x80, 0x38, 0xbe, 0x01, 0x00,
                            0x02, 0x82, 0x38, 0x3a, 0x08, 0x07, 0x77, 0x76};
    for (int i = 0; i < S * D; i++) x[i] = h16(0.0f);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) x[i] = h16(vals[i]);
    evo_qref_quantize(x, EVO_QUANT_IN_F16, 0, 1, S, D, c, &scale);
    CHECK(scale == 1.0f);
    for (size_t i = 0; i < sizeof want; i++) CHECK_EQ_INT(c[i], want[i]);
    for (int i = (int)sizeof want; i < S * D; i++) CHECK_EQ_INT(c[i], 0x00);

    /* absmax 896: scale 2; 880/2 = 440 rounds to 448, never to NaN; 0x1p-24 (fp16's smallest) / 2 is 0 */
    for (int i = 0; i < S * D; i++) x[i] = h16(0.0f);
    x[0] = h16(896.0f);
    x[1] = h16(-880.0f);
    x[2] = h16(0x1p-24f);
    x[3] = h16(100.0f); /* 50 -> 48 (step 4 at 32..64: 48 and 52, 50 is a tie, even is 48) */
    evo_qref_quantize(x, EVO_QUANT_IN_F16, 0, 1, S, D, c, &scale);
    CHECK(scale == 2.0f);
    CHECK_EQ_INT(c[0], 0x7e);
    CHECK_EQ_INT(c[1], 0xfe);
    CHECK_EQ_INT(c[2], 0x00);
    CHECK_EQ_INT(c[3], 0x64);

    /* an all-zero head: scale 1, codes 0; and the attention gate's quantizer agrees on generated inputs */
    for (int i = 0; i < S * D; i++) x[i] = h16(0.0f);
    evo_qref_quantize(x, EVO_QUANT_IN_F16, 0, 1, S, D, c, &scale);
    CHECK(scale == 1.0f);
    int nz = 0;
    for (int i = 0; i < S * D; i++) nz += c[i] != 0;
    CHECK_EQ_INT(nz, 0);

    enum { NH = 6, SEQ = 77, HD = 64, N = NH * SEQ * HD };
    static uint16_t g[N];
    static uint8_t c1[N], c2[N];
    float s1[NH], s2[NH];
    for (int dist = 0; dist <= 4; dist++) {
        evo_ref_gen_inputs(g, N, SEQ * HD, 7, 0, dist);
        evo_qref_quantize(g, EVO_QUANT_IN_F16, 0, NH, SEQ, HD, c1, s1);
        evo_ref_quantize(g, NH, (size_t)SEQ * HD, EVO_FORMAT_E4M3, c2, s2);
        CHECK(memcmp(c1, c2, sizeof c1) == 0);
        CHECK(memcmp(s1, s2, sizeof s1) == 0);
        int nan_codes = 0;
        for (int i = 0; i < N; i++) nan_codes += (c1[i] & 0x7f) == 0x7f;
        CHECK_EQ_INT(nan_codes, 0);
    }
    /* NaN elements are left out of the absmax and encode as 0x7f */
    for (int i = 0; i < S * D; i++) x[i] = h16(0.0f);
    x[0] = 0x7e00;
    x[1] = h16(4.0f);
    evo_qref_quantize(x, EVO_QUANT_IN_F16, 0, 1, S, D, c, &scale);
    CHECK(scale == 4.0f / 448.0f);
    CHECK_EQ_INT(c[0], 0x7f);
    CHECK_EQ_INT(c[1], 0x7e);
}

static void test_codes_bf16(void)
{
    enum { S = 1, D = 32 };
    uint16_t x[D];
    uint8_t c[D];
    float scale;
    for (int i = 0; i < D; i++) x[i] = 0;
    x[0] = evo_qref_float_to_bf16(3.0f);
    x[1] = evo_qref_float_to_bf16(-3.0f);
    x[2] = evo_qref_float_to_bf16(1.5f);
    x[3] = evo_qref_float_to_bf16(-0.0f);
    evo_qref_quantize(x, EVO_QUANT_IN_BF16, 0, 1, S, D, c, &scale);
    CHECK(scale == 3.0f / 448.0f);
    CHECK_EQ_INT(c[0], 0x7e);
    CHECK_EQ_INT(c[1], 0xfe);
    CHECK_EQ_INT(c[2], 0x76); /* 224 */
    CHECK_EQ_INT(c[3], 0x80);
    CHECK(evo_qref_scale_fast(scale));

    /* a head of bf16 subnormals: the scale is a float subnormal and the kernels divide (slow path) */
    for (int i = 0; i < D; i++) x[i] = 0;
    x[0] = 0x0008; /* 2^-130 */
    x[1] = 0x8004; /* -2^-131 */
    x[2] = 0x0001; /* 2^-133 */
    evo_qref_quantize(x, EVO_QUANT_IN_BF16, 0, 1, S, D, c, &scale);
    CHECK(!evo_qref_scale_fast(scale) && scale > 0.0f);
    CHECK_EQ_INT(c[0], 0x7e);
    CHECK_EQ_INT(c[1], 0xf6); /* -224 */
    CHECK_EQ_INT(c[2], 0x66); /* scale = 1170 * 2^-149, quotients 448.1 -> 448, -224.05, 56.01 = 1.75 * 2^5 */
}

static void test_codes_rotated(void)
{
    /* x = 3·e_k in one row: every rotated value has magnitude 3/sqrt(D), so every code is +-448 with the sign
     * s_k·(-1)^popcount(j & k) */
    enum { D = 64 };
    uint16_t x[2 * D];
    uint8_t c[2 * D];
    float scale;
    const int k = 5;
    memset(x, 0, sizeof x);
    x[k] = h16(3.0f);
    evo_qref_quantize(x, EVO_QUANT_IN_F16, 1, 1, 2, D, c, &scale);
    CHECK(scale == 0.375f / 448.0f);
    int bad = 0;
    for (int j = 0; j < D; j++) {
        int neg = evo_qref_sign(k) * (popcount_u((unsigned)(j & k)) & 1 ? -1 : 1) < 0;
        bad += c[j] != (neg ? 0xfe : 0x7e);
        bad += (c[D + j] & 0x7f) != 0x00; /* the second row is zero (signed zeros: the signs flip 0 to -0) */
    }
    CHECK_EQ_INT(bad, 0);

    /* rotated quantization = quantization of the rotated rows; dequantized within half an e4m3 step */
    enum { NH = 3, SEQ = 19, HD = 128, N = NH * SEQ * HD };
    static uint16_t g[N];
    static uint8_t cr[N];
    float sr[NH];
    evo_ref_gen_inputs(g, N, SEQ * HD, 11, 1, 2 /* outliers */);
    evo_qref_quantize(g, EVO_QUANT_IN_F16, 1, NH, SEQ, HD, cr, sr);
    int mism = 0, far = 0;
    for (int h = 0; h < NH; h++) {
        float rows[SEQ][HD], absmax = 0.0f;
        for (int r = 0; r < SEQ; r++) {
            for (int i = 0; i < HD; i++) rows[r][i] = evo_ref_half_to_float(g[(h * SEQ + r) * HD + i]);
            evo_qref_rotate_row(rows[r], HD);
            for (int i = 0; i < HD; i++) absmax = fmaxf(absmax, fabsf(rows[r][i]));
        }
        mism += sr[h] != absmax / 448.0f;
        for (int r = 0; r < SEQ; r++) {
            for (int i = 0; i < HD; i++) {
                uint8_t code = cr[(h * SEQ + r) * HD + i];
                mism += code != evo_ref_e4m3_encode(rows[r][i] / sr[h]);
                double q = (double)rows[r][i] / sr[h], dq = evo_ref_e4m3_decode(code);
                double step = fabs(q) < 0x1p-6 ? 0x1p-9 : exp2(floor(log2(fabs(q))) - 3);
                far += fabs(dq - q) > 0.5 * step * (1 + 1e-6);
            }
        }
    }
    CHECK_EQ_INT(mism, 0);
    CHECK_EQ_INT(far, 0);
}

/* ---- launch plans of mode 4 (resident) ---- */

static void test_resident_plan(void)
{
    evo_quant_knobs k = {.vec = 32,
                         .warps = 8,
                         .mode = EVO_QUANT_MODE_RESIDENT,
                         .cluster = 1,
                         .keep = 0,
                         .unroll = 1,
                         .iters = 4,
                         .cvt = 1,
                         .cache = 1,
                         .fused_rot = 1,
                         .slack = 1};
    evo_quant_plan p;
    char why[200] = "";
    /* 32 KiB chunks: two blocks of 3 chunks (3 * 32 KiB + 2 KiB each) fill 228 KiB; 32 chunks a head, 2048 in all */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.n_launches, 1);
    CHECK_EQ_INT((int)p.chunks_per_head, 32);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 264);
    CHECK_EQ_INT((int)p.launch[0].block, 256);
    CHECK_EQ_INT(p.stages, 3);
    CHECK_EQ_INT((int)p.launch[0].smem, 3 * 32768);
    CHECK_EQ_INT(p.launch[0].cooperative, 1);
    CHECK_EQ_INT(p.chain_lag, 1);
    CHECK_EQ_INT((int)p.scratch_bytes, 16 + 4 * 2048);
    CHECK_EQ_INT(p.zero_scratch_once, 1);
    /* fewer chunks than blocks: one block per chunk */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 2, 2, 77, 64, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 4);
    /* slack 2: 4 chunks no longer fit twice, so one block per SM with the deepest ring (7 of 32 KiB) */
    k.slack = 2;
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 132);
    CHECK_EQ_INT(p.stages, 7);
    CHECK_EQ_INT(p.chain_lag, 2);
    /* a head of 65536 chunks spans 249 rounds of 264 blocks: more than the ring can hold behind its encoding */
    k.slack = 1;
    CHECK(evo_quant_plan_make(&k, 1, 1, 1 << 22, 256, 0, 90, 132, &p, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "mode 4 (resident)");
    /* a head of 48 chunks on 16 SMs spans 2 rounds of 32 blocks: the lag grows to 2, which needs a ring of 4, so one
     * block per SM (ring of 7; the head spans 3 rounds of 16 blocks) */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 1, 2, 6144, 128, 0, 90, 16, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 16);
    CHECK_EQ_INT(p.chain_lag, 3);
    CHECK_EQ_INT(p.stages, 7);
    CHECK_EQ_INT((int)p.launch[0].smem, 7 * 32768);
    k.cvt = 0;
    CHECK(evo_quant_check(&k, 128, 0, 80, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "needs sm_90");
    k.slack = 0;
    CHECK(evo_quant_check(&k, 128, 0, 90, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "slack must be at least 1");
    /* 128 KiB chunks: slack + 2 of them cannot fit */
    k.slack = 1, k.warps = 32;
    CHECK(evo_quant_check(&k, 128, 0, 90, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "must fit in the shared memory");
}

/* ---- launch plans of mode 6 (streamed) ---- */

static void test_streamed_plan(void)
{
    evo_quant_knobs k = {.vec = 16,
                         .warps = 8,
                         .mode = EVO_QUANT_MODE_STREAMED,
                         .cluster = 1,
                         .keep = 0,
                         .unroll = 4,
                         .iters = 2,
                         .cvt = 1,
                         .cache = 1,
                         .fused_rot = 1,
                         .slack = 1};
    evo_quant_plan p;
    char why[200] = "";
    /* 4 KiB warp chunks (+ an 8-byte mbarrier each): 4 blocks of 8 warps per SM hold 1 chunk a warp, 3 hold 2, 2
     * hold 3 = lag + 2; 256 chunks a head, 16384 in all over 2112 warps: a head spans 1 round after its first */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.n_launches, 1);
    CHECK_EQ_INT((int)p.chunk_elems, 2048);
    CHECK_EQ_INT((int)p.chunks_per_head, 256);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 264);
    CHECK_EQ_INT((int)p.launch[0].block, 256);
    CHECK_EQ_INT(p.stages, 3);
    CHECK_EQ_INT(p.chain_lag, 1);
    CHECK_EQ_INT((int)p.launch[0].smem, 3 * 8 * (4096 + 8));
    CHECK_EQ_INT(p.launch[0].cooperative, 1);
    CHECK_EQ_INT((int)p.scratch_bytes, 768); /* 12 bytes a head, rounded up to 256 */
    CHECK_EQ_INT(p.zero_scratch_once, 1);
    /* fewer chunks than warps: ceil(chunks / warps) blocks (77 * 64 elements: 3 chunks a head, 12 in all) */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 2, 2, 77, 64, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 2);
    CHECK_EQ_INT(p.chain_lag, 1);
    /* a separate rotation: the rows first, then the head words; chunks of float vectors (1024 elements) */
    k.fused_rot = 0;
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 1, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.n_launches, 2);
    CHECK_EQ_INT((int)p.chunk_elems, 1024);
    CHECK_EQ_INT((unsigned long long)p.scratch_bytes == evo_quant_rot_bytes(33554432ull) + 768ull, 1);
    k.fused_rot = 1;
    /* one head of 2^24 elements on 16 SMs: 8192 chunks span 32 rounds of 256 warps, more than any ring holds */
    CHECK(evo_quant_plan_make(&k, 1, 1, 1 << 17, 128, 0, 90, 16, &p, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "mode 6 (streamed)");
    /* slack 2 on the first shape: 4 chunks a warp fit with 1 block of 8 warps per SM (7: the deepest ring) */
    k.slack = 2;
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 132);
    CHECK_EQ_INT(p.chain_lag, 2);
    CHECK_EQ_INT(p.stages, 7);
    k.cvt = 0;
    CHECK(evo_quant_check(&k, 128, 0, 80, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "needs sm_90");
    k.slack = 0;
    CHECK(evo_quant_check(&k, 128, 0, 90, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "slack must be at least 1");
}

/* ---- launch plans of mode 7 (local) ---- */

static void test_local_plan(void)
{
    evo_quant_knobs k = {.vec = 32,
                         .warps = 4,
                         .mode = EVO_QUANT_MODE_LOCAL,
                         .cluster = 1,
                         .keep = 0,
                         .unroll = 2,
                         .iters = 1,
                         .cvt = 1,
                         .cache = 1,
                         .fused_rot = 1,
                         .slack = 2};
    evo_quant_plan p;
    char why[200] = "";
    /* 8 KiB chunks: 128 a head, 8192 in all; 6 blocks of 4 warps per SM (24 warps, 792 blocks) rounded down to
     * whole heads (768: 6 heads a round), all resident; a head spans one round after its first at most, slack
     * makes it 2; slots as modes 1 and 3 */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.n_launches, 1);
    CHECK_EQ_INT((int)p.chunks_per_head, 128);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 768);
    CHECK_EQ_INT((int)p.launch[0].block, 128);
    CHECK_EQ_INT(p.launch[0].cooperative, 0); /* waiting warps help: no co-residency needed */
    CHECK_EQ_INT(p.chain_lag, 2);
    CHECK_EQ_INT((int)p.scratch_bytes, 16 + 4 * 8192);
    CHECK_EQ_INT(p.zero_scratch_once, 1);
    /* the rotation fused in: its waiting threads cannot compute a missing absmax (no registers), so the grid must be
     * resident at once: a cooperative launch; a separate rotation pass leaves the main kernel plain */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 1, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.launch[p.n_launches - 1].cooperative, 1);
    k.fused_rot = 0;
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 1, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.n_launches, 2);
    CHECK_EQ_INT(p.launch[0].cooperative, 0);
    CHECK_EQ_INT(p.launch[1].cooperative, 0);
    k.fused_rot = 1;
    /* heads of 500 chunks: whole heads (one, 500 blocks) would drop more than an eighth of 792, so 792 */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 1, 2, 16000, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.chunks_per_head, 500);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 792);
    CHECK_EQ_INT(p.chain_lag, 2);
    /* fewer chunks than blocks: one block per chunk (2 * 2 heads of 77 x 64 elements: 2 chunks each) */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 2, 2, 77, 64, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 8);
    /* a head of 2^15 chunks over 16 SMs (96 blocks) spans 342 rounds after its first: the lag grows with it */
    k.slack = 1;
    CHECK_EQ_INT(evo_quant_plan_make(&k, 1, 1, 1 << 19, 256, 0, 90, 16, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 96);
    CHECK_EQ_INT(p.chain_lag, 342);
    /* keep 1: a chunk's rotated floats wait in shared memory, lag + 1 chunks a block. 8 warps, 32 KiB of floats a
     * chunk (8192 elements: 64 a head of 4096 x 128); with slack 1 a head spans one round, two slots (64 KiB) fit
     * three blocks per SM: the grid and lag of keep 0 (396 blocks, whole heads 384), 64 KiB of dynamic shared memory */
    k.keep = 1, k.warps = 8, k.slack = 1;
    CHECK_EQ_INT(evo_quant_check(&k, 128, 1, 90, why, sizeof why), 0);
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 1, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.chunks_per_head, 64);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 384);
    CHECK_EQ_INT(p.chain_lag, 1);
    CHECK_EQ_INT((int)p.launch[0].smem, 2 * 8192 * 4);
    CHECK_EQ_INT(p.stages, 1);
    CHECK_EQ_INT(p.launch[0].cooperative, 1);
    /* slack 2: three slots (96 KiB) fit two blocks per SM: 264 blocks, whole heads 256, lag 2 */
    k.slack = 2;
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 1, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 256);
    CHECK_EQ_INT(p.chain_lag, 2);
    CHECK_EQ_INT((int)p.launch[0].smem, 3 * 8192 * 4);
    CHECK_EQ_INT(p.stages, 1);
    /* unrotated shapes and a separate rotation pass keep nothing */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].smem, 0);
    CHECK_EQ_INT(p.stages, 0);
    k.fused_rot = 0;
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 1, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[p.n_launches - 1].smem, 0);
    CHECK_EQ_INT(p.stages, 0);
    k.fused_rot = 1;
    /* a head of 2^16 chunks over 16 SMs spans hundreds of rounds: no slots fit, the kernel re-reads as keep 0 */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 1, 1, 1 << 19, 256, 1, 90, 16, &p, why, sizeof why), 0);
    CHECK_EQ_INT((int)p.launch[0].smem, 0);
    CHECK_EQ_INT(p.stages, 0);
    CHECK(p.chain_lag > 100);
    /* keep is 0 or 1 in mode 7 */
    k.keep = 2;
    CHECK(evo_quant_check(&k, 128, 1, 90, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "keep to modes 2 and 7");
    k.keep = 0, k.warps = 4;
    k.slack = 0;
    CHECK(evo_quant_check(&k, 128, 0, 90, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "slack must be at least 1");
    /* two chunks in registers, as modes 1 and 3 */
    k.slack = 2, k.unroll = 4, k.iters = 2;
    CHECK(evo_quant_check(&k, 128, 0, 90, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "2 * unroll * iters * vec / 4 must be at most 64");
}

/* ---- launch plans of mode 8 (piped) ---- */

static void test_piped_plan(void)
{
    evo_quant_knobs k = {.vec = 32,
                         .warps = 16,
                         .mode = EVO_QUANT_MODE_PIPED,
                         .cluster = 8,
                         .keep = 0,
                         .unroll = 2,
                         .iters = 1,
                         .cvt = 1,
                         .cache = 1,
                         .fused_rot = 1,
                         .slack = 1};
    evo_quant_plan p;
    char why[200] = "";
    /* 32 KiB chunks, at most 7 in a block's ring (225 KiB); 1 MiB heads in 8 parts of 4 chunks: 512 parts over 132
     * blocks of 16 consumer warps and a producer warp, one per SM; max, count and done words per head */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 4, 16, 4096, 128, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.n_launches, 1);
    CHECK_EQ_INT(p.parts, 8);
    CHECK_EQ_INT(p.stages, 7);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 132);
    CHECK_EQ_INT((int)p.launch[0].block, 544);
    CHECK_EQ_INT((int)p.launch[0].smem, 7 * 32768);
    CHECK_EQ_INT(p.launch[0].cooperative, 1);
    CHECK_EQ_INT((int)p.launch[0].cluster_x, 1);
    CHECK_EQ_INT((int)p.scratch_bytes, 12 * 64);
    CHECK_EQ_INT(p.zero_scratch_once, 1);
    /* 2 MiB heads: an eighth (8 chunks) and a chunk more do not fit, a sixteenth does */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 1, 16, 16384, 64, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.parts, 16);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 132);
    /* small heads: parts double while fewer than the grid's blocks (6 heads: 16 parts, 96 blocks); the ring still
     * takes the SM's shared memory */
    CHECK_EQ_INT(evo_quant_plan_make(&k, 2, 3, 77, 64, 0, 90, 132, &p, why, sizeof why), 0);
    CHECK_EQ_INT(p.parts, 16);
    CHECK_EQ_INT((int)p.launch[0].grid_x, 96);
    CHECK_EQ_INT(p.stages, 7);
    /* no more parts than blocks (two parts of one head in one block would wait on each other) */
    CHECK(evo_quant_plan_make(&k, 1, 16, 16384, 64, 0, 90, 8, &p, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "mode 8 (piped)");
    /* a 64 MiB head does not fit in 64 parts of 6 chunks */
    CHECK(evo_quant_plan_make(&k, 1, 1, 1 << 19, 64, 0, 90, 132, &p, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "do not fit");
    k.warps = 32;
    CHECK(evo_quant_check(&k, 128, 0, 90, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "at most 16 consumer warps");
    k.warps = 16;
    CHECK(evo_quant_check(&k, 128, 0, 89, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "needs sm_90");
}

int main(void)
{
    test_resident_plan();
    test_streamed_plan();
    test_local_plan();
    test_piped_plan();
    test_bf16();
    test_signs();
    test_rotation();
    test_quotient();
    test_codes_fp16();
    test_codes_bf16();
    test_codes_rotated();
    return check_result();
}
