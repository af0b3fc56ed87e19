/* evo_numerics.cuh — device-side number formats shared by evo's support kernels (support.cu) and the tasks' own
 * reference kernels: fp16, e4m3 and the simulated u8 encoding, bit for bit the CPU rules of engine/core/numerics.c, plus
 * the comparison accumulators' layouts, the deterministic input generator (gen_value: the distributions of
 * numerics.c's evo_ref_gen_value) and a grid-stride loop. Every floating-point step uses __f*_rn / __d*_rn
 * intrinsics (never fused into FMAs). NVRTC gets it as an in-memory header; needs no other header.
 */
#ifndef EVO_NUMERICS_CUH
#define EVO_NUMERICS_CUH

/* Same layout as evo_compare_acc in engine/core/numerics.h. */
typedef struct {
    double max_abs;
    double sum_sq_diff;
    double sum_sq_ref;
    unsigned long long n_finite;
    unsigned long long n_over;
    unsigned long long n_nonfinite;
    unsigned long long first_bad;
    unsigned long long reserved;
} evo_compare_acc;

typedef unsigned long long u64;

/* Same layout as evo_slice_acc in engine/core/numerics.h. */
typedef struct {
    double sum_sq_diff;
    double sum_sq_ref;
    double max_abs;
    double max_ref;
    unsigned long long n_over;
    unsigned long long n_nonfinite;
    unsigned long long first_bad;
    unsigned long long reserved;
} evo_slice_acc;

#define GRID_STRIDE(i, n)                                                                          \
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)

/* ---- number formats (mirrors of numerics.c) ---- */

__device__ __forceinline__ float half_to_float(unsigned short h)
{
    unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
    unsigned int e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return __uint_as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return __uint_as_float(sign);
        unsigned int sh = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            sh++;
        }
        return __uint_as_float(sign | ((113u - sh) << 23) | ((m & 0x3ffu) << 13));
    }
    return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

__device__ __forceinline__ unsigned short double_to_half(double x)
{
    u64 b = (u64)__double_as_longlong(x);
    unsigned short sign = (unsigned short)((b >> 48) & 0x8000u);
    u64 a = b & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) return sign | 0x7e00u;
    int be = (int)(a >> 52);
    if (be == 0) return sign;
    int e = be - 1023;
    u64 mant = (a & 0xfffffffffffffull) | (1ull << 52);
    if (e >= 16) return sign | 0x7c00u;
    if (e >= -14) {
        unsigned int q = ((unsigned int)(e + 15) << 10) | (unsigned int)((mant >> 42) & 0x3ffu);
        u64 rem = mant & ((1ull << 42) - 1), half = 1ull << 41;
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (unsigned short)(sign | q);
    }
    int sh = 28 - e;
    if (sh > 53) return sign;
    u64 q = mant >> sh, rem = mant & ((1ull << sh) - 1), half = 1ull << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (unsigned short)(sign | q);
}

__device__ __forceinline__ unsigned char e4m3_encode(float x)
{
    unsigned int b = __float_as_uint(x);
    unsigned char sign = (unsigned char)((b >> 24) & 0x80u);
    unsigned int a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7f;
    int be = (int)(a >> 23);
    if (be == 0) return sign;
    int e = be - 127;
    unsigned int mant = (a & 0x7fffffu) | 0x800000u;
    unsigned int q;
    if (e > 8) {
        q = 0x7e;
    } else if (e >= -6) {
        q = ((unsigned int)(e + 7) << 3) | ((mant >> 20) & 7u);
        unsigned int rem = mant & 0xfffffu, half = 0x80000u;
        if (rem > half || (rem == half && (q & 1u))) q++;
        if (q > 0x7e) q = 0x7e;
    } else {
        int sh = 14 - e;
        if (sh > 24) return sign;
        q = mant >> sh;
        unsigned int rem = mant & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
    }
    return (unsigned char)(sign | q);
}

__device__ __forceinline__ float e4m3_decode(unsigned char code)
{
    if ((code & 0x7f) == 0x7f) return __uint_as_float(0x7fc00000u);
    unsigned int sign = (unsigned int)(code & 0x80u) << 24;
    unsigned int e = (code >> 3) & 0xfu, m = code & 7u;
    if (e == 0) return __uint_as_float(sign | __float_as_uint(__fmul_rn((float)m, 0x1p-9f)));
    return __uint_as_float(sign | ((e + 120u) << 23) | (m << 20));
}

__device__ __forceinline__ unsigned char u8sim_encode(float x, float scale)
{
    float t = __fdiv_rn(x, __fmul_rn(scale, 448.0f));
    float y = __fadd_rn(__fmul_rn(t, 127.0f), 128.0f);
    if (y != y) return 128;
    float r = roundf(y); /* half away from zero, exact, like C's roundf */
    if (r < 0.0f) return 0;
    if (r > 255.0f) return 255;
    return (unsigned char)r;
}

__device__ __forceinline__ float u8sim_decode(unsigned char code, float scale)
{
    return __fmul_rn(__fmul_rn(__fdiv_rn((float)((int)code - 128), 127.0f), 448.0f), scale);
}

/* ---- generator (mirror of numerics.c) ---- */

#define GEN_GAMMA 0x9e3779b97f4a7c15ull
#define GEN_STREAM_MUL 0xd1b54a32d192ed03ull
#define GEN_OUTLIER_THRESHOLD 4294967u

