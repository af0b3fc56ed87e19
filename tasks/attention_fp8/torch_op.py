"""@MODULE@ — PyTorch ops for an FP8 attention kernel and an FP8 quantizer exported by evo (`evo export --torch`).

    import torch, @MODULE@                      # builds the library once (cached), registers torch.ops.evo.*
    out = torch.ops.evo.attention_fp8(q, k, v, is_causal=True)            # q, k, v fp16/bf16 [B, H, S, D] on CUDA
    out = torch.ops.evo.attention_fp8(q, k, v, incoherent=True)           # Q and K rotated before quantizing
    codes, scales = torch.ops.evo.quantize_fp8(x, rotate=False)           # e4m3 codes [B,H,S,D], scales [B,H]
    out = torch.ops.evo.attention_fp8_quantized(qc, kc, vc, qs, ks, vs)   # from codes + per-head scales -> fp16

attention_fp8 quantizes q, k and v per (batch, head) to e4m3 and runs the exported kernel on the codes; where that
kernel multiplies P·V in FP16 (and the file has its FP16-V twin), fp16 V is taken as given and only q and k are
quantized: less quantization work, and V unrounded (v_as_given() says per problem); where its Q·Kᵀ is FP16 too (the
exact class's kernels, with their FP16-K-and-V twin), fp16 K and V are taken as given and q alone is quantized
(kv_as_given(); not with incoherent=True, whose rotation must turn q and k alike).

The ops are C++ operators (the source is OPS_CPP below): an eager call goes from the dispatcher straight to the
kernels' launches, with no Python on the way. Importing the module builds the two .cu files beside it and that
source with nvcc into one shared library (once: cached under $EVO_TORCH_CACHE, default ~/.cache/evo/torch, by the
sources' SHA-256, the nvcc and PyTorch versions and the arch; $EVO_TORCH_LIB names a prebuilt library instead) and
loads it. The ops run on the current CUDA stream, eagerly, under torch.compile(fullgraph=True) (fake
implementations below give shapes and dtypes) and inside CUDA graph capture. They are forward-only (no autograd).
Non-contiguous inputs are copied to contiguous ones first (a copy costs time).

Written by evo from tasks/attention_fp8/torch_op.py and torch_ops.cpp: attention genome @GENOME@,
quantizer genome @QUANT_GENOME@, archs @ARCH@ and @QUANT_ARCH@.
"""
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import torch

# Filled by evo export: the two .cu files (relative to this file), the genomes the built library must report (a
# dispatching attention file: "dispatch: A | B | ..."), each file's arch (sm_90a: the wgmma family; both of one
# compute capability, which the GPU must have), the attention kernel's 8-bit format (e4m3 or u8sim) and head dims,
# and the quantizer's variants as D:dtype:rotate.
ATTENTION_CU = "@ATTENTION_CU@"
QUANTIZE_CU = "@QUANTIZE_CU@"
GENOME = "@GENOME@"
QUANT_GENOME = "@QUANT_GENOME@"
ARCH = "@ARCH@"
QUANT_ARCH = "@QUANT_ARCH@"
ATTN_FORMAT = "@ATTN_FORMAT@"
ATTN_HEAD_DIMS = "@ATTN_HEAD_DIMS@"
QUANT_VARIANTS = "@QUANT_VARIANTS@"

NAMESPACE = "evo"
NVCC_FLAGS = ["-O3", "-Xcompiler", "-fPIC"]
# The C++ operators (tasks/attention_fp8/torch_ops.cpp, filled in by evo export).
OPS_CPP = r'''@OPS_CPP@'''
_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _unrendered(*values):
    return [v for v in values if v.startswith("@") and v.endswith("@")]


if _unrendered(ATTENTION_CU, QUANTIZE_CU, GENOME, QUANT_GENOME, ARCH, QUANT_ARCH, ATTN_FORMAT, ATTN_HEAD_DIMS,
               QUANT_VARIANTS, OPS_CPP.strip()):
    raise ImportError(f"{__file__}: this is evo's template, its placeholders unfilled; import the module "
                      "`evo export --torch` writes from it")
if not hasattr(torch.library, "custom_op") or not hasattr(torch.library, "register_fake"):
    raise ImportError(f"{__name__} needs PyTorch 2.4 or newer (torch.library.custom_op); this is {torch.__version__}")

_HEAD_DIMS = tuple(int(d) for d in ATTN_HEAD_DIMS.split(","))
_QVARIANTS = frozenset((int(d), _DTYPES[t], bool(int(r)))
                       for d, t, r in (v.split(":") for v in QUANT_VARIANTS.split(",")))
