#!/usr/bin/env bash
# cli_store.sh — `evo elite` and `evo history` against missing, empty, corrupt, foreign, newer-schema, locked and
# populated databases: exit codes, messages, and the file's SHA-256 unchanged by every read.
# Run: bash tests/cli_store.sh build/evo .   (ctest runs it; fixtures come from build/tests/test_store --fixture)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$1
FIXTURE=$(dirname "$EVO")/tests/test_store
if [ ! -x "$FIXTURE" ]; then
  echo "cli_store: fixture maker $FIXTURE not built" >&2
  exit 1
fi
T=$(mktemp -d /tmp/evo-cli-store-XXXXXX)
holder=
cleanup() {
  if [ -n "$holder" ]; then kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null; fi
  rm -rf "$T"
}
trap cleanup EXIT

fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# run ARGS...: sets $rc, $out, $err
run() {
  "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
expect_rc() { checks=$((checks + 1)); [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1 (stderr: $err)"; }
expect_out() { checks=$((checks + 1)); grep -qF -- "$1" <<<"$out" || fail "$2: stdout lacks '$1'"$'\n'"$out"; }
expect_err() { checks=$((checks + 1)); [ "$err" = "$1" ] || fail "$2: stderr '$err', want '$1'"; }
expect_err_has() { checks=$((checks + 1)); grep -qF -- "$1" <<<"$err" || fail "$2: stderr '$err' lacks '$1'"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
expect_same() { checks=$((checks + 1)); [ "$(sha "$1")" = "$2" ] || fail "$3: $1 changed"; }
short() { printf '%s' "attention_fp8|sm_90|$1" | sha256sum | cut -c1-8; }

G1="TILE_M=128,TILE_N=64,WARPS=8,STAGES=2"
G2="TILE_M=64,TILE_N=128,WARPS=4,STAGES=2"
G4="TILE_M=32,TILE_N=64,WARPS=2,STAGES=2"
G0="TILE_M=64,TILE_N=64,WARPS=4,STAGES=1"
G3="TILE_M=128,TILE_N=128,WARPS=8,STAGES=3"

# ---- missing ----
for cmd in "elite --show" history; do
  run $cmd --db "$T/none.db"
  expect_rc 1 "$cmd missing"
  expect_err "evo: no database at $T/none.db — run \`evo run\` first" "$cmd missing"
  checks=$((checks + 1)); [ ! -e "$T/none.db" ] || fail "$cmd missing: created the file"
done

# ---- empty evo database, and a 0-byte file ----
"$FIXTURE" --fixture empty "$T/empty.db" || fail "fixture empty"
: >"$T/zero.db"
for db in "$T/empty.db" "$T/zero.db"; do
  before=$(sha "$db")
  run elite --show --db "$db"
  expect_rc 1 "elite empty"
  expect_err "evo: $db: no elites yet — no candidate has passed every gate; run \`evo run\`" "elite empty"
  run history --db "$db"
  expect_rc 1 "history empty"
  expect_err "evo: $db: no runs yet — run \`evo run\` first" "history empty"
  expect_same "$db" "$before" "empty reads"
done
checks=$((checks + 1)); [ ! -s "$T/zero.db" ] || fail "0-byte file grew"

# ---- populated ----
db=$T/pop.db
"$FIXTURE" --fixture populated "$db" || fail "fixture populated"
before=$(sha "$db")
run elite --show --db "$db"
expect_rc 0 "elite"
expect_out "$(printf '%4d  %-8s  %6.3fx' 1 "$(short "$G1")" 1.84)" "elite rank 1"
expect_out "$(printf '%4d  %-8s  %6.3fx' 2 "$(short "$G2")" 1.52)" "elite rank 2"
expect_out "$(printf '%4d  %-8s  %6.3fx' 3 "$(short "$G4")" 1.31)" "elite rank 3"
expect_out "$G1" "elite genome"
expect_out "shape set 0f7a0e32 (as in run 1)" "elite scope"
expect_out "mission(1,8,512,64)               20.70        20.29..21.33                   -   1.932x     25.9" "elite per-shape (no interval: stored without one)"
expect_out "ncu mission(1,8,512,64): tensor pipe 61.2 %, DRAM throughput 45.1 %, achieved occupancy 37.5 %, bank conflicts 0" "elite ncu"
checks=$((checks + 1)); [ "$(grep -c '^ *[0-9]  [0-9a-f]\{8\}  ' <<<"$out")" = 3 ] || fail "elite: want 3 rows"
checks=$((checks + 1)); ! grep -qF "$G3" <<<"$out" || fail "elite shows an INCORRECT candidate"

run elite --db "$db" --top 5
expect_rc 0 "elite --top 5"
checks=$((checks + 1)); [ "$(grep -c '^ *[0-9]  [0-9a-f]\{8\}  ' <<<"$out")" = 4 ] || fail "elite --top 5: want the 4 OK candidates"
expect_out "$(printf '%4d  %-8s  %6.3fx' 4 "$(short "$G0")" 1.0)" "elite rank 4"
# ranked by one shape: G4 (1.31 overall) is the best on long and the worst on mission
run elite --db "$db" --shape long --top 2
expect_rc 0 "elite --shape long"
expect_out "ranked by the speedup on long(2,8,2048,64): 2.145x, 1.752x" "elite --shape long: speedups"
expect_out "$(printf '%4d  %-8s  %6.3fx' 1 "$(short "$G4")" 1.31)" "elite --shape long rank 1"
expect_out "$(printf '%4d  %-8s  %6.3fx' 2 "$(short "$G1")" 1.84)" "elite --shape long rank 2"
checks=$((checks + 1))
[ "$(grep -c '^ *[0-9]  [0-9a-f]\{8\}  ' <<<"$out")" = 2 ] || fail "elite --shape long --top 2: want 2 rows"
run elite --db "$db" --shape mission --top 9
expect_out "ranked by the speedup on mission(1,8,512,64): 1.932x, 1.596x, 1.050x, 0.800x" "elite --shape mission"
expect_out "$(printf '%4d  %-8s  %6.3fx' 4 "$(short "$G4")" 1.31)" "elite --shape mission rank 4"
run elite --db "$db" --shape long --json --top 1
flat=$(tr -d ' \t\n' <<<"$out")
checks=$((checks + 1))
case "$flat" in "[{\"rank\":1,\"id\":\"$(short "$G4")\","*) ;; *) fail "elite --shape long --json: $flat" ;; esac
run elite --db "$db" --shape longer
expect_rc 2 "elite --shape longer"
expect_err "evo: elite --shape longer: no elite was measured on a shape of that name (shapes: mission, long)" \
  "elite --shape longer"
run elite --db "$db" --shape ""
expect_rc 2 "elite --shape ''"
expect_err_has "--shape wants a shape name" "elite --shape ''"
expect_same "$db" "$before" "elite --shape reads only"

run elite -k 1 --db "$db"
checks=$((checks + 1)); [ "$(grep -c '^ *[0-9]  [0-9a-f]\{8\}  ' <<<"$out")" = 1 ] || fail "elite -k 1"

run elite --show --json --top 2 --db "$db"
expect_rc 0 "elite --json"
flat=$(tr -d ' \t\n' <<<"$out")
checks=$((checks + 1))
case "$flat" in
  "[{\"rank\":1,\"id\":\"$(short "$G1")\","*) ;;
  *) fail "elite --json: does not open with rank 1 ($flat)" ;;
