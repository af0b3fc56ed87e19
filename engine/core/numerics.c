/* numerics.c — CPU number formats, input generator and error metrics (see numerics.h). Every function that
 * templates/support.cu and evo_numerics.cuh mirror is written with the same operations in the same order; the
 * floating-point ones go through f_add/f_mul/... helpers that match the GPU's __f*_rn / __d*_rn intrinsics, which
 * are never fused into FMAs. Here fusion is kept off by the pragmas below.
 */
#include "numerics.h"

#include "evo.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* A fused multiply-add would round once where the GPU rounds twice, and the generator must match bit for bit. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "numerics.c needs float and double evaluated in their own precision (FLT_EVAL_METHOD 0)"
#endif

_Static_assert(sizeof(evo_compare_acc) == 64, "evo_compare_acc must match support.cu (8 fields of 8 bytes)");

static inline float f_add(float a, float b) { return a + b; }
static inline float f_mul(float a, float b) { return a * b; }
static inline float f_div(float a, float b) { return a / b; }
static inline double d_add(double a, double b) { return a + b; }
static inline double d_sub(double a, double b) { return a - b; }
static inline double d_mul(double a, double b) { return a * b; }
static inline double d_div(double a, double b) { return a / b; }

static inline uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline uint64_t double_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline double bits_double(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- fp16 ---- */

float evo_ref_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return bits_float(sign);
        uint32_t sh = 0; /* subnormal: normalize so that the implicit bit sits at bit 10 */
        while (!(m & 0x400u)) {
            m <<= 1;
            sh++;
        }
        return bits_float(sign | ((113u - sh) << 23) | ((m & 0x3ffu) << 13));
    }
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/* Integer-only, so no rounding mode or compiler can change it; support.cu has the same function. */
uint16_t evo_ref_double_to_half(double x)
{
    uint64_t b = double_bits(x);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    uint64_t a = b & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) return sign | 0x7e00u;
    int be = (int)(a >> 52);
    if (be == 0) return sign; /* zero or a double subnormal, far below half's range */
    int e = be - 1023;
    uint64_t mant = (a & 0xfffffffffffffull) | (1ull << 52);
    if (e >= 16) return sign | 0x7c00u;
    if (e >= -14) {
        uint32_t q = ((uint32_t)(e + 15) << 10) | (uint32_t)((mant >> 42) & 0x3ffu);
        uint64_t rem = mant & ((1ull << 42) - 1), half = 1ull << 41;
        if (rem > half || (rem == half && (q & 1u))) q++; /* a carry moves into the exponent, up to inf */
        return (uint16_t)(sign | q);
    }
    int sh = 28 - e; /* subnormal half: units of 2^-24 */
    if (sh > 53) return sign;
    uint64_t q = mant >> sh, rem = mant & ((1ull << sh) - 1), half = 1ull << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

uint16_t evo_ref_float_to_half(float x)
{
    return evo_ref_double_to_half((double)x); /* exact widening, then one rounding */
}

/* ---- e4m3 ---- */

uint8_t evo_ref_e4m3_encode(float x)
{
    uint32_t b = float_bits(x);
    uint8_t sign = (uint8_t)((b >> 24) & 0x80u);
    uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7f;
    int be = (int)(a >> 23);
    if (be == 0) return sign; /* float subnormals are below half of e4m3's smallest subnormal */
    int e = be - 127;
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t q;
    if (e > 8) {
        q = 0x7e;
    } else if (e >= -6) {
        q = ((uint32_t)(e + 7) << 3) | ((mant >> 20) & 7u);
        uint32_t rem = mant & 0xfffffu, half = 0x80000u;
        if (rem > half || (rem == half && (q & 1u))) q++;
        if (q > 0x7e) q = 0x7e; /* 0x7f is NaN: saturate */
    } else {
        int sh = 14 - e; /* subnormal e4m3: units of 2^-9 */
        if (sh > 24) return sign;
        q = mant >> sh;
        uint32_t rem = mant & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
    }
    return (uint8_t)(sign | q);
}

