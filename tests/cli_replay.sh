# cli_replay.sh — the search strategies on a space recorded on a GPU (tests/data/replay.db: every genome of
# tests/data/replay-space.yaml evaluated on an H200), through `evo run --replay` (no GPU): runs complete and store
# their results, a seed gives the same search twice, GA finds the exhaustive best, insights and resume work; the
# "seeds" strategy (seeds only, hill climbing) and tools/bench/compare_strategies.py end to end. The replay source is only
# read (nothing beside it, never the output), genomes it lacks are NOT_RECORDED, and a bad replay source is refused
# before anything is created.
# Run: bash tests/cli_replay.sh build/evo .   (ctest runs it as cli_replay)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp/tmp # a replay makes no work directory: checked at the end
mkdir "$tmp/tmp"
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
R="$SRC/tests/data/replay.db"
C="$SRC/tests/data/replay-space.yaml"
before=$(sha256sum "$R" | cut -d' ' -f1)
# Empty -wal / -shm files an older evo left beside the recording are nothing; this test must not make new ones.
for f in "$R-wal" "$R-shm"; do [ -e "$f" ] && [ ! -s "$f" ] && rm -f "$f"; done

run() { "$EVO" run --replay "$R" --config "$C" --db "$tmp/$1.db" --quiet "${@:2}" >"$tmp/$1.out" 2>&1; }
run ga1 --strategy ga --seed 1 --population 16 --generations 8 || fail "ga run: $(cat "$tmp/ga1.out")"
run ga1b --strategy ga --seed 1 --population 16 --generations 8 || fail "ga rerun"
run ga2 --strategy ga --seed 2 --population 16 --generations 8 || fail "ga seed 2"
run rnd --strategy random --seed 1 --population 16 --generations 8 || fail "random run"
run noins --strategy ga --seed 1 --population 16 --generations 8 --no-insights || fail "ga without insights"
# a time budget shorter than the start stops the run after its first generation, never before it
"$EVO" run --replay "$R" --config "$C" --db "$tmp/budget.db" --seed 1 --population 8 --generations 3 \
  --time-budget 0.001 >"$tmp/budget.out" 2>&1 || fail "budget run: $(cat "$tmp/budget.out")"
grep -q "^time budget of 0.001 s reached" "$tmp/budget.out" || fail "budget run: $(cat "$tmp/budget.out")"
q() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"; }
[ "$(q "$tmp/budget.db" "SELECT count(*) || ' ' || max(generation) FROM generations")" = "1 0" ] ||
  fail "budget run: generations $(q "$tmp/budget.db" "SELECT count(*) FROM generations"), want 1"
[ "$(q "$tmp/budget.db" "SELECT count(*) FROM evaluations WHERE generation = 0")" = 8 ] || fail "budget run: evaluations"

python3 - "$tmp" "$R" <<'PY' || fail "replayed searches"
import sqlite3, sys, math
tmp, replay = sys.argv[1], sys.argv[2]
best = sqlite3.connect(replay).execute("SELECT max(fitness) FROM evaluations WHERE verdict='OK'").fetchone()[0]
def seq(name):
    c = sqlite3.connect("%s/%s.db" % (tmp, name))
    return c.execute("SELECT c.genome, e.verdict, e.fitness, e.generation FROM evaluations e JOIN candidates c "
                     "ON c.id = e.candidate_id ORDER BY e.id").fetchall()
ga1, ga1b, ga2, rnd = seq("ga1"), seq("ga1b"), seq("ga2"), seq("rnd")
assert ga1 == ga1b, "the same seed gave a different search"
assert [g for g, *_ in ga1] != [g for g, *_ in ga2], "different seeds gave the same search"
for name, s in (("ga1", ga1), ("rnd", rnd)):
    genomes = [g for g, *_ in s]
    assert len(genomes) == len(set(genomes)), name + ": a genome was evaluated twice"
    assert max(gen for *_, gen in s) == 7, name + ": not 8 generations"