esac
for want in "\"genome\":\"$G1\"" "\"fitness\":1.84" "\"rank\":2,\"id\":\"$(short "$G2")\"" \
            "\"metric\":\"tensor_pipe_util\",\"value\":61.2,\"unit\":\"%\"" "\"median_us\":"; do
  checks=$((checks + 1)); grep -qF -- "$want" <<<"$flat" || fail "elite --json lacks $want"
done
checks=$((checks + 1)); [ "$(grep -o '"rank":' <<<"$flat" | wc -l)" = 2 ] || fail "elite --json --top 2: want 2 entries"

run elite --db "$db" --arch sm_80
expect_rc 1 "elite other arch"
expect_err "evo: $db: no elites yet for attention_fp8 on sm_80 — no candidate has passed every gate; run \`evo run\`" "elite other arch"
run elite --db "$db" --task attention_fp8 --arch sm_90 --top 1
expect_rc 0 "elite --task --arch"

run elite --db "$db" --top 0
expect_rc 2 "elite --top 0"
expect_err "evo: elite: --top wants a positive integer, got '0' (see 'evo help elite')" "elite --top 0"
run elite --db "$db" --frobnicate
expect_rc 2 "elite unknown option"
expect_err_has "unknown option '--frobnicate'" "elite unknown option"
run elite --db
expect_rc 2 "elite --db without value"

run history --db "$db"
expect_rc 0 "history"
expect_out "run 1 — attention_fp8 on sm_90, strategy ga, seed 7, population 6, 2 generations planned; done" "history header"
expect_out "   0    1.840x    1.420x          4       0    150.2       60.5     40.2    45.5    1.2%  OK 2, COMPILE_FAIL 1, INCORRECT 1" "history gen 0"
expect_out "   1    1.840x    1.520x          2       1    150.2       59.8     40.2    45.2    1.5%  OK 2" "history gen 1"
expect_out "best: 1.840x in generation 0: $G1" "history best"
# the gates' times are summed over evaluations (workers run at once), so they are not parts of the wall
expect_out "started 2026-11-21T10:00:00Z, finished 2026-11-21T10:05:00Z; wall 300.5 s, of which compile 120.2 s; summed over evaluations: check 80.5 s, timing 90.8 s" "history: what the times are"
expect_out "best and median count the elites carried into each generation" "history: elites counted"
# elites re-timed after a baseline drift: the next generation's best is marked, and the mark explained
cp "$db" "$T/retimed.db"
python3 - "$T/retimed.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO retimes (candidate_id, run_id, generation, shape_set, fitness, why, created_at) "
           "SELECT candidate_id, 1, 0, shape_set, 1.7, 'baseline drift', '2026-11-21T10:02:30Z' FROM evaluations "
           "WHERE verdict = 'OK' LIMIT 1")
