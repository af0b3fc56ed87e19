#!/usr/bin/env python3
"""unseen_shapes.py — shapes no search timed: how close the dispatching export comes to a search of each shape.

For each shape (default: four outside configs/default.yaml: other batch x heads, odd lengths, head dim 128 causal):
  1. a per-shape search on a copy of DB: configs/default.yaml with that one timed shape (regression.min_shapes 1),
     --generations GENS --population POP, seeded from the store's per-shape elites (evo run --seed-elites);
  2. its best exported (evo export --best --accuracy CLASS; for fp8 also the exact class's best, which the fp8
     class admits: the faster of the two counts);
  3. tools/bench/compare_sdpa.py times the dispatching export of DB (evo export --dispatch --accuracy CLASS) and the
     per-shape best on that shape, each in its own process beside cuDNN's fp16 SDPA.
The ratio per shape is the per-shape best's time over the dispatching file's, each taken against the cuDNN of its
own process (a ratio of ratios: the two files are timed in two processes); >= 1 means the dispatch is as fast.
Table and geometric mean: OUT/unseen-shapes.md and .json.

  python3 tools/bench/unseen_shapes.py --db default.db [--class fp8] [--out DIR] [--gens 8] [--pop 16]
      [--shapes NAME:B,H,S,D[:c];...] [--evo build/evo] [--dry-run]

Needs a GPU, PyTorch and nvcc (compare_sdpa.py), and an evo build. --dry-run writes the configs and checks each
with `evo space` (no GPU).
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SHAPES = "b2h12s1024:2,12,1024,64;b8h8s777:8,8,777,64;b1h16s8kw:1,16,8192,128;b1h32s3000wc:1,32,3000,128:c"


def parse_shapes(text):
    out = []
    for spec in (x.strip() for x in text.split(";") if x.strip()):
        parts = spec.split(":")
        if len(parts) not in (2, 3) or not re.fullmatch(r"[A-Za-z0-9_]+", parts[0]) or \
                (len(parts) == 3 and parts[2] != "c"):
            raise ValueError(f"--shapes: '{spec}' is not NAME:B,H,S,D[:c]")
        b, h, s, d = (int(v) for v in parts[1].split(","))
        if min(b, h, s) < 1 or d not in (64, 128):
            raise ValueError(f"--shapes: '{spec}' needs positive B, H, S and D 64 or 128")
        out.append((parts[0], b, h, s, d, len(parts) == 3))
    return out


def shape_config(base, shape):
    """configs/default.yaml's text with one timed shape and a regression rule one shape can hold."""
    name, b, h, s, d, causal = shape
    one = (f"shapes:\n  - {{name: {name}, batch: {b}, heads: {h}, seq: {s}, head_dim: {d}"
           + (", causal: true" if causal else "") + "}\n")
    text, n = re.subn(r"(?ms)^shapes:\n.*?(?=^fitness:)", one, base)
    if n != 1:
        raise RuntimeError("configs/default.yaml: no top-level shapes: block followed by fitness:")
    text, n = re.subn(r"(?m)^regression:.*$", "regression: {slowdown: 1.10, min_shapes: 1}", text)
    if n != 1:
        raise RuntimeError("configs/default.yaml: no regression: line")
    return text


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    return p.returncode


_LIBS = {}


def library(cu, log):
    """cu built once into a shared library, as compare_sdpa.py builds it (its --lib then skips nvcc); None: failed."""
    if cu not in _LIBS:
        sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
        import compare_sdpa as cs
        lib = os.path.splitext(cu)[0] + ".so"
        rc = run(cs.build_command(cs.find_nvcc(None), cs.read_export(cu)["arch"], cu, lib), log)
        _LIBS[cu] = lib if rc == 0 else None
    return _LIBS[cu]


