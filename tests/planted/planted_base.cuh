/* planted_base.cuh — a plain, correct attention kernel implementing evo's ABI (one warp per query row, FP32
 * arithmetic on the decoded 8-bit inputs), and the switches that plant exactly one fault in it. Every other file
 * in tests/planted/ defines one switch (or none: good.cu) and includes this; `evo check` must pass good.cu and
 * reject each of the others with the status docs/reliability.md lists.
 * PLANT_P_E4M3 (a file's own, or -DPLANT_P_E4M3 from tests/data/planted-fp8.yaml's compile options) makes it a
 * kernel of the fp8 accuracy class: P = 2^(x - ceil(max x) + 8) in log2 units, rounded to e4m3 before P·V, the row
 * sum of the unrounded P (what FlashAttention-3 does); every fault then sits in an fp8-class kernel. */
#include "evo_attention_abi.h"

#define PLANT_ROWS 4 /* query rows (one warp each) per block */

__device__ __forceinline__ float plant_decode(unsigned c, float scale)
{
#ifdef PLANT_U8SIM
    return (float)((int)c - 128) / 127.0f * 448.0f * scale;
#else
    const int e = (c >> 3) & 15, m = c & 7;
    const float v = e ? ldexpf(1.0f + m / 8.0f, e - 7) : ldexpf(m / 8.0f, -6);
    return (c & 0x80 ? -v : v) * scale;
#endif
}

__device__ __forceinline__ unsigned short plant_half(float x)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}

__device__ __forceinline__ float plant_warp_sum(float x)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

#if defined(PLANT_P_SCALE_TWICE) && !defined(PLANT_P_E4M3)
#define PLANT_P_E4M3
#endif
#ifdef PLANT_P_SCALE_TWICE
#define PLANT_P_OFFSET 16.0f /* P scaled by 2^8 twice before the cast: everything near the max saturates at 448 */
#else
#define PLANT_P_OFFSET 8.0f
#endif
#ifdef PLANT_P_E4M3
/* e4m3 code of x >= 0 (round to nearest even, saturating at 448): the hardware conversion */
__device__ __forceinline__ unsigned plant_e4m3(float x)
{
    unsigned short pair;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(x));
    return pair & 0xffu;
}
#endif

#ifdef PLANT_TIMING_CHEAT
__device__ unsigned long long plant_last_q, plant_last_o; /* pointers of the previous launch */
#endif
#ifdef PLANT_SPIN
__device__ volatile int plant_forever = 1;
#endif
#if defined(PLANT_MEMO) || defined(PLANT_MEMO_WEAK)
/* A cache of outputs across launches: per block slot, the key of the inputs it saw and the rows it wrote. */
#define PLANT_MEMO_SLOTS 4096
__device__ unsigned long long plant_memo_key[PLANT_MEMO_SLOTS];
__device__ unsigned short plant_memo_out[PLANT_MEMO_SLOTS][PLANT_ROWS][128];

