#!/usr/bin/env python3
"""islands_study.py — search quality of N islands against one island at the same total evaluations, by replay on CPU
ranks (no GPU): `mpirun -n N evo run --islands --replay` over tests/data/replay.db.

For each seed and N it runs one job and cuts it at a total evaluation budget E: the evaluations of every island, taken
generation by generation (the islands advance in step), up to E; the job's pick is the genome with the best measured
fitness among them, scored by its recorded fitness / the exhaustive best. One island (N = 1) is a plain run of the same
seed (a one-island job is exactly that run). Measured evaluations count whatever they are (a migrant measured again on
its new island counts; a result reused from the island's store does not occur: each island's store is new).

    python3 tools/bench/islands_study.py [--evo build/evo] [--islands 1,2,4,16] [--seeds 5] [--budgets 48,96,144]
        [--population 8] [--one-population 16] [--migrate-every 1] [--migrants 2] [--noise 0,2] [--out DIR]

--noise K    as tools/bench/search_efficiency.py: every island replays a copy of the recording whose speedups were measured
             again under the noise model (K x the standard error of each median), one copy per seed; the pick is made
             by the noisy values and scored by the recorded ones.
--check      the CI property: for every N and budget the mean over seeds of the islands' pick is >= one island's
             (exit 1 when not); prints the table only.
Writes DIR/islands-study.md (tables: mean and spread over seeds) and DIR/islands-study.json (every pick).
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from search_efficiency import exhaustive_best, noisy_copy, recorded, with_settings  # noqa: E402


def trajectory(dbs):
    """(genome, measured fitness or None) of every evaluation of a job, generation by generation, island by island."""
    rows = []
    for rank, db in enumerate(dbs):
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        for g, v, f, gen, eid in con.execute(
                "SELECT c.genome, e.verdict, e.fitness, e.generation, e.id FROM evaluations e JOIN candidates c ON "
                "c.id = e.candidate_id ORDER BY e.id"):
            rows.append((gen, rank, eid, g, f if v == "OK" else None))
        con.close()
    rows.sort()
    return [(g, f) for _, _, _, g, f in rows]


def pick(traj, budget, truth):
    ok = [(f, g) for g, f in traj[:budget] if f is not None]
    return truth[max(ok)[1]] if ok else 0.0


def run_job(a, n, seed, replay, config, work, generations, one_population=None):
    db = os.path.join(work, "n%d-s%d.db" % (n, seed))
    common = ["--replay", replay, "--config", config, "--seed", str(seed), "--strategy", "ga", "--quiet",
              "--generations", str(generations)]
    if n == 1:
        cmd = [a.evo, "run", "--db", db, "--population", str(one_population)] + common
        dbs = [db]
    else:
        cmd = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-n", str(n), a.evo, "run", "--islands",
               "--migrate-every", str(a.migrate_every), "--migrants", str(a.migrants), "--db", db, "--population",
               str(a.population)] + common
        dbs = ["%s.rank%d" % (db, r) for r in range(n)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("islands_study: %s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return trajectory(dbs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--evo", default=os.path.join(ROOT, "build", "evo"))
    ap.add_argument("--replay", default=os.path.join(ROOT, "tests", "data", "replay.db"))
    ap.add_argument("--config", default=os.path.join(ROOT, "tests", "data", "replay-space.yaml"))
    ap.add_argument("--islands", default="1,2,4,16")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budgets", default="48,96,144")
    ap.add_argument("--population", type=int, default=8, help="per island")
    ap.add_argument("--one-population", type=int, default=16, help="of the one island compared with")
    ap.add_argument("--elites", type=int, default=2)
    ap.add_argument("--migrate-every", type=int, default=1)
    ap.add_argument("--migrants", type=int, default=2)
    ap.add_argument("--noise", default="0,2")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "data"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-wide", action="store_true", help="leave out the one island as wide as the N islands")
    a = ap.parse_args()
    ns = [int(x) for x in a.islands.split(",")]
    budgets = [int(x) for x in a.budgets.split(",")]
    if 1 not in ns:
        ns = [1] + ns
    truth, reps = recorded(a.replay)
    best = exhaustive_best(a.replay)
    base = None
    for line in open(a.config):
        if line.startswith("baseline:"):
            base = line.split('"')[1]
    work = tempfile.mkdtemp(prefix="evo-islands-study-")
    text = with_settings(open(a.config).read(), [("elites", a.elites), ("stall_generations", 0),
                                                  ("local_rate", 0.5)])
    config = os.path.join(work, "config.yaml")
    open(config, "w").write(text)
    picks = {}  # (noise, n, budget) -> [pick per seed]
    try:
        for k in [float(x) for x in a.noise.split(",")]:
            for seed in range(1, a.seeds + 1):
                replay = a.replay
                if k > 0:
                    replay = os.path.join(work, "noisy-%g-%d.db" % (k, seed))
                    noisy_copy(a.replay, replay, k, random.Random(1000 * seed + int(10 * k)), reps, base)
                # (label, islands, population per island); "wide": one island as wide as the N islands together
                jobs = [("one", 1, a.one_population)] + [(n, n, a.population) for n in ns if n != 1] + [
                    ("wide%d" % n, 1, a.population * n) for n in ns if n != 1 and not a.no_wide]
                for label, n, pop in jobs:
                    per = (max(budgets) + n - 1) // n
                    gens = 2 + max(0, (per - pop + (pop - a.elites) - 1) // (pop - a.elites))
                    traj = run_job(a, n, seed, replay, config, work, gens, pop)
                    if len(traj) < max(budgets):
                        sys.exit("islands_study: %s seed %d made %d evaluations, fewer than %d" % (
                            label, seed, len(traj), max(budgets)))
                    for b in budgets:
                        picks.setdefault((k, label, b), []).append(pick(traj, b, truth) / best)
                    for f in os.listdir(work):
                        if f.startswith("n%d-s%d.db" % (n, seed)):
                            os.remove(os.path.join(work, f))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = ["Each cell: mean over %d seeds of the recorded fitness of the job's pick / the exhaustive best (%.4f), "
             "[min..max], after that many evaluations in total. Islands: population %d each, %d migrants every %d "
             "generation(s), elites %d; one island: population %d, or as wide as the N islands (%d x N)." % (
                 a.seeds, best, a.population, a.migrants, a.migrate_every, a.elites, a.one_population, a.population),
             ""]
    ok = True
    many = [n for n in ns if n != 1]
    cols = [("one", "1 island (%d)" % a.one_population)]
    for n in many:
        cols += [(n, "%d islands" % n)]
        if not a.no_wide and a.population * n != a.one_population:
            cols += [("wide%d" % n, "1 island (%d)" % (a.population * n))]
    for k in [float(x) for x in a.noise.split(",")]:
        lines.append("noise %s:" % ("none" if k == 0 else "%gx" % k))
        lines.append("")
        lines.append("| evaluations | " + " | ".join(c[1] for c in cols) + " |")
        lines.append("|---:|" + "---:|" * len(cols))
        for b in budgets:
            cells = []
            one = statistics.mean(picks[(k, "one", b)])
            for key, _ in cols:
                v = picks[(k, key, b)]
                m = statistics.mean(v)
                cells.append("%.4f [%.3f..%.3f]" % (m, min(v), max(v)))
                if key in many and m < one - 1e-12:
                    ok = False
            lines.append("| %d | %s |" % (b, " | ".join(cells)))
        lines.append("")
    print("\n".join(lines))
    if a.check:
        if not ok:
            print("islands_study: islands fell below one island somewhere above", file=sys.stderr)
        return 0 if ok else 1
    os.makedirs(a.out, exist_ok=True)
    open(os.path.join(a.out, "islands-study.md"), "w").write("\n".join(lines) + "\n")
    json.dump({"%g/%s/%d" % key: v for key, v in sorted(picks.items(), key=repr)},
              open(os.path.join(a.out, "islands-study.json"), "w"), indent=1)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
