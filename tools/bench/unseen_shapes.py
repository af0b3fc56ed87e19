#!/usr/bin/env python3
"""unseen_shapes.py — shapes no search timed: how close the dispatching export comes to a search of each shape.

For each shape (default: four outside configs/default.yaml: other batch x heads, odd lengths, head dim 128 causal):
  1. a per-shape search: configs/default.yaml with that one timed shape (regression.min_shapes 1), --generations
     GENS --population POP, seeded with the genomes the dispatching file was made of: with --db, on a copy of that
     store with evo run --seed-elites (its per-shape elites) and a config without seeds of its own (the default
     config's seeds would fill generation 0 before the store's elites); without it, on a new store whose config
     lists the dispatching file's entry genomes as seeds (the same genomes: a dispatching export holds its store's
     elites);
  2. its best exported (evo export --best --accuracy CLASS; for fp8 also the exact class's best, which the fp8
     class admits: the faster of the two counts);
  3. the dispatching file (--dispatch, else evo export --dispatch --accuracy CLASS of --db) and the per-shape bests
     timed in one process on the same e4m3 codes: CUDA graph of 20 calls (tools/bench/compare_sdpa.py's timer),
     the contenders alternated over ROUNDS rounds, the median of each one's round medians kept; every output is
     checked first (finite everywhere, rel-L2 against FP32 attention on the dequantized inputs below 0.1: the
     search's gates judged the kernel; this catches a wrong build or launch, which lands near 1).
The ratio per shape is the per-shape best's time over the dispatching file's; >= 1 means the dispatch is as fast.
Table and geometric mean: OUT/unseen-shapes.md and .json.

  python3 tools/bench/unseen_shapes.py (--db default.db | --dispatch FILE.cu | both) [--class fp8] [--out DIR]
      [--gens 8] [--pop 16] [--rounds 3] [--shapes NAME:B,H,S,D[:c];...] [--evo build/evo] [--dry-run]

Needs a GPU, PyTorch and nvcc, and an evo build. --dry-run writes the configs and checks each with `evo space`
(no GPU).
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import compare_sdpa as cs  # noqa: E402
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


def shape_config(base, shape, seeds=(), own_seeds=True):
    """configs/default.yaml's text with one timed shape, a regression rule one shape can hold and, first in its
    seeds: list, the genomes in seeds that it does not list yet; own_seeds False: only those (the config's own
    seeds dropped)."""
    name, b, h, s, d, causal = shape
    one = (f"shapes:\n  - {{name: {name}, batch: {b}, heads: {h}, seq: {s}, head_dim: {d}"
           + (", causal: true" if causal else "") + "}\n")
    text, n = re.subn(r"(?ms)^shapes:\n.*?(?=^fitness:)", one, base)
    if n != 1:
        raise RuntimeError("configs/default.yaml: no top-level shapes: block followed by fitness:")
    text, n = re.subn(r"(?m)^regression:.*$", "regression: {slowdown: 1.10, min_shapes: 1}", text)
    if n != 1:
        raise RuntimeError("configs/default.yaml: no regression: line")
    if not own_seeds:  # the seeds: block (its items and the comments among them) emptied
        text, n = re.subn(r"(?m)^seeds:\n(?:(?:  - .*|  #.*)\n)*", "seeds: []\n", text)
        if n != 1:
            raise RuntimeError("configs/default.yaml: no top-level seeds: list")
        text = text.replace("seeds: []\n", "seeds:\n", 1) if seeds else text
    extra = [g for g in dict.fromkeys(seeds) if f'"{g}"' not in text]
    if extra:
        text, n = re.subn(r"(?m)^seeds:\n", lambda m: m.group(0) + "".join(f'  - "{g}"\n' for g in extra), text)
        if n != 1:
            raise RuntimeError("configs/default.yaml: no top-level seeds: list")
    return text


def dispatch_genomes(cu):
    """The entry genomes of a dispatching export (its genome line: 'dispatch: G1 | G2 | ...')."""
    try:
        genome = cs.read_export(cu)["genome"]
    except cs.NotAnExport:
        genome = ""
    if not genome.startswith("dispatch: "):
        raise ValueError(f"{cu}: not a dispatching export (evo export --dispatch writes one)")
    return [g.strip() for g in genome[len("dispatch: "):].split("|") if g.strip()]


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    return p.returncode


_LIBS = {}  # .cu -> its library, or None where nvcc failed


def build_all(files, log, libdir, jobs=8):
    """Every .cu of files built into libdir as compare_sdpa.py builds it, nvcc runs in parallel, each file once per
    process (a library newer than its file, left by an earlier run into libdir, is kept); {cu: lib or None}."""
    from concurrent.futures import ThreadPoolExecutor

    def one(cu):
        lib = os.path.join(libdir, os.path.splitext(os.path.basename(cu))[0] + ".so")
        if os.path.exists(lib) and os.path.getmtime(lib) >= os.path.getmtime(cu):
            return cu, lib, None
        part = os.path.join(libdir, os.path.basename(cu) + ".log")
        rc = run(cs.build_command(cs.find_nvcc(None), cs.read_export(cu)["arch"], cu, lib), part)
        return cu, (lib if rc == 0 else None), part
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        for cu, lib, part in ex.map(one, sorted(set(files) - set(_LIBS))):
            _LIBS[cu] = lib
            if part is not None:
                with open(part) as f, open(log, "a") as g:
                    g.write(f.read())
                os.remove(part)
    return {cu: _LIBS[cu] for cu in files}


def geomean(rows):
    """(ratios of the rows that have one, their geometric mean or None)."""
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    return ratios, (math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None)


def time_cell(row, label, digits=1):
    """A contender's median from row["times"] for a table, "-" when it has none."""
    t = row["times"].get(label, {})
    return f"{t['us']:.{digits}f}" if "us" in t else "-"


