#!/usr/bin/env python3
"""sass_loop_stats.py — static instruction mix of the key-tile loop of tasks/attention_fp8/attention_fp8.cu instantiations.

Compiles each genome (template arguments <D,FMT,TILE_M,TILE_N,WARPS_M,WARPS_N,STAGES,SWIZZLE,PV_MMA,QK_8BIT,
F16_SMEM,MIN_BLOCKS,FAST_EXP>) with nvcc, disassembles it and prints registers, spills and, for every outermost loop
that holds HMMA/IMMA, the instructions on its hot path: the path from the loop head to its backward branch that
issues at least thread 0's share of one K and one V tile of cp.async copies (LDGSTS) with the fewest instructions: a tile that
loads the next stage but needs no mask and no Q fragments. Inner loops on that path are counted once per pass (their
iterations hold copies, so the count fixes how often they run) and listed with their size.
  python3 tools/bench/sass_loop_stats.py [--arch sm_90] [--top 24] [--templates DIR] [--sass-dir DIR] 64,0,128,64,4,1,2,...
With no genome the default list below is used. Needs nvcc on PATH and cuobjdump (PATH, CUDA bin or $CUOBJDUMP).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEFAULT = [
    "64,0,128,64,4,1,2,1,1,0,0,1,1",   # the long/stress best: 32 rows per warp
    "64,0,128,64,4,1,3,1,1,0,0,1,1",
    "64,0,64,64,4,1,2,1,1,0,0,1,1",    # the config's baseline: 16 rows per warp
    "128,0,64,64,4,1,2,1,1,0,0,1,1",   # wide
    "64,0,128,64,4,1,2,1,1,0,2,1,1",   # FP16 K and V in smem
    "64,1,128,64,4,1,2,1,1,1,0,1,1",   # u8sim with s8 IMMA
]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def find_tool(name):
    for cand in (os.environ.get(name.upper()), shutil.which(name), os.path.join("/usr/local/cuda/bin", name)):
        if cand and os.path.exists(cand):
            return cand
    sys.exit(f"sass_loop_stats: {name} not found (set ${name.upper()})")


def parse(sass):
    """Returns {kernel name: [(addr, pred, opcode, operands)]} from cuobjdump -sass text."""
    funcs, cur = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = LINE.match(line)
        if m and cur is not None:
            text = m.group(2)
            pred = ""
            if text.startswith("@"):
                pred, text = text.split(None, 1)
            op, _, args = text.partition(" ")
            cur.append((int(m.group(1), 16), pred, op, args))
    return funcs


def branch_target(ins):
    _, _, op, args = ins
    if op.split(".")[0] != "BRA":
        return None
    m = re.search(r"0x([0-9a-f]+)\s*$", args)
    return int(m.group(1), 16) if m else None


def is_conditional(ins):
    pred, _, _, args = ins
    return (pred and pred != "@PT") or bool(re.match(r"!?P[0-6],", args))


def base(op):
    return op.split(".")[0]


def kind(ins):
    """Opcode family; never-executed fillers (@!PT, emitted next to LDGSTS) are named apart: they still issue."""
    return base(ins[2]) + ("@!PT" if ins[1] == "@!PT" else "")


def hot_path(code, head, latch, copies):
    """Instructions on the chosen path through [head, latch] (addresses), inner back edges dropped."""
    idx = {a: i for i, (a, *_ ) in enumerate(code)}
    lo, hi = idx[head], idx[latch]
    leaders = {lo}
    for i in range(lo, hi + 1):
        t = branch_target(code[i])
        if t is not None or base(code[i][2]) == "EXIT":
            if i + 1 <= hi:
                leaders.add(i + 1)
            if t is not None and t in idx and lo <= idx[t] <= hi:
                leaders.add(idx[t])
    starts = sorted(leaders)
    blocks = {s: (s, (starts[k + 1] if k + 1 < len(starts) else hi + 1)) for k, s in enumerate(starts)}
    succ = {}
    for s, (b, e) in blocks.items():
        last = code[e - 1]
        t = branch_target(last)
        out = []
        if t is not None:
            if t in idx and lo <= idx[t] <= hi and idx[t] > e - 1:
                out.append(idx[t])
            if is_conditional(last) and e <= hi:
                out.append(e)
        elif base(last[2]) == "EXIT":
            if is_conditional(last) and e <= hi:
                out.append(e)
        elif e <= hi:
            out.append(e)
        succ[s] = out
    # Shortest path (in instructions) from the head to the latch that issues at least `copies` LDGSTS (predicated
    # ones count: they issue).
    inf = float("inf")
    cost = {(lo, 0): 0}
    prev = {}
    for s in starts:
        b, e = blocks[s]
        w = sum(1 for i in range(b, e) if base(code[i][2]) != "NOP")
        n = sum(1 for i in range(b, e) if base(code[i][2]) == "LDGSTS")
        for c in range(copies + 1):
            if cost.get((s, c), inf) == inf:
                continue
            cn = min(c + n, copies)
            for t in succ[s]:
                if cost[(s, c)] + w < cost.get((t, cn), inf):
                    cost[(t, cn)], prev[(t, cn)] = cost[(s, c)] + w, (s, c)
    end = max(s for s in starts if blocks[s][0] <= hi)
    b, e = blocks[end]
    n_end = sum(1 for i in range(b, e) if base(code[i][2]) == "LDGSTS")
    done = [c for c in range(copies + 1) if (end, c) in cost and min(c + n_end, copies) == copies]
    if not done:
        return None
    path, k = [], min(((end, c) for c in done), key=lambda x: cost[x])
    while True:
        path.append(k[0])
        if k == (lo, 0):
            break
        k = prev[k]
    return [code[i] for s in reversed(path) for i in range(*blocks[s])]


def loops(code):
    """Outermost backward-branch ranges that hold a tensor-core mma, with the inner ones inside each."""
    back = []
    for ins in code:
        t = branch_target(ins)
        if t is not None and t <= ins[0]:
            back.append((t, ins[0]))
    mma = [a for a, _, op, _ in code if base(op) in ("HMMA", "IMMA", "QMMA")]
    outer = [r for r in back if any(r[0] <= a <= r[1] for a in mma)
             and not any(o != r and o[0] <= r[0] and r[1] <= o[1] for o in back)]
    return [(r, [o for o in back if o != r and r[0] <= o[0] and o[1] <= r[1]]) for r in sorted(set(outer))]


def resources(cubin, cuobjdump):
    out = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True, check=True).stdout
    res, cur = {}, None
    for line in out.splitlines():
        m = re.search(r"Function (\S+):", line)
        if m:
            cur = m.group(1)
        m = re.search(r"REG:(\d+) STACK:(\d+)", line)
        if m and cur:
            res[cur] = (int(m.group(1)), int(m.group(2)))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("genomes", nargs="*", default=DEFAULT)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--top", type=int, default=24, help="opcodes listed per kernel")
    ap.add_argument("--templates", default=os.path.join(ROOT, "tasks", "attention_fp8"),
                    help="directory holding attention_fp8.cu (e.g. an older revision, to compare)")
    ap.add_argument("--sass-dir", help="also write each kernel's SASS and each loop's hot path here")
    a = ap.parse_args()
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "i.cu"), os.path.join(tmp, "i.cubin")
        with open(src, "w") as f:
            f.write('#include "attention_fp8.cu"\n')
            for g in a.genomes:
                f.write(f"template __global__ void evo_attn_fwd<{g}>(const evo_attn_params);\n")
        cp = subprocess.run([nvcc, f"-arch={a.arch}", "-std=c++17", "-I", a.templates, "-I",
                             os.path.join(ROOT, "templates"), "-cubin",
                             "-Xptxas=-v", src, "-o", cubin], capture_output=True, text=True)
        if cp.returncode:
            sys.exit(cp.stderr)
        spills = {}
        for m in re.finditer(r"Function properties for (\S+)\n\s+(\d+) bytes stack frame, (\d+) bytes spill stores, "
                             r"(\d+) bytes spill loads", cp.stderr):
            spills[m.group(1)] = (int(m.group(3)), int(m.group(4)))
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=True).stdout
        res = resources(cubin, cuobjdump)
    funcs = parse(sass)
    for g in a.genomes:
        args = [int(x) for x in g.split(",")]
        mangled = "_Z12evo_attn_fwdILi" + "ELi".join(str(x) for x in args) + "EEv15evo_attn_params"
        code = funcs.get(mangled)
        if code is None:
            print(f"{g}: kernel not found in the SASS")
            continue
        d, tile_n, threads = args[0], args[3], args[4] * args[5] * 32
        copies = -(-2 * tile_n * d // 16 // threads)  # K and V chunks of one tile, thread 0's share
        reg, stack = res.get(mangled, (-1, -1))
        st, ld = spills.get(mangled, (-1, -1))
        print(f"<{g}> {a.arch}: {reg} registers, stack {stack} B, spill stores {st} B, loads {ld} B, "
              f"{sum(1 for c in code if base(c[2]) != 'NOP')} instructions")
        if a.sass_dir:
            os.makedirs(a.sass_dir, exist_ok=True)
            with open(os.path.join(a.sass_dir, g.replace(",", "_") + ".sass"), "w") as f:
                for addr, pred, op, args_ in code:
                    f.write(f"{addr:6x}  {pred:6} {op} {args_}\n")
        for (head, latch), inner in loops(code):
            path = hot_path(code, head, latch, copies)
            if path is None:
                print(f"  loop {head:#x}..{latch:#x}: no path issues {copies} cp.async copies or more")
                continue
            if a.sass_dir:
                with open(os.path.join(a.sass_dir, g.replace(",", "_") + f".loop{head:x}.sass"), "w") as f:
                    for addr, pred, op, args_ in path:
                        f.write(f"{addr:6x}  {pred:6} {op} {args_}\n")
            mix = collections.Counter(kind(ins) for ins in path if base(ins[2]) != "NOP")
            mma = sum(mix[k] for k in ("HMMA", "IMMA", "QMMA"))
            total = sum(mix.values())
            body = sum(1 for c in code if head <= c[0] <= latch and base(c[2]) != "NOP")
            print(f"  loop {head:#x}..{latch:#x}: body {body}, hot path {total} = mma {mma} + other {total - mma}")
            for ih, il in inner:
                n = sum(1 for c in code if ih <= c[0] <= il and base(c[2]) != "NOP")
                on = any(ih <= c[0] <= il for c in path)
                print(f"    inner loop {ih:#x}..{il:#x}: {n} instructions per iteration{'' if on else ' (off path)'}")
            print("    " + " ".join(f"{k} {v}" for k, v in mix.most_common(a.top)))


if __name__ == "__main__":
    main()
