#!/usr/bin/env python3
"""ncu_sass_mix.py — what a kernel's warps issue and where they wait, from Nsight Compute's source page.

  ncu -i REPORT.ncu-rep --page source --print-source sass --csv > K-sass.csv     (tools/gpu_ci.sh peerncu writes these)
  python3 tools/bench/ncu_sass_mix.py K-sass.csv [L-sass.csv ...] [--top 14] [--loop] [--blocks N]

For each file: the executed warp instructions by opcode (share of all), the warp-state samples by stall reason (all
instructions, and the softmax's: MUFU, FFMA, FMUL, FADD, FMNMX, F2FP, HSET2, HFMA2, HADD2, PRMT, SHFL, FSEL, FSETP,
FRND), and the opcodes with the most fixed-latency ('wait') samples. --loop also prints the hottest loop body (the
instructions executed as often as the most common count at or above the median), runs of one opcode folded.
--blocks N prints the N straight-line runs (consecutive instructions executed equally often) that issue the most:
where each run starts, its length, how often it ran, its share of all instructions, its samples and its opcodes
(which role's code a share belongs to: the softmax, the GEMM issue, the producer's transforms). Exit 2 on a bad
argument or a file that is not such a CSV.
"""
import argparse
import collections
import csv
import re
import sys

SOFTMAX = {"MUFU", "FFMA", "FMUL", "FADD", "FMNMX", "F2FP", "HSET2", "HFMA2", "HADD2", "PRMT", "SHFL", "FSEL",
           "FSETP", "FRND"}


class BadFile(Exception):
    pass


def num(x):
    """A count cell: an integer, 0 when empty or not a number."""
    try:
        return int(x or 0)
    except ValueError:
        return 0


def load(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise BadFile(f"{path}: {e.strerror}") from e
    if len(rows) < 3 or "Source" not in rows[1] or "Instructions Executed" not in rows[1]:
        raise BadFile(f"{path}: not an ncu source-page CSV (no 'Source' and 'Instructions Executed' header)")
    kernel = rows[0][1] if len(rows[0]) > 1 else "?"
    hdr = rows[1]
    i_src, i_ex = hdr.index("Source"), hdr.index("Instructions Executed")
    i_at = hdr.index("Address") if "Address" in hdr else None
    stalls = [(h, i) for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    out = []
    for r in rows[2:]:
        if len(r) <= max([i_ex] + [i for _, i in stalls]):
            continue
        src = r[i_src].strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", src).split()
        op = op[0] if op else ""
        at = r[i_at].strip() if i_at is not None else ""
        at = at[-5:] if at.startswith("0x") else at  # the low digits: offsets within the kernel
        out.append({"src": src, "op": op, "base": op.split(".")[0], "n": num(r[i_ex]), "addr": at,
                    "stall": {h: num(r[i]) for h, i in stalls}})
    return kernel, out


def blocks(ins, total, n):
    """The n straight-line runs (consecutive instructions with one executed count) that issue the most."""
    runs = []
    for x in ins:
        if runs and runs[-1]["n"] == x["n"]:
            runs[-1]["ins"].append(x)
        else:
            runs.append({"n": x["n"], "ins": [x], "at": x["addr"]})
    runs.sort(key=lambda r: -r["n"] * len(r["ins"]))
    print(f"   the {n} runs that issue the most (start, length, times run, share, samples: opcodes):")
    for r in runs[:n]:
        ops = collections.Counter(x["base"] for x in r["ins"])
        smp = sum(sum(x["stall"].values()) for x in r["ins"])
        print(f"     {r['at']:>8} {len(r['ins']):4d} x {r['n']:<9d} {100 * r['n'] * len(r['ins']) / total:5.1f}% "
              f"{smp:6d}: " + " ".join(f"{k}{v}" for k, v in ops.most_common(9)))


def report(path, top, loop, nblocks=0):
    kernel, ins = load(path)
    total = sum(x["n"] for x in ins) or 1
    print(f"== {path}\n   kernel {kernel[:110]}\n   warp instructions executed {total:.4g}")
    by_op = collections.Counter()
    for x in ins:
        by_op[x["base"]] += x["n"]
    print("   opcode mix: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_op.most_common(top)))
    reasons, soft = collections.Counter(), collections.Counter()
    for x in ins:
        for h, v in x["stall"].items():
            reasons[h] += v
            if x["base"] in SOFTMAX:
                soft[h] += v
    n_all, n_soft = sum(reasons.values()) or 1, sum(soft.values())
    print(f"   warp-state samples {n_all}, at softmax instructions {n_soft} ({100 * n_soft / n_all:.0f} %)")
    for h, v in reasons.most_common(10):
        print(f"     {h[6:]:<18} all {v:7d} ({100 * v / n_all:4.1f} %)   softmax {soft[h]:7d}")
    waits = collections.Counter()
    for x in ins:
        waits[x["op"]] += x["stall"].get("stall_wait", 0)
    print("   'wait' samples by opcode: " + ", ".join(f"{k} {v}" for k, v in waits.most_common(top)))
    if loop:
        counts = sorted(x["n"] for x in ins if x["n"])
        med = counts[len(counts) // 2] if counts else 0
        hot = collections.Counter(x["n"] for x in ins if x["n"] >= med).most_common(1)
        if hot:
            n = hot[0][0]
            print(f"   hottest body (executed {n} times):")
            prev, run, smp = None, 0, 0
            for x in ins + [None]:
                key = (x["op"]) if x and x["n"] == n else None
                if prev is not None and key == prev[0]:
                    run, smp = run + 1, smp + sum(x["stall"].values())
                    continue
                if prev is not None:
                    print(f"     x{run:<3} {prev[1][:64]:<64} samples {smp}")
                prev = (key, x["src"]) if key else None
                run, smp = (1, sum(x["stall"].values())) if key else (0, 0)
    if nblocks:
        blocks(ins, total, nblocks)


def main(argv):
    p = argparse.ArgumentParser(description="Instruction mix and stall reasons from ncu source-page CSVs.")
    p.add_argument("csv", nargs="+")
    p.add_argument("--top", type=int, default=14, help="opcodes listed (default 14)")
    p.add_argument("--loop", action="store_true", help="also print the hottest loop body")
    p.add_argument("--blocks", type=int, default=0, metavar="N",
                   help="also print the N straight-line runs that issue the most")
    a = p.parse_args(argv)
    if a.top < 1:
        p.error("--top wants a positive count")
    if a.blocks < 0:
        p.error("--blocks wants a count of 0 or more")
    try:
        for path in a.csv:
            report(path, a.top, a.loop, a.blocks)
    except BadFile as e:
        print(f"ncu_sass_mix: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
