#!/usr/bin/env python3
"""twins.py — an exported attention file's FP16 twins against its kernels, on the GPU, at given shapes.

Per shape and causal setting, on one set of e4m3 codes: the kernel on the codes (evo_attention_forward), its FP16-V
twin with V given as the codes' values in FP16 (evo_attention_forward_v16) and its FP16-K-and-V twin with K and V so
(evo_attention_forward_kv16), each where the file has it for the problem. Every twin's output must be the kernel's
bit for bit (the self-test checks that on small problems; this checks it at the shapes timed). Then the three are
timed in one process as CUDA-graph medians (tools/bench/compare_sdpa.py's timer), alternated over ROUNDS rounds; the
ratio is the kernel's time over the twin's (> 1: the twin is faster). Table: OUT/twins.md and .json.

  python3 tools/bench/twins.py FILE.cu [--shapes "4,16,4096,128;1,16,16384,64"] [--causal both|on|off]
      [--rounds 3] [--out DIR] [--dry-run]

Needs a GPU, PyTorch and nvcc; --dry-run reads the file and prints the plan (no GPU, no PyTorch).
"""
import argparse
import json
import os
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import compare_sdpa as cs  # noqa: E402
import unseen_shapes as us  # noqa: E402

ENTRIES = (("codes", "evo_attention_forward", None),
           ("V16", "evo_attention_forward_v16", "evo_attention_v16_supported"),
           ("KV16", "evo_attention_forward_kv16", "evo_attention_kv16_supported"))


def entry_points(lib):
    """label -> (launcher, its supported query or None) of the launchers the library has (compare_sdpa types them)."""
    return {label: (getattr(lib, fwd), getattr(lib, sup) if sup else None)
            for label, fwd, sup in ENTRIES if hasattr(lib, fwd)}


