"""@MODULE@ — PyTorch ops for an FP8 attention kernel and an FP8 quantizer exported by evo (`evo export --torch`).

    import torch, @MODULE@                      # registers torch.ops.evo.*; builds nothing yet
    out = torch.ops.evo.attention_fp8(q, k, v, is_causal=True)            # q, k, v fp16/bf16 [B, H, S, D] on CUDA
    out = torch.ops.evo.attention_fp8(q, k, v, incoherent=True)           # Q and K rotated before quantizing
    codes, scales = torch.ops.evo.quantize_fp8(x, rotate=False)           # e4m3 codes [B,H,S,D], scales [B,H]
    out = torch.ops.evo.attention_fp8_quantized(qc, kc, vc, qs, ks, vs)   # from codes + per-head scales -> fp16

The first call builds the two .cu files beside this module with nvcc into one shared library, cached under
$EVO_TORCH_CACHE (default ~/.cache/evo/torch) by the files' SHA-256, the nvcc version and the arch; $EVO_TORCH_LIB
names a prebuilt library instead. The ops run on the current CUDA stream, work eagerly, under
torch.compile(fullgraph=True) (fake implementations give shapes and dtypes) and inside CUDA graph capture. They are
forward-only (no autograd). Non-contiguous inputs are copied to contiguous ones first (a copy costs time).

Written by evo from tasks/attention_fp8/torch_op.py: attention genome @GENOME@,
quantizer genome @QUANT_GENOME@, arch @ARCH@.
"""
import ctypes
import hashlib
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
from typing import Optional, Tuple

import torch

# Filled by evo export: the two .cu files (relative to this file), the genomes the built library must report, the
# arch (nvcc -arch; the GPU must be exactly that compute capability), the attention kernel's 8-bit format (e4m3 or
# u8sim) and head dims, and the quantizer's variants as D:dtype:rotate.
ATTENTION_CU = "@ATTENTION_CU@"
QUANTIZE_CU = "@QUANTIZE_CU@"
GENOME = "@GENOME@"
QUANT_GENOME = "@QUANT_GENOME@"
ARCH = "@ARCH@"
ATTN_FORMAT = "@ATTN_FORMAT@"
ATTN_HEAD_DIMS = "@ATTN_HEAD_DIMS@"
QUANT_VARIANTS = "@QUANT_VARIANTS@"

NAMESPACE = "evo"
NVCC_FLAGS = ["-O3", "-Xcompiler", "-fPIC"]
_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
_IN_DTYPE = {torch.float16: 0, torch.bfloat16: 1}
_CUDA_ERRORS = {1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation", 98: "cudaErrorInvalidDeviceFunction",
                209: "cudaErrorNoKernelImageForDevice", 700: "cudaErrorIllegalAddress", 719: "cudaErrorLaunchFailure"}


def _unrendered(*values):
    return [v for v in values if v.startswith("@") and v.endswith("@")]


if _unrendered(ATTENTION_CU, QUANTIZE_CU, GENOME, QUANT_GENOME, ARCH, ATTN_FORMAT, ATTN_HEAD_DIMS, QUANT_VARIANTS):
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


# ---- the shared library ----