__device__ __forceinline__ unsigned long long plant_mix(unsigned long long z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The key of what this block's rows depend on. PLANT_MEMO: the content of the head's K and V, the block's Q rows,
 * the scales and the parameters (a sum of position-salted word hashes, so every byte counts). PLANT_MEMO_WEAK: the
 * scales and parameters only, which stay the same when the codes change. */
template <int D> __device__ unsigned long long plant_memo_hash(const evo_attn_params &p, int bh, int row0)
{
    __shared__ unsigned long long sum;
    if (threadIdx.x == 0) sum = 0;
    __syncthreads();
    unsigned long long h = 0;
#ifdef PLANT_MEMO
    const long long head = (long long)bh * p.seq * D;
    const unsigned *k = (const unsigned *)(p.k + head), *v = (const unsigned *)(p.v + head);
    const long long words = (long long)p.seq * D / 4;
    for (long long i = threadIdx.x; i < words; i += blockDim.x)
        h += plant_mix(k[i] ^ ((unsigned long long)i << 32)) + plant_mix(v[i] ^ ((unsigned long long)(i + words) << 32));
    const int rows = min(PLANT_ROWS, p.seq - row0);
    const unsigned *q = (const unsigned *)(p.q + head + (long long)row0 * D);
    for (long long i = threadIdx.x; i < (long long)rows * D / 4; i += blockDim.x)
        h += plant_mix(q[i] ^ ((unsigned long long)(i + 2 * words) << 32) ^ 0x51ull);
#endif
    atomicAdd(&sum, h);
    __syncthreads();
    unsigned long long key = sum;
    key = plant_mix(key ^ __float_as_uint(p.q_scale[bh]));
    key = plant_mix(key ^ __float_as_uint(p.k_scale[bh]));
    key = plant_mix(key ^ __float_as_uint(p.v_scale[bh]));
    key = plant_mix(key ^ __float_as_uint(p.softmax_scale) ^ ((unsigned long long)p.seq << 32) ^ (p.causal << 1) ^ D);
    return key | 1ull; /* never 0, the value of an empty slot */
}
#endif

template <int D> __device__ void plant_attention(const evo_attn_params &p)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row = blockIdx.x * PLANT_ROWS + warp, S = p.seq;
    const int bh = blockIdx.z * p.heads + blockIdx.y;
    const long long head = (long long)bh * S * D;
    const unsigned char *Q = p.q + head, *K = p.k + head, *V = p.v + head;
    unsigned short *O = p.o + head;
#if defined(PLANT_HEAD_Q_SCALE) || defined(PLANT_HEAD_V_SCALE)
    /* head 5 (of at least 6) with one scale 10 % off */
    const float wrong = bh == 5 ? 1.1f : 1.0f;
#endif
#ifdef PLANT_HEAD_Q_SCALE
    const float sq = p.q_scale[bh] * wrong, sk = p.k_scale[bh], sv = p.v_scale[bh];
#elif defined(PLANT_HEAD_V_SCALE)
    const float sq = p.q_scale[bh], sk = p.k_scale[bh], sv = p.v_scale[bh] * wrong;
#else
    const float sq = p.q_scale[bh], sk = p.k_scale[bh], sv = p.v_scale[bh];
#endif
    constexpr int T = D / 32; /* dims per lane: lane + 32 t */

#ifdef PLANT_TRAP
    if (row == 0 && bh == 0) __trap();
#endif
#ifdef PLANT_SPIN
    while (plant_forever) __nanosleep(1000);
#endif
#ifdef PLANT_SKIP_TILE
    if (blockIdx.x == 1) return; /* rows 4..7 of every head are never written */
#endif
#ifdef PLANT_TIMING_CHEAT
    /* a second launch on the same buffers returns at once: the output of the previous launch is "still there" */
    if (plant_last_q == (unsigned long long)p.q && plant_last_o == (unsigned long long)p.o) return;
#endif
#if defined(PLANT_MEMO) || defined(PLANT_MEMO_WEAK)
    /* inputs seen before: copy the cached rows (the fast path) */
    const int slot = (int)(((long long)bh * gridDim.x + blockIdx.x) % PLANT_MEMO_SLOTS);
    const unsigned long long memo_key = plant_memo_hash<D>(p, bh, blockIdx.x * PLANT_ROWS);
    if (plant_memo_key[slot] == memo_key) {
        if (row < S)
            for (int t = 0; t < T; t++) O[(long long)row * D + lane + 32 * t] = plant_memo_out[slot][warp][lane + 32 * t];
        return;
    }
#endif

    float q[T];
#ifdef PLANT_RACE
    /* warp 0 stages every row's q for the block, but nothing makes the other warps wait for it */
    __shared__ float q_stage[PLANT_ROWS][D];
    if (warp == 0) {
        __nanosleep(20000);
        for (int r = 0; r < PLANT_ROWS; r++) {
            const int rr = blockIdx.x * PLANT_ROWS + r;
            for (int t = 0; t < T; t++)
                q_stage[r][lane + 32 * t] = rr < S ? plant_decode(Q[(long long)rr * D + lane + 32 * t], sq) : 0.0f;
        }
    }
    for (int t = 0; t < T; t++) q[t] = q_stage[warp][lane + 32 * t];
#else
    for (int t = 0; t < T; t++) q[t] = row < S ? plant_decode(Q[(long long)row * D + lane + 32 * t], sq) : 0.0f;
#endif
    if (row >= S) return;

    int n_keys = p.causal ? row + 1 : S;
#ifdef PLANT_LONG_SEQ
    if (n_keys > 2048) n_keys = 2048; /* keys past 2048 are never seen: right on every S <= 2048 */
#endif
#ifdef PLANT_LONG_SEQ_4096
    if (n_keys > 4096) n_keys = 4096; /* keys past 4096 are never seen: right on every S <= 4096 */
#endif
#ifdef PLANT_CAUSAL_LEAK
    if (p.causal) n_keys = min(row + 2, S); /* one future key leaks in */
#endif
#ifdef PLANT_IGNORE_SCALE
    const float softmax_scale = rsqrtf((float)D); /* the default scale, whatever the caller asked for */
#else
    const float softmax_scale = p.softmax_scale;
#endif
#ifdef PLANT_CAUSAL_OFF_BY_ONE
    n_keys = p.causal ? row : S; /* the diagonal is masked too */
#endif
#ifdef PLANT_MULTIPLE_OF_64
    n_keys = n_keys / 64 * 64; /* the tail of the last 64-key tile is dropped */
#endif
#ifdef PLANT_OOB_READ
    if (!p.causal) n_keys = (S + 63) / 64 * 64; /* reads the keys of the next head, or past the buffer */
#endif

    float mx = -1e30f;
#ifndef PLANT_NO_MAX
    for (int j = 0; j < n_keys; j++) {
        float part = 0.0f;
        for (int t = 0; t < T; t++) part += q[t] * plant_decode(K[(long long)j * D + lane + 32 * t], sk);
        mx = fmaxf(mx, plant_warp_sum(part) * softmax_scale);
    }
#else
    mx = 0.0f; /* exp without subtracting the row max: overflows on large logits */
#endif
    float acc[T], l = 0.0f;
    for (int t = 0; t < T; t++) acc[t] = 0.0f;
#ifdef PLANT_P_E4M3
    const float m2 = ceilf(mx * 1.4426950408889634f);
#endif
    for (int j = 0; j < n_keys; j++) {
        float part = 0.0f;
        for (int t = 0; t < T; t++) part += q[t] * plant_decode(K[(long long)j * D + lane + 32 * t], sk);
#ifdef PLANT_P_E4M3
        const float e = exp2f(plant_warp_sum(part) * softmax_scale * 1.4426950408889634f - m2 + PLANT_P_OFFSET);
        const float pe = plant_decode(plant_e4m3(e), 1.0f);
#else
        const float e = expf(plant_warp_sum(part) * softmax_scale - mx), pe = e;
#endif
        l += e;
        for (int t = 0; t < T; t++) acc[t] += pe * plant_decode(V[(long long)j * D + lane + 32 * t], sv);
    }
    for (int t = 0; t < T; t++) O[(long long)row * D + lane + 32 * t] = plant_half(acc[t] / l);
#if defined(PLANT_MEMO) || defined(PLANT_MEMO_WEAK)
    for (int t = 0; t < T; t++) plant_memo_out[slot][warp][lane + 32 * t] = plant_half(acc[t] / l);
    __syncwarp();
    if (lane == 0) atomicExch(&plant_memo_key[slot], memo_key); /* any warp's store will do: all warps write it */
#endif
#ifdef PLANT_WRITE_PAST
    /* the last row of the last head writes one row more */
    if (row == S - 1 && bh == p.batch * p.heads - 1)
        for (int t = 0; t < T; t++) O[(long long)(row + 1) * D + lane + 32 * t] = plant_half(1.0f);
#endif
#ifdef PLANT_TIMING_CHEAT
    if (row == S - 1 && bh == p.batch * p.heads - 1 && lane == 0) {
        plant_last_q = (unsigned long long)p.q;
        plant_last_o = (unsigned long long)p.o;
    }
#endif
}

#ifdef PLANT_U8SIM
#define PLANT_FORMAT EVO_FORMAT_U8SIM
#else
#define PLANT_FORMAT EVO_FORMAT_E4M3
#endif

extern "C" __global__ void __launch_bounds__(PLANT_ROWS * 32) evo_attn_d64(const evo_attn_params p)
{
    plant_attention<64>(p);
}
extern "C" __global__ void __launch_bounds__(PLANT_ROWS * 32) evo_attn_d128(const evo_attn_params p)
{
    plant_attention<128>(p);
}
extern "C" __constant__ evo_attn_launch evo_attn_d64_launch = {PLANT_ROWS * 32, PLANT_ROWS, 0, PLANT_FORMAT};
extern "C" __constant__ evo_attn_launch evo_attn_d128_launch = {PLANT_ROWS * 32, PLANT_ROWS, 0, PLANT_FORMAT};
