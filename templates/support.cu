/* support.cu — the engine's GPU kernels around every candidate, whatever its task: input generator, fp16 to float,
 * output comparison (whole and per slice) and canary check. Compiled by NVRTC at run time, needs no header (the
 * tasks' own kernels live in their folders: tasks/attention_fp8/attn_ref.cu, tasks/quantize_fp8/quantize_support.cu).
 * The generator matches engine/core/numerics.c bit for bit: the same integer code, and
 * floating-point steps written with __f*_rn / __d*_rn intrinsics, which are never fused into FMAs. Compile
 * WITHOUT --use_fast_math, -ftz=true, -prec-div=false or -prec-sqrt=false (expf must stay the accurate one).
 *
 * Layout: tensors [B, H, S, D] contiguous; a "head" is S*D elements; heads are numbered b*H + h; fp16 values are
 * unsigned short bits. dist: 0 normal, 1 uniform, 2 outliers, 3 zero_head, 4 large (evo_dist in config.h).
 * "Any grid" below means a grid-stride loop: every
 * (grid, block) covers all n elements; 256 threads and min(ceil(n/256), 65535) blocks is a good choice.
 *
 * evo_gen_inputs(unsigned short *out, unsigned long long n, unsigned long long head_elems,
 *                unsigned long long seed, unsigned int tensor_id, int dist)
 *     out[i] = evo_ref_gen_value(seed, tensor_id, dist, head_elems, i) for i < n.        any grid, any block
 * evo_half_to_float(const unsigned short *x, float *out, unsigned long long n)           any grid, any block
 * evo_compare_reset(evo_compare_acc *acc)                                              grid 1, block 1
 * evo_compare(const unsigned short *out, const float *ref, unsigned long long n, double atol, double rtol,
 *             evo_compare_acc *acc)
 *     fp16 candidate vs float reference, accumulated into *acc (reset it first); element i is bad when
 *     either side is not finite or !(|out-ref| <= atol + rtol*|ref|).   any grid, block = 256 (any multiple of 32)
 * evo_compare_slices_reset(evo_slice_acc *acc, u64 n_slices)                        any grid, any block
 * evo_compare_slices(const void *out, int out_f32, const float *ref, u64 slice_elems, const double *bound,
 *                    evo_slice_acc *acc)
 *     per slice of slice_elems consecutive elements (numerics.h's evo_ref_compare_slices): out fp16 (out_f32 0)
 *     or float (1) vs float ref, into acc[slice] (reset it first); with bound (may be NULL) an element is bad when
 *     !(|out - ref| <= bound[slice]), and always when not finite. grid = (any, slices), block = 256.
 * evo_canary_check(const unsigned int *guard, unsigned long long n_words, unsigned int pattern,
 *                  unsigned long long *result)
 *     result[0] += number of words != pattern; result[1] = min(result[1], first such index). Set result to
 *     {0, ~0ull} first.                                                                     any grid, any block
 */

#include "evo_numerics.cuh"

/* ---- generator (evo_numerics.cuh: gen_value) ---- */

extern "C" __global__ void evo_gen_inputs(unsigned short *out, u64 n, u64 head_elems, u64 seed,
                                          unsigned int tensor_id, int dist)
{
    GRID_STRIDE(i, n) out[i] = gen_value(seed, tensor_id, dist, head_elems, i);
}

extern "C" __global__ void evo_half_to_float(const unsigned short *x, float *out, u64 n)
{
    GRID_STRIDE(i, n) out[i] = half_to_float(x[i]);
}

/* ---- comparison and guards ---- */

__device__ __forceinline__ bool is_finite_f(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }

extern "C" __global__ void evo_compare_reset(evo_compare_acc *acc)
{
    acc->max_abs = 0.0;
    acc->sum_sq_diff = 0.0;
    acc->sum_sq_ref = 0.0;
    acc->n_finite = 0;
    acc->n_over = 0;
    acc->n_nonfinite = 0;
    acc->first_bad = ~0ull;
    acc->reserved = 0;
}

