#!/usr/bin/env python3
"""search_efficiency.py — how fast each search strategy finds the best kernel, measured by replay (no GPU).

Replays searches over a space whose every genome was evaluated on a GPU (tests/data/replay.db, recorded from
tests/data/replay-space.yaml) with `evo run --replay`, for each strategy and seed, and reports the median over seeds of
the fraction of the exhaustive best fitness reached after N evaluations.

    python3 tools/search_efficiency.py [--evo build/evo] [--seeds 10] [--population 16] [--generations 12]
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile


def exhaustive_best(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    row = con.execute("SELECT max(fitness) FROM evaluations WHERE verdict = 'OK'").fetchone()
    n = con.execute("SELECT count(*) FROM evaluations").fetchone()[0]
    return row[0], n


def trajectory(db):
    """Fitness of each new evaluation of the run, in order (reused ones excluded); NaN for failures."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT e.verdict, e.fitness FROM evaluations e ORDER BY e.id").fetchall()
    return [f if v == "OK" and f is not None else float("nan") for v, f in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--evo", default=os.path.join(root, "build", "evo"))
    ap.add_argument("--replay", default=os.path.join(root, "tests", "data", "replay.db"))
    ap.add_argument("--config", default=os.path.join(root, "tests", "data", "replay-space.yaml"))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--population", type=int, default=16)
    ap.add_argument("--generations", type=int, default=12)
    ap.add_argument("--strategies", default="ga,random")
    ap.add_argument("--budgets", default="16,32,48,64,96,128,192")
    a = ap.parse_args()

    best, n_space = exhaustive_best(a.replay)
    budgets = [int(b) for b in a.budgets.split(",")]
    print("replay database %s: %d evaluations, exhaustive best fitness %.4f" % (a.replay, n_space, best))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for strat in a.strategies.split(","):
            fracs = {b: [] for b in budgets}
            for seed in range(1, a.seeds + 1):
                db = os.path.join(tmp, "%s-%d.db" % (strat, seed))
                cmd = [a.evo, "run", "--replay", a.replay, "--config", a.config, "--strategy", strat, "--seed",
                       str(seed), "--population", str(a.population), "--generations", str(a.generations),
                       "--db", db, "--quiet", "--no-insights"]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit("evo run failed: %s\n%s" % (" ".join(cmd), r.stderr))
                traj = trajectory(db)
                for b in budgets:
                    seen = [f for f in traj[:b] if f == f]
                    fracs[b].append(max(seen) / best if seen else 0.0)
            results[strat] = {b: statistics.median(v) for b, v in fracs.items()}
    print()
    print("| evaluations | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for b in budgets:
        print("| %d | " % b + " | ".join("%.3f" % results[s][b] for s in results) + " |")
    print("\nmedian over %d seeds of (best fitness found so far) / (exhaustive best); population %d" %
          (a.seeds, a.population))


if __name__ == "__main__":
    main()
