/* evo_numerics.cuh — device-side number formats shared by evo's support kernels (support.cu) and the tasks' own
 * reference kernels: fp16, e4m3 and the simulated u8 encoding, bit for bit the CPU rules of engine/core/numerics.c, plus
 * the comparison accumulator's layout and a grid-stride loop. Every floating-point step uses __f*_rn / __d*_rn
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

#endif
