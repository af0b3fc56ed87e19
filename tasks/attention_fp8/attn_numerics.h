/* attn_numerics.h — the attention task's arithmetic written once for every side that runs it: the FP8 model (what
 * sets the fp8 accuracy class's error budget), the fp8 gate's constants and budget, and the input formulas of the
 * structural probes. Included by attn_ref.c (C11, the CPU twin), attn_support.cu (device code, NVRTC) and the
 * export's self-test (C++ host code), so the three cannot drift apart.
 *
 * Every floating-point step is one correctly rounded IEEE operation (AN_F* / AN_D* below: __f*_rn / __d*_rn on the
 * device, plain operators on the host, which evo compiles without contraction), so every side computes the same bits.
 * The includer defines, before including:
 *   AN_FN                        function qualifiers ("static inline", or "__device__ __forceinline__")
 *   AN_E4M3_ROUND(x)             float -> the float value of its e4m3 code (evo's encoder: nearest even, saturating);
 *                                the model's row functions exist only where it is defined
 *   AN_NORMAL(seed, t, i)        float: element i of tensor t of the normal distribution (evo's generator, an fp16
 *                                value); AN_WORD(seed, t, i): its 64-bit word (probes only; define both or neither)
 *   AN_DEVICE                    defined for device code
 * and gets only static functions and macros prefixed an_/AN_.
 *
 * The FP8 model (docs/templates.md, "Accuracy classes"): an FP8 attention kernel whose two GEMMs run on the Hopper
 * FP8 tensor core as it was measured to add (docs/perf-notes.md, "The FP8 accumulator": 13 explicit mantissa bits,
 * cut toward zero, small terms lost inside a k-step as well). A k-step adds the accumulator and 32 products aligned
 * to the largest of them: each is cut toward zero to 13 bits below that exponent, they are summed, the sum is cut to
 * 13 bits (an_kstep). Per query row, over the e4m3 codes:
 *   score  = Σ_d q·k in k-steps of 32 (an_logit2);
 *   x2     = ((float)score · (q_scale·k_scale)) · (softmax_scale·log2 e), each product rounded to float;
 *   online softmax over blocks of 128 keys: M = ⌈max x2 so far⌉ (an integer, so rescaling is exact), when M grows
 *            l and acc are multiplied by 2^(M_old − M_new);
 *   p      = 2^(x2 − M + 8) rounded to float (a deterministic double exp2), P̃ = e4m3(p);
 *   l     += p (float, key order);  acc[d] += Σ P̃·v_code[d] in k-steps of 32 keys (the P·V accumulator);
 *   out[d] = (acc[d] · v_scale) / l.
 * Where the score's k-steps begin is not known for a kernel (its layout of the head dim): the model can run with the
 * k-steps starting at 0, 8, 16, ... (AN_FP8_ORDERS partitions; its error on a slice is then the largest of them).
 * One is used: where the partition matters — logits so large that one key takes every row — the fp8 gate asks
 * for the saturated bound instead (attn_gate.h), and each partition costs a run of the model.
 */
#ifndef EVO_ATTN_NUMERICS_H
#define EVO_ATTN_NUMERICS_H