def timed_on(out_dir, cu, shape, log):
    """compare_sdpa.py on cu at shape: (graph median µs of the file, of cuDNN fp16), or None."""
    name, b, h, s, d, causal = shape
    os.makedirs(out_dir, exist_ok=True)
    lib = library(cu, log)
    if not lib:
        return None
    rc = run([sys.executable, os.path.join(ROOT, "tools", "bench", "compare_sdpa.py"), cu, "--lib", lib, "--presets",
              "mission", "--shapes", f"{b},{h},{s},{d}", "--causal", "on" if causal else "off", "--peers", "cudnn",
              "--out", out_dir], log)
    if rc != 0:
        return None
    for fn in os.listdir(out_dir):
        if not (fn.startswith("sdpa-") and fn.endswith(".json")):
            continue
        with open(os.path.join(out_dir, fn)) as f:
            rows = json.load(f).get("results", [])
        for r in rows:
            if r.get("preset") == f"{b}x{h}x{s}x{d}" and r.get("causal") == causal:
                ours = (r.get("ours") or {}).get("graph") or {}
                peer = (r.get("cudnn") or {}).get("graph") or {}
                if ours.get("median_us") and peer.get("median_us"):
                    return ours["median_us"], peer["median_us"]
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, help="the store of a default search (evo run with no --config)")
    p.add_argument("--class", dest="cls", default="fp8", choices=("exact", "fp8"))
    p.add_argument("--out", default="results")
    p.add_argument("--gens", type=int, default=8)
    p.add_argument("--pop", type=int, default=16)
    p.add_argument("--shapes", default=DEFAULT_SHAPES)
    p.add_argument("--evo", default=os.path.join(ROOT, "build", "evo"))
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args(argv)
    try:
        shapes = parse_shapes(a.shapes)
    except ValueError as e:
        p.error(str(e))
    if a.gens < 1 or a.pop < 2:
        p.error("--gens >= 1 and --pop >= 2")
    if not os.path.exists(a.db):
        p.error(f"--db {a.db}: no such file")
    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.out, "unseen-work")
    os.makedirs(work, exist_ok=True)
    log = os.path.join(a.out, "unseen-shapes.log")
    with open(os.path.join(ROOT, "configs", "default.yaml")) as f:
        base = f.read()
    configs = {}
    for sh in shapes:
        path = os.path.join(work, f"{sh[0]}.yaml")
        with open(path, "w") as f:
            f.write(shape_config(base, sh))
        configs[sh[0]] = path
        if run([a.evo, "space", "--config", path], log) != 0:
            print(f"unseen_shapes: evo space refuses {path} (see {log})")
            return 2
    if a.dry_run:
        print(f"unseen_shapes: {len(shapes)} configs written to {work} and checked; no GPU run (--dry-run)")
        return 0

    disp = os.path.join(work, "dispatch.cu")
    if run([a.evo, "export", "--dispatch", "--accuracy", a.cls, "--db", a.db, "-o", disp], log) != 0:
        print(f"unseen_shapes: evo export --dispatch failed (see {log})")
        return 1
    rows = []
    for sh in shapes:
        name = sh[0]
        db = os.path.join(work, f"{name}.db")
        shutil.copyfile(a.db, db)
        rc = run([a.evo, "run", "--config", configs[name], "--db", db, "--seed-elites", "--strategy", "ga",
                  "--generations", str(a.gens), "--population", str(a.pop)], log)
        row = {"shape": name, "problem": list(sh[1:5]), "causal": sh[5], "search_rc": rc}
        bests = {}
        for cls in (["fp8", "exact"] if a.cls == "fp8" else ["exact"]):
            cu = os.path.join(work, f"{name}-best-{cls}.cu")
            if rc == 0 and run([a.evo, "export", "--best", "--accuracy", cls, "--db", db, "-o", cu], log) == 0:
                t = timed_on(os.path.join(work, f"cmp-{name}-{cls}"), cu, sh, log)
                if t:
                    bests[cls] = t
        t_disp = timed_on(os.path.join(work, f"cmp-{name}-dispatch"), disp, sh, log)
        row["per_shape"] = {c: {"us": t[0], "cudnn_us": t[1]} for c, t in bests.items()}
        if t_disp:
            row["dispatch"] = {"us": t_disp[0], "cudnn_us": t_disp[1]}
        if t_disp and bests:
            # each file against the cuDNN of its own process; the best per-shape file is the fastest of them so
            rel_best = min(t[0] / t[1] for t in bests.values())
            row["ratio"] = rel_best / (t_disp[0] / t_disp[1])
        rows.append(row)
        print(f"{name} {sh[1:5]} causal={sh[5]}: " + (f"dispatch / per-shape best = {row['ratio']:.3f}"
                                                     if "ratio" in row else "not measured (see the log)"), flush=True)
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
    md = [f"## Shapes never searched: the dispatching export ({a.cls}) against a search of each",
          "", f"store {a.db}; per-shape searches {a.gens} x {a.pop}, --seed-elites; times: CUDA graph medians (µs), "
          "each file beside cuDNN fp16 in its own process", "",
          "| shape | causal | dispatch µs | its cuDNN µs | per-shape best µs (class) | its cuDNN µs | ratio |",
          "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        d = r.get("dispatch", {})
        best = min(r["per_shape"].items(), key=lambda kv: kv[1]["us"] / kv[1]["cudnn_us"]) if r["per_shape"] else None
        cells = [f"{r['shape']} {tuple(r['problem'])}", "yes" if r["causal"] else "no",
                 f"{d['us']:.1f}" if d else "-", f"{d['cudnn_us']:.1f}" if d else "-",
                 f"{best[1]['us']:.1f} ({best[0]})" if best else "-", f"{best[1]['cudnn_us']:.1f}" if best else "-",
                 f"{r['ratio']:.3f}" if "ratio" in r else "-"]
        md.append("| " + " | ".join(cells) + " |")
    md += ["", f"geometric mean {geo:.3f}; lowest {min(ratios):.3f}" if ratios else "no ratio measured"]
    with open(os.path.join(a.out, "unseen-shapes.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "unseen-shapes.json"), "w") as f:
        json.dump({"db": a.db, "class": a.cls, "gens": a.gens, "pop": a.pop, "rows": rows, "geomean": geo}, f,
                  indent=1)
    print("\n".join(md))
    return 0 if ratios and len(ratios) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
