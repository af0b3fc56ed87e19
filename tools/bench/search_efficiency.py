#!/usr/bin/env python3
"""search_efficiency.py — how well each search strategy does at equal evaluation budgets, measured by replay (no GPU).

Replays searches over a space whose every genome was evaluated on a GPU (tests/data/replay.db, recorded from
tests/data/replay-space.yaml) with `evo run --replay`, for each strategy and seed, and reports the median over seeds
of the fitness of the kernel the search would pick after N evaluations, divided by the exhaustive best.

    python3 tools/bench/search_efficiency.py [--evo build/evo] [--seeds 10] [--population 16] [--generations 14]
        [--strategies ga,ga@local_rate=0,random,seeds] [--with-seeds configs/default.yaml | --draw-seeds 4]
        [--noise 0,2]

A strategy NAME@KEY=VALUE+KEY=VALUE... runs NAME with those evolution.KEY settings added to the config.

--with-seeds C   the search starts from C's seed genomes, projected onto the replay space (a knob the space fixes
                 takes the space's value), as a config with those seeds would; the "seeds only" column is the best
                 of the baseline and those seeds (what evaluating them and stopping gives).
--draw-seeds N   each search seed starts from N seeds drawn at random (seeded) from the recorded genomes within
                 1-7 % below the exhaustive best: good hand-written seeds that are not the best; the "seeds only"
                 column is then the median over searches of the best of the baseline and the drawn seeds.
--noise K        each seed's search runs on a copy of the recording whose per-shape times are measured again, in
                 effect: each speedup is multiplied by exp(K * sigma * z), z ~ N(0, 1), sigma the standard error of
                 the candidate's and the baseline's median time, from their recorded p10-p90 spread and the
                 repetitions (sigma = 1.2533 * (p90 - p10) / 2.5631 / median / sqrt(reps), the two combined as a
                 root sum of squares). The search picks by these noisy fitnesses; the table shows the recorded
                 fitness of its pick, so a lucky measurement that misleads the search shows as a loss.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def recorded(db):
    """genome -> recorded fitness (OK and REGRESSED, scored by geometric mean), and the recording's repetitions."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    fit = {g: f for g, f in con.execute(
        "SELECT c.genome, e.fitness FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
        "WHERE e.verdict IN ('OK', 'REGRESSED') AND e.fitness IS NOT NULL")}
    text = con.execute("SELECT config_text FROM runs ORDER BY id LIMIT 1").fetchone()[0] or ""
    m = re.search(r"repetitions:\s*(\d+)", text)
    return fit, int(m.group(1)) if m else 20