#ifdef AN_DEVICE
#define AN_FMUL(a, b) __fmul_rn(a, b)
#define AN_FADD(a, b) __fadd_rn(a, b)
#define AN_FDIV(a, b) __fdiv_rn(a, b)
#define AN_DADD(a, b) __dadd_rn(a, b)
#define AN_DSUB(a, b) __dsub_rn(a, b)
#define AN_DMUL(a, b) __dmul_rn(a, b)
#define AN_D2F(x) __double2float_rn(x)
#define AN_FBITS(x) __float_as_uint(x)
#define AN_BITSF(u) __uint_as_float(u)
#define AN_TRUNCF(x) truncf(x)
#define AN_BITSD(u) __longlong_as_double((long long)(u))
#define AN_CEILF(x) ceilf(x)
#define AN_SQRTF(x) __fsqrt_rn(x)
#else
#define AN_FMUL(a, b) ((float)(a) * (float)(b))
#define AN_FADD(a, b) ((float)(a) + (float)(b))
#define AN_FDIV(a, b) ((float)(a) / (float)(b))
#define AN_DADD(a, b) ((double)(a) + (double)(b))
#define AN_DSUB(a, b) ((double)(a) - (double)(b))
#define AN_DMUL(a, b) ((double)(a) * (double)(b))
#define AN_D2F(x) ((float)(x))
#define AN_CEILF(x) ceilf(x)
#define AN_SQRTF(x) sqrtf(x)
AN_FN double an_bitsd_(unsigned long long u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}
AN_FN unsigned an_fbits_(float x)
{
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}
AN_FN float an_bitsf_(unsigned u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
#define AN_BITSD(u) an_bitsd_(u)
#define AN_FBITS(x) an_fbits_(x)
#define AN_BITSF(u) an_bitsf_(u)
#define AN_TRUNCF(x) truncf(x)
#endif

/* ---- the fp8 gate (fixed here, not in the config: the class is defined by them) ---- */
#define AN_FP8_K 2.0            /* the kernel may be this many times as far from the exact reference as the model */
#define AN_FP8_REL_ATOL 1e-3    /* + this on a slice's rel-L2                                                    */
#define AN_FP8_ABS_ATOL 0x1p-10 /* + this times max|reference| of the slice on every element's error            */
#define AN_FP8_ACC_BITS 13      /* explicit mantissa bits the tensor core's accumulator keeps (cut toward zero)  */
#define AN_FP8_KSTEP 32         /* products one k-step of the FP8 tensor core adds at once                      */
/* AN_FP8_ORDERS: partitions of the score's k-steps the model's error is the largest of (the code takes several: each
 * costs a run of the model) */
#define AN_FP8_ORDERS 1
#define AN_FP8_BLOCK 128         /* keys per online-softmax block                                                 */
#define AN_FP8_P_OFFSET 8.0      /* P = 2^(x2 - M + 8): P is scaled into e4m3's range before the cast             */
#define AN_FP8_SATURATED_REL 0.1 /* huge logits (the `large` inputs): each slice's rel-L2 at most this            */

/* The fp8 class's budget on one (batch, head) slice, from the model's errors there against the exact reference:
 * the kernel's rel-L2 on the slice must be <= *rel_bound, and every element's |out - ref| <= *abs_bound. */
AN_FN void an_fp8_budget(double model_rel_l2, double model_max_abs, double ref_max_abs, double *rel_bound,
                         double *abs_bound)
{
    *rel_bound = AN_FP8_K * model_rel_l2 + AN_FP8_REL_ATOL;
    *abs_bound = AN_FP8_K * model_max_abs + AN_FP8_ABS_ATOL * ref_max_abs;
}

/* ---- the model's arithmetic ---- */

/* 2^t for t <= 16, the same bits on every side: exact for integer t; else 2^n · √2 · e^((f − 1/2)·ln 2) with
 * f = t − n in (0, 1), a degree-14 Taylor polynomial in correctly rounded double steps (relative error ~1e-16).
 * 0 below 2^-160 (no float or e4m3 value is that small). */
AN_FN double an_exp2(double t)
{
    if (!(t >= -160.0)) return 0.0;
    const double n = floor(t), f = AN_DSUB(t, n);
    const unsigned long long pow2n = (unsigned long long)((long long)n + 1023) << 52;
    if (f == 0.0) return AN_BITSD(pow2n);
    const double g = AN_DMUL(AN_DSUB(f, 0.5), 0x1.62e42fefa39efp-1);
    double p = 1.0 / 87178291200.0; /* Horner from 1/14! down to 1 */
#define AN_H(c) p = AN_DADD(AN_DMUL(p, g), c)
    AN_H(1.0 / 6227020800.0);
    AN_H(1.0 / 479001600.0);
    AN_H(1.0 / 39916800.0);
    AN_H(1.0 / 3628800.0);
    AN_H(1.0 / 362880.0);
    AN_H(1.0 / 40320.0);
    AN_H(1.0 / 5040.0);
    AN_H(1.0 / 720.0);
    AN_H(1.0 / 120.0);
    AN_H(1.0 / 24.0);
    AN_H(1.0 / 6.0);
    AN_H(0.5);
    AN_H(1.0);
    AN_H(1.0);
#undef AN_H
    return AN_DMUL(AN_DMUL(p, 0x1.6a09e667f3bcdp+0), AN_BITSD(pow2n));
}

/* x (float) with its significand cut to 1 + AN_FP8_ACC_BITS bits, toward zero. */
AN_FN float an_trunc_accf(float x) { return AN_BITSF(AN_FBITS(x) & ~((1u << (23 - AN_FP8_ACC_BITS)) - 1u)); }

/* The unit a k-step aligns to: 2^(E − 13), E the exponent of the largest magnitude among the accumulator and the
 * step's products, and its inverse (both 0: all are zero or tiny). */
AN_FN void an_unit(float maxabs, float *unit, float *inv)
{
    const int e = (int)((AN_FBITS(maxabs) >> 23) & 0xffu); /* biased */
    *unit = e > AN_FP8_ACC_BITS ? AN_BITSF((unsigned)(e - AN_FP8_ACC_BITS) << 23) : 0.0f;
    *inv = e > AN_FP8_ACC_BITS ? AN_BITSF((unsigned)(254 + AN_FP8_ACC_BITS - e) << 23) : 0.0f;
}

/* x cut toward zero to a multiple of unit (exact: unit and inv are powers of two, |x|·inv < 2^14). */
AN_FN float an_cut(float x, float unit, float inv)
{
    return unit > 0.0f ? AN_FMUL(AN_TRUNCF(AN_FMUL(x, inv)), unit) : x;
}

/* One k-step of the tensor core: the accumulator and n products (each a product of two e4m3 values, exact in float)
 * aligned to the largest of them — every one cut toward zero to 13 bits below its exponent —, summed, and the sum cut
 * to 13 explicit mantissa bits. Every step is exact in float: the cut terms are multiples of the unit below 2^14 of
 * it, so 33 of them sum to fewer than 20 significant bits. */
AN_FN float an_kstep(float acc, const float *x, int n)
{
    float mx = fabsf(acc);
    for (int i = 0; i < n; i++) mx = fmaxf(mx, fabsf(x[i]));
    float u, inv;
    an_unit(mx, &u, &inv);
    float sum = an_cut(acc, u, inv);
    for (int i = 0; i < n; i++) sum = AN_FADD(sum, an_cut(x[i], u, inv));
    return an_trunc_accf(sum);
}

/* The head-dim index of position i of the score's k-steps in order `order` (0..AN_FP8_ORDERS-1): the steps start
 * 8·order positions later (the partition into k-steps moves; the tensor core's is not known to the kernel's data). */
AN_FN int an_order_index(int order, int i, int d) { return (i + 8 * order) % d; }

/* The score of one (query, key) pair in log2 units, from e4m3 code values (exact floats) q[0..d), k[0..d), in
 * k-steps of 32 in order `order`. */
AN_FN float an_logit2(const float *q, const float *k, int d, float qk_scale, float sm_log2e, int order)
{
    float acc = 0.0f, x[AN_FP8_KSTEP];
    for (int c0 = 0; c0 < d; c0 += AN_FP8_KSTEP) {
        const int n = d - c0 < AN_FP8_KSTEP ? d - c0 : AN_FP8_KSTEP;
        for (int i = 0; i < n; i++) {
            const int t = an_order_index(order, c0 + i, d);
            x[i] = AN_FMUL(q[t], k[t]);
        }
        acc = an_kstep(acc, x, n);
    }
    return AN_FMUL(AN_FMUL(acc, qk_scale), sm_log2e);
}

#ifdef AN_E4M3_ROUND
/* p = 2^(x2 − M + 8) and its e4m3 rounding. */
AN_FN void an_p(float x2, float m_int, float *p, float *pt)
{
    *p = AN_D2F(an_exp2(AN_DADD(AN_DSUB((double)x2, (double)m_int), AN_FP8_P_OFFSET)));
    *pt = AN_E4M3_ROUND(*p);
}

/* The rescale factor 2^(m_old − m_new) of two integer offsets (exact). */
AN_FN float an_rescale(float m_old, float m_new) { return AN_D2F(an_exp2(AN_DSUB((double)m_old, (double)m_new))); }

/* One query row of the model on the host, its scores added in order `order`: q[0..d) and the n_keys rows of k
 * and v (d floats each, row stride d) are e4m3 code values; acc is d floats of scratch; out gets d floats. */
AN_FN void an_model_row(const float *q, const float *k, const float *v, int n_keys, int d, float qk_scale,
                        float sm_log2e, float v_scale, int order, float *acc, float *out)
{
    float m = 0.0f, l = 0.0f, x2b[AN_FP8_BLOCK], ptb[AN_FP8_KSTEP], x[AN_FP8_KSTEP];
    int started = 0;
    for (int t = 0; t < d; t++) acc[t] = 0.0f;
    for (int b0 = 0; b0 < n_keys; b0 += AN_FP8_BLOCK) {
        const int b1 = n_keys < b0 + AN_FP8_BLOCK ? n_keys : b0 + AN_FP8_BLOCK;
        float mb = 0.0f;
        for (int j = b0; j < b1; j++) {
            x2b[j - b0] = an_logit2(q, k + (long long)j * d, d, qk_scale, sm_log2e, order);
            mb = j == b0 || x2b[j - b0] > mb ? x2b[j - b0] : mb;
        }
        const float mc = AN_CEILF(mb);
        if (!started || mc > m) {
            if (started) {
                const float r = an_rescale(m, mc);
                l = AN_FMUL(l, r);
                for (int t = 0; t < d; t++) acc[t] = AN_FMUL(acc[t], r);
            }
            m = mc;
            started = 1;
        }
        for (int s0 = b0; s0 < b1; s0 += AN_FP8_KSTEP) { /* P·V in k-steps of 32 keys */
            const int n = b1 - s0 < AN_FP8_KSTEP ? b1 - s0 : AN_FP8_KSTEP;
            for (int j = 0; j < n; j++) {
                float p;
                an_p(x2b[s0 + j - b0], m, &p, &ptb[j]);
                l = AN_FADD(l, p);
            }
            for (int t = 0; t < d; t++) {
                for (int j = 0; j < n; j++) x[j] = AN_FMUL(ptb[j], v[(long long)(s0 + j) * d + t]);
                acc[t] = an_kstep(acc[t], x, n);
            }
        }
    }
    for (int t = 0; t < d; t++) out[t] = AN_FDIV(AN_FMUL(acc[t], v_scale), l);
}
#endif

/* ---- structural probes: inputs built so that a structural fault gives an O(0.1-1) error where it acts ---- */
enum {
    AN_PROBE_HEADS,    /* every (batch, head) with its own scales of Q, K and V (logits std ~2)                     */
    AN_PROBE_NEEDLE,   /* key i+1 aligned with query i (logit ~12): a causal kernel that leaks one future key is
                          dominated by it; row 0 must equal V0                                                      */
    AN_PROBE_LAST_KEY, /* the last key dominates every query row: a kernel that drops keys past any point fails     */
    AN_PROBE_MODERATE, /* logits of std 1.5 at 1/sqrt(D), checked at softmax scales 0.5, 1 and 2 / sqrt(D)          */
    AN_PROBE_INTEGERS, /* sparse small integers with softmax scale ln 2: every P is a power of two, exact in e4m3,
                          so the model is exact and the budget is the atol alone                                    */
    AN_PROBE_COUNT
};

#ifdef AN_NORMAL
AN_FN float an_pow2f(int e) { return AN_D2F(AN_BITSD((unsigned long long)(1023 + e) << 52)); }

/* Tensor ids of the probes' draws (apart from the distributions' 0, 1, 2). */
#define AN_PT_BASE 16u
#define AN_PT_SHARED 20u /* the needle's shared directions, the last key's direction */

/* Element i of tensor t (0 Q, 1 K, 2 V) of probe `probe` for heads of seq rows x d columns, as a float that is an
 * fp16 value or is rounded to one by the caller (every formula below gives a float; the caller rounds once). */
AN_FN float an_probe_value(int probe, unsigned long long seed, unsigned t, int seq, int d, unsigned long long i)
{
    const unsigned long long head = (unsigned long long)seq * (unsigned long long)d;
    const unsigned long long bh = i / head;
    const int r = (int)((i / (unsigned long long)d) % (unsigned long long)seq), c = (int)(i % (unsigned long long)d);
    const float n = AN_NORMAL(seed, AN_PT_BASE + t, i);
    switch (probe) {
        case AN_PROBE_HEADS: { /* Q x 2^(a-3), K x 2^(4-a)(1 + b/16): logits std 2-2.25; V x 2^(e-2)(1 + g/16) */
            const int a = (int)(bh % 7u), b = (int)(bh % 3u), e = (int)(bh % 5u), g = (int)(bh % 16u);
            if (t == 0) return AN_FMUL(n, an_pow2f(a - 3));
            if (t == 1) return AN_FMUL(n, AN_FMUL(an_pow2f(4 - a), AN_FADD(1.0f, AN_FMUL((float)b, 0.0625f))));
            return AN_FMUL(n, AN_FMUL(an_pow2f(e - 2), AN_FADD(1.0f, AN_FMUL((float)g, 0.0625f))));
        }
        case AN_PROBE_NEEDLE: {
            const float a = AN_SQRTF(AN_FDIV(12.0f, AN_SQRTF((float)d)));
            if (t == 2) return n;
            if (t == 0) return AN_FMUL(a, AN_NORMAL(seed, AN_PT_SHARED, i));
            return r > 0 ? AN_FMUL(a, AN_NORMAL(seed, AN_PT_SHARED, i - (unsigned long long)d)) : AN_FMUL(a, n);
        }
        case AN_PROBE_LAST_KEY: {
            const float w = AN_NORMAL(seed, AN_PT_SHARED + 1u, bh * (unsigned long long)d + (unsigned long long)c);
            if (t == 0) return AN_FADD(AN_FMUL(0.7f, w), AN_FMUL(0.7f, n));
            if (t == 1 && r == seq - 1) return AN_FMUL(AN_FDIV(12.0f, AN_FMUL(0.7f, AN_SQRTF((float)d))), w);
            return n;
        }
        case AN_PROBE_MODERATE: return t == 2 ? n : AN_FMUL(n, 1.1066819f); /* 1.5^(1/4): q·k/sqrt(D) has std 1.5 */
        case AN_PROBE_INTEGERS: {
            const unsigned long long w = AN_WORD(seed, AN_PT_BASE + t, i);
            if (t == 2) return r == 0 && c == 0 ? 7.0f : (float)((int)((w >> 8) % 15u) - 7);
            /* the head's absmax 7 (scale 7/448 = 2^-6: every code exact) sits where the other operand is zero */
            const int mine = t == 0 ? d - 1 : d - 2, other = t == 0 ? d - 2 : d - 1;
            if (c == other) return 0.0f;
            if (c == mine) return r == 0 ? 7.0f : 0.0f;
            return (w & 3u) == 0 ? ((w >> 2) & 1u ? -1.0f : 1.0f) : 0.0f;
        }
    }
    return n;
}
#endif

#endif