extern "C" __global__ void evo_compare(const unsigned short *out, const float *ref, u64 n, double atol, double rtol,
                                       evo_compare_acc *acc)
{
    __shared__ double s_max[32], s_ssd[32], s_ssr[32];
    __shared__ u64 s_fin[32], s_over[32], s_nonf[32], s_first[32];
    double mx = 0.0, ssd = 0.0, ssr = 0.0;
    u64 fin = 0, over = 0, nonf = 0, first = ~0ull;
    GRID_STRIDE(i, n)
    {
        float of = half_to_float(out[i]), rf = ref[i];
        bool finite = is_finite_f(of) && is_finite_f(rf);
        if (!is_finite_f(of)) nonf++;
        double r = (double)rf;
        double diff = fabs(__dsub_rn((double)of, r));
        bool bad = !finite || !(diff <= __dadd_rn(atol, __dmul_rn(rtol, fabs(r))));
        if (bad) {
            over++;
            if (first == ~0ull) first = i; /* a thread's indices only grow */
        }
        if (finite) {
            fin++;
            mx = fmax(mx, diff);
            ssd += diff * diff;
            ssr += r * r;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        ssd += __shfl_xor_sync(0xffffffffu, ssd, off);
        ssr += __shfl_xor_sync(0xffffffffu, ssr, off);
        fin += __shfl_xor_sync(0xffffffffu, fin, off);
        over += __shfl_xor_sync(0xffffffffu, over, off);
        nonf += __shfl_xor_sync(0xffffffffu, nonf, off);
        u64 f = __shfl_xor_sync(0xffffffffu, first, off);
        first = f < first ? f : first;
    }
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        s_max[warp] = mx;
        s_ssd[warp] = ssd;
        s_ssr[warp] = ssr;
        s_fin[warp] = fin;
        s_over[warp] = over;
        s_nonf[warp] = nonf;
        s_first[warp] = first;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
            mx = fmax(mx, s_max[w]);
            ssd += s_ssd[w];
            ssr += s_ssr[w];
            fin += s_fin[w];
            over += s_over[w];
            nonf += s_nonf[w];
            first = s_first[w] < first ? s_first[w] : first;
        }
        /* Non-negative doubles order like their bit patterns, so an integer max is a double max. */
        atomicMax((u64 *)&acc->max_abs, (u64)__double_as_longlong(mx));
        atomicAdd(&acc->sum_sq_diff, ssd);
        atomicAdd(&acc->sum_sq_ref, ssr);
        atomicAdd(&acc->n_finite, fin);
        atomicAdd(&acc->n_over, over);
        atomicAdd(&acc->n_nonfinite, nonf);
        atomicMin(&acc->first_bad, first);
    }
}

extern "C" __global__ void evo_compare_slices_reset(evo_slice_acc *acc, u64 n_slices)
{
    GRID_STRIDE(i, n_slices)
    {
        acc[i].sum_sq_diff = acc[i].sum_sq_ref = acc[i].max_abs = acc[i].max_ref = 0.0;
        acc[i].n_over = acc[i].n_nonfinite = acc[i].reserved = 0;
        acc[i].first_bad = ~0ull;
    }
}

extern "C" __global__ void __launch_bounds__(256) evo_compare_slices(const void *out, int out_f32, const float *ref,
                                                                     u64 slice_elems, const double *bound,
                                                                     evo_slice_acc *acc)
{
    __shared__ double s_d[4][8];
    __shared__ u64 s_u[3][8];
    const u64 slice = blockIdx.y, base = slice * slice_elems;
    const double lim = bound ? bound[slice] : 0.0;
    double ssd = 0.0, ssr = 0.0, mx = 0.0, mr = 0.0;
    u64 over = 0, nonf = 0, first = ~0ull;
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < slice_elems; j += (u64)gridDim.x * blockDim.x) {
        const u64 i = base + j;
        const float of = out_f32 ? ((const float *)out)[i] : half_to_float(((const unsigned short *)out)[i]);
        const float rf = ref[i];
        const bool fo = is_finite_f(of), finite = fo && is_finite_f(rf);
        if (!fo) nonf++;
        const double diff = fabs(__dsub_rn((double)of, (double)rf));
        if (!finite || (bound && !(diff <= lim))) {
            over++;
            if (first == ~0ull) first = i;
        }
        if (finite) {
            ssd += diff * diff;
            ssr += (double)rf * (double)rf;
            mx = fmax(mx, diff);
            mr = fmax(mr, fabs((double)rf));
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        ssd += __shfl_xor_sync(0xffffffffu, ssd, off);
        ssr += __shfl_xor_sync(0xffffffffu, ssr, off);
        mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        mr = fmax(mr, __shfl_xor_sync(0xffffffffu, mr, off));
        over += __shfl_xor_sync(0xffffffffu, over, off);
        nonf += __shfl_xor_sync(0xffffffffu, nonf, off);
        const u64 f = __shfl_xor_sync(0xffffffffu, first, off);
        first = f < first ? f : first;
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        s_d[0][warp] = ssd, s_d[1][warp] = ssr, s_d[2][warp] = mx, s_d[3][warp] = mr;
        s_u[0][warp] = over, s_u[1][warp] = nonf, s_u[2][warp] = first;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
            ssd += s_d[0][w], ssr += s_d[1][w], mx = fmax(mx, s_d[2][w]), mr = fmax(mr, s_d[3][w]);
            over += s_u[0][w], nonf += s_u[1][w], first = s_u[2][w] < first ? s_u[2][w] : first;
        }
        evo_slice_acc *a = &acc[slice];
        atomicAdd(&a->sum_sq_diff, ssd);
        atomicAdd(&a->sum_sq_ref, ssr);
        atomicMax((u64 *)&a->max_abs, (u64)__double_as_longlong(mx));
        atomicMax((u64 *)&a->max_ref, (u64)__double_as_longlong(mr));
        atomicAdd(&a->n_over, over);
        atomicAdd(&a->n_nonfinite, nonf);
        atomicMin(&a->first_bad, first);
    }
}

extern "C" __global__ void evo_canary_check(const unsigned int *guard, u64 n_words, unsigned int pattern,
                                            u64 *result)
{
    GRID_STRIDE(i, n_words)
    {
        if (guard[i] != pattern) {
            atomicAdd(&result[0], 1ull);
            atomicMin(&result[1], i);
        }
    }
}
