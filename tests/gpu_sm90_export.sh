# gpu_sm90_export.sh — a kernel of the sm_90a family exported the way `evo export` writes it (fixture store of a
# configs/hopper.yaml run: FP16 scores and FP16 P·V), built with plain nvcc for sm_90a and self-tested on the GPU:
# every check (odd S, causal on and off, every distribution, both head dims, FP64 reference) must pass and the
# timed shapes must run. The e4m3-P genome's export is self-tested too, against the P-rounding reference: its log
# is printed (the gate refuses that arithmetic on `large`, so its exit status is not asserted).
# Run: bash tests/gpu_sm90_export.sh build/evo .   (ctest -L gpu; skipped without a driver, nvcc or an sm_90 GPU)
set -u
EVO=$(realpath "$1")
FIXTURE=$(dirname "$EVO")/tests/test_export
. "$(dirname "$0")/skip_gpu.sh"
skip_without_driver
skip_unless_sm90 "the sm_90a family"
NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
[ -n "$NVCC" ] || { echo "SKIP: nvcc not found"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
for kind in hopper hopper-p8; do
  "$FIXTURE" --fixture $kind $kind.db >/dev/null || { echo "FAIL: fixture $kind"; fails=$((fails + 1)); continue; }
  "$EVO" export --db $kind.db -o $kind.cu >/dev/null || { echo "FAIL: export $kind"; fails=$((fails + 1)); continue; }
  "$NVCC" -gencode=arch=compute_90a,code=sm_90a -O3 -DEVO_SELFTEST $kind.cu -o $kind-selftest >$kind-nvcc.log 2>&1 ||
    { echo "FAIL: nvcc $kind: $(head -5 $kind-nvcc.log)"; fails=$((fails + 1)); continue; }
  timeout 300 ./$kind-selftest --reps 5 >$kind.log 2>&1
  rc=$?
  [ -n "${OUT:-}" ] && cp $kind.log "$OUT/sm90-export-$kind.log"
  echo "=== $kind: self-test exit $rc"
  grep -E "FAIL|checks|^self-test|passed|failed" $kind.log | head -12
  sed -n '/^shape/,$p' $kind.log | head -8
  if [ $kind = hopper ] && [ $rc -ne 0 ]; then
    echo "FAIL: the self-test of the exported sm_90a kernel (FP16 scores and P·V) did not pass"
    fails=$((fails + 1))
  fi
done
exit $((fails > 0))
