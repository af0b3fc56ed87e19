#!/usr/bin/env python3
"""dispatch_vs_single.py — a dispatching export against the single-genome exports of its store, shape by shape.

For every timed shape of a store's per-shape elites (evo elite --show --per-shape) it takes, of the class asked for and
of every stricter class it admits (fp8 admits exact), the fastest genome on that shape, and the top elite by the
geometric mean (evo export --best), exports each as a single-genome file (evo export --key), and times them beside
the dispatching file (--dispatch, else evo export --dispatch of the store) on that shape, in one process, on the same
e4m3 codes: each output checked first, then CUDA-graph medians over ROUNDS alternated rounds
(tools/bench/unseen_shapes.py's timing). Per shape: the fastest single-genome file's time over the dispatching
file's (>= 0.98: the dispatch is within 2 % of the fastest single-genome export, or faster).

  python3 tools/bench/dispatch_vs_single.py --db STORE [--dispatch FILE.cu] [--class fp8|exact] [--out DIR]
      [--rounds 3] [--evo build/evo] [--dry-run]

Needs a GPU, PyTorch and nvcc (not with --dry-run, which exports the files and prints the plan).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import unseen_shapes as us  # noqa: E402

STRICTER = {"exact": ["exact"], "fp8": ["fp8", "exact"]}


def per_shape_firsts(evo, db, cls):
    """[(shape tuple, key prefix of the fastest genome of cls there)] from evo elite --show --per-shape --json."""
    p = subprocess.run([evo, "elite", "--show", "--per-shape", "--top", "1", "--json", "--accuracy", cls, "--db", db],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"evo elite --per-shape --accuracy {cls}: {p.stdout.strip()} {p.stderr.strip()}")
    out = []
    for row in json.loads(p.stdout):
        f = row["fields"]
        if row["elites"]:
            out.append(((row["shape"].split("(")[0], f["batch"], f["heads"], f["seq"], f["head_dim"], f["causal"]),
                        row["elites"][0]["id"]))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, help="the store the dispatching export comes from")
    p.add_argument("--dispatch", help="the dispatching file (default: evo export --dispatch of --db)")
    p.add_argument("--class", dest="cls", default="fp8", choices=("exact", "fp8"))
    p.add_argument("--out", default="results")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--evo", default=os.path.join(ROOT, "build", "evo"))
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args(argv)
    if not os.path.exists(a.db):
        p.error(f"--db {a.db}: no such file")
    if a.dispatch and not os.path.exists(a.dispatch):
        p.error(f"--dispatch {a.dispatch}: no such file")
    if a.rounds < 1:
        p.error("--rounds >= 1")
    work = os.path.join(a.out, "dispatch-vs-single")
    os.makedirs(work, exist_ok=True)
    log = os.path.join(a.out, "dispatch-vs-single.log")
    disp = a.dispatch
    if not disp:
        disp = os.path.join(work, "dispatch.cu")
        if us.run([a.evo, "export", "--dispatch", "--accuracy", a.cls, "--db", a.db, "-o", disp], log) != 0:
            print(f"dispatch_vs_single: evo export --dispatch failed (see {log})")
            return 1
    shapes, keys, best_keys = {}, {}, []  # shape -> [labels]; label -> file; the --best exports' labels
    try:
        for cls in STRICTER[a.cls]:
            best = os.path.join(work, f"best-{cls}.cu")
            if us.run([a.evo, "export", "--best", "--accuracy", cls, "--db", a.db, "-o", best], log) == 0:
                label = us.cs.read_export(best)["key"][:8] or f"best-{cls}"
                keys[label] = best
                best_keys.append(label)
            for shape, key in per_shape_firsts(a.evo, a.db, cls):
                shapes.setdefault(shape, [])
                if key not in keys or not keys[key].endswith(f"{key}.cu"):
                    cu = os.path.join(work, f"{key}.cu")
                    if us.run([a.evo, "export", "--key", key, "--db", a.db, "-o", cu], log) != 0:
                        print(f"dispatch_vs_single: evo export --key {key} failed (see {log})")
                        return 1
                    keys[key] = cu
                if key not in shapes[shape]:
                    shapes[shape].append(key)
    except RuntimeError as e:
        print(f"dispatch_vs_single: {e}")
        return 1
    if not shapes:
        print(f"dispatch_vs_single: {a.db} has no per-shape elites of class {a.cls}")
        return 1
    for sh, ks in shapes.items():
        ks += [k for k in best_keys if k not in ks]
    plan = [f"{sh[0]} {sh[1:5]}{' causal' if sh[5] else ''}: dispatch vs {', '.join(ks)}" for sh, ks in shapes.items()]
    print("\n".join(plan))
    if a.dry_run:
        print(f"dispatch_vs_single: {len(keys)} single-genome files exported to {work}; no GPU run (--dry-run)")
        return 0

    us.build_all([disp] + list(keys.values()), log, work)
    rows = []
    for sh, ks in shapes.items():
        res = us.time_in_one_process(sh, {"dispatch": disp, **{k: keys[k] for k in ks}}, a.rounds, log, work)
        timed = [(k, res[k]["us"]) for k in ks if "us" in res.get(k, {})]
        row = {"shape": sh[0], "problem": list(sh[1:5]), "causal": sh[5], "contenders": ks, "times": res}
        if "us" in res["dispatch"] and timed:
            row["fastest_single"], t = min(timed, key=lambda x: x[1])
            row["ratio"] = t / res["dispatch"]["us"]
        rows.append(row)
        print(f"{sh[0]}: " + (f"fastest single {row['fastest_single']} / dispatch = {row['ratio']:.3f}" if "ratio" in row
                              else f"not measured: {json.dumps(res)[:300]}"), flush=True)
    ratios, geo = us.geomean(rows)

    def cell(r, label):
        return us.time_cell(r, label, 2)
    md = [f"## The dispatching export ({a.cls}) against the single-genome exports of its store", "",
          f"dispatching file {disp}; store {a.db}; all contenders of a shape in one process, CUDA graph of 20 calls, "
          f"median of {a.rounds} alternated rounds (µs)", "",
          "| shape | dispatch µs | fastest single-genome export µs (key) | ratio (single / dispatch) | others µs |",
          "|---|---:|---:|---:|---|"]
    for r in rows:
        others = ", ".join(f"{k} {cell(r, k)}" for k in r["contenders"] if k != r.get("fastest_single"))
        md.append("| " + " | ".join([
            f"{r['shape']} {tuple(r['problem'])}{' causal' if r['causal'] else ''}", cell(r, "dispatch"),
            f"{cell(r, r['fastest_single'])} ({r['fastest_single']})" if "fastest_single" in r else "-",
            f"{r['ratio']:.3f}" if "ratio" in r else "-", others or "-"]) + " |")
    md += ["", (f"geometric mean {geo:.3f}; lowest {min(ratios):.3f} (>= 0.98: within 2 %)" if ratios
                else "no ratio measured")]
    with open(os.path.join(a.out, "dispatch-vs-single.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "dispatch-vs-single.json"), "w") as f:
        json.dump({"db": a.db, "dispatch": disp, "class": a.cls, "rounds": a.rounds, "rows": rows, "geomean": geo},
                  f, indent=1)
    print("\n".join(md))
    return 0 if ratios and len(ratios) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
