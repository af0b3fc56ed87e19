#!/usr/bin/env python3
"""compare_strategies.py — GA vs random vs seeds only on one config at equal evaluation budgets, on the GPU.

For seed 1, 2, ... (until --seeds, or while the next seed, as long as the seeds so far took on average, ends
within --budget-s seconds) it runs
`evo run --strategy S --seed N` for every strategy S, each into a database of its own (no reuse, no earlier
elites), all on evo's one compile cache ($EVO_CACHE, else ~/.cache/evo), so a genome compiles once. Then it re-times, --retimes
times, every run's pick (its best measured genome within the common budget) together with the baseline and the
config's seeds, in one generation each (`--strategy seeds --generations 1`: all timed against the same baseline
measurement), and prints a markdown summary: per strategy the median over seeds of the best measured fitness and
of the pick's re-timed fitness, the share of correct evaluations, and how often the pick beat the best seed beyond
the re-timing noise. "seeds only" is the baseline and the config's seeds, the first evaluations of a `seeds` run.

    python3 tools/bench/compare_strategies.py [--config configs/default.yaml] [--strategies seeds,ga,random]
        [--seeds 8] [--budget-s 210] [--population 16] [--generations 4] [--retimes 3] [--work DIR] [--out F]
        [--replay DB]     (CI: evaluate by replay instead of on the GPU; the re-timings then repeat the recording)

A strategy NAME@KEY=VALUE+KEY=VALUE runs NAME with those evolution settings (ga@local_rate=0: the GA before
local children).
"""
import argparse
import math
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

from search_efficiency import with_settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def config_genomes(text):
    """(baseline, [seeds]) of a config's text: its `baseline:` line and the quoted items under `seeds:`."""
    m = re.search(r'^baseline:\s*"([^"]+)"', text, re.M)
    seeds, inside = [], False
    for line in text.split("\n"):
        if re.match(r"seeds:\s*(#.*)?$", line):
            inside = True
            continue
        if inside:
            g = re.match(r'\s+-\s*"([^"]+)"', line)
            if g:
                seeds.append(g.group(1))
            elif line.strip() and not line.lstrip().startswith("#"):
                inside = False
    return m.group(1) if m else None, seeds


def with_seeds(text, seeds):
    """The config text with its `seeds:` list replaced by seeds."""
    out, inside = [], False
    for line in text.split("\n"):
        if re.match(r"seeds:\s*(#.*)?$", line):
            inside = True
            continue
        if inside and (re.match(r"\s+-\s*\"", line) or not line.strip() or re.match(r"\s+#", line)):
            continue
        inside = False
        out.append(line)
    return "\n".join(out).rstrip("\n") + "\nseeds:\n" + "".join('  - "%s"\n' % g for g in seeds)


