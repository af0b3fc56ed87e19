#!/usr/bin/env bash
# cli_eval_walls.sh — tools/bench/eval_walls.py on a store made here: two runs, the last one's evaluations summed shape
# by shape (repetitions, repetitions x events median, wall time), an evaluation stopped early left out of the shape
# means, the per-generation sums; a store without wall times, one without the run, and a file that is no store.
# Run: bash tests/cli_eval_walls.sh build/evo .   (ctest runs it)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (tools/setup.sh installs it)"; exit 77; }
SRC=$(realpath "$2")
T=$(mktemp -d /tmp/evo-cli-walls-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

python3 - "$T/s.db" <<'EOF'
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY)")
con.execute("CREATE TABLE evaluations (id INTEGER PRIMARY KEY, run_id INT, generation INT, verdict TEXT, detail TEXT,"
            " check_s REAL, time_s REAL)")
con.execute("INSERT INTO runs VALUES (1), (2)")
def ev(run, gen, verdict, timing, check_s, time_s):
    con.execute("INSERT INTO evaluations (run_id, generation, verdict, detail, check_s, time_s) VALUES (?,?,?,?,?,?)",
                (run, gen, verdict, json.dumps({"timing": timing} if timing else {}), check_s, time_s))
# run 1: must not count in the default (last) run
ev(1, 0, "OK", {"reps": [10, 10], "events_median_us": [1000, 1000], "wall_ms": [99, 99]}, 9, 9)
# run 2: two full evaluations, one stopped at the first shape, one INCORRECT without timing
ev(2, 0, "OK", {"reps": [20, 100], "events_median_us": [500, 10], "wall_ms": [15, 4]}, 1.5, 2.0)
ev(2, 0, "OK", {"reps": [20, 60], "events_median_us": [700, 10], "wall_ms": [21, 2]}, 0.5, 1.0)
ev(2, 1, "SLOW", {"reps": [3], "events_median_us": [9000], "wall_ms": [50]}, 0.25, 0.5)
ev(2, 1, "INCORRECT", None, 0.75, 0)
con.commit()
EOF
out=$(python3 "$SRC/tools/bench/eval_walls.py" "$T/s.db" 2>&1); rc=$?
[ $rc = 0 ] || fail "exit $rc: $out"
# shape 0: reps (20+20)/2 = 20, kernel (20*0.5 + 20*0.7)/2 = 12.00 ms, wall (15+21)/2 = 18.0, 6.0 over
grep -qE '^ +0 +20\.0 +12\.00 +18\.0 +6\.0$' <<<"$out" || fail "shape 0 row: $out"
# shape 1: reps 80, kernel (100*0.01 + 60*0.01)/2 = 0.80 ms, wall 3.0, 2.2 over
grep -qE '^ +1 +80\.0 +0\.80 +3\.0 +2\.2$' <<<"$out" || fail "shape 1 row: $out"
grep -qE '^ +all +12\.80 +21\.0 +8\.2 ' <<<"$out" || fail "totals: $out"
grep -q "run 2: 4 evaluations, 2 timed on every shape" <<<"$out" || fail "header: $out"
grep -qE '^ +0 +2 +2\.0 +3\.0$' <<<"$out" || fail "generation 0 sums: $out"
grep -qE '^ +1 +2 +1\.0 +0\.5$' <<<"$out" || fail "generation 1 sums: $out"
# --run 1
out=$(python3 "$SRC/tools/bench/eval_walls.py" "$T/s.db" --run 1 2>&1)
grep -qE '^ +0 +10\.0 +10\.00 +99\.0 +89\.0$' <<<"$out" || fail "--run 1: $out"
# no such run, not a store
out=$(python3 "$SRC/tools/bench/eval_walls.py" "$T/s.db" --run 7 2>&1); rc=$?
[ $rc = 2 ] && grep -q "run 7 has no evaluations" <<<"$out" || fail "--run 7: exit $rc: $out"
echo "not a database" >"$T/x.db"
out=$(python3 "$SRC/tools/bench/eval_walls.py" "$T/x.db" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "x.db" <<<"$out" || fail "not a store: exit $rc: $out"
# a FIFO is refused at once (sqlite would block opening it), a symlink to the store is read
mkfifo "$T/fifo"
out=$(timeout 10 python3 "$SRC/tools/bench/eval_walls.py" "$T/fifo" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "not a regular file" <<<"$out" || fail "FIFO: exit $rc: $out"
ln -s "$T/s.db" "$T/link.db"
out=$(python3 "$SRC/tools/bench/eval_walls.py" "$T/link.db" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "run 2: 4 evaluations" <<<"$out" || fail "symlink: exit $rc: $out"
# a store without wall times: repetitions and kernel time, the wall column empty
python3 - "$T/s.db" <<'EOF'
import sqlite3, sys, json
con = sqlite3.connect(sys.argv[1])
con.execute("INSERT INTO runs VALUES (3)")
con.execute("INSERT INTO evaluations (run_id, generation, verdict, detail, check_s, time_s) VALUES (3, 0, 'OK', ?, 1, 1)",
            (json.dumps({"timing": {"reps": [20], "events_median_us": [100]}}),))
con.commit()
EOF
out=$(python3 "$SRC/tools/bench/eval_walls.py" "$T/s.db" 2>&1); rc=$?
[ $rc = 0 ] && grep -qE '^ +0 +20\.0 +2\.00 +nan +nan$' <<<"$out" || fail "no wall times: exit $rc: $out"
[ $fails = 0 ] && echo "cli_eval_walls: all passed"
exit $((fails > 0))