__device__ __forceinline__ u64 gen_mix(u64 z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 gen_word(u64 seed, unsigned int tensor_id, unsigned int stream, u64 index)
{
    u64 key = gen_mix(gen_mix(seed + GEN_GAMMA) + ((((u64)tensor_id) << 8) | stream) * GEN_STREAM_MUL);
    return gen_mix(key + (index + 1) * GEN_GAMMA);
}

__device__ double gen_log(double u)
{
    u64 b = (u64)__double_as_longlong(u);
    int e = (int)(b >> 52) - 1023;
    double m = __longlong_as_double((long long)((b & 0xfffffffffffffull) | 0x3ff0000000000000ull));
    if (m > 0x1.6a09e667f3bcdp+0) {
        m = __longlong_as_double((long long)((b & 0xfffffffffffffull) | 0x3fe0000000000000ull));
        e += 1;
    }
    double s = __ddiv_rn(__dsub_rn(m, 1.0), __dadd_rn(m, 1.0));
    double z = __dmul_rn(s, s);
    double p = 0x1.642c8590b2164p-5;
    p = __dadd_rn(0x1.8618618618618p-5, __dmul_rn(z, p));
    p = __dadd_rn(0x1.af286bca1af28p-5, __dmul_rn(z, p));
    p = __dadd_rn(0x1.e1e1e1e1e1e1ep-5, __dmul_rn(z, p));
    p = __dadd_rn(0x1.1111111111111p-4, __dmul_rn(z, p));
    p = __dadd_rn(0x1.3b13b13b13b14p-4, __dmul_rn(z, p));
    p = __dadd_rn(0x1.745d1745d1746p-4, __dmul_rn(z, p));
    p = __dadd_rn(0x1.c71c71c71c71cp-4, __dmul_rn(z, p));
    p = __dadd_rn(0x1.2492492492492p-3, __dmul_rn(z, p));
    p = __dadd_rn(0x1.999999999999ap-3, __dmul_rn(z, p));
    p = __dadd_rn(0x1.5555555555555p-2, __dmul_rn(z, p));
    double lnm = __dmul_rn(2.0, __dadd_rn(s, __dmul_rn(__dmul_rn(s, z), p)));
    return __dadd_rn(__dmul_rn((double)e, 0x1.62e42fefa39efp-1), lnm);
}

__device__ double gen_cos_turn(unsigned int lo)
{
    unsigned int k = ((lo + 0x20000000u) >> 30) & 3u;
    int w = (int)(lo - (k << 30));
    double x = __dmul_rn((double)w, 0x1.921fb54442d18p-30);
    double x2 = __dmul_rn(x, x);
    if (k == 0 || k == 2) {
        double p = 0x1.ae7f3e733b81fp-45;
        p = __dadd_rn(-0x1.93974a8c07c9dp-37, __dmul_rn(x2, p));
        p = __dadd_rn(0x1.1eed8eff8d898p-29, __dmul_rn(x2, p));
        p = __dadd_rn(-0x1.27e4fb7789f5cp-22, __dmul_rn(x2, p));
        p = __dadd_rn(0x1.a01a01a01a01ap-16, __dmul_rn(x2, p));
        p = __dadd_rn(-0x1.6c16c16c16c17p-10, __dmul_rn(x2, p));
        p = __dadd_rn(0x1.5555555555555p-5, __dmul_rn(x2, p));
        p = __dadd_rn(-0x1.0p-1, __dmul_rn(x2, p));
        double c = __dadd_rn(1.0, __dmul_rn(x2, p));
        return k == 0 ? c : -c;
    }
    double p = 0x1.952c77030ad4ap-49;
    p = __dadd_rn(-0x1.ae7f3e733b81fp-41, __dmul_rn(x2, p));
    p = __dadd_rn(0x1.6124613a86d09p-33, __dmul_rn(x2, p));
    p = __dadd_rn(-0x1.ae64567f544e4p-26, __dmul_rn(x2, p));
    p = __dadd_rn(0x1.71de3a556c734p-19, __dmul_rn(x2, p));
    p = __dadd_rn(-0x1.a01a01a01a01ap-13, __dmul_rn(x2, p));
    p = __dadd_rn(0x1.1111111111111p-7, __dmul_rn(x2, p));
    p = __dadd_rn(-0x1.5555555555555p-3, __dmul_rn(x2, p));
    double s = __dadd_rn(x, __dmul_rn(__dmul_rn(x, x2), p));
    return k == 1 ? -s : s;
}

__device__ double gen_normal(u64 w)
{
    double u1 = __dmul_rn((double)((w >> 32) + 1), 0x1p-32);
    double r = __dsqrt_rn(__dsub_rn(0.0, __dmul_rn(2.0, gen_log(u1))));
    return __dmul_rn(r, gen_cos_turn((unsigned int)w));
}

__device__ unsigned short gen_value(u64 seed, unsigned int tensor_id, int dist, u64 head_elems, u64 index)
{
    u64 w = gen_word(seed, tensor_id, 0, index);
    double v;
    switch (dist) {
    case 1:
        v = __dsub_rn(__dmul_rn(__dmul_rn((double)(w >> 11), 0x1p-53), 2.0), 1.0);
        break;
    case 2:
        v = gen_normal(w);
        if ((unsigned int)(gen_word(seed, tensor_id, 1, index) >> 32) < GEN_OUTLIER_THRESHOLD)
            v = __dadd_rn(v, __dmul_rn(10.0, gen_normal(gen_word(seed, tensor_id, 2, index))));
        break;
    case 3:
        v = index < head_elems ? 0.0 : gen_normal(w);
        break;
    case 4:
        v = __dmul_rn(30.0, gen_normal(w));
        break;
    default:
        v = gen_normal(w);
        break;
    }
    return double_to_half(v);
}

#endif
