#!/usr/bin/env bash
# gpu_torch.sh — the quantizer export and the PyTorch ops on a GPU host, in one batch: three quantizer exports
# of chosen genomes (each stored as a run's best by build/tests/test_export --fixture genome, then written by evo
# export: cluster; chained with a separate rotation pass; split) through their
# self-tests, tests/gpu_torch_op.py on ATTENTION.cu + the cluster quantizer, then tools/bench/compare_sdpa.py --rmse.
# Usage: tools/bench/gpu_torch.sh [ATTENTION.cu]   (default variants/attention_fp8-sm_90-e40fd3dd.cu)
#   OUT: logs (default ./gpu-logs, 7 files); PREBUILT: a folder where q_{cluster,chained,split}.cu, their
#   q_*_selftest and libevo_torch.so (attention + cluster quantizer) were built beforehand (saves ~1 min of nvcc);
#   QUICK=1: the chained and split quantizers are checked, not timed.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
ATT=${1:-variants/attention_fp8-sm_90-e40fd3dd.cu}
B=${PREBUILT:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
date -u +%FT%TZ
if [ -z "$B" ]; then
  B=$(mktemp -d /tmp/evo-gpu-torch-XXXXXX)
  qx() { build/tests/test_export --fixture genome "$B/q_$1.db" configs/quantize.yaml "$2" >/dev/null &&
    build/evo export --db "$B/q_$1.db" -o "$B/q_$1.cu" >/dev/null; }
  qx cluster VEC=16,WARPS=16,MODE=2,CLUSTER=8,KEEP=16,UNROLL=2,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=1 || exit 1
  qx chained VEC=16,WARPS=8,MODE=1,CLUSTER=1,KEEP=0,UNROLL=4,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=0,SLACK=2 || exit 1
  qx split VEC=32,WARPS=4,MODE=0,CLUSTER=1,KEEP=0,UNROLL=2,ITERS=4,CVT=1,CACHE=0,FUSED_ROT=1,SLACK=1 || exit 1
  for g in cluster chained split; do
    nvcc -arch=sm_90 -O3 -DEVO_SELFTEST "$B/q_$g.cu" -o "$B/q_${g}_selftest" &
  done
  nvcc -arch=sm_90 -O3 -Xcompiler -fPIC -c "$ATT" -o "$B/attn.o" &
  nvcc -arch=sm_90 -O3 -Xcompiler -fPIC -c "$B/q_cluster.cu" -o "$B/q_cluster.o" &
  wait
  nvcc -arch=sm_90 -shared "$B/attn.o" "$B/q_cluster.o" -o "$B/libevo_torch.so"
fi
selftest() {
  local g=$1; shift
  echo "=== quantizer self-test: $g $* $(date -u +%T)"
  timeout 120 "$B/q_${g}_selftest" "$@" >"$OUT/qselftest-$g.log" 2>&1
  echo "exit $?"
  grep -E "^genome|FAIL|launcher|self-test" "$OUT/qselftest-$g.log" | head -8
  sed -n '/^shape/,$p' "$OUT/qselftest-$g.log" | head -12
}
selftest cluster --reps 20
echo "=== PyTorch ops $(date -u +%T)"
EVO_TORCH_LIB=$B/libevo_torch.so timeout 300 python3 tests/gpu_torch_op.py "$ATT" "$B/q_cluster.cu" --out "$OUT" \
  --quick 2>&1 | tee "$OUT/gpu_torch_op.log" | grep -vE "^  [a-z0-9_]+\([0-9,]+\) +(float16|bfloat16)" | tail -60
echo "=== RMSE on outlier inputs $(date -u +%T)"
timeout 120 python3 tools/bench/compare_sdpa.py "$ATT" --lib "$B/libevo_torch.so" --rmse --seeds 2 --out "$OUT" 2>&1 |
  grep -E "^\||RMSE|device|wrote" | tail -12
selftest chained ${QUICK:+--check-only}
selftest split ${QUICK:+--check-only}
date -u +%FT%TZ
