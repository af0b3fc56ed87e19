#!/usr/bin/env python3
"""torch_op_cpu.py — the PyTorch module template (tasks/attention_fp8/torch_op.py + torch_ops.cpp) without a GPU:
rendered with stand-in kernel files (the exported C entry points, each launch returning cudaErrorInvalidValue), imported
(which builds the library with nvcc and PyTorch's headers and registers the C++ operators), its three ops registered
with the right schemas, their fake implementations giving the right shapes, dtypes and devices (FakeTensorMode), bad
input refused with the message it should get (by the fakes, and by the C++ operators for CPU tensors), a second module
in the process refused, and the library cached. Exits 77 (skipped, with the reason) when PyTorch 2.4+ is not importable
or nvcc is not found. Run: python3 tests/torch_op_cpu.py
"""
import importlib.util
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "tasks", "attention_fp8", "torch_op.py")
PLACEHOLDER = re.compile(r"@[A-Z_]+@")


def render(values):
    """The template with stand-in values for its @NAME@ placeholders (evo export --torch fills them from real files:
    tests/cli_export_torch.sh); ValueError naming a placeholder without a value."""
    text = open(TEMPLATE, encoding="utf-8").read()
    missing = sorted({p[1:-1] for p in PLACEHOLDER.findall(text)} - set(values))
    if missing:
        raise ValueError(f"no value for {', '.join('@' + m + '@' for m in missing)}")
    return PLACEHOLDER.sub(lambda m: str(values[m.group(0)[1:-1]]), text)

try:
    import torch
except ImportError as e:
    print(f"SKIP: PyTorch is not importable here ({e})")
    sys.exit(77)
if not hasattr(torch.library, "custom_op"):
    print(f"SKIP: PyTorch {torch.__version__} has no torch.library.custom_op (needs 2.4+)")
    sys.exit(77)

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

checks = 0
failures = []


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def raises(fn, exc, text, what):
    try:
        fn()
    except exc as e:
        check(text in str(e), f"{what}: message {str(e)!r} lacks {text!r}")
        return
    except Exception as e:  # noqa: BLE001 — the wrong kind of error is a failure, reported
        check(False, f"{what}: raised {type(e).__name__}: {e}, want {exc.__name__}")
        return
    check(False, f"{what}: no error raised")


VALUES = {
    "MODULE": "evo_stand_in", "ATTENTION_CU": "stand_in_attention.cu", "QUANTIZE_CU": "stand_in_quantize.cu",
    "GENOME": "TILE_M=64,TILE_N=128", "QUANT_GENOME": "vec=16,warps=16,mode=2", "ARCH": "sm_90a",
    "QUANT_ARCH": "sm_90",
    "ATTN_FORMAT": "e4m3", "ATTN_HEAD_DIMS": "64,128",
    # no rotated bf16 variant at head dim 128: incoherent bf16 D=128 must be refused
    "QUANT_VARIANTS": "64:fp16:0,64:fp16:1,64:bf16:0,64:bf16:1,128:fp16:0,128:fp16:1,128:bf16:0",
    "OPS_CPP": open(os.path.join(ROOT, "tasks", "attention_fp8", "torch_ops.cpp"), encoding="utf-8").read(),
}


# The exported files' C entry points, as stand-ins: the genomes the module wants, and launches that fail.
STAND_IN_ATTENTION = """#include <cuda_runtime.h>
extern "C" const char *evo_attention_genome(void) { return "TILE_M=64,TILE_N=128"; }
extern "C" int evo_attention_format(void) { return 0; }
extern "C" int evo_attention_forward(const void *, const void *, const void *, const float *, const float *,
                                     const float *, void *, int, int, int, int, int, float, cudaStream_t)
{ return 1; }
"""
STAND_IN_QUANTIZE = """#include <cuda_runtime.h>
extern "C" const char *evo_quantize_genome(void) { return "vec=16,warps=16,mode=2"; }
extern "C" unsigned long long evo_quantize_scratch_bytes(int, int, int, int, int, int) { return 0; }
extern "C" unsigned long long evo_quantize_scratch_zero_bytes(int, int, int, int, int, int) { return 0; }
extern "C" int evo_quantize_forward(const void *, int, int, void *, float *, int, int, int, int, void *,
                                    unsigned long long, cudaStream_t)
{ return 1; }
"""