float evo_ref_e4m3_decode(uint8_t code)
{
    if ((code & 0x7f) == 0x7f) return bits_float(0x7fc00000u);
    uint32_t sign = (uint32_t)(code & 0x80u) << 24;
    uint32_t e = (code >> 3) & 0xfu, m = code & 7u;
    if (e == 0) return bits_float(sign | float_bits(f_mul((float)m, 0x1p-9f)));
    return bits_float(sign | ((e + 120u) << 23) | (m << 20));
}

/* ---- u8sim ---- */

uint8_t evo_ref_u8sim_encode(float x, float scale)
{
    float t = f_div(x, f_mul(scale, 448.0f));
    float y = f_add(f_mul(t, 127.0f), 128.0f);
    if (isnan(y)) return 128;
    float r = roundf(y);
    if (r < 0.0f) return 0;
    if (r > 255.0f) return 255;
    return (uint8_t)r;
}

float evo_ref_u8sim_decode(uint8_t code, float scale)
{
    return f_mul(f_mul(f_div((float)((int)code - 128), 127.0f), 448.0f), scale);
}

/* ---- generator ---- */

#define GEN_GAMMA 0x9e3779b97f4a7c15ull
#define GEN_STREAM_MUL 0xd1b54a32d192ed03ull
#define GEN_OUTLIER_THRESHOLD 4294967u /* 0.001 * 2^32, rounded down */

static uint64_t gen_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Stream 0: the base draw; 1: the outlier coin; 2: the outlier's normal draw. */
static uint64_t gen_word(uint64_t seed, uint32_t tensor_id, uint32_t stream, uint64_t index)
{
    uint64_t key = gen_mix(gen_mix(seed + GEN_GAMMA) + ((((uint64_t)tensor_id) << 8) | stream) * GEN_STREAM_MUL);
    return gen_mix(key + (index + 1) * GEN_GAMMA);
}

uint64_t evo_ref_gen_word(uint64_t seed, uint32_t tensor_id, uint64_t index)
{
    return gen_word(seed, tensor_id, 0, index);
}

/* ln(u) for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)) as a series. */
static double gen_log(double u)
{
    uint64_t b = double_bits(u);
    int e = (int)(b >> 52) - 1023;
    double m = bits_double((b & 0xfffffffffffffull) | 0x3ff0000000000000ull);
    if (m > 0x1.6a09e667f3bcdp+0) {
        m = bits_double((b & 0xfffffffffffffull) | 0x3fe0000000000000ull);
        e += 1;
    }
    double s = d_div(d_sub(m, 1.0), d_add(m, 1.0));
    double z = d_mul(s, s);
    double p = 0x1.642c8590b2164p-5; /* 1/23 */
    p = d_add(0x1.8618618618618p-5, d_mul(z, p));
    p = d_add(0x1.af286bca1af28p-5, d_mul(z, p));
    p = d_add(0x1.e1e1e1e1e1e1ep-5, d_mul(z, p));
    p = d_add(0x1.1111111111111p-4, d_mul(z, p));
    p = d_add(0x1.3b13b13b13b14p-4, d_mul(z, p));
    p = d_add(0x1.745d1745d1746p-4, d_mul(z, p));
    p = d_add(0x1.c71c71c71c71cp-4, d_mul(z, p));
    p = d_add(0x1.2492492492492p-3, d_mul(z, p));
    p = d_add(0x1.999999999999ap-3, d_mul(z, p));
    p = d_add(0x1.5555555555555p-2, d_mul(z, p)); /* 1/3 */
    double lnm = d_mul(2.0, d_add(s, d_mul(d_mul(s, z), p)));
    return d_add(d_mul((double)e, 0x1.62e42fefa39efp-1), lnm);
}

