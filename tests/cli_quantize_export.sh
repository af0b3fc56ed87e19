#!/usr/bin/env bash
# cli_quantize_export.sh — quantizers assembled by tools/quantize_export.py (the export of the quantize_fp8 task:
# ABI, template, genome section, tasks/quantize_fp8/quantize_export_harness.cu) build with plain nvcc and no warning:
# a cluster genome as the shared library (its four extern "C" symbols present), a chained genome with a separate
# rotation pass, a split genome and a resident (mode 4: dynamic shared memory, cooperative launch) with their
# self-tests; the self-test's CPU reference equals quantize_ref.c bit
# for bit; bad knobs are refused. Exits 77 (skipped) when nvcc is not found. Run: bash tests/cli_quantize_export.sh build/evo .
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
SRC=$(realpath "$2")
NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
if [ -z "$NVCC" ]; then
  echo "cli_quantize_export: skipped: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
  exit 77
fi
T=$(mktemp -d /tmp/evo-cli-qexport-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
qx() { python3 "$SRC/tools/quantize_export.py" "$@"; }

qx -o cluster.cu >/dev/null || fail "assemble cluster"
qx -o chained.cu --head-dims 64 --dtypes bf16 \
   --knobs vec=16,warps=8,mode=1,cluster=1,keep=0,unroll=4,iters=1,cvt=1,cache=1,fused_rot=0,slack=2 >/dev/null ||
  fail "assemble chained"
qx -o split.cu --head-dims 128 --dtypes fp16 --rotate 1 \
   --knobs vec=32,warps=4,mode=0,cluster=1,keep=0,unroll=2,iters=4,cvt=1,cache=0,fused_rot=1,slack=0 >/dev/null ||
  fail "assemble split"
qx -o one.cu --head-dims 64 --dtypes fp16 --rotate 0 >/dev/null || fail "assemble one"
qx -o resident.cu --head-dims 128 --dtypes fp16,bf16 --rotate 1 \
   --knobs vec=32,warps=8,mode=4,cluster=1,keep=0,unroll=1,iters=4,cvt=1,cache=1,fused_rot=1,slack=1 >/dev/null ||
  fail "assemble resident"
checks=$((checks + 1))
qx -o bad.cu --knobs vec=16,warps=8 >bad.out 2>&1
[ $? = 2 ] && grep -q "missing mode" bad.out || fail "missing knobs: want exit 2 naming them, got: $(cat bad.out)"
checks=$((checks + 1))
n=$(grep -c "^template __global__ void" chained.cu)
[ "$n" = 3 ] || fail "chained.cu: $n instantiations, want 3 (main x 2, rotate pass x 1)"
checks=$((checks + 1))
grep -q "evo_quant_absmax<128,0,1,32,4,0," split.cu || fail "split.cu lacks its absmax pass"

build() { local name=$1; shift; ("$NVCC" -arch=sm_90 -O3 "$@" >"$name.log" 2>&1; echo $? >"$name.rc") & }
build so -shared -Xcompiler -fPIC cluster.cu -o libq.so
build chained -DEVO_SELFTEST chained.cu -o chained-selftest
build split -DEVO_SELFTEST -c split.cu -o split.o
build resident -DEVO_SELFTEST resident.cu -o resident-selftest
for f in tasks/quantize_fp8/quantize_ref.c engine/core/numerics.c engine/core/evo.c; do
  gcc -O2 -std=c11 -D_GNU_SOURCE -I"$SRC/tasks/quantize_fp8" -I"$SRC/engine/core" -I"$SRC/tasks/attention_fp8" -I"$SRC/templates" -c "$SRC/$f" \
    -o "$(basename "${f%.c}").o" || fail "gcc $f"
done
build refcheck -DEVO_SELFTEST -DEVO_QX_FILE="\"$T/one.cu\"" -I"$SRC/tasks/quantize_fp8" -I"$SRC/engine/core" -I"$SRC/tasks/attention_fp8" \
  -I"$SRC/templates" "$SRC/tests/quantize_export_refcheck.cu" quantize_ref.o numerics.o evo.o -o refcheck
wait
for name in so chained split resident refcheck; do
  checks=$((checks + 2))
  [ "$(cat $name.rc)" = 0 ] || fail "nvcc $name: $(head -20 $name.log)"
  ! grep -qi "warning" $name.log || fail "nvcc $name warns: $(grep -i warning $name.log | head -5)"
done
for sym in evo_quantize_forward evo_quantize_scratch_bytes evo_quantize_scratch_zero_bytes evo_quantize_genome; do
  checks=$((checks + 1))
  nm -D --defined-only libq.so 2>/dev/null | grep -q " T $sym$" || fail "libq.so does not export $sym"
done
checks=$((checks + 1))
out=$(./refcheck 2>&1)
[ $? = 0 ] && grep -q "^0 of [0-9]* differ$" <<<"$out" || fail "harness reference vs quantize_ref.c: $out"

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "$checks checks passed"