def evaluations(db):
    """[(genome, verdict, fitness)] of a run's database in the order they were stored."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    rows = con.execute("SELECT c.genome, e.verdict, e.fitness FROM evaluations e JOIN candidates c "
                       "ON c.id = e.candidate_id ORDER BY e.id").fetchall()
    con.close()
    return rows


def run_gpu(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    row = con.execute("SELECT gpu FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    con.close()
    return row[0]


def canonical(genome, stored):
    """The stored (canonical) text of a config genome: a config may leave out knobs with one value, or reorder."""
    items = set(genome.split(","))
    for g in stored:
        if items <= set(g.split(",")):
            return g
    return genome


def best_of(rows):
    ok = [(f, g) for g, v, f in rows if v == "OK" and f is not None]
    return max(ok) if ok else (float("nan"), None)


def strategy_config(a, text, strategy):
    """(strategy name, config path) for NAME or NAME@KEY=VALUE+KEY=VALUE (evolution settings changed)."""
    name, _, rest = strategy.partition("@")
    if not rest:
        return name, a.config
    path = os.path.join(a.work, "config-%s.yaml" % re.sub(r"\W", "_", strategy))
    with open(path, "w") as f:
        f.write(with_settings(text, [tuple(kv.split("=", 1)) for kv in rest.split("+") if kv]))
    return name, path


def evo_run(a, config, strategy, seed, population, generations, db, log):
    if os.path.exists(db):
        os.remove(db)
    cmd = [a.evo, "run", "--config", config, "--strategy", strategy, "--seed", str(seed), "--population",
           str(population), "--generations", str(generations), "--db", db]
    if a.replay:
        cmd += ["--replay", a.replay]
    t0 = time.time()
    with open(log, "a") as f:
        f.write("$ %s\n" % " ".join(cmd))
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit("evo run failed (exit %d): %s; see %s" % (rc, " ".join(cmd), log))
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--evo", default=os.path.join(ROOT, "build", "evo"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "default.yaml"))
    ap.add_argument("--strategies", default="seeds,ga,random")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--budget-s", type=float, default=210.0)
    ap.add_argument("--population", type=int, default=16)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--retimes", type=int, default=3)
    ap.add_argument("--work", default="/tmp/evo-strategies")
    ap.add_argument("--out")
    ap.add_argument("--replay")
    a = ap.parse_args()
    strategies = a.strategies.split(",")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    log = os.path.join(a.work, "runs.log")
    text = open(a.config).read()
    baseline, seeds = config_genomes(text)
    t0 = time.time()
    runs = {}  # (strategy, seed) -> rows
    walls = {}
    done = 0
    for seed in range(1, a.seeds + 1):
        elapsed = time.time() - t0
        if seed > 1 and elapsed + elapsed / (seed - 1) > a.budget_s:  # the next seed would end past the budget
            break
        for s in strategies:
            db = os.path.join(a.work, "run-%s-%d.db" % (re.sub(r"\W", "_", s), seed))
            name, config = strategy_config(a, text, s)
            walls[(s, seed)] = evo_run(a, config, name, seed, a.population, a.generations, db, log)
            runs[(s, seed)] = evaluations(db)
        done = seed
    search_s = time.time() - t0
    stored = {g for rows in runs.values() for g, _, _ in rows}
    baseline = canonical(baseline, stored)
    seeds = [canonical(g, stored) for g in seeds]
    budget = min(len(r) for r in runs.values())
    picks = {k: best_of(r[:budget]) for k, r in runs.items()}
    only = {}  # seed -> (measured fitness, genome) of the best of the baseline and the seeds, as the seeds run saw it
    if "seeds" in strategies:
        for seed in range(1, done + 1):
            starts = set([baseline] + seeds)
            only[seed] = best_of([r for r in runs[("seeds", seed)] if r[0] in starts])

    # Re-time the picks with the baseline and the seeds, each time in one generation against one baseline timing.
    retime = [g for g in seeds if g != baseline]
    for f, g in list(picks.values()) + list(only.values()):
        if g and g != baseline and g not in retime:
            retime.append(g)
    cfg = os.path.join(a.work, "retime.yaml")
    with open(cfg, "w") as f:
        f.write(with_seeds(text, retime))
    re_fit = {g: [] for g in retime + [baseline]}
    t1 = time.time()
    for r in range(a.retimes if retime else 0):
        db = os.path.join(a.work, "retime-%d.db" % (r + 1))
        evo_run(a, cfg, "seeds", 1, len(retime) + 1, 1, db, log)
        for g, v, f in evaluations(db):
            if g in re_fit and v in ("OK", "REGRESSED") and f is not None:
                re_fit[g].append(f)
    retime_s = time.time() - t1
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    noise = [statistics.stdev(v) for v in re_fit.values() if len(v) >= 2]
    sd = statistics.median(noise) if noise else float("nan")
    best_seed = max([(mean(re_fit[g]), g) for g in seeds + [baseline] if re_fit.get(g)] or [(float("nan"), "-")])

    gpu = run_gpu(os.path.join(a.work, "run-%s-1.db" % re.sub(r"\W", "_", strategies[0])))
    out = []
    p = out.append
    p("## GA vs random vs seeds only (`tools/bench/compare_strategies.py`, %s)\n" % time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                               time.gmtime()))
    p("Config `%s` on %s; %d seeds x {%s}, population %d, %d generations (%s); every run compared at the "
      "same budget of %d evaluations (the smallest run's). Search %.0f s, re-timing %.0f s (%d x %d genomes)." %
      (os.path.relpath(a.config, ROOT), gpu, done, ", ".join(strategies), a.population, a.generations,
       "replay of " + a.replay if a.replay else "one compile cache", budget, search_s, retime_s, a.retimes,
       len(retime) + 1))
    p("")
    p("Re-timing noise (median over genomes of the standard deviation of a genome's fitness over the %d "
      "re-timings): %.2f %%. Best seed when re-timed: %s at %.4f." % (a.retimes, 100 * sd, best_seed[1][:60] + "...",
                                                                      best_seed[0]))
    p("")
    p("| strategy | evaluations | best measured (median) | its re-timed fitness (median) | OK share | "
      "pick beats the best seed by > 2 sd (re-timed) |")
    p("|---|---:|---:|---:|---:|---:|")

    def row(name, n, found, share):
        meas = [f for f, g in found if g]
        ret = [mean(re_fit[g]) for f, g in found if g]
        beats = sum(1 for r in ret if r - best_seed[0] > 2 * sd)
        med = lambda v: "%.4f" % statistics.median(v) if v else "-"
        return "| %s | %d | %s | %s | %s | %d / %d |" % (name, n, med(meas), med(ret), share, beats, len(ret))
    if only:
        p(row("seeds only (baseline + %d seeds)" % len(seeds), len(seeds) + 1, list(only.values()), "-"))
    for s in strategies:
        rows = [runs[(s, seed)][:budget] for seed in range(1, done + 1)]
        share = statistics.median(sum(1 for _, v, _ in r if v == "OK") / len(r) for r in rows)
        p(row(s, budget, [picks[(s, seed)] for seed in range(1, done + 1)], "%.2f" % share))
    p("")
    p("Per seed (measured / re-timed fitness of the pick; wall s):")
    p("")
    p("| seed | " + " | ".join(strategies) + " |")
    p("|---:|" + "---:|" * len(strategies))
    for seed in range(1, done + 1):
        cells = []
        for s in strategies:
            f, g = picks[(s, seed)]
            cells.append("%.4f / %.4f; %.0f s" % (f, mean(re_fit.get(g, [])), walls[(s, seed)]) if g else "-")
        p("| %d | " % seed + " | ".join(cells) + " |")
    p("")
    p("Re-timed genomes (fitness: mean and sd over the re-timings; picked by: strategy/seed):")
    p("")
    p("| genome | re-timed | sd | picked by |")
    p("|---|---:|---:|---|")
    by = {}
    for (s, seed), (f, g) in picks.items():
        by.setdefault(g, []).append("%s/%d" % (s, seed))
    for g in sorted(re_fit, key=lambda g: -mean(re_fit[g]) if re_fit[g] else 0):
        v = re_fit[g]
        tag = "baseline" if g == baseline else "seed %d" % (seeds.index(g) + 1) if g in seeds else ""
        p("| `%s` | %.4f | %.4f | %s |" % (g, mean(v), statistics.stdev(v) if len(v) > 1 else float("nan"),
                                           ", ".join(([tag] if tag else []) + sorted(by.get(g, [])))))
    text_out = "\n".join(out) + "\n"
    sys.stdout.write(text_out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text_out)


if __name__ == "__main__":
    main()