_ARCH_DIGITS = re.fullmatch(r"sm_(\d+)[af]?", ARCH)
if not _ARCH_DIGITS:
    raise ImportError(f"{__file__}: ARCH {ARCH!r} is not sm_NN")
_ARCH_CC = (int(_ARCH_DIGITS.group(1)[:-1]), int(_ARCH_DIGITS.group(1)[-1]))  # sm_90a -> (9, 0), sm_120 -> (12, 0)


def _arch_flags(arch):
    """nvcc's target for a file of this arch: sm_90a's features (wgmma, setmaxnreg) need the gencode form."""
    m = re.fullmatch(r"sm_(\d+)([af]?)", arch)
    if not m:
        raise ImportError(f"{__file__}: arch {arch!r} is not sm_NN")
    return [f"-gencode=arch=compute_{m.group(1)}{m.group(2)},code=sm_{m.group(1)}{m.group(2)}"] if m.group(2) else \
        [f"-arch={arch}"]


# ---- the shared library ----

_lib = None
_lib_lock = threading.Lock()


def _here():
    return os.path.dirname(os.path.abspath(__file__))


def _find_nvcc():
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    return None


def _torch_dirs():
    """PyTorch's C++ headers and libraries (what torch.utils.cpp_extension would use), from the installed torch."""
    root = os.path.dirname(os.path.abspath(torch.__file__))
    inc = [os.path.join(root, "include"), os.path.join(root, "include", "torch", "csrc", "api", "include")]
    return inc, os.path.join(root, "lib")


def _cxx_std(inc):
    """The C++ standard PyTorch's headers ask for: C++20 where ATen.h refuses anything older (recent releases),
    else C++17."""
    try:
        with open(os.path.join(inc[0], "ATen", "ATen.h"), encoding="utf-8", errors="replace") as f:
            return "-std=c++20" if "202002L" in f.read() else "-std=c++17"
    except OSError:
        return "-std=c++17"


def _ops_source():
    """torch_ops.cpp with what it learns of this export defined in front (a file, not -D options: nvcc splits those
    at commas)."""
    qv = ",".join(f"{{{d},{0 if t == torch.float16 else 1},{int(r)}}}" for d, t, r in sorted(_QVARIANTS, key=str))
    defines = {"_GLIBCXX_USE_CXX11_ABI": int(torch._C._GLIBCXX_USE_CXX11_ABI), "EVO_OPS_ARCH_MAJOR": _ARCH_CC[0],
               "EVO_OPS_ARCH_MINOR": _ARCH_CC[1], "EVO_OPS_ARCH": f'"{ARCH}"',
               "EVO_OPS_E4M3": 1 if ATTN_FORMAT == "e4m3" else 0, "EVO_OPS_HEAD_DIMS": ATTN_HEAD_DIMS,
               "EVO_OPS_QVARIANTS": qv}
    return "".join(f"#define {k} {v}\n" for k, v in defines.items()) + OPS_CPP


