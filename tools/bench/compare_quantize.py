#!/usr/bin/env python3
"""compare_quantize.py — the quantize_fp8 kernels against PyTorch in one process, on the same tensors: a
device-to-device copy of the same bytes (1.5 bytes read + 1.5 written per element), the quantizer written in
PyTorch ops (amax, divide, cast to float8_e4m3fn; the rotation as fp32 butterflies in the kernels' order) and every
kernel variant of tools/bench/quantize_bench.cu (built as a shared library by tools/bench/quantize_build.sh, loaded with
ctypes). CUDA events, L2 flushed before every repetition, median. Codes are checked bit for bit against PyTorch's
cast (same rounding: nearest even, |x/scale| <= 448) and, on the smaller shapes, against the CPU reference.

  python3 tools/bench/compare_quantize.py --lib build/quantize/libquantize_bench.so [--reps 30] [--out DIR]
                                    [--variants FILE|S1,C1,...] [--quick]
  python3 tools/bench/compare_quantize.py --lib ... --dry-run     (no GPU, no PyTorch: the library and the signs only)
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import struct
import sys

SHAPES = [  # (B, H, S, D), timed
    ((4, 16, 4096, 128), True), ((1, 16, 16384, 64), True), ((1, 8, 512, 64), True), ((2, 8, 512, 64), True),
    ((2, 8, 2048, 64), True), ((2, 8, 512, 128), True), ((4, 8, 2048, 64), True),
    ((2, 3, 1, 64), False), ((2, 3, 77, 128), False), ((1, 5, 1000, 64), False),
]
FLUSH_BYTES = 256 << 20
WARMUP = 3
SIGN_SEED = 0x51554E5446503845
RSQRT_D = {32: float.fromhex("0x1.6a09e6p-3"), 64: 0.125, 128: float.fromhex("0x1.6a09e6p-4"), 256: 0.0625}
CPU_REF_MAX_ELEMS = 4 << 20


def sign_word(w):
    """evo_quant_sign_word (evo_quantize_abi.h): splitmix64 finalizer of SEED + (w + 1) * gamma."""
    m = (1 << 64) - 1
    z = (SIGN_SEED + (w + 1) * 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def signs(d):
    return [-1.0 if (sign_word(i >> 6) >> (i & 63)) & 1 else 1.0 for i in range(d)]


def load_lib(path):
    lib = ctypes.CDLL(os.path.abspath(path))
    lib.qb_num_variants.restype = ctypes.c_int
    lib.qb_variant_name.restype = ctypes.c_char_p
    lib.qb_variant_name.argtypes = [ctypes.c_int]
    lib.qb_variant_genome.restype = ctypes.c_char_p
    lib.qb_variant_genome.argtypes = [ctypes.c_int]
    lib.qb_variant_dims.restype = ctypes.c_int
    lib.qb_variant_dims.argtypes = [ctypes.c_int] + [ctypes.POINTER(ctypes.c_int)] * 3
    lib.qb_scratch_bytes.restype = ctypes.c_longlong
    lib.qb_scratch_bytes.argtypes = [ctypes.c_int] * 5 + [ctypes.POINTER(ctypes.c_int)]
    lib.qb_run.restype = ctypes.c_int
    lib.qb_run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_longlong, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.qb_reference.restype = None
    lib.qb_reference.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong,
                                 ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    variants = []
    for i in range(lib.qb_num_variants()):
        d, bf, rot = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        lib.qb_variant_dims(i, ctypes.byref(d), ctypes.byref(bf), ctypes.byref(rot))
        variants.append({"index": i, "name": lib.qb_variant_name(i).decode(), "genome": lib.qb_variant_genome(i).decode(),
                         "d": d.value, "bf16": bf.value, "rot": rot.value})
    return lib, variants


def pick_variants(variants, spec):
    """spec: None (all), a file with one variant name per line (the bench's passing ones), or genome names."""
    if not spec:
        return variants
    if os.path.exists(spec):
        with open(spec) as f:
            names = {line.split()[0] for line in f if line.strip()}
        return [v for v in variants if v["name"] in names]
    genomes = set(spec.split(","))
    return [v for v in variants if v["name"].split("/")[0] in genomes]


# ---- PyTorch side ----

def torch_rotate(torch, xf, d):
    """y = H·(s∘x)/sqrt(D) along the last dim: sign flips, butterflies h = 1, 2, .., D/2, then one multiply."""
    shp = xf.shape
    v = xf * torch.tensor(signs(d), dtype=torch.float32, device=xf.device)
    h = 1
    while h < d:
        v = v.reshape(-1, d // (2 * h), 2, h)
        a, b = v[:, :, 0, :], v[:, :, 1, :]
        v = torch.stack((a + b, a - b), dim=2)
        h *= 2
    return (v.reshape(shp) * torch.tensor(RSQRT_D[d], dtype=torch.float32, device=xf.device)).contiguous()


def torch_quantize(torch, x, rot):
    xf = x.float()
    if rot:
        xf = torch_rotate(torch, xf, x.shape[-1])
    amax = xf.abs().amax(dim=(-2, -1))
    # a tensor divisor: PyTorch multiplies by the reciprocal when dividing by a Python scalar
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / torch.full_like(amax, 448.0))
    codes = (xf / scale[..., None, None]).to(torch.float8_e4m3fn)
    return codes, scale


def make_input(torch, shape, dtype, seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    x = torch.randn(shape, generator=g, device="cuda", dtype=torch.float32)
    coin = torch.rand(shape, generator=g, device="cuda") < 0.001
    x = x + coin * 10.0 * torch.randn(shape, generator=g, device="cuda", dtype=torch.float32)
    if shape[0] * shape[1] > 1:
        x.view(-1, shape[2] * shape[3])[1].zero_()  # one all-zero head
    return x.to(dtype).contiguous()


def timed(torch, fn, reps, flush):
    """flush(): evicts L2 before each repetition (read: leaves it clean; write: leaves it dirty)."""
    for _ in range(WARMUP):
        flush()
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for s, e in ev:
        flush()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1e3 for s, e in ev)  # microseconds
    return {"us": t[len(t) // 2], "p10": t[int(0.1 * (len(t) - 1) + 0.5)], "p90": t[int(0.9 * (len(t) - 1) + 0.5)]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, help="libquantize_bench.so from tools/bench/quantize_build.sh")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--out", default=".")
    ap.add_argument("--variants", default=None, help="file of variant names, or genome names (S1,C1,...)")
    ap.add_argument("--quick", action="store_true", help="only the two large shapes, fp16")
    ap.add_argument("--flush", choices=["read", "write"], default="read",
                    help="evict L2 before each repetition by reading 256 MB (L2 left clean) or writing it (left dirty)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(args.lib):
        print(f"compare_quantize: {args.lib}: no such library; build it with tools/bench/quantize_build.sh", file=sys.stderr)
        return 2
    if args.reps < 5:
        print("compare_quantize: --reps must be at least 5", file=sys.stderr)
        return 2
    lib, variants = load_lib(args.lib)
    variants = pick_variants(variants, args.variants)
    if args.dry_run:
        print(f"{len(variants)} variants; signs(16) = {signs(16)}")
        return 0

    import torch
    dev = torch.cuda.get_device_properties(0)
    sms = dev.multi_processor_count
    stream = torch.cuda.current_stream().cuda_stream
    flush_buf = torch.ones(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    flush = (lambda: flush_buf.sum()) if args.flush == "read" else (lambda: flush_buf.zero_())
    head = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "device": dev.name,
            "sms": sms, "torch": torch.__version__, "reps": args.reps, "flush": args.flush}
    print(json.dumps(head))
    results, summary = [], []
    for shape, is_timed in SHAPES:
        if args.quick and shape not in [(4, 16, 4096, 128), (1, 16, 16384, 64)]:
            continue
        b, h, s, d = shape
        n, nh = b * h * s * d, b * h
        for bf in (0, 1):
            if args.quick and bf:
                continue
            dtype = torch.bfloat16 if bf else torch.float16
            x = make_input(torch, shape, dtype, seed=1 + len(results))
            for rot in (0, 1):
                case = {"shape": list(shape), "dtype": "bf16" if bf else "fp16", "rot": rot}
                tcodes, tscale = torch_quantize(torch, x, rot)
                tcodes = tcodes.view(torch.uint8).reshape(-1)
                tscale = tscale.reshape(-1).float()
                if n <= CPU_REF_MAX_ELEMS:  # PyTorch against the CPU reference
                    xh = x.view(torch.int16).cpu().contiguous()
                    rc = torch.empty(n, dtype=torch.uint8)
                    rs = torch.empty(nh, dtype=torch.float32)
                    lib.qb_reference(xh.data_ptr(), bf, rot, nh, s, d, rc.data_ptr(), rs.data_ptr())
                    case["torch_vs_cpu_codes"] = int((tcodes.cpu() != rc).sum())
                    case["torch_vs_cpu_scales"] = int((tscale.cpu() != rs).sum())
                if is_timed:
                    src = torch.empty(n * 3 // 2, dtype=torch.uint8, device="cuda")
                    dst = torch.empty_like(src)
                    case["copy"] = timed(torch, lambda: dst.copy_(src), args.reps, flush)
                    case["torch"] = timed(torch, lambda: torch_quantize(torch, x, rot), args.reps, flush)
                codes = torch.empty(n, dtype=torch.uint8, device="cuda")
                scales = torch.empty(nh, dtype=torch.float32, device="cuda")
                case["variants"] = []
                for v in variants:
                    if (v["d"], v["bf16"], v["rot"]) != (d, bf, rot):
                        continue
                    zero = ctypes.c_int()
                    sb = lib.qb_scratch_bytes(v["index"], b, h, s, sms, ctypes.byref(zero))
                    if sb < 0:
                        continue
                    scratch = torch.zeros(max(sb, 256), dtype=torch.uint8, device="cuda")

                    def run(v=v, sb=sb, scratch=scratch):
                        rc_ = lib.qb_run(v["index"], x.data_ptr(), codes.data_ptr(), scales.data_ptr(),
                                         scratch.data_ptr(), sb, b, h, s, sms, stream)
                        if rc_ != 0:
                            raise RuntimeError(f"{v['name']}: launch failed ({rc_})")

                    codes.fill_(0xA5)
                    run()
                    torch.cuda.synchronize()
                    entry = {"name": v["name"], "genome": v["genome"],
                             "bad_codes": int((codes != tcodes).sum()), "bad_scales": int((scales != tscale).sum())}
                    if is_timed:
                        entry.update(timed(torch, run, args.reps, flush))
                    case["variants"].append(entry)
                results.append(case)
                if is_timed and case["variants"]:
                    ok = [e for e in case["variants"] if e["bad_codes"] == 0 and e["bad_scales"] == 0]
                    best = min(ok, key=lambda e: e["us"]) if ok else None
                    mb = 3.0 * n + 4.0 * nh
                    row = {"shape": shape, "dtype": case["dtype"], "rot": rot, "copy_us": case["copy"]["us"],
                           "copy_gbps": mb / case["copy"]["us"] / 1e3, "torch_us": case["torch"]["us"]}
                    if best:
                        row.update({"best": best["name"], "best_us": best["us"], "best_gbps": mb / best["us"] / 1e3,
                                    "pct_copy": 100.0 * case["copy"]["us"] / best["us"],
                                    "vs_torch": case["torch"]["us"] / best["us"]})
                    summary.append(row)
                bad = [e["name"] for e in case["variants"] if e["bad_codes"] or e["bad_scales"]]
                print(f"{shape} {case['dtype']} rot={rot}: {len(case['variants'])} variants, "
                      f"{len(bad)} differ from PyTorch {bad[:4]}; PyTorch vs CPU: "
                      f"{case.get('torch_vs_cpu_codes', '-')} codes, {case.get('torch_vs_cpu_scales', '-')} scales",
                      flush=True)
    with open(os.path.join(args.out, "compare_quantize.json"), "w") as f:
        json.dump({"head": head, "cases": results, "summary": summary}, f, indent=1)
    print(f"\n{dev.name}, {head['date']}, torch {torch.__version__}, median of {args.reps}, L2 flushed ({args.flush}); "
          "GB/s = (3 bytes per element + 4 per head) / time")
    print(f"{'shape':>20} {'dtype':>5} {'rot':>3} {'copy us':>8} {'copy GB/s':>9} {'torch us':>9} {'best':>24} "
          f"{'us':>7} {'GB/s':>6} {'% copy':>6} {'x torch':>7}")
    for r in summary:
        shp = ",".join(str(v) for v in r["shape"])
        if "best" in r:
            print(f"{shp:>20} {r['dtype']:>5} {r['rot']:>3} {r['copy_us']:8.2f} {r['copy_gbps']:9.0f} "
                  f"{r['torch_us']:9.2f} {r['best']:>24} {r['best_us']:7.2f} {r['best_gbps']:6.0f} "
                  f"{r['pct_copy']:6.1f} {r['vs_torch']:7.2f}")
        else:
            print(f"{shp:>20} {r['dtype']:>5} {r['rot']:>3} {r['copy_us']:8.2f} {r['copy_gbps']:9.0f} "
                  f"{r['torch_us']:9.2f}   (no variant matched PyTorch)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
