#!/usr/bin/env bash
# cli_faults.sh — `evo run` survives what breaks around it: kill -9 of the driver mid-generation then --resume,
# a worker killed mid-timing, a database locked by another writer, a read-only database, a full disk. Uses the
# fake worker (EVO_FAKE_WORKER), so no GPU is needed; it asserts what is stored, never speed.
# Run: bash tests/cli_faults.sh build/evo .   (ctest runs it as cli_faults; a minute or two, mostly NVRTC)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
HOLDER=$(dirname "$EVO")/tests/test_store # `test_store --hold-lock FILE READY`
CFG=$SRC/tests/data/faults.yaml
T=$(mktemp -d /tmp/evo-cli-faults-XXXXXX)
chmod 755 "$T" # the read-only cases run evo as another user
export EVO_CACHE=$T/cache TMPDIR=$T/tmp # evo's work directories (evo-run-PID) go to $T/tmp
mkdir "$T/tmp" && chmod 1777 "$T/tmp"
bg=()
cleanup() {
  for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  chmod -R u+w "$T" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
t() { checks=$((checks + 1)); "$@"; } # t COMMAND... || fail "why": a counted check
run() { # run ARGS...: sets $rc, $out, $err
  "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
expect_rc() { t [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1 (stderr: $err)"; }
expect_err_has() { t grep -qF -- "$1" <<<"$err" || fail "$2: stderr '$err' lacks '$1'"; }
expect_out_has() { t grep -qF -- "$1" <<<"$out" || fail "$2: stdout lacks '$1'"$'\n'"$out"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
db() { python3 "$SRC/tests/evo_db.py" "$@"; } # read-only queries: scalar, dump, search, check_run, quick_check
count() { db scalar "$1" "SELECT count(*) FROM evaluations${2:+ WHERE $2}"; }
# wait_for SECONDS COMMAND...: poll until the command succeeds; 1 when it never did
wait_for() {
  local end=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt "$end" ]; do "$@" && return 0; sleep 0.1; done
  return 1
}
children() { # pids whose parent is $1 (read, not cat: no fork per process, so the scan stays fast under load)
  local f line p
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    read -r _ p _ <<<"${line##*) }"
    if [ "$p" = "$1" ]; then p=${f#/proc/}; echo "${p%/stat}"; fi
  done
}
alive() { # a process that exists and is not a zombie
  local line state
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  read -r state _ <<<"${line##*) }"
  [ "$state" != Z ]
}
none_alive() { local p; for p in "$@"; do alive "$p" && return 1; done; return 0; }
at_least() { [ "$(count "$1" "$2")" -ge "$3" ]; } # at_least DB WHERE N
# rows of dump $1 missing from dump $2 (lost or changed); none when every row survived as it was
lost_rows() { grep -Fvxf "$2" "$1"; }
no_lost_rows() { ! lost_rows "$1" "$2" >/dev/null; }

# ---- the reference: the search uninterrupted (it also fills the compile cache the other cases reuse) ----
EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/ref.db"
expect_rc 0 "reference run"
t db check_run "$T/ref.db" 1 || fail "reference run: structure"
db search "$T/ref.db" 1 >"$T/ref.search"
db dump "$T/ref.db" >"$T/ref.dump"
t [ "$(grep -c '^eval ' "$T/ref.search")" -ge 15 ] || fail "reference run: only $(grep -c '^eval ' "$T/ref.search") evaluations"

# ---- kill -9 of the driver during generation 2, then --resume ----
EVO_FAKE_WORKER=slow:0.3 "$EVO" run --config "$CFG" --db "$T/kill.db" >"$T/kill.out" 2>&1 &
driver=$!
bg+=("$driver")
t wait_for 240 at_least "$T/kill.db" "generation = 1" 1 || fail "kill: nothing of generation 2 was stored in time"
workers=$(children "$driver")
t [ -n "$workers" ] || fail "kill: the driver has no worker process"
kill -9 "$driver"
{ wait "$driver"; } 2>/dev/null # the shell's own "Killed" notice is expected here
# shellcheck disable=SC2086
t wait_for 5 none_alive $workers || fail "kill: workers $workers outlived the driver"
db dump "$T/kill.db" | grep -v -e '^runs|' -e '^leases|' >"$T/kill.before" # the resume takes the run's lease
t [ "$(db scalar "$T/kill.db" "SELECT state FROM runs WHERE id = 1")" = running ] || fail "kill: run 1 not left running"
t [ "$(db scalar "$T/kill.db" "SELECT count(*) FROM generations")" = 1 ] || fail "kill: want generation 1 alone finished"
stored=$(count "$T/kill.db")
EVO_FAKE_WORKER=ok run run --resume 1 --db "$T/kill.db"
expect_rc 0 "resume"
expect_out_has "resuming run 1: generations 0 to 0 of 3 are stored" "resume"
expect_out_has "run 1 done" "resume"
db dump "$T/kill.db" >"$T/kill.after"
t no_lost_rows "$T/kill.before" "$T/kill.after" ||
  fail "resume: stored rows lost or changed: $(lost_rows "$T/kill.before" "$T/kill.after" | head -3)"
t db check_run "$T/kill.db" 1 || fail "resume: structure (a candidate evaluated twice, or generation rows missing)"
db search "$T/kill.db" 1 >"$T/kill.search"
t diff "$T/ref.search" "$T/kill.search" >&2 || fail "resume: the resumed search differs from the uninterrupted one"
t [ "$(count "$T/kill.db")" -gt "$stored" ] || fail "resume: evaluated nothing new"
# One numbering: the console's generations are evo history's (0 to 2 here), and the last one stored is 2.
expect_out_has "gen  2 (3 of 3)" "resume: console numbering"
run history --db "$T/kill.db"
t grep -qE '^   2 ' <<<"$out" || fail "history: no generation 2"$'\n'"$out"
t [ "$(db scalar "$T/kill.db" "SELECT max(generation) FROM generations")" = 2 ] || fail "stored generations are not 0 to 2"
# --resume of a finished run: it says so, exits 0 and changes nothing (finished time and wall time included).
db dump "$T/kill.db" >"$T/done.before"
EVO_FAKE_WORKER=ok run run --resume 1 --db "$T/kill.db"
expect_rc 0 "resume of a finished run"
expect_out_has "run 1 is finished (done after 3 of 3 generations); nothing to resume" "resume of a finished run"
db dump "$T/kill.db" >"$T/done.after"
t diff "$T/done.before" "$T/done.after" >&2 || fail "resume of a finished run changed the database"
# The killed driver could not remove its work directory; every run that ended removed its own.
t [ "$(ls "$T/tmp")" = "evo-run-$driver" ] || fail "work directories left behind: $(ls "$T/tmp")"
rm -rf "$T/tmp/evo-run-$driver"
# A run that fails in its workers keeps the work directory, says where once (here the message quotes the worker's
# log), and nothing else stays behind.
EVO_FAKE_WORKER=die run run --config "$CFG" --db "$T/die.db" --generations 1
expect_rc 2 "baseline crashes"
t [ "$(wc -l <<<"$err")" = 1 ] || fail "baseline crashes: more than one line: $err"
kept=$(ls "$T/tmp")
t [ "$(grep -o "$T/tmp/$kept" <<<"$err" | wc -l)" = 1 ] && [ -s "$T/tmp/$kept/worker-gpu0.log" ] ||
  fail "baseline crashes: work directory '$kept' not kept or not named once: $err"
rm -rf "${T:?}/tmp/"*

# ---- a worker killed mid-timing: that candidate is CRASHED, the worker restarts, the run finishes ----
EVO_FAKE_WORKER=slow:1 "$EVO" run --config "$CFG" --db "$T/worker.db" --generations 1 >"$T/worker.out" 2>&1 &
driver=$!
bg+=("$driver")
t wait_for 240 at_least "$T/worker.db" "" 1 || fail "worker: no evaluation was stored in time"
worker=
for c in $(children "$driver"); do grep -qa worker "/proc/$c/cmdline" 2>/dev/null && worker=$c; done
t [ -n "$worker" ] || fail "worker: no worker process found"
[ -n "$worker" ] && kill -9 "$worker"
t wait_for 120 none_alive "$driver" || fail "worker: the run did not finish"
wait "$driver"
rc=$?
out=$(cat "$T/worker.out")
err=$out
expect_rc 0 "worker killed"
expect_out_has "CRASHED 1" "worker killed"
expect_out_has "worker restarts 1" "worker killed"
t [ "$(count "$T/worker.db" "verdict = 'CRASHED' AND detail LIKE '%(pid $worker) was killed by SIGKILL%'")" = 1 ] ||
  fail "worker: no CRASHED evaluation names the killed worker"
t [ "$(count "$T/worker.db" "verdict = 'OK'")" = 7 ] || fail "worker: the 7 other candidates are not all OK"
t db check_run "$T/worker.db" 1 || fail "worker: structure"

# ---- locked: an exclusive lock, then another writer's open transaction, each held past the busy timeout ----
cp "$T/ref.db" "$T/locked.db"
before=$(sha "$T/locked.db")
"$HOLDER" --hold-lock "$T/locked.db" "$T/ready1" &
holder=$!
bg+=("$holder")
t wait_for 10 test -e "$T/ready1" || fail "locked: the lock holder did not start"
t0=$(date +%s%N)
EVO_STORE_BUSY_MS=400 EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/locked.db"
waited=$((($(date +%s%N) - t0) / 1000000))
expect_rc 1 "locked (exclusive)"
expect_err_has "evo: $T/locked.db: database is locked by another process (gave up after 400 ms; is another evo writing to it?)" "locked (exclusive)"
t [ "$waited" -ge 400 ] || fail "locked (exclusive): gave up after $waited ms, before the busy timeout"
kill "$holder"
wait "$holder" 2>/dev/null
t [ "$(sha "$T/locked.db")" = "$before" ] || fail "locked (exclusive): the database changed"

python3 - "$T/locked.db" "$T/ready2" <<'PY' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")  # what another evo holds while it commits a result
open(sys.argv[2], "w").close()
time.sleep(60)
PY
holder=$!
bg+=("$holder")
t wait_for 10 test -e "$T/ready2" || fail "locked: the other writer did not start"
EVO_STORE_BUSY_MS=400 EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/locked.db"
expect_rc 1 "locked (writer)"
expect_err_has "evo: $T/locked.db: database is locked by another process (gave up after 400 ms" "locked (writer)"
kill "$holder"
wait "$holder" 2>/dev/null
t [ "$(sha "$T/locked.db")" = "$before" ] || fail "locked (writer): the database changed"
db dump "$T/locked.db" >"$T/locked.dump"
t diff "$T/ref.dump" "$T/locked.dump" >&2 || fail "locked (writer): rows changed"

# Two evo runs writing one database at once: each waits for the other's commits, both finish.
EVO_FAKE_WORKER=ok "$EVO" run --config "$CFG" --db "$T/shared.db" --seed 11 >"$T/shared1.out" 2>&1 &
first=$!
bg+=("$first")
EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/shared.db" --seed 12
expect_rc 0 "two runs at once: the second"
wait "$first"
rc=$?
t [ "$rc" = 0 ] || fail "two runs at once: the first exited $rc ($(cat "$T/shared1.out"))"
t db check_run "$T/shared.db" 1 || fail "two runs at once: structure of run 1"
t db check_run "$T/shared.db" 2 || fail "two runs at once: structure of run 2"

# ---- read-only: the file, then its directory. As root, evo runs as nobody (root ignores permissions). ----
as_user=()
if [ "$(id -u)" = 0 ]; then
  as_user=(skip)
  if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
fi
if [ "${as_user[0]:-}" = skip ]; then
  echo "cli_faults: read-only cases skipped (root without setpriv)"
else
  mkdir -m 777 "$T/ro-cache" "$T/rofile"
  cp "$T/ref.db" "$T/rofile/ro.db" && chmod 444 "$T/rofile/ro.db"
  mkdir "$T/rodir" && cp "$T/ref.db" "$T/rodir/ro.db" && chmod 666 "$T/rodir/ro.db" && chmod 555 "$T/rodir"
  for f in "$T/rofile/ro.db" "$T/rodir/ro.db"; do
    before=$(sha "$f")
    listing=$(ls "$(dirname "$f")")
    "${as_user[@]}" env EVO_CACHE="$T/ro-cache" EVO_FAKE_WORKER=ok "$EVO" run --config "$CFG" --db "$f" \
      >"$T/out" 2>"$T/err"
    rc=$?
    err=$(cat "$T/err")
    expect_rc 1 "read-only $f"
    expect_err_has "evo: $f: cannot write (" "read-only $f"
    expect_err_has "); writing needs write access to the file and to its directory (for its -wal and -shm files)" "read-only $f"
    t [ "$(sha "$f")" = "$before" ] || fail "read-only $f: the database changed"
    # Refused before anything started: no work directory, no worker. (A reader of a WAL file may leave -wal/-shm.)
    t [ "$(ls "$(dirname "$f")" | grep -v -e '-wal$' -e '-shm$')" = "$listing" ] ||
      fail "read-only $f: files appeared beside it: $(ls "$(dirname "$f")")"
    for cmd in history "elite --show"; do
      # shellcheck disable=SC2086
      "${as_user[@]}" "$EVO" $cmd --db "$f" >"$T/out" 2>"$T/err"
      rc=$?
      err=$(cat "$T/err")
      expect_rc 0 "read-only $f: $cmd"
    done
    t [ "$(sha "$f")" = "$before" ] || fail "read-only $f: reading changed it"
  done
fi


# ---- one process per run in progress: the lease. A run is killed; its lease is made another host's, live, then
# expired; two resumes are started together: one takes the run over, the other is refused naming it. ----
lease() { python3 - "$@" <<'PY'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
what = sys.argv[2] if len(sys.argv) > 2 else "show"
if what == "foreign":   # a live lease of a process on another host
    db.execute("UPDATE leases SET host = 'gpu-7', boot_id = 'another-boot', pid = 4242, token = 'f' || token, "
               "expires_at = ? WHERE run_id = 1", (time.time() + float(sys.argv[3]),))
elif what == "steal":   # another process takes the run over while it runs
    db.execute("UPDATE leases SET host = 'thief', boot_id = 'another-boot', pid = 99, token = 't' || token, "
               "expires_at = ? WHERE run_id = 1", (time.time() + 600,))
else:                          # print the lease: host pid expires_at
    row = db.execute("SELECT host, pid, expires_at FROM leases WHERE run_id = 1").fetchone()
    print(" ".join(str(v) for v in row) if row else "none")
PY
}
EVO_FAKE_WORKER=slow:0.1 "$EVO" run --config "$CFG" --db "$T/lease.db" >"$T/lease.out" 2>&1 &
driver=$!
bg+=("$driver")
t wait_for 240 at_least "$T/lease.db" "" 2 || fail "lease: nothing was stored in time"
kill -9 "$driver"
{ wait "$driver"; } 2>/dev/null
lease "$T/lease.db" foreign 600
db dump "$T/lease.db" >"$T/lease.before"
EVO_FAKE_WORKER=ok run run --resume 1 --db "$T/lease.db"
expect_rc 2 "resume of a run another host holds"
expect_err_has "evo: --resume 1: $T/lease.db: run 1 is in progress elsewhere: its lease is held by host gpu-7, pid 4242 (since " "resume of a run another host holds"
expect_err_has "), until $(date -u -d "@$(lease "$T/lease.db" | cut -d' ' -f3 | cut -d. -f1)" +%Y-%m-%dT%H:%M:%SZ); it renews the lease while it runs" "resume of a run another host holds: until when"
db dump "$T/lease.db" >"$T/lease.after"
t diff "$T/lease.before" "$T/lease.after" >&2 || fail "refused resume: the database changed"
lease "$T/lease.db" foreign -5 # its holder stopped renewing it 5 s ago: expired
stored=$(count "$T/lease.db")
retimed=$(db scalar "$T/lease.db" "SELECT count(*) FROM retimes")
EVO_LEASE_S=0.9 EVO_FAKE_TRACE=$T/trace1 EVO_FAKE_WORKER=slow:0.15 "$EVO" run --resume 1 --db "$T/lease.db" >"$T/r1.out" 2>"$T/r1.err" &
r1=$!
EVO_LEASE_S=0.9 EVO_FAKE_TRACE=$T/trace2 EVO_FAKE_WORKER=slow:0.15 "$EVO" run --resume 1 --db "$T/lease.db" >"$T/r2.out" 2>"$T/r2.err" &
r2=$!
bg+=("$r1" "$r2")
t wait_for 60 grep -q . "$T/r1.err" "$T/r2.err" || fail "lease: no resume said anything"
sleep 0.3
first=$(lease "$T/lease.db")
sleep 0.8
second=$(lease "$T/lease.db")
wait "$r1"
rc1=$?
wait "$r2"
rc2=$?
if [ "$rc1" = 0 ]; then winner=$r1 w=1 l=2 lrc=$rc2; else winner=$r2 w=2 l=1 lrc=$rc1; fi
t [ "$(printf '%s\n' "$rc1" "$rc2" | sort | tr '\n' ' ')" = "0 2 " ] || fail "two resumes at once: exits $rc1 and $rc2, want 0 and 2 ($(cat "$T/r1.err" "$T/r2.err"))"
err=$(cat "$T/r$l.err")
expect_err_has "evo: --resume 1: $T/lease.db: run 1 is in progress elsewhere: its lease is held by host $(hostname), pid $winner (since " "two resumes at once: the second"
err=$(cat "$T/r$w.err")
expect_err_has "evo: note: run 1's lease, held by host gpu-7 pid 4242, expired at " "two resumes at once: the first takes over"
t [ ! -s "$T/trace$l" ] || fail "two resumes at once: the refused one evaluated $(wc -l <"$T/trace$l") candidates"
t db check_run "$T/lease.db" 1 || fail "two resumes at once: a candidate evaluated twice, or generations missing"
db search "$T/lease.db" 1 >"$T/lease.search"
t diff "$T/ref.search" "$T/lease.search" >&2 || fail "two resumes at once: the search differs from the uninterrupted one"
t [ "$(count "$T/lease.db")" = "$(count "$T/ref.db")" ] || fail "two resumes at once: $(count "$T/lease.db") evaluations, the run has $(count "$T/ref.db")"
new=$(($(count "$T/lease.db") - stored + $(db scalar "$T/lease.db" "SELECT count(*) FROM retimes") - retimed))
t [ "$(wc -l <"$T/trace$w")" = "$new" ] || fail "two resumes at once: evaluated $(wc -l <"$T/trace$w"), stored $new new evaluations and re-timings"
# the heartbeat renewed the lease while the run went on (every 0.3 s with EVO_LEASE_S=0.9), and the run gave it up
t [ "${first%% *}" = "$(hostname)" ] && awk -v a="${first##* }" -v b="${second##* }" 'BEGIN { exit !(b > a + 0.4) }' ||
  fail "heartbeat: the lease was not renewed ($first, then $second)"
t [ "$(lease "$T/lease.db")" = none ] || fail "a finished run keeps its lease: $(lease "$T/lease.db")"
# A run taken over while it runs (its lease another process's now) stores nothing more, leaves the run as it is
# for the new holder, and says who has it.
EVO_LEASE_S=1 EVO_FAKE_WORKER=slow:0.2 "$EVO" run --config "$CFG" --db "$T/stolen.db" >"$T/stolen.out" 2>"$T/stolen.err" &
driver=$!
bg+=("$driver")
t wait_for 240 at_least "$T/stolen.db" "" 2 || fail "stolen: nothing was stored in time"
lease "$T/stolen.db" steal
at_steal=$(count "$T/stolen.db")
wait "$driver"
rc=$?
err=$(cat "$T/stolen.err")
expect_rc 1 "a run taken over"
expect_err_has "run 1 was taken over: its lease is held by host thief, pid 99" "a run taken over"
t [ "$(count "$T/stolen.db")" -le $((at_steal + 1)) ] || fail "a run taken over: stored $(($(count "$T/stolen.db") - at_steal)) results after it lost the run"
t [ "$(db scalar "$T/stolen.db" "SELECT state FROM runs WHERE id = 1")" = running ] || fail "a run taken over: its state was changed by the loser"
t [ "$(lease "$T/stolen.db" | cut -d' ' -f1)" = thief ] || fail "a run taken over: the loser touched the new holder's lease"

# ---- two GPUs (two fake workers): the same search as on one; every result says which GPU timed it ----
EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/two.db" --gpus 0,1
expect_rc 0 "two GPUs"
expect_out_has "on fake x2 (GPUs 0,1)" "two GPUs: the run names both GPUs"
t db check_run "$T/two.db" 1 || fail "two GPUs: structure"
db search "$T/two.db" 1 >"$T/two.search"
t cmp -s "$T/ref.search" "$T/two.search" || fail "two GPUs: searched otherwise than on one"$'\n'"$(diff "$T/ref.search" "$T/two.search" | head)"
t [ "$(db scalar "$T/two.db" "SELECT gpu FROM runs")" = "fake x2 (GPUs 0,1)" ] || fail "two GPUs: runs.gpu"
n0=$(count "$T/two.db" "gpu = 'fake (GPU 0)'")
n1=$(count "$T/two.db" "gpu = 'fake (GPU 1)'")
t [ "$n0" -ge 1 ] && [ "$n1" -ge 1 ] || fail "two GPUs: GPU 0 timed $n0 results, GPU 1 $n1"
t [ $((n0 + n1)) = "$(count "$T/two.db" "verdict = 'OK'")" ] || fail "two GPUs: ok results without their GPU"
# ---- a full disk: first a file size limit (SIGXFSZ ignored, so a write past it fails with EFBIG) ----
limited() { # limited KB ARGS...: evo with every file it writes capped at KB kilobytes
  bash -c 'trap "" XFSZ; ulimit -f "$1"; shift; exec "$@"' _ "$1" env EVO_FAKE_WORKER=ok "$EVO" "${@:2}" \
    >"$T/out" 2>"$T/err"
  rc=$?
  err=$(cat "$T/err")
}
# A fresh database: the schema is written, then results until the WAL reaches the limit.
limited 320 run --config "$CFG" --db "$T/full.db" --seed 9 --generations 8
cp "$T/out" "$T/full.out"
expect_rc 1 "size limit, fresh database"
expect_err_has "evo: $T/full.db: write failed (disk I/O error); is the disk full? The failed write was rolled back" "size limit, fresh"
t [ "$(db quick_check "$T/full.db")" = ok ] || fail "size limit, fresh: quick_check"
t [ "$(count "$T/full.db")" -ge 1 ] || fail "size limit, fresh: nothing was stored before the limit"
t [ "$(db scalar "$T/full.db" "SELECT state FROM runs WHERE id = 1")" = failed ] || fail "size limit, fresh: run not failed"
run history --db "$T/full.db"
expect_rc 0 "size limit, fresh: history"
run elite --show --db "$T/full.db"
expect_rc 0 "size limit, fresh: elite"
# The first failed write stops the run: nothing is evaluated after it (the fake worker's trace), the console's counts
# are the store's, and a generation cut short has no row. EVO_STORE_FAIL_AT=4 makes the 4th result's commit fail.
EVO_STORE_FAIL_AT=4 EVO_FAKE_TRACE=$T/trace-fail EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/fail4.db" --gpus 0
expect_rc 1 "the 4th write fails"
expect_err_has "evo: $T/fail4.db: disk full (EVO_STORE_FAIL_AT=4: write 4 made to fail); the failed write was rolled back; run 1 stopped at that write: 3 evaluations of generation 0 stored before it" "the 4th write fails"
expect_out_has "gen  0 (1 of 3)  stopped at the first write that failed: 3 evaluated and stored" "the 4th write fails: console"
t [ "$(count "$T/fail4.db")" = 3 ] || fail "the 4th write fails: $(count "$T/fail4.db") evaluations stored, want 3"
t [ "$(wc -l <"$T/trace-fail")" = 4 ] || fail "the 4th write fails: $(wc -l <"$T/trace-fail") candidates evaluated, want 4 (3 stored, the 4th not)"
t [ "$(db scalar "$T/fail4.db" "SELECT count(*) FROM generations")" = 0 ] || fail "the 4th write fails: a generation row"
t [ "$(db scalar "$T/fail4.db" "SELECT state FROM runs WHERE id = 1")" = failed ] || fail "the 4th write fails: run not failed"
# Under a file size limit the console's counts equal the store's too.
out=$(cat "$T/full.out")
t [ "$(grep -o 'stopped at the first write that failed: [0-9]* evaluated' <<<"$out" | grep -o '[0-9]*')" = "$(count "$T/full.db" "generation = (SELECT max(generation) FROM evaluations)")" ] ||
  fail "size limit: the console and the store disagree: $out"
# A database with results: every row it had is still there as it was, and a run without the limit then works.
cp "$T/ref.db" "$T/full2.db"
limited 120 run --config "$CFG" --db "$T/full2.db" --seed 9 --generations 8
expect_rc 1 "size limit, populated database"
expect_err_has "evo: $T/full2.db: write failed (disk I/O error)" "size limit, populated"
t [ "$(db quick_check "$T/full2.db")" = ok ] || fail "size limit, populated: quick_check"
db dump "$T/full2.db" >"$T/full2.after"
t no_lost_rows "$T/ref.dump" "$T/full2.after" ||
  fail "size limit, populated: rows lost or changed: $(lost_rows "$T/ref.dump" "$T/full2.after" | head -3)"
EVO_FAKE_WORKER=ok run run --config "$CFG" --db "$T/full2.db" --seed 9 --generations 2
expect_rc 0 "after the size limit: a new run"
t db check_run "$T/full2.db" 3 || fail "after the size limit: structure of the new run"

# Then a file system really full, where one can be made: a 200 KB tmpfs in a user and mount namespace. The
# work directory (cubins, worker logs) is linked elsewhere so that the database is what runs out of room.
if unshare -rm true 2>/dev/null; then
  mkdir "$T/mnt" "$T/mnt-work"
  unshare -rm bash -c '
    mount -t tmpfs -o size=400k tmpfs "$1/mnt" || exit 99
    ln -s "$1/mnt-work" "$1/mnt/full.db.work"
    EVO_FAKE_WORKER=ok "$2" run --config "$3" --db "$1/mnt/full.db" --seed 9 --generations 20 >"$1/out" 2>"$1/err"
    echo $? >"$1/rc"
    python3 "$4/tests/evo_db.py" quick_check "$1/mnt/full.db" >"$1/qc"
    python3 "$4/tests/evo_db.py" scalar "$1/mnt/full.db" "SELECT count(*) FROM evaluations" >"$1/n"' \
    _ "$T" "$EVO" "$CFG" "$SRC"
  if [ $? = 99 ]; then
    echo "cli_faults: disk-full case on a tmpfs skipped (cannot mount one here)"
  else
    rc=$(cat "$T/rc")
    err=$(cat "$T/err")
    expect_rc 1 "disk full"
    expect_err_has "evo: $T/mnt/full.db: disk full (database or disk is full); the failed write was rolled back" "disk full"
    t [ "$(cat "$T/qc")" = ok ] || fail "disk full: quick_check says $(cat "$T/qc")"
    t [ "$(cat "$T/n")" -ge 1 ] || fail "disk full: nothing was stored before the disk filled"
  fi
else
  echo "cli_faults: disk-full case on a tmpfs skipped (no user namespaces here)"
fi

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "cli_faults: $checks checks passed"