def exhaustive_best(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    return con.execute("SELECT max(fitness) FROM evaluations WHERE verdict = 'OK'").fetchone()[0]


def space_domains(evo, config):
    r = subprocess.run([evo, "space", "--config", config, "--json"], capture_output=True, text=True, check=True)
    return {k["name"]: [str(v) for v in k["domain"]] for k in json.loads(r.stdout)["knobs"]}


def config_genomes(path):
    """The baseline and seed genomes of a config (its `baseline:` line and the quoted items under `seeds:`)."""
    base, seeds, in_seeds = None, [], False
    for line in open(path):
        m = re.match(r'baseline:\s*"([^"]+)"', line)
        if m:
            base = m.group(1)
        if re.match(r"seeds:\s*(#.*)?$", line):
            in_seeds = True
            continue
        if in_seeds:
            m = re.match(r'\s+-\s*"([^"]+)"', line)
            if m:
                seeds.append(m.group(1))
            elif line.strip() and not line.lstrip().startswith("#"):
                in_seeds = False
    return base, seeds


def project(genome, domains):
    """genome onto the space: a knob with one value takes it; None when another knob's value is outside its domain."""
    kv = dict(p.split("=") for p in genome.split(","))
    out = []
    for k, dom in domains.items():
        v = kv.get(k, dom[0])
        if v not in dom:
            if len(dom) != 1:
                return None
            v = dom[0]
        out.append("%s=%s" % (k, v))
    return ",".join(out)


def noisy_copy(src, dst, k, rng, reps, baseline):
    """dst: src with every timed shape measured again under the noise model (see --noise)."""
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    c = 1.2533 / 2.5631 / math.sqrt(reps)
    spread = lambda med, p10, p90: c * (p90 - p10) / med if med and p10 and p90 else 0.0
    base = {pos: spread(m, a, b) for pos, m, a, b in con.execute(
        "SELECT r.position, r.median_us, r.p10_us, r.p90_us FROM results r JOIN evaluations e ON "
        "e.id = r.evaluation_id JOIN candidates c ON c.id = e.candidate_id WHERE c.genome = ?", (baseline,))}
    rows = con.execute("SELECT evaluation_id, position, median_us, p10_us, p90_us, baseline_us, speedup FROM results "
                       "WHERE speedup > 0 ORDER BY evaluation_id, position").fetchall()
    for ev, pos, med, p10, p90, b, s in rows:
        sigma = math.hypot(spread(med, p10, p90), base.get(pos, 0.0))
        s2 = s * math.exp(k * sigma * rng.gauss(0.0, 1.0))
        con.execute("UPDATE results SET speedup = ?, median_us = ? WHERE evaluation_id = ? AND position = ?",
                    (s2, b / s2, ev, pos))
    con.commit()
    con.close()


def with_settings(text, settings):
    """Config text with evolution.KEY: VALUE set for each (KEY, VALUE): replaced where the `evolution` mapping (flow
    or block style) has the key, added where it has not."""
    if not settings:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"evolution:\s*\{(.*)\}\s*(#.*)?$", line)
        if m:
            items = [kv.strip() for kv in m.group(1).split(",") if kv.strip()]
            keys = [kv.split(":")[0].strip() for kv in items]
            for k, v in settings:
                if k in keys:
                    items[keys.index(k)] = "%s: %s" % (k, v)
                else:
                    items.append("%s: %s" % (k, v))
            lines[i] = "evolution: {%s}" % ", ".join(items)
            return "\n".join(lines)
        if re.match(r"evolution:\s*(#.*)?$", line):
            j = i + 1
            while j < len(lines) and (lines[j].startswith(" ") or not lines[j].strip()):
                j += 1
            for k, v in settings:
                at = [n for n in range(i + 1, j) if re.match(r"\s+%s:" % re.escape(k), lines[n])]
                if at:
                    lines[at[0]] = "  %s: %s" % (k, v)
                else:
                    lines.insert(i + 1, "  %s: %s" % (k, v))
                    j += 1
            return "\n".join(lines)
    return text + "\nevolution: {%s}\n" % ", ".join("%s: %s" % kv for kv in settings)


def picks(db):
    """(genome, measured fitness or None) of each new evaluation of the run, in order."""
    con = sqlite3.connect(db)
    return [(g, f if v == "OK" else None) for g, v, f in con.execute(
        "SELECT c.genome, e.verdict, e.fitness FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
        "ORDER BY e.id")]


