#!/usr/bin/env python3
"""sustained.py — an exported evo kernel and its peers under sustained load, beside the GPU's clocks and power.

evo ranks kernels one call at a time (CUPTI, the L2 flushed between repetitions); a model calls attention back to
back. Where the two orders disagree (docs/results.md, 2026-11-29: a persistent kernel 735 µs one call at a time and
821-845 µs in graph replay, with the software power cap engaged) this says whether it is the load: for each
contender (the file's launcher at the problem, cuDNN fp16 SDPA, cuDNN's FP8 SDPA) and each mode, SECONDS of

  single  one call, synchronized, then a pause of GAP_MS (the GPU idles between calls);
  burst   calls back to back, CUDA events around every CHUNK calls (no flush, no host gap);

while nvidia-smi samples the SM clock, power draw, temperature and throttle reasons every SMI_MS. The report gives,
per contender and mode, the per-call time in the first and the last quarter of the window, and the clock, power and
share of samples with the software power cap (reason 0x4) over the window; the JSON keeps every series.

  python3 tools/bench/sustained.py variants/X.cu [--shape 4,16,4096,128] [--causal] [--seconds 3] [--chunk 10]
                                   [--gap-ms 10] [--smi-ms 50] [--peers cudnn,cudnn_fp8] [--out DIR]
  python3 tools/bench/sustained.py variants/X.cu --dry-run     (no GPU, no PyTorch: the arguments and the file)
Needs what compare_sdpa.py needs (PyTorch with CUDA, nvcc; the cuDNN FP8 column nvidia-cudnn-frontend).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_sdpa as cs  # noqa: E402

MODES = ("single", "burst")
PEERS = ("cudnn", "cudnn_fp8")
SMI_FIELDS = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"
SW_POWER_CAP = 0x4


def parse_args(argv):
    p = argparse.ArgumentParser(description="Kernels under sustained load, beside the GPU's clocks and power.")
    p.add_argument("file", help="a .cu file written by `evo export`")
    p.add_argument("--shape", default="4,16,4096,128", help="B,H,S,D (default %(default)s)")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seconds", type=float, default=3.0, help="length of each contender's window per mode")
    p.add_argument("--chunk", type=int, default=10, help="burst: calls between two events (default 10)")
    p.add_argument("--gap-ms", type=float, default=10.0, help="single: pause after each call (default 10 ms)")
    p.add_argument("--smi-ms", type=int, default=50, help="nvidia-smi sampling period (default 50 ms)")
    p.add_argument("--peers", default=",".join(PEERS), help="comma-separated of: %s ('' for none)" % ",".join(PEERS))
    p.add_argument("--out", default="results", help="directory for sustained.{json,md} (default: results)")
    p.add_argument("--nvcc", help="nvcc to build with (default as compare_sdpa.py)")
    p.add_argument("--arch", help="nvcc -arch (default: the file's)")
    p.add_argument("--lib", help="a library already built from the file (skips nvcc)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments and the file; no GPU, no PyTorch")
    a = p.parse_args(argv)
    try:
        shapes = cs.parse_shapes(a.shape)
    except ValueError as e:
        p.error(f"--shape: {e}")
    if len(shapes) != 1:
        p.error("--shape: one B,H,S,D")
    a.shape_t = shapes[0]
    a.peer_list = [x for x in (s.strip() for s in a.peers.split(",")) if x]
    bad = [x for x in a.peer_list if x not in PEERS]
    if bad:
        p.error(f"--peers: unknown {', '.join(bad)} (known: {', '.join(PEERS)})")
    if not (0 < a.seconds <= 60):
        p.error("--seconds: more than 0 and at most 60")
    if a.chunk < 1 or a.smi_ms < 10 or a.gap_ms < 0:
        p.error("--chunk at least 1, --smi-ms at least 10, --gap-ms not negative")
    return a


def quartiles(series):
    """Median of the first and of the last quarter of a series (at least one element each)."""
    n = len(series)
    q = max(1, n // 4)
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    return med(series[:q]), med(series[n - q:])


def run_single(torch, fn, seconds, gap_ms):
    out, t_end = [], time.time() + seconds
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while time.time() < t_end:
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(1000.0 * a.elapsed_time(b))
        if gap_ms:
            time.sleep(gap_ms / 1000.0)
    return out


def run_burst(torch, fn, seconds, chunk):
    """Chunks of calls back to back; the host keeps at most a few chunks queued ahead of the GPU."""
    out, evs, t_end = [], [], time.time() + seconds
    start = torch.cuda.Event(enable_timing=True)
    start.record()
    prev = start
    while time.time() < t_end:
        for _ in range(chunk):
            fn()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        evs.append((prev, e))
        prev = e
        if len(evs) > 4:
            evs[-4][1].synchronize()
    torch.cuda.synchronize()
    for a, b in evs:
        out.append(1000.0 * a.elapsed_time(b) / chunk)
    return out


def smi_start(path, period_ms):
    try:
        f = open(path, "w")
        return subprocess.Popen(["nvidia-smi", "--query-gpu=" + SMI_FIELDS, "--format=csv,noheader,nounits",
                                 "-lms", str(period_ms)], stdout=f, stderr=subprocess.DEVNULL), f
    except OSError:
        return None, None


def smi_read(path):
    """[(unix time, clock MHz, power W, temperature C, throttle reasons)] from nvidia-smi's CSV."""
    rows = []
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return rows
    for line in lines:
        parts = [x.strip() for x in line.split(",")]
        if len(parts) != 5:
            continue
        try:
            t = time.mktime(time.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S"))
            t += float("0." + parts[0].split(".")[1]) if "." in parts[0] else 0.0
            rows.append((t, float(parts[1]), float(parts[2]), float(parts[3]), int(parts[4], 16)))
        except (ValueError, IndexError):
            continue
    return rows


def window_stats(samples, t0, t1):
    inside = [s for s in samples if t0 <= s[0] <= t1]
    if not inside:
        return {"samples": 0}
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    return {"samples": len(inside), "clock_mhz": med([s[1] for s in inside]), "power_w": med([s[2] for s in inside]),
            "temp_c": max(s[3] for s in inside),
            "power_cap_share": sum(1 for s in inside if s[4] & SW_POWER_CAP) / len(inside)}


def main(argv=None):
    args = parse_args(argv)
    try:
        k = cs.read_export(args.file)
    except (OSError, cs.NotAnExport) as e:
        print(f"sustained: {e}", file=sys.stderr)
        return 2
    b, h, s, d = args.shape_t
    if d not in k["head_dims"]:
        print(f"sustained: {args.file} has no variant for head dim {d} (it has {k['head_dims']})", file=sys.stderr)
        return 2
    plan = (f"file {k['path']}: format {k['format']}, head dims {' '.join(map(str, k['head_dims']))}\n"
            f"problem ({b}, {h}, {s}, {d}) {'causal' if args.causal else 'not causal'}; contenders: ours"
            f"{''.join(', ' + x for x in args.peer_list)}; modes {', '.join(MODES)}, {args.seconds:g} s each; "
            f"burst chunk {args.chunk}, single gap {args.gap_ms:g} ms, nvidia-smi every {args.smi_ms} ms")
    if args.dry_run:
        print(plan)
        print("dry run: nothing built, run or written")
        return 0
    mods = cs.load_torch("sustained")
    if mods is None:
        return 2
    torch, F, SDPBackend, sdpa_kernel = mods
    print(plan, flush=True)
    try:  # the output directory before any GPU work: a path that cannot take the results fails here, not after it
        os.makedirs(args.out, exist_ok=True)
        if not os.access(args.out, os.W_OK):
            raise OSError(f"{args.out}: not writable")
    except OSError as e:
        print(f"sustained: --out {args.out}: {e}", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="evo-sustained-")
    build = argparse.Namespace(lib=args.lib, nvcc=args.nvcc, arch=args.arch)
    lib = cs.load_library(torch, k, build, work)

    gen = torch.Generator(device="cuda").manual_seed(0)
    q, kk, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    scale = 1.0 / math.sqrt(d)
    (q8, qs), (k8, ks), (v8, vs) = (cs.quantize(torch, x, k["format"]) for x in (q, kk, v))
    o = torch.empty_like(q)
    contenders = [("ours", cs.ours_call(torch, lib, q8, k8, v8, qs, ks, vs, o, (b, h, s, d), args.causal, scale))]
    if "cudnn" in args.peer_list:
        def sdpa():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                F.scaled_dot_product_attention(q, kk, v, is_causal=args.causal)
        contenders.append(("cudnn", sdpa))
    if "cudnn_fp8" in args.peer_list:
        try:
            call, _ = cs.cudnn_fp8_call(torch, q, kk, v, args.causal, scale)
            contenders.append(("cudnn_fp8", call))
        except RuntimeError as e:
            print(f"cuDNN FP8: n/a ({cs.first_line(e)})")

    smi_path = os.path.join(work, "smi.csv")
    proc, fh = smi_start(smi_path, args.smi_ms)
    results = []
    try:
        for name, fn in contenders:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            for mode in MODES:
                t0 = time.time()
                series = (run_single(torch, fn, args.seconds, args.gap_ms) if mode == "single" else
                          run_burst(torch, fn, args.seconds, args.chunk))
                results.append({"contender": name, "mode": mode, "t0": t0, "t1": time.time(), "us": series})
                first, last = quartiles(series)
                print(f"  {name:<10} {mode:<6} first quarter {first:9.1f} µs, last quarter {last:9.1f} µs "
                      f"({len(series)} samples)", flush=True)
    finally:
        if proc:
            proc.terminate()
            proc.wait()
            fh.close()
    samples = smi_read(smi_path)
    rows = []
    for r in results:
        first, last = quartiles(r["us"])
        r.update({"first_quarter_us": first, "last_quarter_us": last, **window_stats(samples, r["t0"], r["t1"])})
        rows.append(r)
    info = {"file": k["path"], "genome": k["genome"], "device": torch.cuda.get_device_name(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "shape": [b, h, s, d],
            "causal": args.causal, "seconds": args.seconds, "chunk": args.chunk, "gap_ms": args.gap_ms,
            "smi_ms": args.smi_ms, "smi_samples": len(samples)}
    md = [f"# Sustained load: {os.path.basename(k['path'])} at ({b}, {h}, {s}, {d})"
          f"{' causal' if args.causal else ''}", "",
          f"{info['device']}, {info['date']}; {args.seconds:g} s per contender and mode; burst: events every "
          f"{args.chunk} calls; single: a {args.gap_ms:g} ms pause after each call; nvidia-smi every "
          f"{args.smi_ms} ms ({len(samples)} samples).", "",
          "| contender | mode | first quarter µs | last quarter µs | SM clock MHz | power W | max temp C | "
          "power-cap share |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        clk = f"{r['clock_mhz']:.0f}" if r.get("samples") else "n/a"
        pw = f"{r['power_w']:.0f}" if r.get("samples") else "n/a"
        tc = f"{r['temp_c']:.0f}" if r.get("samples") else "n/a"
        cap = f"{r['power_cap_share']:.2f}" if r.get("samples") else "n/a"
        md.append(f"| {r['contender']} | {r['mode']} | {r['first_quarter_us']:.1f} | {r['last_quarter_us']:.1f} | "
                  f"{clk} | {pw} | {tc} | {cap} |")
    with open(os.path.join(args.out, "sustained.json"), "w") as f:
        json.dump({"info": info, "results": rows, "smi": samples}, f)
    with open(os.path.join(args.out, "sustained.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"wrote {os.path.join(args.out, 'sustained.json')} and {os.path.join(args.out, 'sustained.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