def time_in_one_process(shape, files, rounds, log, libdir):
    """Every file in files (label -> .cu) on one shape, in this process, on the same e4m3 codes: each output checked,
    then CUDA-graph medians (compare_sdpa's timer) taken in ROUNDS alternated rounds; label -> {"us", "rounds_us",
    "rel_l2"} or {"error"}, and "cudnn" -> cuDNN fp16 SDPA's median for scale."""
    import types
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    name, b, h, s, d, causal = shape
    gen = torch.Generator(device="cuda").manual_seed(4242)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    scale = 1.0 / math.sqrt(d)
    (q8, qs), (k8, ks), (v8, vs) = (cs.quantize(torch, x, "e4m3") for x in (q, k, v))
    ref = cs.attention_fp32(torch, cs.dequantize(torch, q8, qs, "e4m3"), cs.dequantize(torch, k8, ks, "e4m3"),
                            cs.dequantize(torch, v8, vs, "e4m3"), causal, scale)
    timer = cs.Timer(torch, 10, 20)
    calls, res, outs = {}, {}, {}  # outs: each contender's output stays allocated while its calls may run
    for label, cu in files.items():
        try:
            kx = cs.read_export(cu)
            if kx["format"] != "e4m3" or d not in kx["head_dims"]:
                raise RuntimeError(f"{cu}: format {kx['format']}, head dims {kx['head_dims']}")
            lib = build_all([cu], log, libdir)[cu]
            if not lib:
                raise RuntimeError(f"{cu}: nvcc failed")
            o = outs[label] = torch.full_like(q, float("nan"))
            call = cs.ours_call(torch, cs.load_library(torch, kx, types.SimpleNamespace(lib=lib), None), q8, k8, v8,
                                qs, ks, vs, o, (b, h, s, d), causal, scale)
            call()
            torch.cuda.synchronize()
            err = cs.errors(torch, o, ref)["rel_l2"]
            if not bool(torch.isfinite(o).all()) or not err < 0.1:
                raise RuntimeError(f"output check failed (finite {bool(torch.isfinite(o).all())}, rel-L2 {err:.3e})")
            calls[label], res[label] = call, {"rel_l2": err, "rounds_us": []}
        except (RuntimeError, OSError, cs.NotAnExport) as e:
            res[label] = {"error": cs.first_line(e)}
    for _ in range(rounds):
        for label, call in calls.items():
            res[label]["rounds_us"].append(timer.graph(call)["median_us"])
    for label in calls:
        r = sorted(res[label]["rounds_us"])
        res[label]["us"] = r[len(r) // 2]
        res[label]["finite_after_timing"] = bool(torch.isfinite(outs[label]).all())
    try:
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            res["cudnn"] = {"us": timer.graph(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))[
                "median_us"]}
    except RuntimeError as e:
        res["cudnn"] = {"error": cs.first_line(e)}
    del q, k, v, q8, k8, v8, ref, outs, calls
    torch.cuda.empty_cache()
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", help="the store of a default search (evo run with no --config): its per-shape elites "
                                "seed the searches (--seed-elites) and, without --dispatch, its dispatching export "
                                "is the file under test")
    p.add_argument("--dispatch", help="the dispatching export under test (e.g. variants/attention_fp8-sm_90-"
                                      "dispatch-fp8.cu); without --db its entry genomes seed the searches")
    p.add_argument("--class", dest="cls", default="fp8", choices=("exact", "fp8"))
    p.add_argument("--out", default="results")
    p.add_argument("--gens", type=int, default=8)
    p.add_argument("--pop", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3, help="alternated timing rounds per contender (default 3)")
    p.add_argument("--shapes", default=DEFAULT_SHAPES)
    p.add_argument("--evo", default=os.path.join(ROOT, "build", "evo"))
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args(argv)
    try:
        shapes = parse_shapes(a.shapes)
    except ValueError as e:
        p.error(str(e))
    if a.gens < 1 or a.pop < 2 or a.rounds < 1:
        p.error("--gens >= 1, --pop >= 2 and --rounds >= 1")
    if not a.db and not a.dispatch:
        p.error("--db or --dispatch (or both)")
    for what, path in (("--db", a.db), ("--dispatch", a.dispatch)):
        if path and not os.path.exists(path):
            p.error(f"{what} {path}: no such file")
    seeds = []
    if a.dispatch and not a.db:
        try:
            seeds = dispatch_genomes(a.dispatch)
        except (OSError, ValueError) as e:
            p.error(f"--dispatch: {e}")
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
            f.write(shape_config(base, sh, seeds, own_seeds=not a.db))
        configs[sh[0]] = path
        if run([a.evo, "space", "--config", path], log) != 0:
            print(f"unseen_shapes: evo space refuses {path} (see {log})")
            return 2
    if a.dry_run:
        print(f"unseen_shapes: {len(shapes)} configs written to {work} and checked"
              + (f" ({len(seeds)} seeds from {a.dispatch})" if seeds else "") + "; no GPU run (--dry-run)")
        return 0

    disp = a.dispatch
    if not disp:
        disp = os.path.join(work, "dispatch.cu")
        if run([a.evo, "export", "--dispatch", "--accuracy", a.cls, "--db", a.db, "-o", disp], log) != 0:
            print(f"unseen_shapes: evo export --dispatch failed (see {log})")
            return 1
    rows = []
    for sh in shapes:  # every search first: the timing process then holds the GPU alone
        name = sh[0]
        db = os.path.join(work, f"{name}.db")
        if a.db:
            shutil.copyfile(a.db, db)
        elif os.path.exists(db):
            os.remove(db)
        t0 = time.time()
        rc = run([a.evo, "run", "--config", configs[name], "--db", db, "--strategy", "ga", "--generations",
                  str(a.gens), "--population", str(a.pop)] + (["--seed-elites"] if a.db else []), log)
        row = {"shape": name, "problem": list(sh[1:5]), "causal": sh[5], "search_rc": rc, "files": {}}
        for cls in (["fp8", "exact"] if a.cls == "fp8" else ["exact"]):
            cu = os.path.join(work, f"{name}-best-{cls}.cu")
            if rc == 0 and run([a.evo, "export", "--best", "--accuracy", cls, "--db", db, "-o", cu], log) == 0:
                row["files"][cls] = cu
        row["search_s"] = round(time.time() - t0, 1)
        print(f"{name}: search exit {rc} in {row['search_s']} s, bests exported: {', '.join(row['files']) or 'none'}",
              flush=True)
        rows.append(row)
    build_all([disp] + [cu for r in rows for cu in r["files"].values()], log, work)
    for row, sh in zip(rows, shapes):
        res = time_in_one_process(sh, {"dispatch": disp, **row["files"]}, a.rounds, log, work)
        row["times"] = res
        best = [(c, res[c]["us"]) for c in row["files"] if "us" in res.get(c, {})]
        if "us" in res["dispatch"] and best:
            row["best_class"], best_us = min(best, key=lambda x: x[1])
            row["ratio"] = best_us / res["dispatch"]["us"]
        print(f"{sh[0]} {sh[1:5]} causal={sh[5]}: " + (f"per-shape best / dispatch = {row['ratio']:.3f}"
              if "ratio" in row else f"not measured: {json.dumps(res)[:300]}"), flush=True)
    ratios, geo = geomean(rows)
    us = time_cell
    md = [f"## Shapes never searched: the dispatching export ({a.cls}) against a search of each", "",
          f"dispatching file {disp}; per-shape searches {a.gens} x {a.pop}, seeded "
          + ("from the store's per-shape elites (--seed-elites)" if a.db else "with the file's entry genomes")
          + f"; all contenders of a shape in one process, CUDA graph of 20 calls, median of {a.rounds} alternated "
          "rounds (µs)", "",
          "| shape | causal | dispatch µs | per-shape best µs (class) | ratio (best / dispatch) | cuDNN fp16 µs |",
          "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        cells = [f"{r['shape']} {tuple(r['problem'])}", "yes" if r["causal"] else "no", us(r, "dispatch"),
                 f"{us(r, r['best_class'])} ({r['best_class']})" if "best_class" in r else "-",
                 f"{r['ratio']:.3f}" if "ratio" in r else "-", us(r, "cudnn")]
        md.append("| " + " | ".join(cells) + " |")
    md += ["", f"geometric mean {geo:.3f}; lowest {min(ratios):.3f}" if ratios else "no ratio measured"]
    with open(os.path.join(a.out, "unseen-shapes.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "unseen-shapes.json"), "w") as f:
        json.dump({"db": a.db, "dispatch": disp, "class": a.cls, "gens": a.gens, "pop": a.pop, "rounds": a.rounds,
                   "rows": rows, "geomean": geo}, f, indent=1)
    print("\n".join(md))
    return 0 if ratios and len(ratios) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
