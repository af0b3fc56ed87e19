#!/usr/bin/env python3
"""gpu_torch_op.py — the PyTorch ops of an exported attention kernel + quantizer, for real on a GPU: the module
written by `evo export --torch DIR --kernel ATTENTION.cu --quantizer QUANTIZE.cu` and built with nvcc, then checked
and timed.
  python3 tests/gpu_torch_op.py ATTENTION.cu QUANTIZE.cu [--evo build/evo] [--out DIR] [--quick]
Exits 77 (skipped, reason printed) without
PyTorch, a CUDA device or nvcc; 1 when a check fails.

Checks: quantize_fp8 codes bit-exact against the same rule in PyTorch ops (x / (absmax/448) -> float8_e4m3fn),
rotated codes decode back to x within the e4m3 budget; attention_fp8 against attention in FP32 on the dequantized
codes (the kernel's own arithmetic, its fp16 output: rel-L2 <= 2e-3, the gate's tolerance; 2.8e-4 measured) and
against FP32 attention on the fp16/bf16 inputs (the FP8 budget: rel-L2 <= 0.06 on N(0,1) inputs; per-head e4m3
codes lose ~3.6% per element, 0.024-0.049 measured on an H200), beside fp16 SDPA's own error, on the five
presets and S = 1, 77, 1000, causal and not, fp16 and bf16, per-head and incoherent (where the op takes fp16 V as
given, v_as_given: against FP32 attention on the dequantized q, k and V itself, rel-L2 <= 2e-3, instead of the
codes' op; where it takes K and V so, kv_as_given: on the dequantized q and K and V themselves); the same outputs bit
for bit
under torch.compile(fullgraph=True) and from a captured CUDA graph; bad input refused. Times: the quantizer (Q, K, V),
the attention kernel, end to end, fp16 SDPA (CUDA graph replay of 20 calls, median of the replays) and the eager call
from Python (wall clock).
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))

PRESETS = [("mission", 1, 8, 512, 64), ("small", 2, 8, 512, 64), ("long", 2, 8, 2048, 64), ("wide", 2, 8, 512, 128),
           ("stress", 4, 8, 2048, 64)]
ODD = [("s1", 2, 3, 1, 64), ("s77", 2, 3, 77, 64), ("s1000", 1, 4, 1000, 64), ("s1_128", 2, 3, 1, 128),
       ("s77_128", 2, 3, 77, 128), ("s1000_128", 1, 4, 1000, 128)]
LARGE = [(4, 16, 4096, 128), (1, 16, 16384, 64)]
TOL_KERNEL = 2e-3   # rel-L2 against FP32 attention on the dequantized codes (accuracy class exact)
# accuracy class fp8 (e4m3 GEMMs): its gate's form, 2 x the FP8 model's rel-L2 + 1e-3, with the model's rel-L2 on
# N(0, 1) inputs, at most 0.031 at every shape and head dim calibrated (docs/data/fp8-calibration-*.md)
TOL_KERNEL_FP8 = 2 * 0.031 + 1e-3
TOL_FP8 = 0.06      # rel-L2 against FP32 attention on the unquantized inputs
TOL_ROUNDTRIP = 0.05  # rel-L2 of x against its rotated codes decoded and rotated back

checks = 0
failures = []


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"  FAIL: {what}", flush=True)
    return cond


def rel_l2(torch, a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("attention_cu")
    p.add_argument("quantize_cu", help="an exported quantizer (evo export)")
    p.add_argument("--evo", default=os.path.join(ROOT, "build", "evo"), help="the evo binary (default build/evo)")
    p.add_argument("--out", help="directory for gpu_torch_op.json")
    p.add_argument("--quick", action="store_true", help="fewer timing replays")
    p.add_argument("--large-only", action="store_true",
                   help="only the large problems against every SDPA backend and the eager call's CPU time")
    p.add_argument("--rounds", type=int, default=3,
                   help="the large problems: alternated timing rounds per contender (default 3)")
    p.add_argument("--package", help="a module `evo export --torch` wrote (DIR/evo_fp8_test.py) instead of exporting "
                                     "one with --evo")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        skip(f"PyTorch is not importable ({e})")
    if not hasattr(torch.library, "custom_op"):
        skip(f"PyTorch {torch.__version__} has no torch.library.custom_op (needs 2.4+)")
    if not torch.cuda.is_available():
        skip("PyTorch sees no CUDA device")
    import compare_sdpa as cs
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    tmp = tempfile.mkdtemp(prefix="evo-gpu-torch-op-")
    mod_dir = os.path.join(tmp, "mod")
    if a.package:
        shutil.copytree(a.package, mod_dir)
    else:
        r = subprocess.run([a.evo, "export", "--torch", mod_dir, "--kernel", a.attention_cu, "--quantizer",
                            a.quantize_cu, "--module", "evo_fp8_test"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: evo export --torch --kernel: {r.stderr.strip()}")
            sys.exit(1)
    path = os.path.join(mod_dir, "evo_fp8_test.py")
    sys.path.insert(0, os.path.dirname(path))
    if not os.environ.get("EVO_TORCH_LIB") and not (shutil.which("nvcc") or os.access("/usr/local/cuda/bin/nvcc",
                                                                                      os.X_OK)):
        skip("nvcc not found (PATH, /usr/local/cuda/bin) and EVO_TORCH_LIB not set")
    t0 = time.time()
    import evo_fp8_test as mod  # builds the library (or loads it from the cache) and registers the ops
    mod.load()
    build_s = time.time() - t0
    dev = torch.cuda.get_device_name()
    cc = torch.cuda.get_device_capability()
    print(f"device {dev} (sm_{cc[0]}{cc[1]}), torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"attention {mod.GENOME}\nquantizer {mod.QUANT_GENOME}")
    print(f"library {mod.library_path()} ({'loaded' if build_s < 2 else 'built'} in {build_s:.1f} s)")
    if tuple(cc) != mod._ARCH_CC:
        x = torch.zeros(1, 1, 16, 64, dtype=torch.float16, device="cuda")
        try:
            torch.ops.evo.quantize_fp8(x)
            check(False, "a GPU of another arch is refused")
        except RuntimeError as e:
            check("built for" in str(e), f"arch refusal names the arch: {e}")
        skip(f"the kernels are for {mod.ARCH}; this GPU is sm_{cc[0]}{cc[1]}")
    ops = torch.ops.evo
    result = {"device": dev, "torch": torch.__version__, "attention_genome": mod.GENOME,
              "quantizer_genome": mod.QUANT_GENOME, "build_s": build_s}
    gen = torch.Generator(device="cuda").manual_seed(1234)

    def randn(shape, dtype):
        return torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32).to(dtype)

    dims = [int(d) for d in mod.ATTN_HEAD_DIMS.split(",")]
    # the accuracy class the attention file was searched under (its provenance says it)
    with open(a.attention_cu, errors="replace") as f:
        head = "".join(f.readline() for _ in range(80))
    fp8_class = re.search(r"accuracy\s+class fp8", head) is not None
    tol_kernel = TOL_KERNEL_FP8 if fp8_class else TOL_KERNEL
    result["accuracy_class"] = "fp8" if fp8_class else "exact"
    rot = {d: cs.rotation(torch, d, "cuda") for d in dims}

    if not a.large_only:  # --large-only: the large problems and the eager call alone
        # ---- quantizer ----
        print("\nquantize_fp8", flush=True)
        for dtype in (torch.float16, torch.bfloat16):
            for (b, h, s, d) in ((2, 8, 512, 64), (2, 3, 77, 128), (1, 4, 1000, 64), (2, 3, 1, 128)):
                x = randn((b, h, s, d), dtype)
                x[0, 0].zero_()  # an all-zero head: scale 1, codes 0
                x[-1, -1, 0, 0] = 40.0  # an outlier
                codes, scales = ops.quantize_fp8(x)
                want_c, want_s = cs.quantize(torch, x, "e4m3")
                bad_c = int((codes.view(torch.uint8) != want_c).sum().item())
                bad_s = int((scales.reshape(-1).view(torch.int32) != want_s.view(torch.int32)).sum().item())
                check(bad_c == 0 and bad_s == 0, f"quantize_fp8 {dtype} {(b, h, s, d)}: bit-exact against PyTorch ops: "
                                                 f"{bad_c} codes, {bad_s} scales differ")
                check(scales[0, 0].item() == 1.0, "an all-zero head gets scale 1")
                if (d, dtype, True) in mod._QVARIANTS:
                    rc, rs = ops.quantize_fp8(x, rotate=True)
                    y = cs.rotate(torch, x, rot[d])
                    amax = y.abs().amax(dim=(2, 3))
                    want = torch.where(amax == 0, torch.ones_like(amax), amax / 448.0)
                    back = torch.matmul(cs.dequantize(torch, rc.view(torch.uint8), rs.reshape(-1), "e4m3").double(),
                                        rot[d].T)
                    err = rel_l2(torch, back, x)
                    check(((rs - want).abs() <= 1e-5 * want).all().item(),
                          f"rotated scales {dtype} {(b, h, s, d)} = absmax(x·M)/448")
                    check(err <= TOL_ROUNDTRIP, f"rotated codes decode back {dtype} {(b, h, s, d)}: rel-L2 {err:.2e}")
        # a non-contiguous view gives what its contiguous copy gives
        xt = randn((2, 77, 3, 64), torch.float16).transpose(1, 2)
        c1, s1 = ops.quantize_fp8(xt)
        c2, s2 = ops.quantize_fp8(xt.contiguous())
        check(torch.equal(c1.view(torch.uint8), c2.view(torch.uint8)) and torch.equal(s1, s2), "non-contiguous input")
        print(f"  {checks - len(failures)} of {checks} checks passed", flush=True)

        # ---- attention accuracy ----
        print(f"\nattention_fp8 accuracy, class {result['accuracy_class']} (rel-L2; budget: kernel vs dequantized <= "
              f"{tol_kernel:.2g}, "
              f"e2e <= {TOL_FP8:.2f})")
        print(f"  {'shape':<24} {'dtype':<5} {'causal':<6} {'mode':<10} {'kernel':>9} {'e2e':>9} {'sdpa fp16':>10}")
        acc = []
        for name, b, h, s, d in PRESETS + ODD:
            if d not in dims:
                continue
            for dtype in (torch.float16, torch.bfloat16):
                q, k, v = (randn((b, h, s, d), dtype) for _ in range(3))
                for causal in (False, True):
                    ref = cs.attention_fp32(torch, q, k, v, causal, 1.0 / math.sqrt(d))
                    sd = F.scaled_dot_product_attention(q.half(), k.half(), v.half(), is_causal=causal)
                    sd_err = rel_l2(torch, sd, ref)
                    for inc in (False, True):
                        if inc and (d, dtype, True) not in mod._QVARIANTS:
                            continue
                        o = ops.attention_fp8(q, k, v, is_causal=causal, incoherent=inc)
                        qc, qs = ops.quantize_fp8(q, rotate=inc)
                        kc, ks = ops.quantize_fp8(k, rotate=inc)
                        vc, vs = ops.quantize_fp8(v)
                        deq = [cs.dequantize(torch, c.view(torch.uint8), sc.reshape(-1), "e4m3") for c, sc in
                               ((qc, qs), (kc, ks), (vc, vs))]
                        ref_deq = cs.attention_fp32(torch, *deq, causal, 1.0 / math.sqrt(d))
                        o2 = ops.attention_fp8_quantized(qc, kc, vc, qs, ks, vs, is_causal=causal)
                        ek, ee = rel_l2(torch, o2.float(), ref_deq), rel_l2(torch, o.float(), ref)
                        # V taken as given (fp16, a kernel with an FP16-V twin): the op's own reference has the
                        # dequantized q and k and V itself, and the op is not the codes' op; K and V taken as given
                        # (a kernel with an FP16-K-and-V twin): the dequantized q, K and V themselves
                        vg = hasattr(mod, "v_as_given") and mod.v_as_given(b, h, s, d, causal, dtype, inc)
                        kvg = hasattr(mod, "kv_as_given") and mod.kv_as_given(b, h, s, d, causal, dtype, inc)
                        ev = rel_l2(torch, o.float(), cs.attention_fp32(torch, deq[0], k.float() if kvg else deq[1],
                                                                        v.float(), causal,
                                                                        1.0 / math.sqrt(d))) if vg else None
                        tag = f"({b},{h},{s},{d})"
                        check(o.dtype == dtype and o.shape == q.shape, f"{name} {dtype}: output dtype and shape")
                        check(torch.isfinite(o).all().item(), f"{name} {dtype} causal={causal} inc={inc}: all finite")
                        check(ek <= tol_kernel, f"{name} {dtype} causal={causal} inc={inc}: kernel rel-L2 {ek:.2e}")
                        check(ee <= TOL_FP8, f"{name} {dtype} causal={causal} inc={inc}: e2e rel-L2 {ee:.2e}")
                        if vg:
                            what = "K and V as given" if kvg else "V as given"
                            check(ev <= tol_kernel, f"{name} {dtype} causal={causal} inc={inc}: {what}, rel-L2 "
                                                    f"{ev:.2e} against attention on the dequantized q"
                                                    f"{'' if kvg else ', k'} and {'K and ' if kvg else ''}V")
                        else:
                            check(torch.equal(o2.to(dtype), o), f"{name} {dtype}: attention_fp8 = quantize + "
                                                                "quantized op")
                        print(f"  {name + tag:<24} {str(dtype)[6:]:<5} {str(causal):<6} "
                              f"{'incoherent' if inc else 'per-head':<10} {ek:9.2e} {ee:9.2e} {sd_err:10.2e}", flush=True)
                        acc.append({"shape": [b, h, s, d], "dtype": str(dtype), "causal": causal, "incoherent": inc,
                                    "kernel_rel_l2": ek, "e2e_rel_l2": ee, "sdpa_fp16_rel_l2": sd_err,
                                    "v_as_given": vg, "kv_as_given": kvg, "v_as_given_rel_l2": ev})
        result["accuracy"] = acc
        n_vg = sum(1 for r in acc if r["v_as_given"] and not r["kv_as_given"])
        n_kvg = sum(1 for r in acc if r["kv_as_given"])
        print(f"  V taken as given (fp16, the kernel's FP16-V twin) in {n_vg} of {len(acc)} cases; K and V (its "
              f"FP16-K-and-V twin) in {n_kvg}", flush=True)

        # ---- bad input ----
        q = randn((1, 2, 64, 64), torch.float16)
        for what, fn, text in (
                ("CPU tensors", lambda: ops.attention_fp8(q.cpu(), q.cpu(), q.cpu()), "must be a CUDA tensor"),
                ("head dim 96", lambda: ops.attention_fp8(*(randn((1, 2, 64, 96), torch.float16),) * 3),
                 "head_dim 96"),
                ("float32", lambda: ops.quantize_fp8(q.float()), "must be torch.float16 or torch.bfloat16"),
                ("shapes", lambda: ops.attention_fp8(q, q[:, :, :32], q), "shapes disagree")):
            try:
                fn()
                check(False, f"{what}: not refused")
            except ValueError as e:
                check(text in str(e), f"{what}: message {e}")

        # ---- torch.compile(fullgraph=True) ----
        print("\ntorch.compile(fullgraph=True)", flush=True)
        compiled = {}
        for inc in (False, True):
            def f(q, k, v, inc=inc):
                o = torch.ops.evo.attention_fp8(q, k, v, is_causal=True, incoherent=inc)
                c, s = torch.ops.evo.quantize_fp8(v)
                return o * 2.0, c, s + 1.0
            q, k, v = (randn((2, 8, 512, 64), torch.float16) for _ in range(3))
            t0 = time.time()
            try:
                cf = torch.compile(f, fullgraph=True)
                got = cf(q, k, v)
                want = f(q, k, v)
                same = all(torch.equal(x.view(torch.uint8) if x.dtype == torch.float8_e4m3fn else x,
                                       y.view(torch.uint8) if y.dtype == torch.float8_e4m3fn else y)
                           for x, y in zip(got, want))
                q2 = randn((2, 8, 512, 64), torch.float16)
                same2 = torch.equal(cf(q2, k, v)[0], f(q2, k, v)[0])
                compiled[f"incoherent={inc}"] = {"ok": bool(same and same2), "compile_s": time.time() - t0}
                check(same and same2, f"torch.compile fullgraph incoherent={inc}: outputs equal eager bit for bit")
            except Exception as e:  # a graph break or a compile failure is this check failing
                compiled[f"incoherent={inc}"] = {"ok": False, "error": str(e).splitlines()[0] if str(e) else repr(e)}
                check(False, f"torch.compile fullgraph incoherent={inc}: {type(e).__name__}: {e}")
            print(f"  incoherent={inc}: {compiled[f'incoherent={inc}']}", flush=True)
        result["compile"] = compiled

        # ---- CUDA graph capture ----
        print("\nCUDA graph capture", flush=True)
        for inc in (False, True):
            sq, sk, sv = (randn((2, 8, 2048, 64), torch.bfloat16) for _ in range(3))
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    ops.attention_fp8(sq, sk, sv, incoherent=inc)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = ops.attention_fp8(sq, sk, sv, incoherent=inc)
                codes, scales = ops.quantize_fp8(sk, rotate=inc)
            ok = True
            for _ in range(2):  # new data in the captured inputs, replayed
                for t in (sq, sk, sv):
                    t.copy_(randn(t.shape, t.dtype))
                g.replay()
                torch.cuda.synchronize()
                ok &= torch.equal(out, ops.attention_fp8(sq, sk, sv, incoherent=inc))
                ok &= torch.equal(codes.view(torch.uint8), ops.quantize_fp8(sk, rotate=inc)[0].view(torch.uint8))
            check(ok, f"CUDA graph incoherent={inc}: replays equal eager calls on the new inputs")
            print(f"  incoherent={inc}: {'replays match eager' if ok else 'MISMATCH'}")
            result[f"graph_incoherent={inc}"] = bool(ok)
            del g

        # ---- RMSE on outlier inputs, through the op ----
        print("\nRMSE vs FP64 on outlier inputs N(0,1) + N(0,100)·Bernoulli(0.001), (1,16,2048,64), not causal")
        g2 = torch.Generator(device="cuda").manual_seed(7000)
        q, k, v = (cs.outlier_inputs(torch, (1, 16, 2048, 64), g2) for _ in range(3))
        ref = cs.attention_fp64(torch, q, k, v, 1 / 8.0)
        rm = {"per_head": cs.rmse_of(ops.attention_fp8(q, k, v), ref),
              "incoherent": cs.rmse_of(ops.attention_fp8(q, k, v, incoherent=True), ref),
              "sdpa_fp16": cs.rmse_of(F.scaled_dot_product_attention(q, k, v), ref)}
        print("  " + ", ".join(f"{n} {x:.2e}" for n, x in rm.items()))
        result["rmse_outliers_1_16_2048_64"] = rm

        # ---- timing ----
        print("\ntiming (fp16, µs per call: CUDA graph of 20 calls, median of the replays, L2 warm; eager: Python wall "
              "clock per call, 50 calls)", flush=True)
        timer = cs.Timer(torch, 10, 10 if a.quick else 30)
        print(f"  {'preset':<24} {'causal':<6} {'quant q,k,v':>11} {'attention':>9} {'end2end':>8} {'incoh e2e':>9} "
              f"{'sdpa fp16':>9} {'e2e/sdpa':>8} {'eager e2e':>9}")
        times = []
        for name, b, h, s, d in PRESETS:
            q, k, v = (randn((b, h, s, d), torch.float16) for _ in range(3))
            qc, qs = ops.quantize_fp8(q)
            kc, ks = ops.quantize_fp8(k)
            vc, vs = ops.quantize_fp8(v)
            for causal in (False, True):
                fns = {
                    "quantize": lambda: (ops.quantize_fp8(q), ops.quantize_fp8(k), ops.quantize_fp8(v)),
                    "attention": lambda: ops.attention_fp8_quantized(qc, kc, vc, qs, ks, vs, is_causal=causal),
                    "e2e": lambda: ops.attention_fp8(q, k, v, is_causal=causal),
                    "e2e_incoherent": lambda: ops.attention_fp8(q, k, v, is_causal=causal, incoherent=True),
                    "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                }
                row = {"preset": name, "shape": [b, h, s, d], "causal": causal}
                for key, fn in fns.items():
                    row[key] = timer.graph(fn)["median_us"]
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(50):
                    fns["e2e"]()
                torch.cuda.synchronize()
                row["eager_e2e_wall_us"] = (time.perf_counter() - t0) / 50 * 1e6
                times.append(row)
                print(f"  {name + str((b, h, s, d)):<24} {str(causal):<6} {row['quantize']:11.1f} {row['attention']:9.1f} "
                      f"{row['e2e']:8.1f} {row['e2e_incoherent']:9.1f} {row['sdpa']:9.1f} "
                      f"{row['e2e'] / row['sdpa']:8.2f} {row['eager_e2e_wall_us']:9.1f}", flush=True)
        result["timing"] = times

    # ---- the large problems, end to end from fp16 inputs, against every PyTorch SDPA backend selected explicitly
    # (fp16; a backend that refuses the problem is left out and said so). Reported, not gated: the ratio is the
    # kernel's speed, which the search and results.md judge; the op's own overhead (e2e against quantize +
    # attention) is what this file owns. ----
    timer = cs.Timer(torch, 10, 10 if a.quick else 30)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    launchers = cs.bind_launchers(mod.load())
    f16 = getattr(launchers, "evo_attention_forward_v16", None)  # the FP16-V entry, if any
    fkv16 = getattr(launchers, "evo_attention_forward_kv16", None)  # the FP16-K-and-V entry, if any
    print(f"\nlarge problems (fp16 in, µs per call, CUDA graph of 20 calls, median of the replays; the contenders "
          f"alternated over {a.rounds} rounds, the median of each one's round medians)", flush=True)
    print("  (V as given: the op quantizes q and k only and runs the kernel's FP16-V twin, marked *; K and V as "
          "given: q only, the FP16-K-and-V twin, marked **)")
    print(f"  {'shape':<20} {'causal':<6} {'quant q,k,v':>11} {'attention':>9} {'end2end':>8} {'overhead':>8} "
          f"{'paired':>7} "
          + " ".join(f"{n:>9}" for n, _ in backends) + f" {'e2e/best':>8}")
    large = []
    for b, h, s, d in LARGE:
        if str(d) not in mod.ATTN_HEAD_DIMS.split(","):
            print(f"  {str((b, h, s, d)):<20} skipped: the attention file has no head dim {d}")
            continue
        q, k, v = (randn((b, h, s, d), torch.float16) for _ in range(3))
        qc, qs = ops.quantize_fp8(q)
        kc, ks = ops.quantize_fp8(k)
        vc, vs = ops.quantize_fp8(v)
        for causal in (False, True):
            row = {"shape": [b, h, s, d], "causal": causal}

            def sdpa_with(be):
                def call():
                    with sdpa_kernel([be]):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                return call
            # the quantizer calls (three, or two where the op takes V as given); the op itself quantizes them in one
            # launch where its quantizer file has one. The attention: the kernel the op runs (with V as given: the
            # FP16-V twin, called through the library's C entry point on the current stream)
            vg = hasattr(mod, "v_as_given") and mod.v_as_given(b, h, s, d, causal)
            kvg = hasattr(mod, "kv_as_given") and mod.kv_as_given(b, h, s, d, causal)
            row["v_as_given"], row["kv_as_given"] = vg, kvg
            if vg:
                o16 = torch.empty_like(q)

                def attention_v16():
                    if kvg:
                        rc = fkv16(qc.data_ptr(), k.data_ptr(), v.data_ptr(), qs.data_ptr(), None, None,
                                   o16.data_ptr(), b, h, s, d, 1 if causal else 0, 1.0 / math.sqrt(d),
                                   torch.cuda.current_stream().cuda_stream)
                    else:
                        rc = f16(qc.data_ptr(), kc.data_ptr(), v.data_ptr(), qs.data_ptr(), ks.data_ptr(), None,
                                 o16.data_ptr(), b, h, s, d, 1 if causal else 0, 1.0 / math.sqrt(d),
                                 torch.cuda.current_stream().cuda_stream)
                    if rc != 0:
                        raise RuntimeError(f"evo_attention_forward_{'kv16' if kvg else 'v16'} returned {rc}")
            fns = {"quantize": (lambda: ops.quantize_fp8(q)) if kvg else
                   (lambda: (ops.quantize_fp8(q), ops.quantize_fp8(k))) if vg else
                   (lambda: (ops.quantize_fp8(q), ops.quantize_fp8(k), ops.quantize_fp8(v))),
                   "attention": attention_v16 if vg else
                   (lambda: ops.attention_fp8_quantized(qc, kc, vc, qs, ks, vs, is_causal=causal)),
                   "e2e": lambda: ops.attention_fp8(q, k, v, is_causal=causal)}
            for n, be in backends:
                try:
                    with sdpa_kernel([be]):
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    torch.cuda.synchronize()
                    fns["sdpa_" + n] = sdpa_with(be)
                except RuntimeError as e:
                    row["sdpa_" + n] = None
                    print(f"  ({n} refuses {(b, h, s, d)}: {str(e).splitlines()[0][:100]})")
            # alternated rounds: no contender always runs first or last (clocks and temperature under sustained load)
            rounds = {key: [] for key in fns}
            for _ in range(a.rounds):
                for key, fn in fns.items():
                    rounds[key].append(timer.graph(fn)["median_us"])
            for key, ts in rounds.items():
                row[key] = sorted(ts)[len(ts) // 2]
                row[key + "_rounds"] = ts
            row["overhead_us"] = row["e2e"] - row["quantize"] - row["attention"]
            # the same difference round by round (the three timed next to each other), then its median: the heavy
            # kernels' drift between rounds cancels
            paired = sorted(e - qt - at for e, qt, at in zip(rounds["e2e"], rounds["quantize"], rounds["attention"]))
            row["overhead_paired_us"] = paired[len(paired) // 2]
            row["overhead_paired_rounds"] = paired
            best = min(row["sdpa_" + n] for n, _ in backends if row["sdpa_" + n] is not None)
            row["sdpa_best"] = best
            row["speedup_vs_best_sdpa"] = best / row["e2e"]
            large.append(row)
            print(f"  {str((b, h, s, d)) + (' **' if kvg else ' *' if vg else ''):<20} {str(causal):<6} {row['quantize']:11.1f} "
                  f"{row['attention']:9.1f} {row['e2e']:8.1f} {row['overhead_us']:8.1f} {row['overhead_paired_us']:7.1f} "
                  + " ".join(f"{row['sdpa_' + n]:9.1f}" if row["sdpa_" + n] is not None else f"{'-':>9}"
                             for n, _ in backends) + f" {row['speedup_vs_best_sdpa']:7.2f}x", flush=True)
        del q, k, v, qc, kc, vc
        torch.cuda.empty_cache()
    result["large"] = large

    # ---- CPU time of an eager call: 1000 calls, no synchronization between them, at a shape whose GPU time is
    # below the CPU's (mission), against F.scaled_dot_product_attention on the same tensors measured the same way ----
    def per_call_us(fn, calls, held_back):
        """Host wall time per call of fn, best of three rounds of `calls` calls after 20 to warm up; held_back: the
        rounds queued behind a GPU-side sleep (~0.1 s of clock cycles), so the GPU cannot hold the host back."""
        best = float("inf")
        for _ in range(3):
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
            if held_back:
                torch.cuda._sleep(200_000_000)
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, (time.perf_counter() - t0) / calls * 1e6)
            torch.cuda.synchronize()
        return best

    name, b, h, s, d = PRESETS[0]
    q, k, v = (randn((b, h, s, d), torch.float16) for _ in range(3))
    eager = {"op": per_call_us(lambda: ops.attention_fp8(q, k, v), 1000, False),
             "sdpa": per_call_us(lambda: F.scaled_dot_product_attention(q, k, v), 1000, False)}
    eager["ratio"] = eager["op"] / eager["sdpa"]
    print(f"\neager CPU time per call at {name}{(b, h, s, d)} (1000 calls, no sync, best of 3): op {eager['op']:.1f} µs, "
          f"F.scaled_dot_product_attention {eager['sdpa']:.1f} µs, ratio {eager['ratio']:.2f}", flush=True)
    check(eager["ratio"] <= 1.5, f"eager CPU time per call {eager['op']:.1f} µs <= 1.5x SDPA's {eager['sdpa']:.1f} µs")
    result["eager_cpu_us"] = eager

    # where that time goes: each call's host time alone, 200 calls queued behind a GPU-side sleep (the GPU cannot
    # hold the host back), best of 3
    qc, qs = ops.quantize_fp8(q)
    parts = (("op e2e (torch.ops.evo.attention_fp8)", lambda: ops.attention_fp8(q, k, v)),
             ("op e2e, the .default overload", lambda: ops.attention_fp8.default(q, k, v)),
             ("attention_fp8_quantized", lambda: ops.attention_fp8_quantized(qc, qc, qc, qs, qs, qs)),
             ("quantize_fp8 (one tensor)", lambda: ops.quantize_fp8(q)),
             ("torch.empty_like(q)", lambda: torch.empty_like(q)),
             ("F.scaled_dot_product_attention", lambda: F.scaled_dot_product_attention(q, k, v)))
    host = {}
    print("host time per call, GPU held back by a sleep (200 calls, best of 3):")
    for what, fn in parts:
        host[what] = per_call_us(fn, 200, True)
        print(f"  {what:<40} {host[what]:7.1f} µs", flush=True)
    result["eager_host_us"] = host

    result["checks"] = checks
    result["failures"] = failures
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "gpu_torch_op.json"), "w") as f:
            json.dump(result, f, indent=2)
    print(f"\n{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
