#!/usr/bin/env python3
"""eval_walls.py — where a search's evaluation time goes, from its store.

Every evaluation stores its compile, check and timing seconds, and per timed shape the repetitions, the median of
the CUDA-event times and the wall time of that shape's timing (warm-up, L2 flushes, fresh inputs, the extra pass for
the interval, the sampled outputs' checks). Per timed shape this prints, over the evaluations that timed every
shape, the mean repetitions, the kernel time they add up to (repetitions x events median) and the wall time around
it; then the totals, and per generation the summed check and timing seconds.

  python3 tools/bench/eval_walls.py STORE.db [--run N]

Stores older than the wall times (no "wall_ms" in an evaluation's timing detail) print the repetitions only.
"""
import argparse
import json
import os
import sqlite3
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db")
    ap.add_argument("--run", type=int, default=0, help="run id (default: the last run)")
    a = ap.parse_args()
    if not os.path.isfile(a.db):  # a FIFO or a device would block sqlite's open; a missing file is not a store
        print(f"eval_walls.py: {a.db}: not a regular file (a store is an SQLite file)", file=sys.stderr)
        return 2
    try:
        con = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
        run = a.run or con.execute("SELECT max(id) FROM runs").fetchone()[0]
        rows = con.execute("SELECT generation, verdict, detail, check_s, time_s FROM evaluations WHERE run_id = ?",
                           (run,)).fetchall()
    except sqlite3.Error as e:
        print(f"eval_walls.py: {a.db}: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"eval_walls.py: {a.db}: run {run} has no evaluations", file=sys.stderr)
        return 2
    per_gen = {}
    shapes = None
    n_full = 0
    for gen, verdict, detail, check_s, time_s in rows:
        g = per_gen.setdefault(gen, [0, 0.0, 0.0])
        g[0] += 1
        g[1] += check_s or 0
        g[2] += time_s or 0
        try:
            t = json.loads(detail or "{}").get("timing") or {}
        except ValueError:
            continue
        reps, ev, wall = t.get("reps") or [], t.get("events_median_us") or [], t.get("wall_ms")
        if not reps or len(ev) != len(reps):
            continue
        if shapes is None:
            shapes = [[0, 0.0, 0.0, 0] for _ in reps]
        if len(reps) != len(shapes):
            continue  # stopped early (SLOW and the like): not every shape timed
        n_full += 1
        for i, r in enumerate(reps):
            shapes[i][0] += r
            shapes[i][1] += r * ev[i] / 1000.0
            if wall and len(wall) == len(reps):
                shapes[i][2] += wall[i]
                shapes[i][3] += 1
    print(f"run {run}: {len(rows)} evaluations, {n_full} timed on every shape")
    if shapes and n_full:
        print(f"{'shape':>5} {'reps':>7} {'kernel ms':>10} {'wall ms':>9} {'wall - kernel':>14}")
        tk = tw = 0.0
        for i, (r, k, w, nw) in enumerate(shapes):
            wm = w / nw if nw else float("nan")
            tk += k / n_full
            tw += wm if nw else 0
            print(f"{i:>5} {r / n_full:>7.1f} {k / n_full:>10.2f} {wm:>9.1f} {wm - k / n_full:>14.1f}")
        print(f"{'all':>5} {'':>7} {tk:>10.2f} {tw:>9.1f} {tw - tk:>14.1f}   (per evaluation)")
    print(f"{'gen':>5} {'evals':>6} {'check s':>8} {'time s':>8}")
    for gen in sorted(per_gen):
        n, c, t = per_gen[gen]
        print(f"{gen:>5} {n:>6} {c:>8.1f} {t:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
