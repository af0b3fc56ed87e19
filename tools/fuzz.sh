#!/usr/bin/env bash
# fuzz.sh — build the libFuzzer harnesses of tests/fuzz (clang, ASan + UBSan) and run each for SECONDS with a seed
# corpus made from the repository's configs, genomes and constraints; prints executions and findings per harness.
# Usage: tools/fuzz.sh [SECONDS] [config|genome|expr ...]   (default: 60 seconds, all three)
# Env: FUZZ_BUILD (build directory, default build/fuzz), FUZZ_JOBS (harnesses run at once, default 1).
# Findings (crash-*, leak-*, timeout-*, oom-*) land in $FUZZ_BUILD/artifacts/HARNESS/; exit 1 when there are any.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
SECONDS_EACH=${1:-60}
shift $(($# > 0 ? 1 : 0))
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(config genome expr)
B=$(realpath -m "${FUZZ_BUILD:-build/fuzz}")
JOBS=${FUZZ_JOBS:-1}

command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (Debian: apt-get install clang)" >&2; exit 2; }
cmake -S "$SRC" -B "$B" -DCMAKE_C_COMPILER=clang -DEVO_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$B.cmake.log" 2>&1 ||
  { cat "$B.cmake.log" >&2; exit 1; }
targets=()
for h in "${HARNESSES[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$B" -j"$(nproc)" --target "${targets[@]}" >"$B.build.log" 2>&1 || { tail -40 "$B.build.log" >&2; exit 1; }

# Seeds: every config in the repository; the genomes they name (with the fixed space's two extra knobs); their
# constraints, one per file.
seeds=$B/seeds
rm -rf "$seeds"
mkdir -p "$seeds/config" "$seeds/genome" "$seeds/expr"
yamls=("$SRC"/configs/*.yaml "$SRC"/tests/data/*.yaml "$SRC"/tests/data/config/*.yaml)
cp "${yamls[@]}" "$seeds/config/"
i=0
grep -ho 'TILE_M=[^"]*' "${yamls[@]}" | sort -u | while read -r g; do
  i=$((i + 1))
  printf '%s' "$g,OFFSET=-7,MODE=mma" >"$seeds/genome/g$i"
  printf '%s' "$g" >"$seeds/genome/short$i"
done
printf '%s' " MODE = wgmma , OFFSET=2147483647,TILE_M=16,TILE_N=32,WARPS_M=1,WARPS_N=1,STAGES=3,SWIZZLE=0,PV_MMA=0,QK_8BIT=1,F16_SMEM=2,MIN_BLOCKS=4,FAST_EXP=0" >"$seeds/genome/spaces"
grep -h '^ *- "' "${yamls[@]}" | sed -e 's/^ *- "//' -e 's/" *\(#.*\)\{0,1\}$//' | sort -u | while read -r c; do
  i=$((i + 1))
  printf '%s' "$c" | sed -e 's/TILE_M/a_/g' -e 's/WARPS_M/b_/g' -e 's/[A-Z][A-Z_0-9]*/C/g' -e 's/a_/A/g' -e 's/b_/B/g' >"$seeds/expr/c$i"
done
printf '%s' 'A in [1, 2, mma] ? -B / (C % 3) : !(A >= 0x7fffffff) || twice' >"$seeds/expr/all"

fuzz_one() {
  local h=$1
  mkdir -p "$B/corpus/$h" "$B/artifacts/$h" "$B/logs"
  "$B/tests/fuzz/fuzz_$h" -max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1 \
    -dict="$SRC/tests/fuzz/$h.dict" -artifact_prefix="$B/artifacts/$h/" "$B/corpus/$h" "$seeds/$h" \
    >"$B/logs/$h.log" 2>&1
}
pids=()
for h in "${HARNESSES[@]}"; do
  fuzz_one "$h" &
  pids+=($!)
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 1; done
done
for p in "${pids[@]}"; do wait "$p"; done

found=0
printf '%-8s %14s %10s %10s %8s  %s\n' harness executions seconds exec/s corpus findings
for h in "${HARNESSES[@]}"; do
  log=$B/logs/$h.log
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
  corpus=$(find "$B/corpus/$h" -type f | wc -l)
  n=$(find "$B/artifacts/$h" -type f | wc -l)
  found=$((found + n))
  printf '%-8s %14s %10s %10s %8s  %s\n' "$h" "${execs:-?}" "${secs:-?}" "$(( ${execs:-0} / (${secs:-1} > 0 ? ${secs:-1} : 1) ))" \
    "$corpus" "$n (see $log)"
done
[ "$found" = 0 ]
