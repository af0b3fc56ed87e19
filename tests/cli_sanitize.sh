#!/usr/bin/env bash
# cli_sanitize.sh — `evo run --sanitize` and `evo check --sanitize` without a GPU: the fake worker stands in for
# the GPU worker and tests/fake-sanitizer.sh for compute-sanitizer, so what is tested is evo's side: the options,
# a worker of its own per elite and tool, reading the report, demoting an elite with errors and checking the
# next one, the reasons stored. tests/gpu_planted.sh runs the real compute-sanitizer on planted kernels.
# Run: bash tests/cli_sanitize.sh build/evo .
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
CFG=$SRC/tests/data/faults.yaml
FAKE=$SRC/tests/fake-sanitizer.sh
T=$(mktemp -d /tmp/evo-cli-sanitize-XXXXXX)
export EVO_CACHE=$T/cache TMPDIR=$T
trap 'rm -rf "$T"' EXIT

fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
t() { checks=$((checks + 1)); "$@"; }
run() { # run ARGS...: sets $rc, $out, $err
  "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
expect_rc() { t [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1"$'\n'"stdout: $out"$'\n'"stderr: $err"; }
expect_err_has() { t grep -qF -- "$1" <<<"$err" || fail "$2: stderr '$err' lacks '$1'"; }
expect_out_has() { t grep -qF -- "$1" <<<"$out" || fail "$2: stdout lacks '$1'"$'\n'"$out"; }
db() { python3 "$SRC/tests/evo_db.py" "$@"; }
no_sanitizer_left() { ! pgrep -f "fake-sanitizer.sh.*$T" >/dev/null; } # this test's alone: others may run at once
demoted() { db scalar "$1" "SELECT count(*) FROM candidates WHERE demoted IS NOT NULL"; }

# ---- options ----
run run --config "$CFG" --db "$T/u.db" --sanitize=memcheck,bogus
expect_rc 2 "unknown tool"
expect_err_has "--sanitize: unknown tool 'bogus' (the tools: memcheck, racecheck, initcheck, synccheck)" "unknown tool"
run run --config "$CFG" --db "$T/u.db" --sanitize= 
expect_rc 2 "empty tool list"
run run --config "$CFG" --db "$T/u.db" --sanitizer "$FAKE"
expect_rc 2 "--sanitizer alone"
expect_err_has "--sanitizer goes with --sanitize" "--sanitizer alone"
run run --replay "$SRC/tests/data/replay.db" --config "$SRC/tests/data/replay-space.yaml" --db "$T/u.db" --sanitize
expect_rc 2 "sanitize a replay"
expect_err_has "a --replay run has none" "sanitize a replay"
EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/u.db" --sanitize --sanitizer "$T/no-such-sanitizer"
expect_rc 1 "missing sanitizer"
expect_err_has "compute-sanitizer not found at $T/no-such-sanitizer" "missing sanitizer"
t [ ! -e "$T/u.db" ] || fail "a refused option created the database"

# ---- a clean search: the elite is checked with both tools and stays ----
EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/clean.db" --sanitize --sanitizer "$FAKE"
expect_rc 0 "clean run"
expect_out_has "under memcheck racecheck..." "clean run"
expect_out_has "clean in" "clean run"
expect_out_has "sanitize: 1 elite checked, 0 demoted; the top 1 are clean" "clean run"
t [ "$(demoted "$T/clean.db")" = 0 ] || fail "clean run: something was demoted"
t [ "$(db scalar "$T/clean.db" "SELECT state FROM runs WHERE id = 1")" = done ] || fail "clean run: state"
before=$("$EVO" elite --json --db "$T/clean.db" --top 1)

# ---- racecheck finds errors in the first elite: it is demoted, the next one moves up and is clean ----
cp "$T/clean.db" "$T/race.db"
EVO_FAKE_WORKER=ok EVO_FAKE_SANITIZER_ERRORS=racecheck:2 EVO_FAKE_SANITIZER_RUNS=1 \
  EVO_FAKE_SANITIZER_STATE="$T/state1" run run --config "$CFG" --db "$T/race.db" --generations 1 --sanitize \
  --sanitizer "$FAKE"
expect_rc 0 "race run"
expect_out_has "DEMOTED" "race run"
expect_out_has "racecheck: 2 errors: Error: Race reported between Write access at evo_attn_fake+0x1a0" "race run"
expect_out_has "memcheck clean" "race run"
expect_out_has "sanitize: 2 elites checked, 1 demoted; the top 1 are clean" "race run"
expect_err_has "evo: sanitizer reports are kept in $T/evo-run-" "race run"
t [ "$(demoted "$T/race.db")" = 1 ] || fail "race run: $(demoted "$T/race.db") demoted, want 1"
first=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0]["candidate_id"])' "$before")
reason=$(db scalar "$T/race.db" "SELECT demoted FROM candidates WHERE id = $first")
t grep -qF "compute-sanitizer: memcheck clean; racecheck: 2 errors: Error: Race reported" <<<"$reason" ||
  fail "race run: the demoted elite is not the former best or its reason is '$reason'"
after=$("$EVO" elite --json --db "$T/race.db" --top 5)
t python3 -c 'import json,sys; sys.exit(int(sys.argv[1]) in [e["candidate_id"] for e in json.loads(sys.argv[2])])' "$first" "$after" ||
  fail "race run: the demoted candidate is still listed by evo elite"
t [ "$(db scalar "$T/race.db" "SELECT count(*) FROM evaluations WHERE candidate_id = $first")" -ge 1 ] ||
  fail "race run: the demoted candidate's results were lost"

# ---- every elite has errors: 3 x K tried, all demoted, the run says the top is not clean ----
cp "$T/clean.db" "$T/all.db"
EVO_FAKE_WORKER=ok EVO_FAKE_SANITIZER_ERRORS=memcheck:1 run run --config "$CFG" --db "$T/all.db" --generations 1 \
  --sanitize=memcheck --sanitizer "$FAKE"
expect_rc 0 "all-bad run"
expect_out_has "memcheck: 1 error: Invalid __global__ read of size 1 bytes" "all-bad run"
expect_out_has "sanitize: 3 elites checked, 3 demoted; stopped before the top 1 were all clean" "all-bad run"
t [ "$(demoted "$T/all.db")" = 3 ] || fail "all-bad run: $(demoted "$T/all.db") demoted, want 3"

# ---- a report without a summary is not clean ----
cp "$T/clean.db" "$T/nosum.db"
EVO_FAKE_WORKER=ok EVO_FAKE_SANITIZER_NO_SUMMARY=1 run run --config "$CFG" --db "$T/nosum.db" --generations 1 \
  --sanitize=synccheck --sanitizer "$FAKE"
expect_rc 0 "no-summary run"
expect_out_has "synccheck: the sanitizer wrote no summary to" "no-summary run"

# ---- a sanitized worker that dies: not clean, the run goes on ----
cp "$T/clean.db" "$T/die.db"
EVO_FAKE_WORKER=die run run --config "$CFG" --db "$T/die.db" --generations 1 --sanitize=memcheck --sanitizer "$FAKE"
expect_rc 0 "dying worker"
expect_out_has "memcheck: " "dying worker"

# ---- Ctrl-C while the sanitizer runs: evo stops at once, the run is marked interrupted, nothing is demoted ----
cp "$T/clean.db" "$T/int.db"
EVO_FAKE_WORKER=ok EVO_FAKE_SANITIZER_SLEEP=60 "$EVO" run --config "$CFG" --db "$T/int.db" --generations 1 \
  --sanitize --sanitizer "$FAKE" >"$T/int.out" 2>"$T/int.err" &
pid=$!
for _ in $(seq 300); do grep -q "under memcheck" "$T/int.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
start=$SECONDS
kill -INT "$pid"
wait "$pid"
rc=$?
t [ $((SECONDS - start)) -le 5 ] || fail "interrupt: evo took $((SECONDS - start)) s to stop"
t [ "$rc" = 1 ] || fail "interrupt: exit $rc, want 1"
t grep -qF "interrupted" "$T/int.err" || fail "interrupt: stderr $(cat "$T/int.err")"
t [ "$(db scalar "$T/int.db" "SELECT state FROM runs WHERE id = 2")" = interrupted ] || fail "interrupt: run state"
t [ "$(demoted "$T/int.db")" = 0 ] || fail "interrupt: something was demoted"
t no_sanitizer_left || fail "interrupt: the sanitizer was left running"

# ---- evo check --sanitize: errors reject the kernel and, with --db, demote it ----
EVO_FAKE_WORKER=ok EVO_FAKE_SANITIZER_ERRORS=racecheck:5 run check "$SRC/tests/planted/good.cu" --config "$CFG" \
  --db "$T/check.db" --sanitize --sanitizer "$FAKE"
expect_rc 1 "check with races"
expect_out_has "compute-sanitizer: memcheck clean; racecheck: 5 errors: Error: Race reported" "check with races"
expect_err_has "check: 1 of 1 kernel file rejected" "check with races"
t [ "$(demoted "$T/check.db")" = 1 ] || fail "check with races: not demoted"
EVO_FAKE_WORKER=ok run check "$SRC/tests/planted/good.cu" --config "$CFG" --json --sanitize=memcheck --sanitizer "$FAKE"
expect_rc 0 "clean check"
t python3 -c 'import json,sys; s=json.loads(sys.argv[1])["sanitize"]; sys.exit(not (len(s)==1 and s[0]["tool"]=="memcheck" and s[0]["clean"] and s[0]["errors"]==0))' "$out" ||
  fail "clean check: JSON sanitize field: $out"
run check "$SRC/tests/planted/good.cu" --config "$CFG" --sanitize=racecheck,racecheck,memcheck,initcheck,synccheck,x
expect_rc 2 "check: bad tool list"

echo "cli_sanitize: $checks checks, $fails failed"
[ "$fails" = 0 ]
