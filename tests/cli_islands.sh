#!/usr/bin/env bash
# cli_islands.sh — `evo run --islands` over MPI on CPU ranks, by replay of tests/data/replay.db (no GPU): `mpirun -n 3`
# (oversubscribed, as root where CI runs) runs three islands with their own stores, migrates the best genomes along
# the ring at the generations it should, merges every island's store into --db on rank 0 with no row lost, and after
# one rank is killed with SIGKILL mid-run the same command with --resume continues every island to exactly the
# search an uninterrupted job makes. Also: one island is the plain run (seed rule), a rank that cannot start stops
# the job before any work, and resume refuses another job shape. Built without MPI, --islands exits 2 saying so.
# Run: bash tests/cli_islands.sh build/evo .   (ctest runs it as cli_islands; about 15 s)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
T=$(mktemp -d /tmp/evo-cli-islands-XXXXXX)
export TMPDIR=$T/tmp
mkdir "$T/tmp"
bg=()
cleanup() {
  for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
R=$SRC/tests/data/replay.db
C=$SRC/tests/data/replay-space.yaml
db() { python3 "$SRC/tests/evo_db.py" "$@"; }
cd "$T" || exit 1

# ---- built without MPI: --islands says so, exit 2, nothing created ----
if "$EVO" --version | grep -q "^MPI: none"; then
  "$EVO" run --islands --replay "$R" --config "$C" --db "$T/none.db" >"$T/out" 2>"$T/err"
  rc=$?
  [ "$rc" = 2 ] || fail "without MPI: exit $rc, want 2"
  grep -q "evo was built without MPI, so --islands is not available" "$T/err" || fail "without MPI: $(cat "$T/err")"
  [ -z "$(ls "$T" | grep -v '^tmp$\|^out$\|^err$')" ] || fail "without MPI: files created: $(ls "$T")"
  [ $fails -eq 0 ] && echo "ok: built without MPI, --islands exits 2 and says so"
  exit $((fails > 0))
fi
command -v mpirun >/dev/null || { echo "SKIP: evo has MPI but there is no mpirun on PATH"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
JOB=(--islands --migrate-every 2 --migrants 2 --replay "$R" --config "$C" --seed 7 --population 16 --generations 6
  --strategy ga)

# ---- one island (no mpirun: a singleton) is the plain run of the same seed ----
"$EVO" run "${JOB[@]}" --db "$T/one.db" --quiet >"$T/one.out" 2>&1 || fail "one island: $(cat "$T/one.out")"
"$EVO" run --replay "$R" --config "$C" --seed 7 --population 16 --generations 6 --strategy ga --db "$T/plain.db" \
  --quiet >"$T/plain.out" 2>&1 || fail "plain run: $(cat "$T/plain.out")"
db search "$T/one.db.rank0" 1 >"$T/one.search"
db search "$T/plain.db" 1 >"$T/plain.search"
[ -s "$T/one.search" ] && cmp -s "$T/one.search" "$T/plain.search" || fail "one island is not the plain run"

# ---- three islands: the reference job ----
"${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --db "$T/ref.db" >"$T/ref.out" 2>"$T/ref.err" || fail "job: $(cat "$T/ref.err")"
[ "$(grep -c '^gen ' "$T/ref.out")" = 6 ] || fail "rank 0 should print one line per generation: $(cat "$T/ref.out")"
grep -q "^islands: 3 on 1 host (.*); run 1 in every island's store (.*ref.db.rank<R>); 2 migrants every 2 generations" \
  "$T/ref.out" || fail "job header: $(head -3 "$T/ref.out")"
grep -q "^islands: 3 of 3 island stores merged into $T/ref.db" "$T/ref.out" || fail "merge line: $(tail -3 "$T/ref.out")"
python3 - "$T" "$T/ref.out" <<'PY' || fail "islands, migration, merged store"
import json, re, sqlite3, sys
tmp, console = sys.argv[1], open(sys.argv[2]).read()
N, K, M = 3, 2, 2
isl = [sqlite3.connect("%s/ref.db.rank%d" % (tmp, r)) for r in range(N)]
runs = [c.execute("SELECT id, seed, island, state FROM runs").fetchall() for c in isl]
for r, rows in enumerate(runs):
    assert len(rows) == 1 and rows[0][0] == 1 and rows[0][3] == "done", "island %d runs %s" % (r, rows)
    meta = json.loads(rows[0][2])
    assert meta == {"rank": r, "islands": N, "migrate_every": K, "migrants": M, "seed": 7, "pipelined": 1}, meta
assert runs[0][0][1] == 7, "island 0 keeps the job's seed"
assert len({rows[0][1] for rows in runs}) == N, "seeds from (seed, rank) are not distinct"
def evals(c):
    return c.execute("SELECT c.genome, e.generation, e.verdict, e.fitness FROM evaluations e JOIN candidates c ON "
                     "c.id = e.candidate_id ORDER BY e.id").fetchall()
ev = [evals(c) for c in isl]
# what an island bred itself in a generation (a migrant its own strategy also proposed counts as the strategy's)
bred = [{(g, x) for g, x in c.execute("SELECT l.generation, c.genome FROM lineage l JOIN candidates c ON "
                                       "c.id = l.child_id")} for c in isl]
# The migrants of generation g (a multiple of K, from 2 on) from island r: its best M OK results of generations
# before g - 1 (fitness, then genome), posted at the start of generation g - 1 so that no island waits for its
# neighbour's current generation; island r+1 measures each it has not evaluated before generation g, in generation g
# (as a migrant unless its own strategy proposed it there too).
received = {}
for g in range(max(K, 2), 6, K):
    for r in range(N):
        best = {}
        for genome, gen, v, f in ev[r]:
            if gen < g - 1 and v == "OK" and (genome not in best or f > best[genome]):
                best[genome] = f
        sent = [x for _, x in sorted((-f, genome) for genome, f in best.items())][:M]
        nxt = (r + 1) % N
        earlier = {genome for genome, gen, *_ in ev[nxt] if gen < g}
        now = {genome for genome, gen, *_ in ev[nxt] if gen == g}
        for genome in sent:
            assert genome in earlier or genome in now, "gen %d: island %d's migrant %s not measured on island %d" % (
                g, r, genome, nxt)
        received[g] = received.get(g, 0) + sum(genome not in earlier and (g, genome) not in bred[nxt]
                                               for genome in sent)
lines = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^gen +(\d+) .*?, (\d+) migrants\)", console, re.M)}
for g in range(6):
    assert lines.get(g) == received.get(g, 0), "gen %d: console says %s migrants, the stores %d" % (
        g, lines.get(g), received.get(g, 0))
assert sum(received.values()) > 0, "no migrant was measured"
# The merged store: every island's rows, none lost, none twice.
out = sqlite3.connect(tmp + "/ref.db")
assert out.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
assert out.execute("PRAGMA foreign_key_check").fetchall() == []
assert out.execute("SELECT count(*) FROM runs").fetchone()[0] == N
for t in ("evaluations", "results", "lineage", "generations"):
    want = sum(c.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for c in isl)
    got = out.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
    assert got == want, "merged %s: %d rows, the islands have %d" % (t, got, want)
keys = set()
for c in isl:
    keys |= {k for (k,) in c.execute("SELECT key FROM candidates")}
assert out.execute("SELECT count(*) FROM candidates").fetchone()[0] == len(keys), "merged candidates"
mine = sorted((g, gen, v, f) for c in isl for g, gen, v, f in evals(c))
theirs = sorted(evals(out))
assert mine == theirs, "the merged evaluations are not the islands' evaluations"
print("islands: %d migrants measured (by generation %s); merged %d evaluations, %d candidates" % (
    sum(received.values()), received, len(theirs), len(keys)))
PY
# merging the island stores again adds nothing (the job's merge is idempotent too)
"$EVO" merge "$T/ref.db" "$T"/ref.db.rank{0,1,2} >"$T/again.out" 2>&1 || fail "merge again: $(cat "$T/again.out")"
grep -q "^$T/ref.db: 0 runs, 0 candidates, 0 evaluations added" "$T/again.out" || fail "merge again: $(cat "$T/again.out")"

# ---- a rank SIGKILLed mid-run: the job ends, every store is whole, --resume continues every island ----
EVO_REPLAY_DELAY_MS=25 "${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --db "$T/kill.db" >"$T/kill.out" 2>&1 &
job=$!
bg+=("$job")
for _ in $(seq 300); do
  [ "$(db scalar "$T/kill.db.rank1" "SELECT count(*) FROM generations")" -ge 2 ] && break
  sleep 0.05
done
victim=
for p in $(pgrep -f "evo run --islands"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && grep -q "kill.db" "/proc/$p/cmdline" &&
    victim=$p
done
[ -n "$victim" ] || fail "kill: rank 1 not found"
gens_before=$(db scalar "$T/kill.db.rank1" "SELECT count(*) FROM generations")
kill -9 "$victim"
wait "$job"
rc=$?
[ "$rc" != 0 ] || fail "kill: the job exited 0"
[ "$gens_before" -lt 6 ] || fail "kill: rank 1 had finished already ($gens_before generations)"
for r in 0 1 2; do
  [ "$(db scalar "$T/kill.db.rank$r" "PRAGMA integrity_check")" = ok ] || fail "kill: island $r store damaged"
  [ "$(db scalar "$T/kill.db.rank$r" "SELECT state FROM runs WHERE id = 1")" = running ] || fail "kill: island $r not left running"
  db dump "$T/kill.db.rank$r" | grep -v -e '^runs|' -e '^leases|' >"$T/kill$r.before" # the resume takes each run's lease
  # a finished evaluation is whole: its per-shape results are there (one transaction)
  [ "$(db scalar "$T/kill.db.rank$r" "SELECT count(*) FROM evaluations e WHERE e.verdict IN ('OK','REGRESSED') AND NOT EXISTS (SELECT 1 FROM results r WHERE r.evaluation_id = e.id)")" = 0 ] ||
    fail "kill: island $r has an evaluation without its results"
done
"${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --db "$T/kill.db" --resume 1 >"$T/resume.out" 2>"$T/resume.err" ||
  fail "resume: $(cat "$T/resume.err")"
grep -q "^resuming run 1: generations 0 to" "$T/resume.out" || fail "resume: $(head -2 "$T/resume.out")"
for r in 0 1 2; do
  db dump "$T/kill.db.rank$r" >"$T/kill$r.after"
  ! grep -Fvxf "$T/kill$r.after" "$T/kill$r.before" >/dev/null || fail "resume: island $r lost or changed stored rows"
  db check_run "$T/kill.db.rank$r" 1 || fail "resume: island $r structure"
  db search "$T/kill.db.rank$r" 1 >"$T/kill$r.search"
  db search "$T/ref.db.rank$r" 1 >"$T/ref$r.search"
  cmp -s "$T/kill$r.search" "$T/ref$r.search" || fail "resume: island $r searched otherwise than without the kill"
done
for t in evaluations generations; do
  want=0
  for r in 0 1 2; do want=$((want + $(db scalar "$T/kill.db.rank$r" "SELECT count(*) FROM $t"))); done
  [ "$(db scalar "$T/kill.db" "SELECT count(*) FROM $t")" = "$want" ] || fail "resume: merged $t"
done
[ "$(db scalar "$T/kill.db" "PRAGMA integrity_check")" = ok ] || fail "resume: merged store damaged"
# resuming a finished job changes no island and merges nothing new
"${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --db "$T/kill.db" --resume 1 >"$T/again.out" 2>&1 || fail "resume of a done job"
grep -q "^run 1 is finished on every island; nothing to resume" "$T/again.out" || fail "resume of a done job: $(cat "$T/again.out")"

# ---- resume with another job shape, and options that go with --islands ----
"${MPIRUN[@]}" -n 2 "$EVO" run "${JOB[@]}" --db "$T/kill.db" --resume 1 >"$T/n2.out" 2>"$T/n2.err"
rc=$?
[ "$rc" = 2 ] || fail "resume with 2 ranks: exit $rc, want 2"
# either rank may say it first (mpirun stops the job at the first one that exits)
grep -qE "holds island ([01]) of a job of 3 islands, and this is rank \1 of 2: resume with mpirun -n 3" "$T/n2.err" ||
  fail "resume with 2 ranks: $(cat "$T/n2.err")"
"$EVO" run --replay "$R" --config "$C" --migrants 3 --db "$T/x.db" >"$T/out" 2>"$T/err"
[ $? = 2 ] && grep -q "\-\-migrate-every and --migrants go with --islands" "$T/err" || fail "--migrants alone: $(cat "$T/err")"

# resumes_as_ref NAME WHAT: the job of $T/NAME.db resumed (--resume 1) searches on every island as the reference job
resumes_as_ref() {
  "${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --db "$T/$1.db" --resume 1 >"$T/$1-resume.out" 2>"$T/$1-resume.err" ||
    fail "$2, resume: $(cat "$T/$1-resume.err")"
  local r
  for r in 0 1 2; do
    db search "$T/$1.db.rank$r" 1 >"$T/$1$r.search"
    cmp -s "$T/$1$r.search" "$T/ref$r.search" || fail "$2, resume: island $r searched otherwise"
  done
}

# ---- an island whose store fails (rank 1: its 40th write, in generation 2) stops the job a generation later (the
# islands are pipelined by one generation); the others store what they finished; --resume continues every island
# to the search an uninterrupted job makes ----
"${MPIRUN[@]}" -n 1 "$EVO" run "${JOB[@]}" --db "$T/f.db" : -n 1 env EVO_STORE_FAIL_AT=40 "$EVO" run "${JOB[@]}" \
  --db "$T/f.db" : -n 1 "$EVO" run "${JOB[@]}" --db "$T/f.db" >"$T/f.out" 2>"$T/f.err"
[ $? != 0 ] || fail "failing island: the job exited 0"
grep -q "f.db.rank1: disk full (EVO_STORE_FAIL_AT=40: write 40 made to fail); .*stored before it" "$T/f.err" ||
  fail "failing island: its own message is missing: $(cat "$T/f.err")"
grep -q "island 1 failed in generation 2 (its own message is on its stderr); the job stopped after generation 3" \
  "$T/f.err" || fail "failing island: rank 0's message: $(cat "$T/f.err")"
for r in 0 1 2; do
  [ "$(db scalar "$T/f.db.rank$r" "PRAGMA integrity_check")" = ok ] || fail "failing island: island $r store damaged"
  want=interrupted gens=4
  [ $r = 1 ] && want=failed gens=2
  [ "$(db scalar "$T/f.db.rank$r" "SELECT state FROM runs WHERE id = 1")" = $want ] || fail "failing island: island $r not $want"
  [ "$(db scalar "$T/f.db.rank$r" "SELECT count(*) FROM generations")" = $gens ] || fail "failing island: island $r generations"
done
resumes_as_ref f "failing island"

# ---- SIGTERM to mpirun (which passes it to every rank): every island stops, marked interrupted, its stores merged;
# --resume continues to the uninterrupted job's search ----
EVO_REPLAY_DELAY_MS=25 "${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --db "$T/t.db" >"$T/t.out" 2>"$T/t.err" &
job=$!
bg+=("$job")
for _ in $(seq 300); do
  [ "$(db scalar "$T/t.db.rank2" "SELECT count(*) FROM generations" 2>/dev/null)" -ge 2 ] 2>/dev/null && break
  sleep 0.05
done
kill -TERM "$job"
wait "$job"
rc=$?
[ "$rc" != 0 ] || fail "SIGTERM: the job exited 0"
[ -e "$T/t.db" ] || fail "SIGTERM: no merged store"
for r in 0 1 2; do
  [ "$(db scalar "$T/t.db.rank$r" "SELECT state FROM runs WHERE id = 1")" = interrupted ] ||
    fail "SIGTERM: island $r is $(db scalar "$T/t.db.rank$r" "SELECT state FROM runs WHERE id = 1")"
done
resumes_as_ref t SIGTERM

# ---- a time budget stops every island after the same generation ----
EVO_REPLAY_DELAY_MS=10 "${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --generations 40 --time-budget 1 --db "$T/b.db" \
  >"$T/b.out" 2>&1 || fail "time budget: $(cat "$T/b.out")"
grep -q "^time budget of 1 s reached" "$T/b.out" || fail "time budget: $(cat "$T/b.out")"
g0=$(db scalar "$T/b.db.rank0" "SELECT count(*) FROM generations")
for r in 0 1 2; do
  [ "$(db scalar "$T/b.db.rank$r" "SELECT state FROM runs WHERE id = 1")" = done ] || fail "time budget: island $r not done"
  [ "$(db scalar "$T/b.db.rank$r" "SELECT count(*) FROM generations")" = "$g0" ] || fail "time budget: island $r generations"
done
[ "$g0" -lt 40 ] || fail "time budget: all 40 generations ran"

# ---- a job of the first, lock-step islands (runs.island without "pipelined") is not resumed otherwise than it ran ----
for r in 0 1 2; do
  cp "$T/kill.db.rank$r" "$T/old.db.rank$r"
  python3 - "$T/old.db.rank$r" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
meta = json.loads(c.execute("SELECT island FROM runs WHERE id = 1").fetchone()[0])
del meta["pipelined"]
c.execute("UPDATE runs SET island = ?, state = 'interrupted' WHERE id = 1", (json.dumps(meta),))
c.commit()
PY
done
sha_old=$(sha256sum "$T/old.db.rank1" | cut -d' ' -f1)
"${MPIRUN[@]}" -n 3 "$EVO" run "${JOB[@]}" --db "$T/old.db" --resume 1 >"$T/old.out" 2>"$T/old.err"
[ $? = 2 ] || fail "lock-step job resumed: exit $?"
grep -q "holds an island of a job whose islands ran in lock step (written before evo pipelined its islands)" \
  "$T/old.err" || fail "lock-step job resumed: $(cat "$T/old.err")"
[ "$(sha256sum "$T/old.db.rank1" | cut -d' ' -f1)" = "$sha_old" ] || fail "lock-step job: a refused resume changed a store"

# ---- a rank that cannot start (here: no GPU driver for the one rank without --replay) stops every rank first ----
if ! ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 >/dev/null 2>&1; then
  "${MPIRUN[@]}" -n 2 "$EVO" run "${JOB[@]}" --db "$T/nogpu.db" : -n 1 "$EVO" run --islands --config "$C" \
    --db "$T/nogpu.db" >"$T/nogpu.out" 2>"$T/nogpu.err"
  rc=$?
  [ "$rc" != 0 ] || fail "no GPU on one rank: the job exited 0"
  # rank 0 names the island that cannot start, unless mpirun stopped it first when that rank exited (then the rank's
  # own message is what is left); either way no island began a run (below)
  # (two ranks write to one stderr: a line may carry another rank's "evo: " before its own text)
  grep -qE "island 2 \(host .*\) cannot start: run: .*evo run needs an NVIDIA GPU and its driver.*; no island started|evo: run: .*evo run needs an NVIDIA GPU and its driver" \
    "$T/nogpu.err" || fail "no GPU on one rank: $(cat "$T/nogpu.err")"
  for r in 0 1; do
    [ "$(db scalar "$T/nogpu.db.rank$r" "SELECT count(*) FROM runs")" = 0 ] || fail "no GPU on one rank: island $r began a run"
  done
  [ ! -e "$T/nogpu.db" ] || fail "no GPU on one rank: a merged store was made"
fi

# ---- search quality, small: tools/bench/islands_study.py (docs/results.md, "Islands") over 5 seeds finds every N's pick at
# the exhaustive best after 144 evaluations in total, as one island's; here 16 islands (16 ranks) on seeds 1-3 ----
python3 "$SRC/tools/bench/islands_study.py" --evo "$EVO" --mpirun mpirun --check --islands 16 --seeds 3 --budgets 144 \
  --noise 0 --no-wide >"$T/quality.out" 2>&1 || fail "search quality: $(cat "$T/quality.out")"
grep -q "^| 144 | 1.0000 \[1.000..1.000\] | 1.0000 \[1.000..1.000\] |$" "$T/quality.out" ||
  fail "search quality: $(cat "$T/quality.out")"

[ $fails -eq 0 ] && echo "ok: islands run, migrate, merge, and resume after a rank is killed"
exit $((fails > 0))