def measured(db, genomes):
    """genome -> fitness as measured in db (geometric mean of its speedups), for the genomes given."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    out = {}
    for g in genomes:
        row = con.execute("SELECT exp(avg(ln(r.speedup))) FROM results r JOIN evaluations e ON e.id = r.evaluation_id "
                          "JOIN candidates c ON c.id = e.candidate_id WHERE c.genome = ? AND r.speedup > 0",
                          (g,)).fetchone()
        if row and row[0]:
            out[g] = row[0]
    return out


def pick_at(traj, budget, truth):
    """Recorded fitness of the genome with the best measured fitness among the first `budget` evaluations."""
    ok = [(f, g) for g, f in traj[:budget] if f is not None]
    return truth[max(ok)[1]] if ok else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--evo", default=os.path.join(ROOT, "build", "evo"))
    ap.add_argument("--replay", default=os.path.join(ROOT, "tests", "data", "replay.db"))  # replay-v1.db: the 2026-11-22 recording
    ap.add_argument("--config", default=os.path.join(ROOT, "tests", "data", "replay-space.yaml"))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--population", type=int, default=16)
    ap.add_argument("--generations", type=int, default=14)
    ap.add_argument("--strategies", default="ga,random,seeds")
    ap.add_argument("--budgets", default="16,32,48,64,96,128,192")
    ap.add_argument("--with-seeds", metavar="CONFIG")
    ap.add_argument("--draw-seeds", type=int, default=0, metavar="N")
    ap.add_argument("--noise", default="0")
    ap.add_argument("--extra", default="", help="more `evo run` arguments, space-separated")
    a = ap.parse_args()

    best = exhaustive_best(a.replay)
    truth, reps = recorded(a.replay)
    domains = space_domains(a.evo, a.config)
    baseline, _ = config_genomes(a.config)
    baseline = project(baseline, domains)
    seeds = []
    if a.with_seeds:
        for g in config_genomes(a.with_seeds)[1]:
            p = project(g, domains)
            if p is None:
                sys.exit("%s: seed %s has a value outside %s's space" % (a.with_seeds, g, a.config))
            if p not in seeds and p != baseline:
                seeds.append(p)
    budgets = [int(b) for b in a.budgets.split(",")]
    strategies = a.strategies.split(",")
    pool = sorted(g for g, f in truth.items() if 0.93 * best < f < 0.99 * best and g != baseline)
    print("replay database %s: %d measured genomes, exhaustive best fitness %.4f; population %d, %d seeds%s" %
          (a.replay, len(truth), best, a.population, a.seeds, a.extra and ", " + a.extra))
    if a.draw_seeds:
        print("seeds: %d per search, drawn from the %d recorded genomes within 1-7 %% below the best" %
              (a.draw_seeds, len(pool)))
    if seeds:
        print("seed genomes (projected from %s): %s; the best of them and the baseline is %.3f of the exhaustive "
              "best" % (a.with_seeds, ", ".join("%.4f" % truth.get(g, float("nan")) for g in seeds),
                        max(truth.get(g, 0.0) for g in [baseline] + seeds) / best))
    def config_for(tmp, strat, seeds):
        name, _, rest = strat.partition("@")
        text = with_settings(open(a.config).read(), [tuple(kv.split("=", 1)) for kv in rest.split("+") if kv])
        if seeds:
            text += "\nseeds:\n" + "".join('  - "%s"\n' % g for g in seeds)
        path = os.path.join(tmp, "space-%s.yaml" % re.sub(r"\W", "_", strat))
        with open(path, "w") as f:
            f.write(text)
        return name, path

    with tempfile.TemporaryDirectory() as tmp:
        for k in [float(x) for x in a.noise.split(",")]:
            fracs = {(s, b): [] for s in strategies for b in budgets}
            ok_share = {s: [] for s in strategies}
            only = []
            for seed in range(1, a.seeds + 1):
                if a.draw_seeds:
                    seeds = random.Random(1000 + seed).sample(pool, a.draw_seeds)
                replay = a.replay
                if k > 0:
                    replay = os.path.join(tmp, "noisy.db")
                    noisy_copy(a.replay, replay, k, random.Random(seed), reps, baseline)
                if seeds:  # seeds only: the baseline and the seeds measured, the best measured one picked
                    m = measured(replay, [baseline] + seeds)
                    only.append(truth[max((f, g) for g, f in m.items())[1]] / best)
                for strat in strategies:
                    name, config = config_for(tmp, strat, seeds)
                    db = os.path.join(tmp, "run.db")
                    if os.path.exists(db):
                        os.remove(db)
                    cmd = [a.evo, "run", "--replay", replay, "--config", config, "--strategy", name, "--seed",
                           str(seed), "--population", str(a.population), "--generations", str(a.generations),
                           "--db", db, "--quiet", "--no-insights"] + a.extra.split()
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    if r.returncode != 0:
                        sys.exit("evo run failed: %s\n%s" % (" ".join(cmd), r.stderr))
                    traj = picks(db)
                    ok_share[strat].append(sum(f is not None for _, f in traj[:budgets[-1]]) /
                                           max(1, len(traj[:budgets[-1]])))
                    for b in budgets:
                        fracs[(strat, b)].append(pick_at(traj, b, truth) / best)
            print("\nnoise %gx: median over %d seeds of the recorded fitness of the search's pick (the best measured"
                  " so far) / exhaustive best" % (k, a.seeds))
            head = strategies + (["seeds only (%d evaluations)" % (len(seeds) + 1)] if only else [])
            print("\n| evaluations | " + " | ".join(head) + " |")
            print("|---:|" + "---:|" * len(head))
            for b in budgets:
                row = ["%.3f" % statistics.median(fracs[(s, b)]) for s in strategies]
                print("| %d | " % b + " | ".join(row + (["%.3f" % statistics.median(only)] if only else [])) + " |")
            print("| OK share of the first %d | " % budgets[-1] + " | ".join(
                "%.2f" % statistics.median(ok_share[s]) for s in strategies) + (" | |" if only else " |"))


if __name__ == "__main__":
    main()