found = max(f for _, v, f, _ in ga1 if v == "OK")
assert found == best, "GA did not reach the exhaustive best %.4f (found %.4f)" % (best, found)
# A generation's best counts the elites carried into it: with no re-timing (a replay makes none) it never falls.
for name in ("ga1", "ga2"):
    rows = sqlite3.connect("%s/%s.db" % (tmp, name)).execute(
        "SELECT generation, best_fitness FROM generations ORDER BY generation").fetchall()
    for (g0, b0), (g1, b1) in zip(rows, rows[1:]):
        assert b0 is None or (b1 is not None and b1 >= b0), "%s: best fell from %s (gen %d) to %s (gen %d)" % (
            name, b0, g0, b1, g1)
print("replay: exhaustive best %.4f, GA found it; %d / %d evaluations" % (best, len(ga1), len(rnd)))
PY
# fitness: worst scores the same recorded measurements by their worst shape: every OK evaluation's fitness is its
# smallest per-shape speedup, the elites are ranked by it, and the run's shape-set key differs from the
# geometric-mean runs' (their evaluations are neither reused nor ranked together).
{ echo "fitness: worst"; cat "$C"; } >"$tmp/worst.yaml"
"$EVO" run --replay "$R" --config "$tmp/worst.yaml" --db "$tmp/worst.db" --quiet --seed 1 --population 16 \
  --generations 8 >"$tmp/worst.out" 2>&1 || fail "worst-shape run: $(cat "$tmp/worst.out")"
"$EVO" elite --show --db "$tmp/worst.db" >"$tmp/worst.elite" 2>&1
grep -q "^speedup: smallest over the shapes of baseline time" "$tmp/worst.elite" || fail "elite: $(head -3 "$tmp/worst.elite")"
"$EVO" elite --show --json --top 3 --db "$tmp/worst.db" >"$tmp/worst.json" 2>&1 || fail "elite --json: $(cat "$tmp/worst.json")"
python3 - "$tmp" "$R" <<'PY' || fail "worst-shape fitness"
import json, sqlite3, sys
tmp, replay = sys.argv[1], sys.argv[2]
def scored(db):
    return {g: (v, f, w) for g, v, f, w in sqlite3.connect(db).execute(
        "SELECT c.genome, e.verdict, e.fitness, (SELECT min(speedup) FROM results r WHERE r.evaluation_id = e.id) "
        "FROM evaluations e JOIN candidates c ON c.id = e.candidate_id")}
rec, got = scored(replay), scored(tmp + "/worst.db")
ok = [g for g, (v, f, w) in got.items() if v == "OK"]
assert len(ok) >= 10, "only %d OK evaluations" % len(ok)
for g in ok:
    v, f, w = got[g]
    assert abs(f - w) < 1e-12, "%s: fitness %.6f, worst shape %.6f" % (g, f, w)
    assert f < rec[g][1], "%s: worst shape %.6f not below the recorded geometric mean %.6f" % (g, f, rec[g][1])
top = sorted((got[g][2] for g in ok), reverse=True)[:3]
elites = [e["fitness"] for e in json.load(open(tmp + "/worst.json"))]
assert all(abs(a - b) < 1e-9 for a, b in zip(elites, top)) and len(elites) == 3, "elites %s, want %s" % (elites, top)
ss = [sqlite3.connect(tmp + "/" + n + ".db").execute("SELECT shape_set FROM runs").fetchone()[0] for n in ("ga1", "worst")]
assert ss[0] != ss[1], "the worst-shape run has the geometric-mean runs' shape-set key"
print("replay, worst shape: %d OK evaluations scored by their worst shape; elites %s" % (len(ok), elites))
PY

# "seeds": the default config's seeds projected onto the replay space (it has no large-problem variant). One
# generation as large as the baseline and the seeds evaluates exactly those ("seeds only"); then hill climbing.
{ cat "$C"; echo "seeds:"; sed -n 's/^  - "\(TILE_M=.*\)"$/  - "\1"/p' "$SRC/configs/family0.yaml" |
    sed 's/BIG_TILE_M=[0-9]*/BIG_TILE_M=0/'; } >"$tmp/seeds.yaml"