_lib = None
_lib_lock = threading.Lock()
_arch_ok = set()  # device indices checked against ARCH


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
    version = subprocess.run([nvcc, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    h.update(version.encode())
    h.update(" ".join([ARCH] + NVCC_FLAGS).encode())
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
    try:
        objs, procs = [], []
        for i, src in enumerate(_sources()):  # the two files compile in parallel
            obj = os.path.join(work, f"part{i}.o")
            cmd = [nvcc, f"-arch={ARCH}", *NVCC_FLAGS, "-c", src, "-o", obj]
            procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
            objs.append(obj)
        link = [nvcc, f"-arch={ARCH}", "-shared", *objs, "-o", os.path.join(work, "lib.so")]
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
    """Builds (first time) and loads the library; returns the ctypes handle. Needs no GPU."""
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
        vp, i, ull = ctypes.c_void_p, ctypes.c_int, ctypes.c_ulonglong
        lib.evo_attention_forward.restype = i
        lib.evo_attention_forward.argtypes = [vp] * 7 + [i] * 5 + [ctypes.c_float, vp]
        lib.evo_attention_genome.restype = ctypes.c_char_p
        lib.evo_attention_format.restype = i
        lib.evo_quantize_forward.restype = i
        lib.evo_quantize_forward.argtypes = [vp, i, i, vp, vp, i, i, i, i, vp, ull, vp]
        lib.evo_quantize_scratch_bytes.restype = ull
        lib.evo_quantize_scratch_bytes.argtypes = [i] * 6
        lib.evo_quantize_scratch_zero_bytes.restype = ull
        lib.evo_quantize_scratch_zero_bytes.argtypes = [i] * 6
        lib.evo_quantize_genome.restype = ctypes.c_char_p
        said = (lib.evo_attention_genome().decode(), lib.evo_quantize_genome().decode(), lib.evo_attention_format())
        want = (GENOME, QUANT_GENOME, 0 if ATTN_FORMAT == "e4m3" else 1)
        if said != want:
            raise RuntimeError(f"{__name__}: {path} was built from other kernels (it says genomes {said[0]!r}, "
                               f"{said[1]!r}, format {said[2]}; this module wants {want[0]!r}, {want[1]!r}, {want[2]})")
        _lib = lib
        return lib


# ---- checks shared by the real and the fake implementations ----

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


def _check_arch(device):
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx in _arch_ok:
        return
    cc = torch.cuda.get_device_capability(idx)
    if tuple(cc) != _ARCH_CC:
        raise RuntimeError(f"{__name__}: the kernels were built for {ARCH}; {torch.cuda.get_device_name(idx)} "
                           f"(cuda:{idx}) is sm_{cc[0]}{cc[1]}: export them again for this GPU")
    _arch_ok.add(idx)


def _aligned(t):
    """t contiguous and 16-byte aligned (the kernels' vector loads): t itself, or a copy."""
    if not t.is_contiguous():
        t = t.contiguous()
    return t if t.data_ptr() % 16 == 0 else t.clone()


def _call(fn_name, rc):
    if rc != 0:
        raise RuntimeError(f"{__name__}: {fn_name} returned {rc} ({_CUDA_ERRORS.get(rc, 'cudaError')}): "
                           "an unsupported combination or shape, or a CUDA failure")


# ---- implementations ----

def _quantize_into(x, rotate, codes, scales):
    """x contiguous and aligned; codes [B,H,S,D] 1-byte, scales [B*H] float32, both fresh."""
    lib = load()
    b, h, s, d = x.shape
    dt = _IN_DTYPE[x.dtype]
    rot = 1 if rotate else 0
    need = lib.evo_quantize_scratch_bytes(dt, rot, b, h, s, d)
    if need == 2 ** 64 - 1:
        raise RuntimeError(f"{__name__}: the quantizer cannot run ({b}, {h}, {s}, {d}) {x.dtype} rotate={rotate}")
    scratch_ptr = None
    scratch = None
    if need:  # fresh per call from PyTorch's allocator: stream-ordered, and inside a graph from the graph's pool
        scratch = torch.empty(need + 256, dtype=torch.uint8, device=x.device)
        off = (-scratch.data_ptr()) % 256
        zero = lib.evo_quantize_scratch_zero_bytes(dt, rot, b, h, s, d)
        if zero:
            scratch[off:off + zero].zero_()
        scratch_ptr = scratch.data_ptr() + off
    stream = torch.cuda.current_stream(x.device).cuda_stream
    _call("evo_quantize_forward", lib.evo_quantize_forward(x.data_ptr(), dt, rot, codes.data_ptr(), scales.data_ptr(),
                                                            b, h, s, d, scratch_ptr, need, stream))


def _quantize(x, rotate):
    x = _aligned(x)
    codes = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    if x.numel() == 0:  # heads without elements: absmax 0, scale 1
        return codes, torch.ones(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device)
    scales = torch.empty(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device)
    _quantize_into(x, rotate, codes, scales)
    return codes, scales


def _attention(qc, kc, vc, qs, ks, vs, is_causal, scale, shape, device):
    b, h, s, d = shape
    o = torch.empty(shape, dtype=torch.float16, device=device)
    if o.numel() == 0:
        return o
    lib = load()
    sm = float(scale) if scale is not None else 1.0 / math.sqrt(d)
    stream = torch.cuda.current_stream(device).cuda_stream
    _call("evo_attention_forward",
          lib.evo_attention_forward(qc.data_ptr(), kc.data_ptr(), vc.data_ptr(), qs.data_ptr(), ks.data_ptr(),
                                    vs.data_ptr(), o.data_ptr(), b, h, s, d, 1 if is_causal else 0, sm, stream))
    return o


def _register():
    for name in ("quantize_fp8", "attention_fp8", "attention_fp8_quantized"):
        if hasattr(getattr(torch.ops, NAMESPACE), name):
            raise ImportError(f"torch.ops.{NAMESPACE}.{name} is already registered in this process (by another evo "
                              "export module?): import one such module per process")

    @torch.library.custom_op(f"{NAMESPACE}::quantize_fp8", mutates_args=())
    def quantize_fp8(x: torch.Tensor, rotate: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
        """fp16/bf16 [B, H, S, D] -> (e4m3 codes [B, H, S, D] as float8_e4m3fn, float32 scales [B, H]):
        scale = absmax / 448 per (batch, head) (1 for an all-zero head), code = e4m3(x / scale); rotate: each row
        is first multiplied by the fixed orthogonal H·diag(s)/sqrt(D) (incoherent processing)."""
        _check_quantize("quantize_fp8", x, rotate)
        _check_arch(x.device)
        with torch.cuda.device(x.device):
            return _quantize(x, rotate)

    @quantize_fp8.register_fake
    def _(x, rotate=False):
        _check_quantize("quantize_fp8", x, rotate)
        return (x.new_empty(x.shape, dtype=torch.float8_e4m3fn),
                x.new_empty((x.shape[0], x.shape[1]), dtype=torch.float32))

    @torch.library.custom_op(f"{NAMESPACE}::attention_fp8", mutates_args=())
    def attention_fp8(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False,
                      scale: Optional[float] = None, incoherent: bool = False) -> torch.Tensor:
        """softmax(Q·Kᵀ·scale [causal]) · V for fp16/bf16 q, k, v [B, H, S, D]: each quantized to e4m3 with one
        scale per (batch, head) (incoherent: Q and K rotated first, V never), then the FP8 kernel; returns q.dtype."""
        _check_attention("attention_fp8", q, k, v, (torch.float16, torch.bfloat16))
        if ATTN_FORMAT != "e4m3":
            _fail("attention_fp8", f"the exported attention kernel reads {ATTN_FORMAT} codes; this quantizer writes "
                                   "e4m3 (use attention_fp8_quantized with codes of that format)")
        for name, t, rot in (("q", q, incoherent), ("k", k, incoherent), ("v", v, False)):
            _check_quantize("attention_fp8", t, rot)
        _check_arch(q.device)
        with torch.cuda.device(q.device):
            qc, qs = _quantize(q, incoherent)
            kc, ks = _quantize(k, incoherent)
            vc, vs = _quantize(v, False)
            o = _attention(qc, kc, vc, qs, ks, vs, is_causal, scale, tuple(q.shape), q.device)
        return o if q.dtype == torch.float16 else o.to(q.dtype)

    @attention_fp8.register_fake
    def _(q, k, v, is_causal=False, scale=None, incoherent=False):
        _check_attention("attention_fp8", q, k, v, (torch.float16, torch.bfloat16))
        for t, rot in ((q, incoherent), (k, incoherent), (v, False)):
            _check_quantize("attention_fp8", t, rot)
        return q.new_empty(q.shape)

    @torch.library.custom_op(f"{NAMESPACE}::attention_fp8_quantized", mutates_args=())
    def attention_fp8_quantized(q_codes: torch.Tensor, k_codes: torch.Tensor, v_codes: torch.Tensor,
                                q_scale: torch.Tensor, k_scale: torch.Tensor, v_scale: torch.Tensor,
                                is_causal: bool = False, scale: Optional[float] = None) -> torch.Tensor:
        """The FP8 kernel on codes (uint8, or float8_e4m3fn for the e4m3 format) [B, H, S, D] and float32 scales
        [B*H] or [B, H] (dequantized value = decode(code) * scale); returns fp16 [B, H, S, D]."""
        _check_quantized("attention_fp8_quantized", q_codes, k_codes, v_codes, q_scale, k_scale, v_scale)
        _check_arch(q_codes.device)
        with torch.cuda.device(q_codes.device):
            qc, kc, vc = (_aligned(t) for t in (q_codes, k_codes, v_codes))
            qs, ks, vs = (t.contiguous() for t in (q_scale, k_scale, v_scale))
            return _attention(qc, kc, vc, qs, ks, vs, is_causal, scale, tuple(q_codes.shape), q_codes.device)

    @attention_fp8_quantized.register_fake
    def _(q_codes, k_codes, v_codes, q_scale, k_scale, v_scale, is_causal=False, scale=None):
        _check_quantized("attention_fp8_quantized", q_codes, k_codes, v_codes, q_scale, k_scale, v_scale)
        return q_codes.new_empty(q_codes.shape, dtype=torch.float16)

    return quantize_fp8, attention_fp8, attention_fp8_quantized


def _check_quantized(op, qc, kc, vc, qs, ks, vs):
    dtypes = (torch.uint8, torch.float8_e4m3fn) if ATTN_FORMAT == "e4m3" else (torch.uint8,)
    _check_attention(op, qc, kc, vc, dtypes)
    _check_scales(op, (qs, ks, vs), qc.shape[0], qc.shape[1], qc.device)


quantize_fp8, attention_fp8, attention_fp8_quantized = _register()
