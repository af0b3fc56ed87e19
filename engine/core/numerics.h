/* numerics.h — the trusted CPU side of the number formats every task uses: fp16, OCP e4m3 and the simulated
 * 8-bit encoding; the deterministic input generator; the error metrics the gates compare with. templates/support.cu
 * and evo_numerics.cuh are its GPU twins (same generator, same encodings, bit for bit); the tests hold them together.
 *
 * Contract: pure functions of their arguments, no allocation, no global state, thread-safe. fp16 values travel as
 * uint16_t bit patterns; distributions are the values of evo_dist (config.h): 0 normal, 1 uniform, 2 outliers,
 * 3 zero_head, 4 large. docs/templates.md ("Quantization and references") gives the exact arithmetic.
 */
#ifndef EVO_NUMERICS_H
#define EVO_NUMERICS_H

#include <stddef.h>
#include <stdint.h>

/* ---- fp16 (IEEE binary16) ---- */
float evo_ref_half_to_float(uint16_t h);   /* exact; NaN payloads kept */
uint16_t evo_ref_float_to_half(float x);   /* round to nearest even; overflow -> inf; NaN -> 0x7e00 | sign */
uint16_t evo_ref_double_to_half(double x); /* the same, rounding the double once (no detour through float) */

/* ---- 8-bit formats ---- */
#define EVO_E4M3_MAX 448.0f
/* OCP FP8 E4M3FN (bias 7, no infinities, 0x7f/0xff NaN). Round to nearest even, saturating: |x| >= 448 and
 * +-inf give +-448 (0x7e / 0xfe); NaN gives 0x7f. */
uint8_t evo_ref_e4m3_encode(float x);
float evo_ref_e4m3_decode(uint8_t code); /* exact; 0x7f and 0xff decode to NaN */
/* Simulated 8-bit: code = clamp(roundf(x / (scale*448) * 127 + 128), 0, 255), each operation rounded in float
 * in that order, roundf = round half away from zero; NaN gives 128. decode = (code-128) / 127 * 448 * scale. */
uint8_t evo_ref_u8sim_encode(float x, float scale);
float evo_ref_u8sim_decode(uint8_t code, float scale);

/* ---- deterministic inputs ---- */
/* Element `index` of tensor (seed, tensor_id) drawn from dist and rounded to fp16. Counter-based: every element
 * is computed on its own from a hash of (seed, tensor_id, index), with integer and correctly rounded double
 * arithmetic only, so the GPU's evo_gen_inputs produces the same bits. head_elems = S*D (zero_head zeroes
 * the first head: indices < head_elems). Normal draws use Box-Muller; "outliers" adds N(0, 100), i.e. a
 * standard deviation of 10, with probability 2^-32 * 4294967 (0.001). */
uint16_t evo_ref_gen_value(uint64_t seed, uint32_t tensor_id, int dist, uint64_t head_elems, uint64_t index);
void evo_ref_gen_inputs(uint16_t *out, size_t n, uint64_t head_elems, uint64_t seed, uint32_t tensor_id, int dist);
/* The generator's 64-bit word for element index of tensor (seed, tensor_id) (stream 0): what the draws are made of. */
uint64_t evo_ref_gen_word(uint64_t seed, uint32_t tensor_id, uint64_t index);

/* ---- error metrics ---- */
typedef enum { EVO_ELEM_F16 = 0, EVO_ELEM_F32, EVO_ELEM_F64 } evo_elem;

/* Element i is bad when out[i] or ref[i] is not finite, or !(|out - ref| <= atol + rtol*|ref|) (in double).
 * The sums and max_abs cover the elements where both are finite, so one NaN does not hide the size of the rest;
 * a gate must look at n_nonfinite and n_over as well as at rel_l2. */
typedef struct {
    size_t n;         /* elements compared */
    double max_abs;   /* max |out - ref| */
    double rel_l2;    /* ||out - ref|| / ||ref||; the absolute ||out - ref|| when ||ref|| = 0 */
    double rmse;      /* sqrt(sum (out - ref)^2 / n_finite); 0 when n_finite = 0 */
    double frac_over; /* n_over / n */
    double sum_sq_diff, sum_sq_ref;
    size_t n_finite;     /* elements with out and ref finite */
    size_t n_over;       /* bad elements, non-finite ones included */
    size_t n_nonfinite;  /* elements whose out is NaN or +-inf */
    long long first_bad; /* smallest bad index, -1 when none */
} evo_metrics;

void evo_ref_compare(const void *out, evo_elem out_type, const void *ref, evo_elem ref_type, size_t n, double atol,
                     double rtol, evo_metrics *m);

/* What the GPU's evo_compare accumulates (the same struct is declared in support.cu; eight 8-byte fields, no
 * padding). evo_compare_reset, or evo_ref_compare_acc_init + a copy, prepares it. */
typedef struct {
    double max_abs;
    double sum_sq_diff;
    double sum_sq_ref;
    unsigned long long n_finite;
    unsigned long long n_over;
    unsigned long long n_nonfinite;
    unsigned long long first_bad; /* ~0ull when none */
    unsigned long long reserved;
} evo_compare_acc;

void evo_ref_compare_acc_init(evo_compare_acc *acc);
/* Turns an accumulator (GPU or host) over n elements into metrics. */
void evo_ref_metrics_from_acc(const evo_compare_acc *acc, size_t n, evo_metrics *m);

/* ---- per-slice comparison: the same counts and sums for each slice of slice_elems consecutive elements ---- */
/* Element i of slice s is bad when out[i] or ref[i] is not finite or, with bound given, !(|out - ref| <= bound[s]).
 * Same layout as evo_slice_acc in evo_numerics.cuh (the GPU's evo_compare_slices fills it). */
typedef struct {
    double sum_sq_diff;
    double sum_sq_ref;
    double max_abs;                 /* max |out - ref| over the finite pairs */
    double max_ref;                 /* max |ref| over the finite pairs */
    unsigned long long n_over;      /* bad elements */
    unsigned long long n_nonfinite; /* elements whose out is not finite */
    unsigned long long first_bad;   /* smallest bad index (over the whole tensor), ~0ull when none */
    unsigned long long reserved;
} evo_slice_acc;

void evo_ref_slice_acc_init(evo_slice_acc *acc, size_t n);
void evo_ref_compare_slices(const void *out, evo_elem out_type, const void *ref, evo_elem ref_type, size_t n_slices,
                            size_t slice_elems, const double *bound, evo_slice_acc *acc);
/* ||out - ref|| / ||ref|| of one slice; the absolute ||out - ref|| when ||ref|| = 0. */
double evo_slice_rel_l2(const evo_slice_acc *a);
/* The whole tensor's metrics from its slices (no element test beyond the slices' own). */
void evo_slice_metrics(const evo_slice_acc *acc, size_t n_slices, size_t slice_elems, evo_metrics *m);

/* ---- launch geometry of templates/support.cu (its top comment gives each kernel's arguments) ---- */
/* evo_gen_inputs, evo_half_to_float, evo_compare, evo_canary_check (grid-stride: any grid.x); the tasks' own support
 * kernels use it too */
#define EVO_SUPPORT_BLOCK 256
#define EVO_SUPPORT_SLICE_BLOCKS 64 /* evo_compare_slices: grid = (blocks per slice, slices), block = 256 */

#endif