def find_nvcc():
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    return None


def import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    if find_nvcc() is None:
        print("SKIP: nvcc not found (the module builds its library with it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="evo-torch-op-cpu-")
    cache = os.path.join(tmp, "cache")
    os.environ["EVO_TORCH_CACHE"] = cache
    os.environ.pop("EVO_TORCH_LIB", None)

    # the template itself refuses to be imported
    raises(lambda: import_file(TEMPLATE, "evo_template_raw"), ImportError, "placeholders unfilled",
           "importing the unrendered template")
    try:
        render({k: v for k, v in VALUES.items() if k != "ARCH"})
        check(False, "render without ARCH: no error")
    except ValueError as e:
        check("@ARCH@" in str(e), f"render without ARCH names it: {e}")

    path = os.path.join(tmp, "evo_stand_in.py")
    with open(path, "w") as f:
        f.write(render(VALUES))
    text = open(path).read()
    check(PLACEHOLDER.search(text) is None, "no placeholder left")
    for name, body in ((VALUES["ATTENTION_CU"], STAND_IN_ATTENTION), (VALUES["QUANTIZE_CU"], STAND_IN_QUANTIZE)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(body)
    mod = import_file(path, "evo_stand_in")

    # built, cached, registered
    for name in ("attention_fp8", "attention_fp8_quantized", "quantize_fp8"):
        check(hasattr(torch.ops.evo, name), f"torch.ops.evo.{name} registered")
    lib = mod.library_path()
    check(mod._lib is not None and lib.startswith(cache) and os.path.isfile(lib), f"import built {lib}")
    check(mod.load() is mod._lib, "load() again returns the loaded library")
    check(mod._ARCH_CC == (9, 0), f"sm_90a -> capability (9, 0), got {mod._ARCH_CC}")
    check(mod._arch_flags("sm_90a") == ["-gencode=arch=compute_90a,code=sm_90a"] and
          mod._arch_flags("sm_90") == ["-arch=sm_90"], "nvcc targets per arch")
    schema = str(torch.ops.evo.attention_fp8.default._schema)
    check("bool is_causal=False" in schema and "float? scale=None" in schema and "bool incoherent=False" in schema,
          f"attention_fp8 schema: {schema}")
    schema = str(torch.ops.evo.quantize_fp8.default._schema)
    check("bool rotate=False" in schema and "-> (Tensor, Tensor)" in schema, f"quantize_fp8 schema: {schema}")
    schema = str(torch.ops.evo.attention_fp8_quantized.default._schema)
    check(schema.count("Tensor") == 7 and "float? scale=None" in schema, f"attention_fp8_quantized schema: {schema}")
    raises(lambda: import_file(path, "evo_stand_in_again"), ImportError, "already registered",
           "a second module in the same process")

    ops = torch.ops.evo
    with FakeTensorMode():
        for dtype in (torch.float16, torch.bfloat16):
            for shape in ((2, 8, 77, 64), (1, 3, 1, 128), (4, 8, 2048, 64)):
                q = torch.empty(shape, dtype=dtype, device="cuda")
                for kw in ({}, {"is_causal": True, "scale": 0.1}, {"incoherent": True}):
                    if kw.get("incoherent") and dtype == torch.bfloat16 and shape[3] == 128:
                        continue
                    o = ops.attention_fp8(q, q, q, **kw)
                    check(tuple(o.shape) == shape and o.dtype == dtype and o.device.type == "cuda",
                          f"attention_fp8 fake {shape} {dtype} {kw}: {tuple(o.shape)} {o.dtype} {o.device}")
                for rotate in (False, True):
                    if rotate and dtype == torch.bfloat16 and shape[3] == 128:
                        continue
                    codes, scales = ops.quantize_fp8(q, rotate=rotate)
                    check(tuple(codes.shape) == shape and codes.dtype == torch.float8_e4m3fn and
                          tuple(scales.shape) == shape[:2] and scales.dtype == torch.float32 and
                          codes.is_contiguous(), f"quantize_fp8 fake {shape} {dtype} rotate={rotate}")
                for cdt in (torch.uint8, torch.float8_e4m3fn):
                    c = torch.empty(shape, dtype=cdt, device="cuda")
                    for sshape in ((shape[0] * shape[1],), shape[:2]):
                        s = torch.empty(sshape, dtype=torch.float32, device="cuda")
                        o = ops.attention_fp8_quantized(c, c, c, s, s, s, is_causal=True)
                        check(tuple(o.shape) == shape and o.dtype == torch.float16,
                              f"attention_fp8_quantized fake {shape} {cdt} scales {sshape}")
        # a non-contiguous view (a [B, S, H, D] tensor transposed): accepted, output contiguous
        x = torch.empty(2, 77, 8, 64, dtype=torch.float16, device="cuda").transpose(1, 2)
        o = ops.attention_fp8(x, x, x)
        check(tuple(o.shape) == (2, 8, 77, 64), "non-contiguous input accepted")
        codes, _ = ops.quantize_fp8(x)
        check(codes.is_contiguous(), "quantize_fp8 of a non-contiguous view gives contiguous codes")

        q = torch.empty(2, 8, 64, 64, dtype=torch.float16, device="cuda")
        raises(lambda: ops.attention_fp8(q.cpu(), q.cpu(), q.cpu()), ValueError, "must be a CUDA tensor", "CPU tensors")
        raises(lambda: ops.attention_fp8(q.float(), q.float(), q.float()), ValueError,
               "must be torch.float16 or torch.bfloat16", "float32 inputs")
        raises(lambda: ops.attention_fp8(q, q, q.to(torch.bfloat16)), ValueError, "dtypes disagree", "mixed dtypes")
        k = torch.empty(2, 8, 32, 64, dtype=torch.float16, device="cuda")
        raises(lambda: ops.attention_fp8(q, k, k), ValueError, "shapes disagree", "different sequence lengths")
        q96 = torch.empty(2, 8, 64, 96, dtype=torch.float16, device="cuda")
        raises(lambda: ops.attention_fp8(q96, q96, q96), ValueError, "head_dim 96 is not supported", "head dim 96")
        raises(lambda: ops.quantize_fp8(q96), ValueError, "no variant for head_dim 96", "quantize head dim 96")
        raises(lambda: ops.attention_fp8(q[0], q[0], q[0]), ValueError, "[batch, heads, seq, head_dim]", "3-D input")
        b128 = torch.empty(1, 2, 16, 128, dtype=torch.bfloat16, device="cuda")
        raises(lambda: ops.attention_fp8(b128, b128, b128, incoherent=True), ValueError, "rotate=True",
               "incoherent without a rotated variant")
        c = torch.empty(2, 8, 64, 64, dtype=torch.uint8, device="cuda")
        s = torch.empty(16, dtype=torch.float32, device="cuda")
        raises(lambda: ops.attention_fp8_quantized(c, c, c, s, s, s[:8]), ValueError, "v_scale has shape (8,)",
               "scales of the wrong size")
        raises(lambda: ops.attention_fp8_quantized(c, c, c, s, s.half(), s), ValueError, "k_scale is torch.float16",
               "half scales")
        raises(lambda: ops.attention_fp8_quantized(q, q, q, s, s, s), ValueError, "must be torch.uint8 or",
               "fp16 tensors as codes")

    # the C++ operators themselves: CPU tensors refused by name (ValueError), as the fakes refuse them
    qc = torch.zeros(2, 8, 64, 64, dtype=torch.float16)
    raises(lambda: ops.attention_fp8(qc, qc, qc), ValueError, "q is on cpu; it must be a CUDA tensor",
           "C++: CPU tensors")
    raises(lambda: ops.quantize_fp8(qc), ValueError, "torch.ops.evo.quantize_fp8: x is on cpu", "C++: CPU quantize")
    c8 = torch.zeros(2, 8, 64, 64, dtype=torch.uint8)
    s8 = torch.ones(16)
    raises(lambda: ops.attention_fp8_quantized(c8, c8, c8, s8, s8, s8), ValueError, "attention_fp8_quantized: q is on cpu",
           "C++: CPU codes")
    entries = [e for e in os.listdir(cache)]
    check(len(entries) == 1, f"one cached build: {entries}")

    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