run only --config "$tmp/seeds.yaml" --strategy seeds --seed 1 --population 5 --generations 1 ||
  fail "seeds only: $(cat "$tmp/only.out")"
run hill --strategy seeds --seed 1 --population 16 --generations 4 || fail "seeds strategy: $(cat "$tmp/hill.out")"
run local0 --config "$tmp/seeds.yaml" --strategy ga --seed 1 --population 16 --generations 2 ||
  fail "ga on seeds: $(cat "$tmp/local0.out")"
python3 - "$tmp" "$R" "$SRC/configs/family0.yaml" <<'PY' || fail "seeds strategy by replay"
import re, sqlite3, sys
tmp, replay, default = sys.argv[1:4]
best = sqlite3.connect(replay).execute("SELECT max(fitness) FROM evaluations WHERE verdict='OK'").fetchone()[0]
def seq(name):
    c = sqlite3.connect("%s/%s.db" % (tmp, name))
    return c.execute("SELECT c.genome, e.verdict, e.fitness FROM evaluations e JOIN candidates c "
                     "ON c.id = e.candidate_id ORDER BY e.id").fetchall()
seeds = [re.sub(r"BIG_TILE_M=\d+", "BIG_TILE_M=0", g) for g in re.findall(r'^  - "(TILE_M=[^"]+)"', open(default).read(), re.M)]
only = seq("only")
assert len(seeds) == 4 and len(only) == 5, "seeds only: %d evaluations, %d seeds" % (len(only), len(seeds))
assert [g for g, *_ in only][1:] == seeds, "seeds only: not the baseline and the 4 seeds in order"
assert only[0][0].startswith("TILE_M=64,TILE_N=64,WARPS_M=4"), "seeds only: the baseline first"
rec = dict(sqlite3.connect(replay).execute("SELECT c.genome, e.fitness FROM evaluations e JOIN candidates c "
                                           "ON c.id = e.candidate_id WHERE e.verdict IN ('OK', 'REGRESSED')"))
assert max(f for _, v, f in only if v == "OK") == max(rec[g] for g in seeds), "seeds only: not the best seed"
open(tmp + "/seeds-best", "w").write("%.4f" % max(rec[g] for g in seeds))
hill = seq("hill")
assert len(hill) == 64 and len({g for g, *_ in hill}) == 64, "hill climbing: 64 distinct evaluations"
at = next(i for i, (g, v, f) in enumerate(hill) if v == "OK" and f == best)
assert at < 32, "hill climbing from the baseline reached the exhaustive best only at evaluation %d" % (at + 1)
ops = dict(sqlite3.connect(tmp + "/hill.db").execute("SELECT operator, count(*) FROM lineage GROUP BY operator"))
# the baseline has 10 neighbours in this space: generation 0 is the baseline, those 10 and 5 random genomes
assert set(ops) == {"neighbour"} and ops["neighbour"] == 64 - 1 - 5, "hill climbing lineage: %s" % ops
ops = dict(sqlite3.connect(tmp + "/local0.db").execute("SELECT operator, count(*) FROM lineage GROUP BY operator"))
assert ops.get("neighbour", 0) >= 6, "ga with local_rate 0.5: neighbours of the seeds in generation 0: %s" % ops
print("replay, seeds: seeds only = baseline + 4 seeds; hill climbing at the exhaustive best after %d evaluations; "
      "ga operators %s" % (at + 1, ops))
PY
# The GPU comparison (tools/bench/compare_strategies.py, tools/gpu_ci.sh strategies) runs end to end by replay.
python3 "$SRC/tools/bench/compare_strategies.py" --evo "$EVO" --config "$tmp/seeds.yaml" --replay "$R" --seeds 2 \
  --strategies seeds,ga,ga@local_rate=0,random --work "$tmp/cmp" --out "$tmp/cmp.md" >/dev/null 2>"$tmp/cmp.err" ||
  fail "compare_strategies: $(cat "$tmp/cmp.err")"
