#!/usr/bin/env python3
"""fp8_calibrate.py — the fp8 accuracy class calibrated on a GPU, every column in one process (docs/results.md,
"The fp8 accuracy class"):

A. On the gate's own inputs (evo's generator and quantizer, built from support.cu and attn_support.cu by
   fp8_model_lib.cu): per (batch, head) slice, the error against the exact FP32 reference on the dequantized inputs
   of the FP8 model, of evo's exported kernels (an fp8-class one, and an exact-class one when given), and of cuDNN's
   FP8 SDPA (its own per-tensor quantization of the same fp16 inputs, against the FP32 reference on its own
   dequantized inputs; its FP8 output dequantized), with what cuDNN's output rounding alone adds. Worst head.
B. End to end on FlashAttention-3's outlier inputs (fp16 N(0,1) + N(0,100)·Bernoulli(0.001) -> quantize -> kernel):
   the RMSE against FP64 attention on the fp16 inputs of evo's fp8-class kernel (fp16 output, and rounded to e4m3 by
   cuDNN's output scale 448/absmax(V)), of the FP8 model (the same two ways) and of cuDNN FP8, with the issue's
   checks: evo (e4m3 output) <= cuDNN FP8 and <= 1.05 x the model (e4m3 output).

  python3 tools/bench/fp8_calibrate.py --fp8 variants/X.cu [--exact variants/Y.cu] [--out DIR] [--seeds N]
        [--model-lib LIB.so] [--e2e-shapes 'B,H,S,D;...'] [--gate-shapes 'B,H,S,D;...']
Needs PyTorch with CUDA, nvcc, and the nvidia-cudnn-frontend wheel for the cuDNN columns.
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import compare_sdpa as cs  # noqa: E402  (the exported-kernel loader, quantizer and cuDNN FP8 graph)

DISTS = ["normal", "uniform", "outliers", "zero_head", "large"]
PROBES = ["heads", "needle", "last_key", "moderate", "integers"]
E2E_SHAPES = "1,16,2048,128;4,16,4096,128;1,16,16384,64"
GATE_SHAPES = "1,16,2048,64;1,16,2048,128"


def shapes_of(text):
    return [tuple(int(x) for x in s.split(",")) for s in text.split(";") if s.strip()]


def build_model_lib(nvcc, arch, out):
    cmd = [nvcc, f"-arch={arch}", "-O3", "-shared", "-Xcompiler", "-fPIC", "-I", os.path.join(ROOT, "templates"),
           "-I", os.path.join(ROOT, "tasks", "attention_fp8"), os.path.join(HERE, "fp8_model_lib.cu"), "-o", out]
    print("building: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return out


class Model:
    """The gate's own kernels through fp8_model_lib.cu."""

    def __init__(self, torch, path):
        self.torch = torch
        self.lib = ctypes.CDLL(path)
        P, I, U, F = ctypes.c_void_p, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_float
        for name, args in (("evo_lib_gen", [P, U, U, U, ctypes.c_uint, I, P]),
                           ("evo_lib_probe", [P, U, I, U, ctypes.c_uint, I, I, P]),
                           ("evo_lib_quantize", [P, P, P, I, U, P]),
                           ("evo_lib_dequantize", [P, P, P, U, U, P]),
                           ("evo_lib_fp8_model", [P] * 7 + [I] * 5 + [F, I, P])):
            f = getattr(self.lib, name)
            f.argtypes, f.restype = args, I

    def _ok(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: cudaError {rc}")

    def stream(self):
        return self.torch.cuda.current_stream().cuda_stream

    def inputs(self, shape, seed, dist=None, probe=None):
        """fp16 Q, K, V of evo's generator (a distribution by name, or a probe)."""
        b, h, s, d = shape
        n = b * h * s * d
        out = []
        for t in range(3):
            x = self.torch.empty(shape, dtype=self.torch.float16, device="cuda")
            if probe is not None:
                self._ok(self.lib.evo_lib_probe(x.data_ptr(), n, PROBES.index(probe), seed, t, s, d, self.stream()),
                         "probe")
            else:
                self._ok(self.lib.evo_lib_gen(x.data_ptr(), n, s * d, seed, t, DISTS.index(dist), self.stream()),
                         "generate")
            out.append(x)
        return out

    def quantize(self, x):
        b, h, s, d = x.shape
        codes = self.torch.empty(x.shape, dtype=self.torch.uint8, device="cuda")
        scales = self.torch.empty(b * h, dtype=self.torch.float32, device="cuda")
        self._ok(self.lib.evo_lib_quantize(x.data_ptr(), codes.data_ptr(), scales.data_ptr(), b * h, s * d,
                                           self.stream()), "quantize")
        return codes, scales

    def dequantize(self, codes, scales):
        b, h, s, d = codes.shape
        out = self.torch.empty(codes.shape, dtype=self.torch.float32, device="cuda")
        self._ok(self.lib.evo_lib_dequantize(codes.data_ptr(), scales.data_ptr(), out.data_ptr(), codes.numel(), s * d,
                                             self.stream()), "dequantize")
        return out

    def run(self, qk, kk, vk, causal, scale, phase=0):
        (q8, qs), (k8, ks), (v8, vs) = qk, kk, vk
        b, h, s, d = q8.shape
        o = self.torch.full(q8.shape, float("nan"), dtype=self.torch.float32, device="cuda")
        self._ok(self.lib.evo_lib_fp8_model(q8.data_ptr(), qs.data_ptr(), k8.data_ptr(), ks.data_ptr(), v8.data_ptr(),
                                            vs.data_ptr(), o.data_ptr(), b, h, s, d, 1 if causal else 0, scale,
                                            phase, self.stream()), "FP8 model")
        return o


def per_head(torch, out, ref):
    """worst head's rel-L2 and max-abs / max|ref| of out against ref ([B, H, S, D])."""
    b, h = out.shape[0], out.shape[1]
    o = out.double().reshape(b * h, -1)
    r = ref.double().reshape(b * h, -1)
    d = o - r
    nr = r.norm(dim=1)
    rel = torch.where(nr > 0, d.norm(dim=1) / nr.clamp_min(1e-300), d.norm(dim=1))
    mx = d.abs().amax(dim=1) / r.abs().amax(dim=1).clamp_min(1e-300)
    return {"rel_l2": rel.max().item(), "max_abs_rel": mx.max().item(), "per_head_rel": rel.tolist(),
            "nonfinite": int((~torch.isfinite(out)).sum().item())}


def evo_kernel(torch, path, nvcc, workdir):
    info = cs.read_export(path)
    args = argparse.Namespace(lib=None, nvcc=nvcc, arch=None)
    sub = tempfile.mkdtemp(dir=workdir)
    lib = cs.load_library(torch, info, args, sub)
    return info, lib


def run_evo(torch, info, lib, codes, shape, causal, scale):
    (q8, qs), (k8, ks), (v8, vs) = codes
    o = torch.full(shape, float("nan"), dtype=torch.float16, device="cuda")
    cs.ours_call(torch, lib, q8, k8, v8, qs, ks, vs, o, shape, causal, scale)()
    torch.cuda.synchronize()
    return o


def e4m3_out(torch, o, v):
    """o rounded to e4m3 by cuDNN's output scale 448/absmax(V) (what an FP8 output would hold), as float."""
    so = cs.E4M3_MAX / max(v.float().abs().amax().item(), 1e-30)
    return (o.float() * so).clamp_(-cs.E4M3_MAX, cs.E4M3_MAX).to(torch.float8_e4m3fn).float() / so


def part_a(torch, model, kernels, shapes, seeds):
    rows = []
    for shape in shapes:
        b, h, s, d = shape
        scale = 1.0 / math.sqrt(d)
        for causal in (False, True):
            for kind, name in [("dist", x) for x in DISTS] + [("probe", x) for x in PROBES]:
                sm = {"moderate": 2.0 / math.sqrt(d), "integers": math.log(2.0)}.get(name, scale)
                row = {"shape": list(shape), "causal": causal, "inputs": name}
                for seed in range(seeds):
                    x = model.inputs(shape, seed, dist=name if kind == "dist" else None,
                                     probe=name if kind == "probe" else None)
                    codes = [model.quantize(t) for t in x]
                    deq = [model.dequantize(c, sc) for c, sc in codes]
                    ref = cs.attention_fp32(torch, deq[0], deq[1], deq[2], causal, sm)
                    res = {"model": per_head(torch, model.run(codes[0], codes[1], codes[2], causal, sm), ref)}
                    for label, (info, lib) in kernels.items():
                        res[label] = per_head(torch, run_evo(torch, info, lib, codes, shape, causal, sm), ref)
                    try:
                        call, get = cs.cudnn_fp8_call(torch, x[0], x[1], x[2], causal, sm)
                        call()
                        torch.cuda.synchronize()
                        # cuDNN's own dequantized inputs: per-tensor e4m3
                        own = []
                        for t in x:
                            amax = t.float().abs().amax().item()
                            sc = amax / cs.E4M3_MAX if amax > 0 else 1.0
                            own.append((t.float() / sc).clamp_(-cs.E4M3_MAX, cs.E4M3_MAX)
                                       .to(torch.float8_e4m3fn).float() * sc)
                        ref_c = cs.attention_fp32(torch, own[0], own[1], own[2], causal, sm)
                        res["cudnn_fp8"] = per_head(torch, get(), ref_c)
                        res["cudnn_output_rounding"] = per_head(torch, e4m3_out(torch, ref_c, x[2]), ref_c)
                    except RuntimeError as e:
                        res["cudnn_fp8"] = {"error": cs.first_line(e)}
                    for k, v in res.items():
                        if "rel_l2" in v:
                            cur = row.setdefault(k, {"rel_l2": 0.0, "max_abs_rel": 0.0, "nonfinite": 0})
                            cur["rel_l2"] = max(cur["rel_l2"], v["rel_l2"])
                            cur["max_abs_rel"] = max(cur["max_abs_rel"], v["max_abs_rel"])
                            cur["nonfinite"] += v["nonfinite"]
                        else:
                            row[k] = v
                rows.append(row)
                cells = "  ".join(f"{k} {v['rel_l2']:.2e}" for k, v in row.items() if isinstance(v, dict) and
                                  "rel_l2" in v)
                print(f"  A {shape} causal={int(causal)} {name:10s} {cells}", flush=True)
    return rows


def attention_fp64(torch, q, k, v, scale):
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    step = max(1, (1 << 27) // (q.shape[2] * q.shape[2]))  # heads a time: about 1 GiB of FP64 scores
    for b in range(q.shape[0]):
        for h in range(0, q.shape[1], step):
            s = torch.matmul(q[b, h:h + step].double(), k[b, h:h + step].double().transpose(-1, -2)) * scale
            out[b, h:h + step] = torch.matmul(torch.softmax(s, dim=-1), v[b, h:h + step].double())
            del s
    return out


def part_b(torch, model, kernels, shapes, seeds):
    rows = []
    for shape in shapes:
        b, h, s, d = shape
        scale = 1.0 / math.sqrt(d)
        acc = {}
        for seed in range(seeds):
            print(f"  B {shape} draw {seed + 1}", flush=True)
            gen = torch.Generator(device="cuda").manual_seed(7000 + 101 * seed + d)
            q, k, v = (cs.outlier_inputs(torch, shape, gen) for _ in range(3))
            ref = attention_fp64(torch, q, k, v, scale)
            codes = [model.quantize(t) for t in (q, k, v)]
            got = {}
            mo = model.run(codes[0], codes[1], codes[2], False, scale)
            got["model"] = mo
            got["model_e4m3_out"] = e4m3_out(torch, mo, v)
            for label, (info, lib) in kernels.items():
                if d not in info["head_dims"]:
                    continue
                o = run_evo(torch, info, lib, codes, shape, False, scale)
                got[label] = o
                got[label + "_e4m3_out"] = e4m3_out(torch, o, v)
            try:
                call, get = cs.cudnn_fp8_call(torch, q, k, v, False, scale)
                call()
                torch.cuda.synchronize()
                got["cudnn_fp8"] = get()
            except RuntimeError as e:
                print("  cuDNN FP8: " + cs.first_line(e))
            got["sdpa_fp16"] = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            for key, o in got.items():
                acc.setdefault(key, []).append(cs.rmse_of(o, ref))
            del ref, got
            torch.cuda.empty_cache()
        row = {"shape": list(shape), "rmse": {k: sum(v) / len(v) for k, v in acc.items()}, "draws": seeds}
        r = row["rmse"]
        if "fp8" in kernels and "fp8_e4m3_out" in r:
            row["evo_le_cudnn"] = "cudnn_fp8" in r and r["fp8_e4m3_out"] <= r["cudnn_fp8"]
            row["evo_le_1.05_model"] = r["fp8_e4m3_out"] <= 1.05 * r["model_e4m3_out"]
        rows.append(row)
        print("  B " + str(shape) + " " + "  ".join(f"{k} {v:.3e}" for k, v in r.items()), flush=True)
    return rows


def time_model(torch, model, shapes):
    """The FP8 model kernel's time (CUDA events, median of 3 after one warm-up) at each shape, causal and not."""
    print(f"FP8 model kernel on {torch.cuda.get_device_name()}")
    for shape in shapes:
        x = model.inputs(shape, 0, dist="normal")
        codes = [model.quantize(t) for t in x]
        for causal in (False, True):
            ms = []
            for _ in range(4):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                model.run(codes[0], codes[1], codes[2], causal, 1.0 / math.sqrt(shape[3]))
                b.record()
                torch.cuda.synchronize()
                ms.append(a.elapsed_time(b))
            ms = sorted(ms[1:])
            print(f"  {shape} causal={int(causal)}: {ms[1]:.1f} ms (of {', '.join('%.1f' % m for m in ms)})",
                  flush=True)
    return 0


def markdown(a_rows, b_rows, header):
    lines = [header, "", "### A. Per head on the gate's inputs (worst head; rel-L2 and max-abs / max|ref|)", ""]
    cols = []
    for r in a_rows:
        for k, v in r.items():
            if isinstance(v, dict) and "rel_l2" in v and k not in cols:
                cols.append(k)
    lines.append("| shape | causal | inputs | " + " | ".join(cols) + " |")
    lines.append("|---|---|---|" + "---:|" * len(cols))
    for r in a_rows:
        cells = []
        for c in cols:
            v = r.get(c)
            cells.append(f"{v['rel_l2']:.2e} / {v['max_abs_rel']:.2e}" if isinstance(v, dict) and "rel_l2" in v
                         else "n/a")
        lines.append(f"| ({','.join(map(str, r['shape']))}) | {int(r['causal'])} | {r['inputs']} | " +
                     " | ".join(cells) + " |")
    lines += ["", "### B. End to end on outlier inputs: RMSE against FP64 attention on the fp16 inputs", ""]
    keys = []
    for r in b_rows:
        for k in r["rmse"]:
            if k not in keys:
                keys.append(k)
    lines.append("| shape | " + " | ".join(keys) + " | evo (e4m3 out) <= cuDNN FP8 | <= 1.05 x model |")
    lines.append("|---|" + "---:|" * len(keys) + "---|---|")
    for r in b_rows:
        lines.append(f"| ({','.join(map(str, r['shape']))}) | " +
                     " | ".join(f"{r['rmse'][k]:.3e}" if k in r["rmse"] else "n/a" for k in keys) +
                     f" | {r.get('evo_le_cudnn', 'n/a')} | {r.get('evo_le_1.05_model', 'n/a')} |")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fp8", help="an fp8-class kernel written by evo export (required unless --time-model)")
    p.add_argument("--exact", help="an exact-class kernel written by evo export (part A only)")
    p.add_argument("--out", default="results")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--model-lib", help="a prebuilt fp8_model_lib.cu library")
    p.add_argument("--nvcc", help="nvcc (default: PATH, $CUDA_HOME/bin)")
    p.add_argument("--e2e-shapes", default=E2E_SHAPES)
    p.add_argument("--gate-shapes", default=GATE_SHAPES)
    p.add_argument("--skip-a", action="store_true")
    p.add_argument("--time-model", action="store_true",
                   help="only time the FP8 model (its GPU kernel) at the end-to-end shapes, causal and not")
    args = p.parse_args(argv)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    nvcc = cs.find_nvcc(args.nvcc)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp()
    major, minor = torch.cuda.get_device_capability()
    lib_path = args.model_lib or build_model_lib(nvcc, f"sm_{major}{minor}", os.path.join(work, "libevo_fp8_model.so"))
    model = Model(torch, lib_path)
    if args.time_model:
        return time_model(torch, model, shapes_of(args.e2e_shapes))
    if not args.fp8:
        p.error("--fp8 FILE is required")
    kernels = {"fp8": evo_kernel(torch, args.fp8, nvcc, work)}
    if args.exact:
        kernels["exact"] = evo_kernel(torch, args.exact, nvcc, work)
    dev = torch.cuda.get_device_name()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"device {dev}, {when}; fp8 kernel {kernels['fp8'][0]['genome']}", flush=True)
    a_rows = [] if args.skip_a else part_a(torch, model, kernels, shapes_of(args.gate_shapes), args.seeds)
    b_rows = part_b(torch, model, {k: v for k, v in kernels.items() if k == "fp8"}, shapes_of(args.e2e_shapes),
                    args.seeds)
    header = (f"## fp8 calibration, {dev}, {when}\n\nfp8 kernel: `{os.path.basename(args.fp8)}` "
              f"({kernels['fp8'][0]['genome']})" +
              (f"; exact kernel: `{os.path.basename(args.exact)}`" if args.exact else ""))
    md = markdown(a_rows, b_rows, header)
    with open(os.path.join(args.out, "fp8-calibration.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.out, "fp8-calibration.json"), "w") as f:
        json.dump({"device": dev, "when": when, "part_a": a_rows, "part_b": b_rows}, f, indent=1)
    print("\n".join(md))
    ok = all(r.get("evo_le_cudnn", True) and r.get("evo_le_1.05_model", True) for r in b_rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
