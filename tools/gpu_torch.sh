#!/usr/bin/env bash
# gpu_torch.sh — the quantizer export and the PyTorch ops on a GPU host, in one batch: three quantizer exports
# (cluster: tools/quantize_export.py's default genome; chained with a separate rotation pass; split) through their
# self-tests, tests/gpu_torch_op.py on ATTENTION.cu + the cluster quantizer, then tools/compare_sdpa.py --rmse.
# Usage: tools/gpu_torch.sh [ATTENTION.cu]   (default variants/attention_fp8-sm_90-e40fd3dd.cu)
#   OUT: logs (default ./gpu-logs, 7 files); PREBUILT: a folder where q_{cluster,chained,split}.cu, their
#   q_*_selftest and libevo_torch.so (attention + cluster quantizer) were built beforehand (saves ~1 min of nvcc);
#   QUICK=1: the chained and split quantizers are checked, not timed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
ATT=${1:-variants/attention_fp8-sm_90-e40fd3dd.cu}
B=${PREBUILT:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
date -u +%FT%TZ
if [ -z "$B" ]; then
  B=$(mktemp -d /tmp/evo-gpu-torch-XXXXXX)
  python3 tools/quantize_export.py -o "$B/q_cluster.cu" >/dev/null
  python3 tools/quantize_export.py -o "$B/q_chained.cu" >/dev/null \
    --knobs vec=16,warps=8,mode=1,cluster=1,keep=0,unroll=4,iters=1,cvt=1,cache=1,fused_rot=0,slack=2
  python3 tools/quantize_export.py -o "$B/q_split.cu" >/dev/null \
    --knobs vec=32,warps=4,mode=0,cluster=1,keep=0,unroll=2,iters=4,cvt=1,cache=0,fused_rot=1,slack=0
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
timeout 120 python3 tools/compare_sdpa.py "$ATT" --lib "$B/libevo_torch.so" --rmse --seeds 2 --out "$OUT" 2>&1 |
  grep -E "^\||RMSE|device|wrote" | tail -12
selftest chained ${QUICK:+--check-only}
selftest split ${QUICK:+--check-only}
date -u +%FT%TZ