/* cos(2*pi * lo / 2^32): the quarter turn comes from the integer bits exactly, the rest is |x| <= pi/4. */
static double gen_cos_turn(uint32_t lo)
{
    uint32_t k = ((lo + 0x20000000u) >> 30) & 3u;
    int32_t w = (int32_t)(lo - (k << 30));
    double x = d_mul((double)w, 0x1.921fb54442d18p-30);
    double x2 = d_mul(x, x);
    if (k == 0 || k == 2) {
        double p = 0x1.ae7f3e733b81fp-45;
        p = d_add(-0x1.93974a8c07c9dp-37, d_mul(x2, p));
        p = d_add(0x1.1eed8eff8d898p-29, d_mul(x2, p));
        p = d_add(-0x1.27e4fb7789f5cp-22, d_mul(x2, p));
        p = d_add(0x1.a01a01a01a01ap-16, d_mul(x2, p));
        p = d_add(-0x1.6c16c16c16c17p-10, d_mul(x2, p));
        p = d_add(0x1.5555555555555p-5, d_mul(x2, p));
        p = d_add(-0x1.0p-1, d_mul(x2, p));
        double c = d_add(1.0, d_mul(x2, p));
        return k == 0 ? c : -c;
    }
    double p = 0x1.952c77030ad4ap-49;
    p = d_add(-0x1.ae7f3e733b81fp-41, d_mul(x2, p));
    p = d_add(0x1.6124613a86d09p-33, d_mul(x2, p));
    p = d_add(-0x1.ae64567f544e4p-26, d_mul(x2, p));
    p = d_add(0x1.71de3a556c734p-19, d_mul(x2, p));
    p = d_add(-0x1.a01a01a01a01ap-13, d_mul(x2, p));
    p = d_add(0x1.1111111111111p-7, d_mul(x2, p));
    p = d_add(-0x1.5555555555555p-3, d_mul(x2, p));
    double s = d_add(x, d_mul(d_mul(x, x2), p));
    return k == 1 ? -s : s;
}

/* Box-Muller (cosine branch): u1 in (0, 1] from the high 32 bits, the angle from the low 32 bits. */
static double gen_normal(uint64_t w)
{
    double u1 = d_mul((double)((w >> 32) + 1), 0x1p-32);
    double r = sqrt(d_sub(0.0, d_mul(2.0, gen_log(u1))));
    return d_mul(r, gen_cos_turn((uint32_t)w));
}

uint16_t evo_ref_gen_value(uint64_t seed, uint32_t tensor_id, int dist, uint64_t head_elems, uint64_t index)
{
    uint64_t w = gen_word(seed, tensor_id, 0, index);
    double v;
    switch (dist) {
        case 1: /* uniform */ v = d_sub(d_mul(d_mul((double)(w >> 11), 0x1p-53), 2.0), 1.0); break;
        case 2: /* outliers */
            v = gen_normal(w);
            if ((uint32_t)(gen_word(seed, tensor_id, 1, index) >> 32) < GEN_OUTLIER_THRESHOLD)
                v = d_add(v, d_mul(10.0, gen_normal(gen_word(seed, tensor_id, 2, index))));
            break;
        case 3: /* zero_head */ v = index < head_elems ? 0.0 : gen_normal(w); break;
        case 4: /* large */ v = d_mul(30.0, gen_normal(w)); break;
        default: /* 0: normal */
            EVO_ASSERT(dist == 0);
            v = gen_normal(w);
            break;
    }
    return evo_ref_double_to_half(v);
}

void evo_ref_gen_inputs(uint16_t *out, size_t n, uint64_t head_elems, uint64_t seed, uint32_t tensor_id, int dist)
{
    for (size_t i = 0; i < n; i++) out[i] = evo_ref_gen_value(seed, tensor_id, dist, head_elems, i);
}

/* ---- metrics ---- */

static double elem_at(const void *p, evo_elem type, size_t i)
{
    switch (type) {
        case EVO_ELEM_F16: return (double)evo_ref_half_to_float(((const uint16_t *)p)[i]);
        case EVO_ELEM_F32: return (double)((const float *)p)[i];
        case EVO_ELEM_F64: return ((const double *)p)[i];
    }
    EVO_ASSERT(0);
    return 0.0;
}

void evo_ref_compare_acc_init(evo_compare_acc *acc)
{
    memset(acc, 0, sizeof *acc);
    acc->first_bad = ~0ull;
}