def one_shape(torch, entries, shape, causal, timer, rounds):
    b, h, s, d = shape
    gen = torch.Generator(device="cuda").manual_seed(4242)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    (q8, qs), (k8, ks), (v8, vs) = (cs.quantize(torch, x, "e4m3") for x in (q, k, v))
    del q, k, v
    k16, v16 = (c.view(torch.float8_e4m3fn).to(torch.float16) for c in (k8, v8))  # the codes' values, exact
    operands = {"codes": (k8, v8), "V16": (k8, v16), "KV16": (k16, v16)}
    scale = 1.0 / (d ** 0.5)
    row = {"shape": list(shape), "causal": causal, "times": {}}
    calls, outs = {}, {}
    for label, (fwd, sup) in entries.items():
        if sup is not None and sup(b, h, s, d, 1 if causal else 0) != 1:
            row["times"][label] = {"error": "no such twin for this problem"}
            continue
        kk, vv = operands[label]
        o = outs[label] = torch.full((b, h, s, d), float("nan"), device="cuda", dtype=torch.float16)
        args = (q8.data_ptr(), kk.data_ptr(), vv.data_ptr(), qs.data_ptr(), ks.data_ptr(), vs.data_ptr(),
                o.data_ptr(), b, h, s, d, 1 if causal else 0, scale)

        def call(fwd=fwd, args=args, label=label):
            rc = fwd(*args, torch.cuda.current_stream().cuda_stream)
            if rc != 0:
                raise RuntimeError(f"{label}: cudaError {rc}")
        try:
            call()
            torch.cuda.synchronize()
        except RuntimeError as e:
            row["times"][label] = {"error": cs.first_line(e)}
            continue
        calls[label] = call
        row["times"][label] = {"rounds_us": []}
    if "codes" in outs and "codes" in calls:
        base = outs["codes"].view(torch.int16)
        for label in calls:
            if label != "codes":
                row["times"][label]["same_bits"] = bool(torch.equal(outs[label].view(torch.int16), base))
    for _ in range(rounds):
        for label, call in calls.items():
            row["times"][label]["rounds_us"].append(timer.graph(call)["median_us"])
    for label in calls:
        r = sorted(row["times"][label]["rounds_us"])
        row["times"][label]["us"] = r[len(r) // 2]
    return row


def table(rows):
    lines = ["| shape | causal | kernel µs | FP16-V twin µs | same bits | kernel / twin | FP16-K-and-V twin µs | "
             "same bits | kernel / twin |", "|---|---|---:|---:|---|---:|---:|---|---:|"]
    for r in rows:
        t = r["times"]
        base = t.get("codes", {}).get("us")
        cells = [str(tuple(r["shape"])), "yes" if r["causal"] else "no", f"{base:.1f}" if base else "-"]
        for label in ("V16", "KV16"):
            x = t.get(label, {})
            if "us" in x:
                cells += [f"{x['us']:.1f}", "yes" if x.get("same_bits") else "**NO**",
                          f"{base / x['us']:.3f}" if base else "-"]
            else:
                cells += [x.get("error", "-"), "-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", help="a .cu file written by `evo export` (one genome or a dispatching file)")
    p.add_argument("--shapes", default="4,16,4096,128;1,16,16384,64", help="'B,H,S,D;...' (default: %(default)s)")
    p.add_argument("--causal", choices=("both", "on", "off"), default="both")
    p.add_argument("--rounds", type=int, default=3, help="alternated timing rounds (default 3)")
    p.add_argument("--out", default="results", help="directory for twins.md and twins.json")
    p.add_argument("--dry-run", action="store_true", help="read the file, print the plan; no GPU")
    a = p.parse_args(argv)
    try:
        shapes = cs.parse_shapes(a.shapes)
        kx = cs.read_export(a.file)
    except (ValueError, OSError, cs.NotAnExport) as e:
        p.error(str(e))
    if not shapes:
        p.error("--shapes: no shape given")
    if a.rounds < 1:
        p.error("--rounds >= 1")
    if kx["format"] != "e4m3":
        p.error(f"{a.file}: format {kx['format']}: the twins take e4m3 codes")
    missing = [s for s in shapes if s[3] not in kx["head_dims"]]
    if missing:
        p.error(f"{a.file} has no kernel for head dim {missing[0][3]} (it has {kx['head_dims']})")
    with open(a.file, encoding="utf-8", errors="replace") as f:
        text = f.read()
    twins = [label for label, fwd, _ in ENTRIES[1:] if f"int {fwd}(" in text]
    causals = {"both": [False, True], "on": [True], "off": [False]}[a.causal]
    print(f"twins: {a.file}: {len(shapes)} shapes x {len(causals)} causal settings; entry points: codes"
          + "".join(", " + t for t in twins) + f"; {a.rounds} rounds")
    if a.dry_run:
        print("dry run: nothing built or run")
        return 0
    import torch
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "twins-build.log")
    lib = us.build_all([a.file], log, a.out)[a.file]
    if not lib:
        print(f"twins: nvcc failed (see {log})")
        return 1
    lib = cs.load_library(torch, kx, types.SimpleNamespace(lib=lib), None)
    entries = entry_points(lib)
    timer = cs.Timer(torch, 10, 20)
    rows = []
    for shape in shapes:
        for causal in causals:
            rows.append(one_shape(torch, entries, shape, causal, timer, a.rounds))
            print(f"  {shape} causal={causal}: " + ", ".join(
                f"{k} {v['us']:.1f} µs" + ("" if v.get("same_bits", True) else " (bits DIFFER)")
                for k, v in rows[-1]["times"].items() if "us" in v), flush=True)
            torch.cuda.empty_cache()
    md = (f"## FP16 twins against their kernels: {os.path.basename(a.file)}\n\n{torch.cuda.get_device_name()}; CUDA "
          f"graph of 20 calls, median of {a.rounds} alternated rounds (µs); twins given the codes' values in FP16\n\n"
          + table(rows) + "\n")
    with open(os.path.join(a.out, "twins.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "twins.json"), "w") as f:
        json.dump({"file": a.file, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    print(md)
    bad = [r for r in rows for v in r["times"].values() if v.get("same_bits") is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