# by replay a re-timing repeats the recording: each row's re-timed fitness is its measured one
sb=$(cat "$tmp/seeds-best")
grep -qE "^\| ga@local_rate=0 \| 55 \| (1\.[0-9]{4}) \| \1 \| " "$tmp/cmp.md" || fail "compare_strategies: ga@local_rate=0 row"
grep -q "^evolution: {strategy: random, population: 216, generations: 1, local_rate: 0}$" \
  "$tmp/cmp/config-ga_local_rate_0.yaml" || fail "compare_strategies: local_rate not set in the config"
grep -q "^| seeds only (baseline + 4 seeds) | 5 | $sb | $sb | - | 0 / 2 |$" "$tmp/cmp.md" ||
  fail "compare_strategies: seeds only row: $(grep 'seeds only' "$tmp/cmp.md")"
grep -qE "^\| ga \| 55 \| (1\.[0-9]{4}) \| \1 \| " "$tmp/cmp.md" || fail "compare_strategies: ga row: $(grep '^| ga' "$tmp/cmp.md")"
grep -qE "^\| random \| 55 \| [0-9]\.[0-9]{4} \|" "$tmp/cmp.md" || fail "compare_strategies: random row"

after=$(sha256sum "$R" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "the replay database was modified"

[ ! -e "$R-wal" ] && [ ! -e "$R-shm" ] || fail "replays left $(ls "$R"-*) beside the recording"

# Genomes the recording lacks (a config whose timed shapes differ: none of its results apply) are NOT_RECORDED, a
# verdict of their own: the console and evo history print '-' for a fitness there is none of, and insights leave
# them out. The default config (the issue's case) replays what it can.
sed 's/name: stress,  batch: 4/name: stress,  batch: 3/' "$C" >"$tmp/other.yaml"
"$EVO" run --replay "$R" --config "$tmp/other.yaml" --db "$tmp/nr.db" --seed 1 --population 8 --generations 2 \
  >"$tmp/nr.out" 2>&1 || fail "replay of nothing recorded: $(cat "$tmp/nr.out")"
grep -q "NOT_RECORDED 8  best - median -" "$tmp/nr.out" || fail "console: $(cat "$tmp/nr.out")"
grep -q "best fitness -;" "$tmp/nr.out" || fail "console summary: $(cat "$tmp/nr.out")"
! grep -qi nan "$tmp/nr.out" || fail "console prints nan: $(cat "$tmp/nr.out")"
"$EVO" history --db "$tmp/nr.db" >"$tmp/nr.hist" 2>&1
grep -qE "^   0 +- +- .*NOT_RECORDED 8$" "$tmp/nr.hist" || fail "history: $(cat "$tmp/nr.hist")"
"$EVO" insights --db "$tmp/nr.db" --config "$tmp/other.yaml" --json >"$tmp/nr.ins" 2>&1
python3 - "$tmp" <<'PY' || fail "NOT_RECORDED stored or counted wrong"
import json, sqlite3, sys
tmp = sys.argv[1]
c = sqlite3.connect(tmp + "/nr.db")
v = dict(c.execute("SELECT verdict, count(*) FROM evaluations GROUP BY verdict").fetchall())
assert v == {"NOT_RECORDED": 16}, v
assert c.execute("SELECT sum(n_not_recorded), sum(n_invalid) FROM generations").fetchone() == (16, 0)
ins = json.load(open(tmp + "/nr.ins"))
assert ins["evaluations"] == 0, ins["evaluations"]
assert all(x["n"] == 0 and x["failed"] == 0 for x in ins["values"])
print("replay: 16 NOT_RECORDED, none counted by insights")
PY
"$EVO" run --replay "$R" --config "$SRC/configs/family0.yaml" --db "$tmp/dflt.db" --seed 1 --population 10 \
  --generations 2 --strategy random >"$tmp/dflt.out" 2>&1 || fail "replay with the default config: $(cat "$tmp/dflt.out")"
grep -q "NOT_RECORDED" "$tmp/dflt.out" && ! grep -qi nan "$tmp/dflt.out" || fail "default config: $(cat "$tmp/dflt.out")"

# A console nobody reads any more (evo run ... | head, the reader gone): the run stops as on Ctrl-C, marked
# interrupted and resumable, where it used to die of SIGPIPE and stay "running".
python3 - "$EVO" "$R" "$C" "$tmp/pipe.db" <<'PY' || fail "stdout closed"
import os, sqlite3, subprocess, sys
evo, replay, cfg, db = sys.argv[1:5]
r, w = os.pipe()
os.close(r)  # the reader is gone before evo writes a line
p = subprocess.run([evo, "run", "--replay", replay, "--config", cfg, "--db", db, "--seed", "1", "--population", "16",
                    "--generations", "8"], stdout=w, stderr=subprocess.PIPE)  # SIGPIPE at its default in evo
os.close(w)
err = p.stderr.decode()
assert p.returncode == 1, "exit %d (%s)" % (p.returncode, err)
want = "evo: standard output was closed, so the run stopped: finished evaluations are stored; continue with evo run --resume 1"
assert want in err, err
state = sqlite3.connect(db).execute("SELECT state FROM runs WHERE id = 1").fetchone()[0]
assert state == "interrupted", state
p = subprocess.run([evo, "run", "--resume", "1", "--db", db, "--replay", replay], capture_output=True)
assert p.returncode == 0, p.stderr.decode()
assert sqlite3.connect(db).execute("SELECT state FROM runs WHERE id = 1").fetchone()[0] == "done"
PY

# --seed-elites: a second run's generation 0 measures the per-shape elites the first run stored (every shape's
# fastest of each class, then the next, evolution.elites deep, as far as the population has room), each once; on an
# empty store it adds none and says so; an --islands job refuses it (its islands' stores are new files).
"$EVO" run --replay "$R" --config "$C" --db "$tmp/se.db" --seed 1 --population 16 --generations 3 --strategy ga \
  >"$tmp/se1.out" 2>&1 || fail "seed-elites: first run: $(cat "$tmp/se1.out")"
# the second run times another shape set (no stress): the recording has none of it, so every genome it measures is
# stored NOT_RECORDED, which lists generation 0 in full (a result of the same shape set would be reused instead)
grep -v "name: stress" "$C" >"$tmp/se-shapes.yaml"
"$EVO" run --replay "$R" --config "$tmp/se-shapes.yaml" --db "$tmp/se.db" --seed 4 --population 24 --generations 1 \
  --strategy ga --seed-elites >"$tmp/se2.out" 2>&1 || fail "seed-elites: second run: $(cat "$tmp/se2.out")"
grep -q "^seeded from the store: [1-9][0-9]* genomes\? (per-shape elites of earlier runs, 3 deep)$" "$tmp/se2.out" ||
  fail "seed-elites: no summary line: $(cat "$tmp/se2.out")"
python3 - "$tmp/se.db" "$tmp/se2.out" <<'PY' || fail "seed-elites: generation 0 of run 2 lacks run 1's per-shape winners"
import re, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
# run 1's fastest OK candidate on each shape (per class), from the per-shape results
rows = c.execute("""SELECT e.accuracy, r.shape, c.genome, r.median_us FROM results r
                    JOIN evaluations e ON e.id = r.evaluation_id JOIN candidates c ON c.id = e.candidate_id
                    WHERE e.run_id = 1 AND e.verdict = 'OK'""").fetchall()
best = {}
for acc, shape, genome, med in rows:
    k = (acc, shape)
    if k not in best or med < best[k][0] or (med == best[k][0] and genome < best[k][1]):
        best[k] = (med, genome)
winners = {g for _, g in best.values()}
gen0 = {g for (g,) in c.execute("""SELECT c.genome FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
                                    WHERE e.run_id = 2 AND e.generation = 0""")}
assert winners, "run 1 stored no per-shape result"
missing = winners - gen0
assert not missing, f"not measured in generation 0 of run 2: {sorted(missing)}"
n = int(re.search(r"seeded from the store: (\d+)", open(sys.argv[2]).read()).group(1))
assert n >= 1, n
PY
"$EVO" run --replay "$R" --config "$C" --db "$tmp/se0.db" --seed 4 --population 8 --generations 1 --seed-elites \
  >"$tmp/se0.out" 2>&1 || fail "seed-elites on an empty store: $(cat "$tmp/se0.out")"
grep -qx "seeded from the store: 0 genomes (per-shape elites of earlier runs, 3 deep; none stored)" "$tmp/se0.out" ||
  fail "seed-elites on an empty store: $(cat "$tmp/se0.out")"
"$EVO" run --islands --seed-elites --replay "$R" --config "$C" --db "$tmp/se3.db" >"$tmp/se3.out" 2>&1
[ $? = 2 ] && grep -q "^evo: run: --seed-elites reads the run's own store" "$tmp/se3.out" && [ ! -e "$tmp/se3.db" ] ||
  fail "seed-elites with --islands: $(cat "$tmp/se3.out")"

# tools/bench/unseen_shapes.py --dry-run: one config per shape never searched, made from configs/default.yaml (one
# timed shape, a regression rule one shape can hold) and accepted by evo space; a bad shape is a usage error.
python3 "$SRC/tools/bench/unseen_shapes.py" --db "$R" --out "$tmp/unseen" --evo "$EVO" --dry-run >"$tmp/u.out" 2>&1 ||
  fail "unseen_shapes --dry-run: $(cat "$tmp/u.out")"
grep -qx "unseen_shapes: 4 configs written to $tmp/unseen/unseen-work and checked; no GPU run (--dry-run)" "$tmp/u.out" ||
  fail "unseen_shapes --dry-run: $(cat "$tmp/u.out")"
u=$tmp/unseen/unseen-work/b1h32s3000wc.yaml
[ "$(grep -c "^  - {name: " "$u")" = 1 ] && grep -qx "  - {name: b1h32s3000wc, batch: 1, heads: 32, seq: 3000, head_dim: 128, causal: true}" "$u" &&
  grep -qx "regression: {slowdown: 1.10, min_shapes: 1}" "$u" || fail "unseen_shapes: the config $u"
# with a store its per-shape elites seed the searches (--seed-elites): the config's own seeds would fill generation 0
grep -qx "seeds: \[\]" "$u" && ! grep -q '^  - "' "$u" || fail "unseen_shapes --db: the config $u keeps seeds"
python3 "$SRC/tools/bench/unseen_shapes.py" --db "$R" --out "$tmp/unseen" --evo "$EVO" --dry-run --shapes "x:1,2,3,96" \
  >"$tmp/u.out" 2>&1
[ $? = 2 ] && grep -q "needs positive B, H, S and D 64 or 128" "$tmp/u.out" || fail "unseen_shapes bad shape: $(cat "$tmp/u.out")"
# Without a store, a dispatching file's entry genomes seed the searches: each one listed once, first in seeds:. The
# shipped file is the fixture (its entries change when it is refreshed: their count is read from its genome line).
disp=$SRC/variants/attention_fp8-sm_90-dispatch-fp8.cu
g=$(sed -n 's/^#define EVO_EXPORT_GENOME "dispatch: \(.*\)"$/\1/p' "$disp" | sed 's/ | /\n/g')
ng=$(printf '%s\n' "$g" | grep -c '^FAMILY=1,\|,FAMILY=0$')
[ "$ng" -ge 2 ] && [ "$ng" = "$(printf '%s\n' "$g" | wc -l)" ] || fail "unseen_shapes: the genomes of $disp: $g"
python3 "$SRC/tools/bench/unseen_shapes.py" --dispatch "$disp" --out "$tmp/unseen2" --evo "$EVO" --dry-run \
  --shapes "b3:3,8,700,64" >"$tmp/u.out" 2>&1 || fail "unseen_shapes --dispatch --dry-run: $(cat "$tmp/u.out")"
grep -qx "unseen_shapes: 1 configs written to $tmp/unseen2/unseen-work and checked ($ng seeds from $disp); no GPU run (--dry-run)" \
  "$tmp/u.out" || fail "unseen_shapes --dispatch --dry-run: $(cat "$tmp/u.out")"
u=$tmp/unseen2/unseen-work/b3.yaml
while IFS= read -r x; do
  [ "$(grep -cxF "  - \"$x\"" "$u")" = 1 ] || fail "unseen_shapes: seed $x listed $(grep -cxF "  - \"$x\"" "$u") times in $u"
done <<<"$g"
python3 "$SRC/tools/bench/unseen_shapes.py" --out "$tmp/unseen2" --evo "$EVO" --dry-run >"$tmp/u.out" 2>&1
[ $? = 2 ] && grep -q "error: --db or --dispatch (or both)" "$tmp/u.out" || fail "unseen_shapes without a source: $(cat "$tmp/u.out")"
python3 "$SRC/tools/bench/unseen_shapes.py" --dispatch "$R" --out "$tmp/unseen2" --evo "$EVO" --dry-run >"$tmp/u.out" 2>&1
[ $? = 2 ] && grep -q "not a dispatching export" "$tmp/u.out" || fail "unseen_shapes --dispatch on a store: $(cat "$tmp/u.out")"

# A bad replay source is refused (exit 2) before anything is created: no output database, no work directory.
# The replay source can never be the output, whatever name leads to it.
cd "$tmp" || exit 1
bad() { # bad NAME MESSAGE ARGS...
  "$EVO" run "${@:3}" >"$tmp/o" 2>&1
  local rc=$?
  [ $rc = 2 ] || fail "$1: exit $rc, want 2: $(cat "$tmp/o")"
  [ "$(head -1 "$tmp/o")" = "evo: $2" ] || fail "$1: first line '$(head -1 "$tmp/o")', want 'evo: $2'"
  [ ! -e population.db ] && [ -z "$(ls "$tmp/tmp")" ] || fail "$1: left $(ls population.db "$tmp/tmp" 2>&1)"
}
bad "missing replay db" "--replay $tmp/none.db: No such file or directory" --replay "$tmp/none.db" --config "$C"
bad "missing replay db, default config" "--replay none.db: No such file or directory" --replay none.db
head -c 4096 /dev/urandom >"$tmp/random.db"
bad "replay db not a database" "--replay: $tmp/random.db: not an evo database (file is not a database)" --replay "$tmp/random.db" --config "$C"
cp "$R" "$tmp/copy.db"
ln -s copy.db "$tmp/link.db"
mkdir "$tmp/sub"
before_copy=$(sha256sum "$tmp/copy.db" | cut -d' ' -f1)
bad "replay db as --db" "--replay copy.db and --db copy.db are the same file: a replay reads one database and writes another" --replay copy.db --db copy.db --config "$C"
bad "replay db as --db, other spelling" "--replay copy.db and --db sub/../copy.db are the same file: a replay reads one database and writes another" --replay copy.db --db sub/../copy.db --config "$C"
bad "replay db as --db, through a link" "--replay copy.db and --db link.db are the same file: a replay reads one database and writes another" --replay copy.db --db link.db --config "$C"
[ "$(sha256sum "$tmp/copy.db" | cut -d' ' -f1)" = "$before_copy" ] && [ ! -e "$tmp/copy.db-wal" ] || fail "the replay source was written"
cd - >/dev/null || exit 1
[ $fails = 0 ] && echo "cli_replay: all checks passed"
exit $((fails > 0))