def library_path():
    """Where the library is (or will be) cached: $EVO_TORCH_LIB if set, else the cache path for these sources."""
    if os.environ.get("EVO_TORCH_LIB"):
        return os.environ["EVO_TORCH_LIB"]
    nvcc = _find_nvcc()
    if nvcc is None:
        raise RuntimeError(f"{__name__}: nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): it builds "
                           f"{ATTENTION_CU} and {QUANTIZE_CU} at first use; install the CUDA Toolkit, or set "
                           "EVO_TORCH_LIB to a library built from them")
    h = hashlib.sha256()
    for src in _sources():
        with open(src, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    h.update(hashlib.sha256(_ops_source().encode()).digest())
    version = subprocess.run([nvcc, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    h.update(version.encode())
    h.update(" ".join([ARCH, QUANT_ARCH, torch.__version__] + NVCC_FLAGS).encode())
    cache = os.environ.get("EVO_TORCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "evo", "torch")
    return os.path.join(cache, h.hexdigest()[:24], "libevo_torch.so")


def _sources():
    srcs = [os.path.join(_here(), ATTENTION_CU), os.path.join(_here(), QUANTIZE_CU)]
    for s in srcs:
        if not os.path.isfile(s):
            raise RuntimeError(f"{__name__}: {s} is missing: the module builds the .cu files evo exported beside it")
    return srcs


def _build(path):
    nvcc = _find_nvcc()
    out_dir = os.path.dirname(path)
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="build-", dir=out_dir)
    print(f"{__name__}: building the kernels and the ops with nvcc (once; cached in {out_dir})", file=sys.stderr,
          flush=True)
    try:
        ops_src = os.path.join(work, "torch_ops.cpp")
        with open(ops_src, "w", encoding="utf-8") as f:
            f.write(_ops_source())
        inc, libdir = _torch_dirs()
        objs, procs = [], []
        jobs = [(src, _arch_flags(arch)) for src, arch in zip(_sources(), (ARCH, QUANT_ARCH))]
        jobs.append((ops_src, [_cxx_std(inc), *(f"-I{d}" for d in inc)]))
        for i, (src, extra) in enumerate(jobs):  # the three files compile in parallel
            obj = os.path.join(work, f"part{i}.o")
            cmd = [nvcc, *extra, *NVCC_FLAGS, "-c", src, "-o", obj]
            procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
            objs.append(obj)
        link = [nvcc, "-shared", *objs, "-o", os.path.join(work, "lib.so"), f"-L{libdir}",
                "-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", f"-Xlinker=-rpath,{libdir}"]
        for cmd, p in procs + [(link, None)]:
            if p is None:
                p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out = p.communicate()[0]
            if p.returncode != 0:
                raise RuntimeError(f"{__name__}: nvcc failed ({p.returncode}): {' '.join(cmd)}\n{out}")
        os.replace(os.path.join(work, "lib.so"), path)  # atomic: a concurrent build finds a whole file or none
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load():
    """Builds (first time) and loads the library, which registers torch.ops.evo.*; returns its ctypes handle (the
    genome queries). Needs no GPU."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if not os.path.isfile(path):
            if os.environ.get("EVO_TORCH_LIB"):
                raise RuntimeError(f"{__name__}: EVO_TORCH_LIB={path} does not exist")
            _build(path)
        lib = ctypes.CDLL(path)
        lib.evo_attention_genome.restype = ctypes.c_char_p
        lib.evo_attention_format.restype = ctypes.c_int
        lib.evo_quantize_genome.restype = ctypes.c_char_p
        said = (lib.evo_attention_genome().decode(), lib.evo_quantize_genome().decode(), lib.evo_attention_format())
        want = (GENOME, QUANT_GENOME, 0 if ATTN_FORMAT == "e4m3" else 1)
        if said != want:
            raise RuntimeError(f"{__name__}: {path} was built from other kernels (it says genomes {said[0]!r}, "
                               f"{said[1]!r}, format {said[2]}; this module wants {want[0]!r}, {want[1]!r}, {want[2]})")
        torch.ops.load_library(path)  # TORCH_LIBRARY(evo, ...): the ops' schemas and CUDA kernels
        _lib = lib
        return lib


def v_as_given(batch, heads, seq, head_dim, causal, dtype=torch.float16, incoherent=False):
    """True when torch.ops.evo.attention_fp8 takes V as given for this problem: fp16 V and an attention file whose
    kernel for it multiplies P·V in FP16 and has an FP16-V twin (evo_attention_forward_v16), or takes K and V as given
    (kv_as_given). Then only q and k (or q) are quantized, and V loses nothing to 8 bits. Needs the GPU the ops run on
    (the file picks its kernel by the device)."""
    if dtype != torch.float16:
        return False
    if kv_as_given(batch, heads, seq, head_dim, causal, dtype, incoherent):
        return True
    f = getattr(load(), "evo_attention_v16_supported", None)  # absent from files exported before it
    return bool(f is not None and f(int(batch), int(heads), int(seq), int(head_dim), 1 if causal else 0) == 1)


def kv_as_given(batch, heads, seq, head_dim, causal, dtype=torch.float16, incoherent=False):
    """True when torch.ops.evo.attention_fp8 takes K and V as given for this problem: fp16 K and V, no rotation, and an
    attention file whose kernel for it multiplies both Q·Kᵀ and P·V in FP16 and has an FP16-K-and-V twin
    (evo_attention_forward_kv16). Then q alone is quantized. Needs the GPU the ops run on."""
    if dtype != torch.float16 or incoherent:
        return False
    f = getattr(load(), "evo_attention_kv16_supported", None)  # absent from files exported before it
    return bool(f is not None and f(int(batch), int(heads), int(seq), int(head_dim), 1 if causal else 0) == 1)


# ---- the fake implementations' checks (the C++ kernels make the same ones, with the same messages) ----

def _fail(op, msg):
    raise ValueError(f"torch.ops.{NAMESPACE}.{op}: {msg}")


def _check_input(op, name, t, dtypes):
    if t.device.type != "cuda":
        _fail(op, f"{name} is on {t.device}; it must be a CUDA tensor")
    if t.dtype not in dtypes:
        _fail(op, f"{name} is {t.dtype}; it must be {' or '.join(str(d) for d in dtypes)}")
    if t.dim() != 4:
        _fail(op, f"{name} has shape {tuple(t.shape)}; it must be [batch, heads, seq, head_dim]")


def _check_quantize(op, x, rotate):
    _check_input(op, "x", x, (torch.float16, torch.bfloat16))
    d = x.shape[3]
    if (d, x.dtype, bool(rotate)) not in _QVARIANTS:
        have = ", ".join(f"D={a} {str(b)[6:]}{' rotate' if c else ''}" for a, b, c in sorted(_QVARIANTS, key=str))
        _fail(op, f"the exported quantizer has no variant for head_dim {d}, {x.dtype}, rotate={bool(rotate)} "
                  f"(it has: {have})")
    if x.shape[0] * x.shape[1] > 65535:
        _fail(op, f"batch * heads = {x.shape[0] * x.shape[1]}; at most 65535")


def _check_attention(op, q, k, v, dtypes):
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_input(op, name, t, dtypes)
    if not (q.shape == k.shape == v.shape):
        _fail(op, f"q, k, v shapes disagree: {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)} (one [B, H, S, D] "
                  "for all three)")
    if not (q.device == k.device == v.device):
        _fail(op, f"q, k, v are on different devices: {q.device}, {k.device}, {v.device}")
    if q.dtype != k.dtype or q.dtype != v.dtype:
        _fail(op, f"q, k, v dtypes disagree: {q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[3] not in _HEAD_DIMS:
        _fail(op, f"head_dim {q.shape[3]} is not supported by the exported attention kernel (it has "
                  f"{', '.join(map(str, _HEAD_DIMS))})")
    if q.shape[0] > 65535 or q.shape[1] > 65535:
        _fail(op, f"batch {q.shape[0]} and heads {q.shape[1]} must each be at most 65535")


def _check_scales(op, scales, b, h, device):
    for name, s in zip(("q_scale", "k_scale", "v_scale"), scales):
        if s.device != device:
            _fail(op, f"{name} is on {s.device}; the codes are on {device}")
        if s.dtype != torch.float32:
            _fail(op, f"{name} is {s.dtype}; it must be torch.float32")
        if tuple(s.shape) not in ((b * h,), (b, h)):
            _fail(op, f"{name} has shape {tuple(s.shape)}; it must be [{b * h}] or [{b}, {h}] (one per batch, head)")


def _check_quantized(op, qc, kc, vc, qs, ks, vs):
    dtypes = (torch.uint8, torch.float8_e4m3fn) if ATTN_FORMAT == "e4m3" else (torch.uint8,)
    _check_attention(op, qc, kc, vc, dtypes)
    _check_scales(op, (qs, ks, vs), qc.shape[0], qc.shape[1], qc.device)


def _register():
    for name in ("quantize_fp8", "attention_fp8", "attention_fp8_quantized"):
        if hasattr(getattr(torch.ops, NAMESPACE), name):
            raise ImportError(f"torch.ops.{NAMESPACE}.{name} is already registered in this process (by another evo "
                              "export module?): import one such module per process")
    load()

    # Fake implementations (torch.compile, FakeTensorMode): shapes, dtypes and devices, after the same checks.
    @torch.library.register_fake(f"{NAMESPACE}::quantize_fp8")
    def _(x, rotate=False):
        _check_quantize("quantize_fp8", x, rotate)
        return (x.new_empty(x.shape, dtype=torch.float8_e4m3fn),
                x.new_empty((x.shape[0], x.shape[1]), dtype=torch.float32))

    @torch.library.register_fake(f"{NAMESPACE}::attention_fp8")
    def _(q, k, v, is_causal=False, scale=None, incoherent=False):
        _check_attention("attention_fp8", q, k, v, (torch.float16, torch.bfloat16))
        for t, rot in ((q, incoherent), (k, incoherent), (v, False)):
            _check_quantize("attention_fp8", t, rot)
        return q.new_empty(q.shape)

    @torch.library.register_fake(f"{NAMESPACE}::attention_fp8_quantized")
    def _(q_codes, k_codes, v_codes, q_scale, k_scale, v_scale, is_causal=False, scale=None):
        _check_quantized("attention_fp8_quantized", q_codes, k_codes, v_codes, q_scale, k_scale, v_scale)
        return q_codes.new_empty(q_codes.shape, dtype=torch.float16)

    ops = getattr(torch.ops, NAMESPACE)
    return ops.quantize_fp8, ops.attention_fp8, ops.attention_fp8_quantized


quantize_fp8, attention_fp8, attention_fp8_quantized = _register()