void evo_ref_compare(const void *out, evo_elem out_type, const void *ref, evo_elem ref_type, size_t n, double atol,
                     double rtol, evo_metrics *m)
{
    evo_compare_acc acc;
    evo_ref_compare_acc_init(&acc);
    for (size_t i = 0; i < n; i++) {
        double o = elem_at(out, out_type, i), r = elem_at(ref, ref_type, i);
        bool finite = isfinite(o) && isfinite(r);
        if (!isfinite(o)) acc.n_nonfinite++;
        double diff = fabs(d_sub(o, r));
        bool bad = !finite || !(diff <= d_add(atol, d_mul(rtol, fabs(r))));
        if (bad) {
            acc.n_over++;
            if (acc.first_bad == ~0ull) acc.first_bad = i;
        }
        if (finite) {
            acc.n_finite++;
            acc.max_abs = fmax(acc.max_abs, diff);
            acc.sum_sq_diff += diff * diff;
            acc.sum_sq_ref += r * r;
        }
    }
    evo_ref_metrics_from_acc(&acc, n, m);
}

void evo_ref_metrics_from_acc(const evo_compare_acc *acc, size_t n, evo_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    m->max_abs = acc->max_abs;
    m->sum_sq_diff = acc->sum_sq_diff;
    m->sum_sq_ref = acc->sum_sq_ref;
    m->rel_l2 = acc->sum_sq_ref > 0.0 ? sqrt(acc->sum_sq_diff / acc->sum_sq_ref) : sqrt(acc->sum_sq_diff);
    m->rmse = acc->n_finite ? sqrt(acc->sum_sq_diff / (double)acc->n_finite) : 0.0;
    m->n_finite = (size_t)acc->n_finite;
    m->n_over = (size_t)acc->n_over;
    m->n_nonfinite = (size_t)acc->n_nonfinite;
    m->frac_over = n ? (double)acc->n_over / (double)n : 0.0;
    m->first_bad = acc->first_bad == ~0ull ? -1 : (long long)acc->first_bad;
}

/* ---- per-slice comparison ---- */

void evo_ref_slice_acc_init(evo_slice_acc *acc, size_t n)
{
    memset(acc, 0, n * sizeof *acc);
    for (size_t s = 0; s < n; s++) acc[s].first_bad = ~0ull;
}

void evo_ref_compare_slices(const void *out, evo_elem out_type, const void *ref, evo_elem ref_type, size_t n_slices,
                            size_t slice_elems, const double *bound, evo_slice_acc *acc)
{
    evo_ref_slice_acc_init(acc, n_slices);
    for (size_t s = 0; s < n_slices; s++) {
        evo_slice_acc *a = &acc[s];
        for (size_t j = 0; j < slice_elems; j++) {
            const size_t i = s * slice_elems + j;
            const double o = elem_at(out, out_type, i), r = elem_at(ref, ref_type, i);
            const bool finite = isfinite(o) && isfinite(r);
            if (!isfinite(o)) a->n_nonfinite++;
            const double diff = fabs(d_sub(o, r));
            if (!finite || (bound && !(diff <= bound[s]))) {
                a->n_over++;
                if (a->first_bad == ~0ull) a->first_bad = i;
            }
            if (finite) {
                a->max_abs = fmax(a->max_abs, diff);
                a->max_ref = fmax(a->max_ref, fabs(r));
                a->sum_sq_diff += diff * diff;
                a->sum_sq_ref += r * r;
            }
        }
    }
}

double evo_slice_rel_l2(const evo_slice_acc *a)
{
    return a->sum_sq_ref > 0.0 ? sqrt(a->sum_sq_diff / a->sum_sq_ref) : sqrt(a->sum_sq_diff);
}

void evo_slice_metrics(const evo_slice_acc *acc, size_t n_slices, size_t slice_elems, evo_metrics *m)
{
    evo_compare_acc t;
    evo_ref_compare_acc_init(&t);
    for (size_t s = 0; s < n_slices; s++) {
        t.max_abs = fmax(t.max_abs, acc[s].max_abs);
        t.sum_sq_diff += acc[s].sum_sq_diff;
        t.sum_sq_ref += acc[s].sum_sq_ref;
        t.n_over += acc[s].n_over;
        t.n_nonfinite += acc[s].n_nonfinite;
        if (acc[s].first_bad < t.first_bad) t.first_bad = acc[s].first_bad;
    }
    t.n_finite = n_slices * slice_elems - t.n_nonfinite;
    evo_ref_metrics_from_acc(&t, n_slices * slice_elems, m);
}
