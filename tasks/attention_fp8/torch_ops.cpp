// torch_ops.cpp — the PyTorch operators of an evo export (torch.ops.evo.quantize_fp8, attention_fp8,
// attention_fp8_quantized), registered with the dispatcher in C++: an eager call runs no Python past the operator
// lookup. CUDA kernels call the exported C entry points (evo_quantize_forward, evo_attention_forward and, where the
// attention file has it for the problem, evo_attention_forward_kv16 with K and V in FP16 as given, or
// evo_attention_forward_v16 with V so) on the current stream;
// CPU kernels exist only to refuse CPU tensors by name. Shapes and dtypes for torch.compile and FakeTensorMode come
// from the module's fake implementations (Python, register_fake, which also serve meta tensors), whose checks
// these repeat with the same messages: ValueError (TORCH_CHECK_VALUE) for bad input, RuntimeError for a GPU of another
// arch or a failed launch.
//
// The module that `evo export --torch` writes builds this file with the two exported .cu files into one library and
// passes what the export holds as macros:
//   EVO_OPS_ARCH_MAJOR, EVO_OPS_ARCH_MINOR  the compute capability the kernels were built for (sm_90a: 9, 0)
//   EVO_OPS_ARCH        its name, for messages ("sm_90a")
//   EVO_OPS_E4M3        1: the attention kernel reads e4m3 codes; 0: u8sim codes
//   EVO_OPS_HEAD_DIMS   the attention kernel's head dims, e.g. 64,128
//   EVO_OPS_QVARIANTS   the quantizer's variants as {head_dim, dtype (0 fp16, 1 bf16), rotate}, e.g. {64,0,0},{64,1,0}
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <atomic>
#include <sstream>
#include <string>
#include <vector>

#ifndef EVO_OPS_ARCH_MAJOR
#error "torch_ops.cpp: EVO_OPS_* macros missing (the module evo export --torch writes passes them)"
#endif

extern "C" {
int evo_attention_forward(const void *q, const void *k, const void *v, const float *q_scale, const float *k_scale,
                          const float *v_scale, void *o, int batch, int heads, int seq, int head_dim, int causal,
                          float softmax_scale, cudaStream_t stream);
int evo_quantize_forward(const void *x, int in_dtype, int rotate, void *codes, float *scales, int batch, int heads,
                         int seq, int head_dim, void *scratch, unsigned long long scratch_bytes, cudaStream_t stream);
// Several inputs in one plan (one launch for most genomes); a quantizer exported before it existed lacks it, and
// the inputs are then quantized one call each.
__attribute__((weak)) int evo_quantize_forward_multi(const void *const *xs, int n_x, int in_dtype, int rotate,
                                                     void *codes, float *scales, int batch, int heads, int seq,
                                                     int head_dim, void *scratch, unsigned long long scratch_bytes,
                                                     cudaStream_t stream);
// V given in FP16 (an attention file exported before these existed lacks them: then v is quantized too)
__attribute__((weak)) int evo_attention_forward_v16(const void *q, const void *k, const void *v16,
                                                    const float *q_scale, const float *k_scale, const float *v_scale,
                                                    void *o, int batch, int heads, int seq, int head_dim, int causal,
                                                    float softmax_scale, cudaStream_t stream);
__attribute__((weak)) int evo_attention_v16_supported(int batch, int heads, int seq, int head_dim, int causal);
// K and V given in FP16 (likewise absent from older files: then k is quantized too)
__attribute__((weak)) int evo_attention_forward_kv16(const void *q, const void *k16, const void *v16,
                                                     const float *q_scale, const float *k_scale, const float *v_scale,
                                                     void *o, int batch, int heads, int seq, int head_dim, int causal,
                                                     float softmax_scale, cudaStream_t stream);
__attribute__((weak)) int evo_attention_kv16_supported(int batch, int heads, int seq, int head_dim, int causal);
// A kernel that converts K and V to FP16 (V_PATH 3) or transposes V (V_PATH 5) every call takes a workspace: the
// caching allocator's, here (an attention file exported before these existed lacks them, and has no such kernel)
__attribute__((weak)) size_t evo_attention_workspace_bytes(int batch, int heads, int seq, int head_dim, int causal);
__attribute__((weak)) int evo_attention_forward_ws(const void *q, const void *k, const void *v, const float *q_scale,
                                                   const float *k_scale, const float *v_scale, void *o, int batch,
                                                   int heads, int seq, int head_dim, int causal, float softmax_scale,
                                                   void *workspace, size_t workspace_bytes, cudaStream_t stream);
unsigned long long evo_quantize_scratch_bytes(int in_dtype, int rotate, int batch, int heads, int seq, int head_dim);
unsigned long long evo_quantize_scratch_zero_bytes(int in_dtype, int rotate, int batch, int heads, int seq,
                                                   int head_dim);
}