db.commit()
PY
run history --db "$T/retimed.db"
expect_rc 0 "history after a re-timing"
expect_out "   1   1.840x*    1.520x" "history after a re-timing: marked"
expect_out "best and median count the elites carried into each generation; * the elites were re-timed before it (the baseline drifted): their new figures count" "history after a re-timing: the note"
run history --run 1 --db "$db"
expect_rc 0 "history --run 1"
run history --run 9 --db "$db"
expect_rc 1 "history --run 9"
expect_err "evo: $db: no run 9" "history --run 9"
run history --run x --db "$db"
expect_rc 2 "history --run x"
run history --json --db "$db"
expect_rc 0 "history --json"
flat=$(tr -d ' \t\n' <<<"$out")
for want in '"run":{"id":1,"task":"attention_fp8"' '"generation":0,"best_fitness":1.84,"median_fitness":1.42,"evaluated":4,"reused":0' \
            '"counts":{"OK":2,"INVALID":0,"COMPILE_FAIL":1' '"generation":1'; do
  checks=$((checks + 1)); grep -qF -- "$want" <<<"$flat" || fail "history --json lacks $want"
done
expect_same "$db" "$before" "populated reads"

# ---- a second run that has not finished a generation: history defaults to it, elite still ranks the search ----
"$FIXTURE" --fixture running "$T/running.db" || fail "fixture running"
run history --db "$T/running.db"
expect_rc 0 "history of a run in progress"
expect_out "run 2 — attention_fp8 on sm_90, strategy ga, seed 8, population 6, 2 generations planned; running" "history run 2"
expect_out "started 2026-11-21T11:00:00Z, not finished; wall 3.5 s" "history run 2 times"
expect_out "no generation of this run has finished yet" "history run 2 empty"
run history --db "$T/running.db" --json
flat=$(tr -d ' \t\n' <<<"$out")
checks=$((checks + 1)); grep -qF '"state":"running"' <<<"$flat" && grep -qF '"generations":[]}' <<<"$flat" || fail "history --json of run 2: $flat"
run history --db "$T/running.db" --run 1
expect_out "OK 2, COMPILE_FAIL 1, INCORRECT 1" "history --run 1 of two"
run elite --db "$T/running.db"
expect_rc 0 "elite while run 2 is going"
expect_out "shape set 0f7a0e32 (as in run 2)" "elite scope run 2"
expect_out "$(printf '%4d  %-8s  %6.3fx' 1 "$(short "$G1")" 1.84)" "elite rank 1 while run 2 is going"

# ---- read-only directory ----
mkdir "$T/ro" && cp "$db" "$T/ro/pop.db" && chmod 555 "$T/ro"
run elite --db "$T/ro/pop.db" --top 1
expect_rc 0 "elite in a read-only directory"
chmod 755 "$T/ro"

# ---- refused files: corrupt, truncated, foreign, newer schema ----
head -c 8192 /dev/urandom >"$T/random.db"
head -c $(( $(stat -c %s "$db") / 2 )) "$db" >"$T/truncated.db"
"$FIXTURE" --fixture foreign "$T/foreign.db" || fail "fixture foreign"
"$FIXTURE" --fixture newer "$T/newer.db" || fail "fixture newer"
for case in "random.db|not an evo database (file is not a database)" \
            "truncated.db|corrupt database" \
            "foreign.db|not an evo database (a SQLite file with 1 schema objects of another program" \
            "newer.db|schema version 7 is newer than this evo understands (6); upgrade evo"; do
  f=$T/${case%%|*}
  msg=${case#*|}
  before=$(sha "$f")
  for cmd in "elite --show" history; do
    run $cmd --db "$f"
    expect_rc 1 "$cmd $f"
    expect_err_has "evo: $f: $msg" "$cmd $f"
  done
  expect_same "$f" "$before" "reads of $f"
done

# ---- locked: another process holds an exclusive lock ----
"$FIXTURE" --fixture populated "$T/locked.db" || fail "fixture locked"
"$FIXTURE" --hold-lock "$T/locked.db" "$T/ready" &
holder=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
checks=$((checks + 1)); [ -e "$T/ready" ] || fail "lock holder did not start"
for cmd in "elite --show" history; do
  EVO_STORE_BUSY_MS=200 run $cmd --db "$T/locked.db"
  expect_rc 1 "$cmd locked"
  expect_err "evo: $T/locked.db: database is locked by another process (gave up after 200 ms; is another evo writing to it?)" "$cmd locked"
done
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
holder=
run history --db "$T/locked.db"
expect_rc 0 "history after the lock is gone"

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed (files in $T kept only while running)" >&2
  exit 1
fi
echo "$checks checks passed"
