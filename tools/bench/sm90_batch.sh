#!/usr/bin/env bash
# sm90_batch.sh — one GPU-host session for the sm_90a attention family: the correctness grid (a kernel that hangs is
# named and the rest rerun without it), the timing table, and cuDNN FP8 SDPA timed in the same session; logs in $OUT.
#   OUT=/tmp/out bash tools/bench/sm90_batch.sh [all|check|time|cudnn] [extra sm90_bench args...]
# Run from a folder holding sm90_bench (built by nvcc, see tools/bench/sm90_bench.cu; rebuilt here from ./src if it does not
# run), compare_sdpa.py and wheels/ (nvidia-cudnn-frontend).
set -u
OUT=${OUT:-./out}
mkdir -p "$OUT"
what=${1:-all}
shift || true
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
} >"$OUT/env.txt" 2>&1

BIN=./sm90_bench
if ! $BIN --list >/dev/null 2>&1; then
  echo "prebuilt sm90_bench does not run here; building from ./src" | tee -a "$OUT/env.txt"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -DSM90_BASELINE src/sm90_bench.cu \
    src/attention_fp8-sm_90-e40fd3dd.cu src/attn_sm90_host.c -o sm90_bench_here >>"$OUT/env.txt" 2>&1 || exit 1
  BIN=./sm90_bench_here
fi

skip=""
run_with_recovery() { # mode log csv: rerun without a genome that hangs or faults (exit 3/4), at most 6 times
  local mode=$1 log=$2 csv=$3 rc name
  shift 3
  for try in 1 2 3 4 5 6; do
    echo "=== try $try, skipping: ${skip:-none}" >>"$log"
    $BIN "$mode" --skip "$skip" --csv "$csv" "$@" >>"$log" 2>&1
    rc=$?
    name=$(grep -E '^(HANG|ERROR) ' "$log" | tail -1 | cut -d' ' -f2)
    if [ $rc -ne 3 ] && [ $rc -ne 4 ]; then break; fi
    [ -n "$name" ] || break
    skip="${skip:+$skip;}$name"
  done
  echo "=== exit $rc" >>"$log"
}

if [ "$what" = all ] || [ "$what" = check ]; then
  run_with_recovery --check "$OUT/check.log" "$OUT/check.csv" "$@"
fi
if [ "$what" = all ] || [ "$what" = time ]; then
  run_with_recovery --time "$OUT/time.log" "$OUT/time.csv" "$@"
fi
if [ "$what" = all ] || [ "$what" = cudnn ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site wheels/*.whl \
    >"$OUT/cudnn.log" 2>&1
  PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 python3 compare_sdpa.py --peers-only \
    --peers cudnn_fp8 --shapes "4,16,4096,128;1,16,16384,64" --reps 30 --replays 10 --out /tmp/cudnn_out \
    >>"$OUT/cudnn.log" 2>&1
  cp /tmp/cudnn_out/sdpa-peers.md "$OUT/" 2>/dev/null
fi
if [ "$what" = probe ]; then # time the PROBE variants, then Nsight Compute on the genomes named in $PROF
  PROF=${PROF:-"128,64,2,128,2,2,0,1,1,0,24,0;128,64,1,128,2,1,0,0,0,0,24,0"}
  $BIN --time --big-only --no-baseline --filter "${PROBE_FILTER:-128,64,}" --csv "$OUT/probe.csv" >"$OUT/probe.log" 2>&1
  ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters \
    -k regex:evo_attn_sm90 -o /tmp/prof -f $BIN --profile --no-baseline --only "$PROF" >"$OUT/ncu.log" 2>&1
  ncu --import /tmp/prof.ncu-rep --page details >>"$OUT/ncu.log" 2>&1
  ncu --import /tmp/prof.ncu-rep --page source --csv --print-source sass >"$OUT/ncu_source.csv" 2>&1
  grep -E 'probe|128,64,2,128,2,2,0,1,1,0,24,0 ' "$OUT/probe.log" | head -40
  grep -E 'evo_attn_sm90|Duration|Compute \(SM\) Throughput|Issue Slots Busy|Stall|Warp Cycles Per Issued|Tensor|L1/TEX Hit|L2 Hit|Memory Throughput' "$OUT/ncu.log" | head -80
fi
echo "--- summary"
grep -E '^(genome|HANG|ERROR|device)' "$OUT/check.log" 2>/dev/null | head -40
sed -n '/^genome (D,WG_ROWS/,/^$/p' "$OUT/check.log" 2>/dev/null
grep -E 'TFLOP|\(4,16,4096,128\)|\(1,16,16384,64\)' "$OUT/time.log" 2>/dev/null | head -80
grep -E '^\| (4x16|1x16|mission|long|wide|stress|small)' "$OUT/sdpa-peers.md" 2>/dev/null | head -40