namespace {

constexpr int kHeadDims[] = {EVO_OPS_HEAD_DIMS};
struct QVariant {
    int head_dim, dtype, rotate;
};
constexpr QVariant kQVariants[] = {EVO_OPS_QVARIANTS};

std::string op_name(const char *op) { return std::string("torch.ops.evo.") + op; }

const char *dtype_name(at::ScalarType t)
{
    switch (t) {
        case at::kHalf: return "torch.float16";
        case at::kBFloat16: return "torch.bfloat16";
        case at::kFloat: return "torch.float32";
        case at::kByte: return "torch.uint8";
        case at::kFloat8_e4m3fn: return "torch.float8_e4m3fn";
        default: return c10::toString(t);
    }
}

std::string shape_str(const at::Tensor &t)
{
    std::ostringstream s;
    s << "(";
    for (int64_t i = 0; i < t.dim(); i++) s << (i ? ", " : "") << t.size(i);
    s << (t.dim() == 1 ? ",)" : ")");
    return s.str();
}

int in_dtype(at::ScalarType t) { return t == at::kBFloat16 ? 1 : 0; }

// ---- checks (the module's _check_* in Python make the same ones for the fake implementations) ----

void check_input(const char *op, const char *name, const at::Tensor &t, bool codes)
{
    TORCH_CHECK_VALUE(t.device().is_cuda(), op_name(op), ": ", name, " is on ", t.device().str(),
                      "; it must be a CUDA tensor");
    const auto d = t.scalar_type();
    if (codes) {
        const bool ok = d == at::kByte || (EVO_OPS_E4M3 && d == at::kFloat8_e4m3fn);
        TORCH_CHECK_VALUE(ok, op_name(op), ": ", name, " is ", dtype_name(d), "; it must be ",
                          EVO_OPS_E4M3 ? "torch.uint8 or torch.float8_e4m3fn" : "torch.uint8");
    } else {
        TORCH_CHECK_VALUE(d == at::kHalf || d == at::kBFloat16, op_name(op), ": ", name, " is ", dtype_name(d),
                          "; it must be torch.float16 or torch.bfloat16");
    }
    TORCH_CHECK_VALUE(t.dim() == 4, op_name(op), ": ", name, " has shape ", shape_str(t),
                      "; it must be [batch, heads, seq, head_dim]");
}

void check_quantize(const char *op, const at::Tensor &x, bool rotate)
{
    check_input(op, "x", x, false);
    const int64_t d = x.size(3);
    const int dt = in_dtype(x.scalar_type());
    bool have = false;
    for (const auto &v : kQVariants) have |= v.head_dim == d && v.dtype == dt && v.rotate == (rotate ? 1 : 0);
    if (!have) {
        std::ostringstream h;
        bool first = true;
        for (const auto &v : kQVariants) {
            h << (first ? "" : ", ") << "D=" << v.head_dim << (v.dtype ? " bfloat16" : " float16")
              << (v.rotate ? " rotate" : "");
            first = false;
        }
        TORCH_CHECK_VALUE(false, op_name(op), ": the exported quantizer has no variant for head_dim ", d, ", ",
                          dtype_name(x.scalar_type()), ", rotate=", rotate ? "True" : "False", " (it has: ", h.str(),
                          ")");
    }
    TORCH_CHECK_VALUE(x.size(0) * x.size(1) <= 65535, op_name(op), ": batch * heads = ", x.size(0) * x.size(1),
                      "; at most 65535");
}

void check_attention(const char *op, const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, bool codes)
{
    check_input(op, "q", q, codes);
    check_input(op, "k", k, codes);
    check_input(op, "v", v, codes);
    TORCH_CHECK_VALUE(q.sizes() == k.sizes() && q.sizes() == v.sizes(), op_name(op), ": q, k, v shapes disagree: ",
                      shape_str(q), ", ", shape_str(k), ", ", shape_str(v), " (one [B, H, S, D] for all three)");
    TORCH_CHECK_VALUE(q.device() == k.device() && q.device() == v.device(), op_name(op),
                      ": q, k, v are on different devices: ", q.device().str(), ", ", k.device().str(), ", ",
                      v.device().str());
    TORCH_CHECK_VALUE(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(), op_name(op),
                      ": q, k, v dtypes disagree: ", dtype_name(q.scalar_type()), ", ", dtype_name(k.scalar_type()),
                      ", ", dtype_name(v.scalar_type()));
    bool dim_ok = false;
    for (int d : kHeadDims) dim_ok |= d == q.size(3);
    if (!dim_ok) { // the message's list is made only when it is said
        std::ostringstream dims;
        for (size_t i = 0; i < sizeof kHeadDims / sizeof kHeadDims[0]; i++) dims << (i ? ", " : "") << kHeadDims[i];
        TORCH_CHECK_VALUE(false, op_name(op), ": head_dim ", q.size(3),
                          " is not supported by the exported attention kernel (it has ", dims.str(), ")");
    }
    TORCH_CHECK_VALUE(q.size(0) <= 65535 && q.size(1) <= 65535, op_name(op), ": batch ", q.size(0), " and heads ",
                      q.size(1), " must each be at most 65535");
}

void check_scales(const char *op, const at::Tensor &qc, const at::Tensor &qs, const at::Tensor &ks,
                  const at::Tensor &vs)
{
    const int64_t b = qc.size(0), h = qc.size(1);
    const char *names[] = {"q_scale", "k_scale", "v_scale"};
    const at::Tensor *s[] = {&qs, &ks, &vs};
    for (int i = 0; i < 3; i++) {
        TORCH_CHECK_VALUE(s[i]->device() == qc.device(), op_name(op), ": ", names[i], " is on ", s[i]->device().str(),
                          "; the codes are on ", qc.device().str());
        TORCH_CHECK_VALUE(s[i]->scalar_type() == at::kFloat, op_name(op), ": ", names[i], " is ",
                          dtype_name(s[i]->scalar_type()), "; it must be torch.float32");
        const bool flat = s[i]->dim() == 1 && s[i]->size(0) == b * h;
        const bool two = s[i]->dim() == 2 && s[i]->size(0) == b && s[i]->size(1) == h;
        TORCH_CHECK_VALUE(flat || two, op_name(op), ": ", names[i], " has shape ", shape_str(*s[i]), "; it must be [",
                          b * h, "] or [", b, ", ", h, "] (one per batch, head)");
    }
}

// A GPU of another compute capability is refused; a device index once matched is remembered (bit i: cuda:i).
void check_arch(const at::Tensor &t)
{
    static std::atomic<uint64_t> checked{0};
    const int idx = t.device().has_index() ? t.device().index() : at::cuda::current_device();
    const uint64_t bit = idx < 64 ? 1ull << idx : 0ull;
    if (checked.load(std::memory_order_relaxed) & bit) return;
    const cudaDeviceProp *p = at::cuda::getDeviceProperties(idx);
    TORCH_CHECK(p->major == EVO_OPS_ARCH_MAJOR && p->minor == EVO_OPS_ARCH_MINOR,
                "the kernels were built for " EVO_OPS_ARCH "; ", p->name, " (cuda:", idx, ") is sm_", p->major,
                p->minor, ": export them again for this GPU");
    checked.fetch_or(bit, std::memory_order_relaxed);
}

const char *cuda_error_name(int rc)
{
    switch (rc) {
        case 1: return "cudaErrorInvalidValue";
        case 2: return "cudaErrorMemoryAllocation";
        case 98: return "cudaErrorInvalidDeviceFunction";
        case 209: return "cudaErrorNoKernelImageForDevice";
        case 700: return "cudaErrorIllegalAddress";
        case 719: return "cudaErrorLaunchFailure";
        default: return "cudaError";
    }
}

void check_call(const char *fn, int rc)
{
    TORCH_CHECK(rc == 0, "evo: ", fn, " returned ", rc, " (", cuda_error_name(rc),
                "): an unsupported combination or shape, or a CUDA failure");
}

// Contiguous and 16-byte aligned (the kernels' vector loads): t itself, or a copy.
at::Tensor aligned(const at::Tensor &t)
{
    at::Tensor c = t.is_contiguous() ? t : t.contiguous();
    return reinterpret_cast<uintptr_t>(c.data_ptr()) % 16 == 0 ? c : c.clone();
}

// ---- CUDA ----

uint64_t align256(uint64_t n) { return (n + 255) & ~uint64_t(255); }

// How n_x inputs of one shape and dtype are quantized: one evo_quantize_forward_multi call when n_x > 1 and the file
// has it (its plan takes n_x times the heads: it says so through the scratch size), else one call per input; each
// call's scratch a 256-byte-aligned slice of one buffer, whose zeroed heads one memset clears.
struct QuantPlan {
    bool multi;
    int calls, per_call, dt, rot;
    unsigned long long need, zero;
    uint64_t stride; // bytes of one call's slice
    uint64_t bytes() const { return need ? stride * (uint64_t)calls : 0; }
};

QuantPlan quant_plan(const at::Tensor &x, int n_x, bool rotate)
{
    const int b = (int)x.size(0), h = (int)x.size(1), s = (int)x.size(2), d = (int)x.size(3);
    QuantPlan p;
    p.dt = in_dtype(x.scalar_type());
    p.rot = rotate ? 1 : 0;
    unsigned long long need = ~0ull;
    p.multi = n_x > 1 && evo_quantize_forward_multi != nullptr &&
              (need = evo_quantize_scratch_bytes(p.dt, p.rot, n_x * b, h, s, d)) != ~0ull;
    p.calls = p.multi ? 1 : n_x;
    p.per_call = p.multi ? n_x : 1;
    if (!p.multi) need = evo_quantize_scratch_bytes(p.dt, p.rot, b, h, s, d);
    TORCH_CHECK(need != ~0ull, "evo: the quantizer cannot run (", p.per_call * b, ", ", h, ", ", s, ", ", d, ") ",
                dtype_name(x.scalar_type()), " rotate=", rotate ? "True" : "False");
    p.need = need;
    p.zero = need ? evo_quantize_scratch_zero_bytes(p.dt, p.rot, p.per_call * b, h, s, d) : 0;
    p.stride = align256(need);
    return p;
}

// n_x inputs (contiguous, aligned) into codes [n_x, B, H, S, D] at cbase and scales [n_x, B, H] at sbase, with the
// plan's scratch at scratch (256-byte aligned; nullptr when the plan needs none).
void quantize_run(const at::Tensor *const *xs, int n_x, const QuantPlan &p, unsigned char *cbase, float *sbase,
                  unsigned char *scratch, cudaStream_t stream)
{
    const at::Tensor &x = *xs[0];
    const int b = (int)x.size(0), h = (int)x.size(1), s = (int)x.size(2), d = (int)x.size(3);
    const int64_t head_codes = (int64_t)b * h * s * d; // bytes of one input's codes
    if (p.need && p.zero) C10_CUDA_CHECK(cudaMemsetAsync(scratch, 0, p.stride * (p.calls - 1) + p.zero, stream));
    for (int c = 0; c < p.calls; c++) {
        void *scratch_ptr = p.need ? scratch + p.stride * c : nullptr;
        if (p.multi) {
            const void *ptrs[3] = {nullptr, nullptr, nullptr};
            for (int i = 0; i < n_x; i++) ptrs[i] = xs[i]->data_ptr();
            check_call("evo_quantize_forward_multi",
                       evo_quantize_forward_multi(ptrs, n_x, p.dt, p.rot, cbase, sbase, b, h, s, d, scratch_ptr,
                                                  p.need, stream));
        } else {
            check_call("evo_quantize_forward",
                       evo_quantize_forward(xs[c]->data_ptr(), p.dt, p.rot, cbase + c * head_codes, sbase + c * b * h,
                                            b, h, s, d, scratch_ptr, p.need, stream));
        }
    }
}

// The base of a byte buffer rounded up to 256 (the buffer is allocated 256 bytes longer).
unsigned char *base256(const at::Tensor &buf)
{
    const uintptr_t p = reinterpret_cast<uintptr_t>(buf.data_ptr());
    return reinterpret_cast<unsigned char *>((p + 255) & ~uintptr_t(255));
}

std::tuple<at::Tensor, at::Tensor> quantize(const at::Tensor &x_in, bool rotate)
{
    at::Tensor x = aligned(x_in);
    at::Tensor codes = at::empty(x.sizes(), x.options().dtype(at::kFloat8_e4m3fn));
    if (x.numel() == 0) // heads without elements: absmax 0, scale 1
        return {codes, at::ones({x.size(0), x.size(1)}, x.options().dtype(at::kFloat))};
    at::Tensor scales = at::empty({x.size(0), x.size(1)}, x.options().dtype(at::kFloat));
    const at::Tensor *xs[1] = {&x};
    const QuantPlan p = quant_plan(x, 1, rotate);
    at::Tensor scratch; // fresh from the caching allocator: stream-ordered, and a graph's own pool under capture
    if (p.need) scratch = at::empty({(int64_t)(p.bytes() + 256)}, x.options().dtype(at::kByte));
    quantize_run(xs, 1, p, static_cast<unsigned char *>(codes.data_ptr()), scales.data_ptr<float>(),
                 p.need ? base256(scratch) : nullptr, at::cuda::getCurrentCUDAStream(x.device().index()).stream());
    return {codes, scales};
}

// What the attention is given besides q's codes: K and V codes, V in FP16 (V16), or K and V in FP16 (KV16).
enum Given { CODES = 0, V16 = 1, KV16 = 2 };

// The attention on codes and scales given by address; shape (B, H, S, D) and device from like. V16: vc is the FP16 V
// itself and vs is NULL (evo_attention_forward_v16); KV16: kc and vc are FP16, ks and vs NULL
// (evo_attention_forward_kv16).
at::Tensor attention_ptrs(const at::Tensor &like, const void *qc, const void *kc, const void *vc, const float *qs,
                          const float *ks, const float *vs, bool causal, c10::optional<double> scale,
                          Given given = CODES)
{
    const int b = (int)like.size(0), h = (int)like.size(1), s = (int)like.size(2), d = (int)like.size(3);
    at::Tensor o = at::empty(like.sizes(), like.options().dtype(at::kHalf));
    if (o.numel() == 0) return o;
    const float sm = scale.has_value() ? (float)*scale : (float)(1.0 / std::sqrt((double)d));
    cudaStream_t stream = at::cuda::getCurrentCUDAStream(like.device().index()).stream();
    if (given == KV16)
        check_call("evo_attention_forward_kv16", evo_attention_forward_kv16(qc, kc, vc, qs, ks, vs, o.data_ptr(), b, h,
                                                                            s, d, causal ? 1 : 0, sm, stream));
    else if (given == V16)
        check_call("evo_attention_forward_v16", evo_attention_forward_v16(qc, kc, vc, qs, ks, vs, o.data_ptr(), b, h,
                                                                          s, d, causal ? 1 : 0, sm, stream));
    else if (const size_t wb = evo_attention_workspace_bytes && evo_attention_forward_ws
                                   ? evo_attention_workspace_bytes(b, h, s, d, causal ? 1 : 0)
                                   : 0) {
        at::Tensor ws = at::empty({(int64_t)(wb + 256)}, like.options().dtype(at::kByte));
        check_call("evo_attention_forward_ws", evo_attention_forward_ws(qc, kc, vc, qs, ks, vs, o.data_ptr(), b, h, s,
                                                                        d, causal ? 1 : 0, sm, base256(ws), wb, stream));
    } else
        check_call("evo_attention_forward", evo_attention_forward(qc, kc, vc, qs, ks, vs, o.data_ptr(), b, h, s, d,
                                                                  causal ? 1 : 0, sm, stream));
    return o;
}

// The attention file takes this problem's V in FP16 as given (its kernel multiplies P·V in FP16): then only q and k
// are quantized, and V loses nothing to 8 bits.
bool v_as_given(const at::Tensor &q, const at::Tensor &v, bool causal)
{
    return v.scalar_type() == at::kHalf && evo_attention_forward_v16 != nullptr &&
           evo_attention_v16_supported != nullptr &&
           evo_attention_v16_supported((int)q.size(0), (int)q.size(1), (int)q.size(2), (int)q.size(3),
                                       causal ? 1 : 0) == 1;
}

// ... and K too (its kernel's Q·Kᵀ is FP16 as well: the exact class's): then q alone is quantized. Not with the
// rotation, which must turn q and k alike.
bool kv_as_given(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, bool causal, bool incoherent)
{
    return !incoherent && k.scalar_type() == at::kHalf && v.scalar_type() == at::kHalf &&
           evo_attention_forward_kv16 != nullptr && evo_attention_kv16_supported != nullptr &&
           evo_attention_kv16_supported((int)q.size(0), (int)q.size(1), (int)q.size(2), (int)q.size(3),
                                        causal ? 1 : 0) == 1;
}

at::Tensor attention_codes(const at::Tensor &qc, const at::Tensor &kc, const at::Tensor &vc, const at::Tensor &qs,
                           const at::Tensor &ks, const at::Tensor &vs, bool causal, c10::optional<double> scale)
{
    return attention_ptrs(qc, qc.data_ptr(), kc.data_ptr(), vc.data_ptr(), qs.data_ptr<float>(), ks.data_ptr<float>(),
                          vs.data_ptr<float>(), causal, scale);
}

std::tuple<at::Tensor, at::Tensor> quantize_fp8_cuda(const at::Tensor &x, bool rotate)
{
    check_quantize("quantize_fp8", x, rotate);
    check_arch(x);
    c10::cuda::CUDAGuard guard(x.device());
    return quantize(x, rotate);
}

at::Tensor attention_fp8_cuda(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, bool is_causal,
                              c10::optional<double> scale, bool incoherent)
{
    check_attention("attention_fp8", q, k, v, false);
    TORCH_CHECK_VALUE(EVO_OPS_E4M3, op_name("attention_fp8"),
                      ": the exported attention kernel reads u8sim codes; this quantizer writes e4m3 (use "
                      "attention_fp8_quantized with codes of that format)");
    check_quantize("attention_fp8", q, incoherent);
    check_quantize("attention_fp8", k, incoherent);
    check_quantize("attention_fp8", v, false);
    check_arch(q);
    c10::cuda::CUDAGuard guard(q.device());
    if (q.numel() == 0) return at::empty(q.sizes(), q.options());
    // q, k, v quantized together: one call for the three (per head), or q and k in one (rotated) and v alone; where
    // the attention file takes K and V in FP16 for this problem, q alone (kv16); V alone, q and k (v16). Their
    // codes, scales and the quantizer's scratch share one buffer: each allocation is host time in an eager call.
    const at::Tensor qa = aligned(q), ka = aligned(k), va = aligned(v);
    const at::Tensor *all[3] = {&qa, &ka, &va}, *qk[2] = {&qa, &ka}, *vv[1] = {&va}, *qq[1] = {&qa};
    const bool kv16 = kv_as_given(q, k, v, is_causal, incoherent);
    const bool v16 = !kv16 && v_as_given(q, v, is_causal);
    const QuantPlan p0 = quant_plan(qa, kv16 ? 1 : incoherent || v16 ? 2 : 3, incoherent);
    QuantPlan p1{};
    if (incoherent && !v16) p1 = quant_plan(va, 1, false);
    const int64_t per = q.numel(), bh = q.size(0) * q.size(1);
    const uint64_t n_in = kv16 ? 1 : v16 ? 2 : 3; // the inputs quantized
    const uint64_t codes_bytes = align256(n_in * (uint64_t)per), scale_bytes = align256(n_in * (uint64_t)bh * 4);
    const uint64_t total = codes_bytes + scale_bytes + align256(p0.bytes()) + p1.bytes() + 256;
    at::Tensor work = at::empty({(int64_t)total}, q.options().dtype(at::kByte));
    unsigned char *cb = base256(work);
    float *sb = reinterpret_cast<float *>(cb + codes_bytes);
    unsigned char *scr0 = cb + codes_bytes + scale_bytes, *scr1 = scr0 + align256(p0.bytes());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream(q.device().index()).stream();
    if (kv16) {
        quantize_run(qq, 1, p0, cb, sb, p0.need ? scr0 : nullptr, stream);
    } else if (!incoherent && !v16) {
        quantize_run(all, 3, p0, cb, sb, p0.need ? scr0 : nullptr, stream);
    } else {
        quantize_run(qk, 2, p0, cb, sb, p0.need ? scr0 : nullptr, stream);
        if (!v16) quantize_run(vv, 1, p1, cb + 2 * per, sb + 2 * bh, p1.need ? scr1 : nullptr, stream);
    }
    at::Tensor o =
        kv16  ? attention_ptrs(q, cb, ka.data_ptr(), va.data_ptr(), sb, nullptr, nullptr, is_causal, scale, KV16)
        : v16 ? attention_ptrs(q, cb, cb + per, va.data_ptr(), sb, sb + bh, nullptr, is_causal, scale, V16)
              : attention_ptrs(q, cb, cb + per, cb + 2 * per, sb, sb + bh, sb + 2 * bh, is_causal, scale);
    return q.scalar_type() == at::kHalf ? o : o.to(q.scalar_type());
}

at::Tensor attention_fp8_quantized_cuda(const at::Tensor &q_codes, const at::Tensor &k_codes,
                                        const at::Tensor &v_codes, const at::Tensor &q_scale,
                                        const at::Tensor &k_scale, const at::Tensor &v_scale, bool is_causal,
                                        c10::optional<double> scale)
{
    check_attention("attention_fp8_quantized", q_codes, k_codes, v_codes, true);
    check_scales("attention_fp8_quantized", q_codes, q_scale, k_scale, v_scale);
    check_arch(q_codes);
    c10::cuda::CUDAGuard guard(q_codes.device());
    return attention_codes(aligned(q_codes), aligned(k_codes), aligned(v_codes), q_scale.contiguous(),
                           k_scale.contiguous(), v_scale.contiguous(), is_causal, scale);
}

} // namespace

TORCH_LIBRARY(evo, m)
{
    m.def("quantize_fp8(Tensor x, bool rotate=False) -> (Tensor, Tensor)");
    m.def("attention_fp8(Tensor q, Tensor k, Tensor v, bool is_causal=False, float? scale=None, "
          "bool incoherent=False) -> Tensor");
    m.def("attention_fp8_quantized(Tensor q_codes, Tensor k_codes, Tensor v_codes, Tensor q_scale, Tensor k_scale, "
          "Tensor v_scale, bool is_causal=False, float? scale=None) -> Tensor");
}

TORCH_LIBRARY_IMPL(evo, CUDA, m)
{
    m.impl("quantize_fp8", &quantize_fp8_cuda);
    m.impl("attention_fp8", &attention_fp8_cuda);
    m.impl("attention_fp8_quantized", &attention_fp8_quantized_cuda);
}

// CPU tensors reach the checks (which refuse them by name) instead of the dispatcher's "no CPU kernel".
TORCH_LIBRARY_IMPL(evo, CPU, m)
{
    m.impl("quantize_fp8", &quantize_fp8_cuda);
    m.impl("attention_fp8", &attention_fp8_cuda);
    m.impl("attention_fp8_quantized", &attention_fp8_quantized_cuda);
}
