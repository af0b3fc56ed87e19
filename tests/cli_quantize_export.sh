#!/usr/bin/env bash
# cli_quantize_export.sh — quantizers written by `evo export` (the export of the quantize_fp8 task: ABI, template,
# genome section, tasks/quantize_fp8/quantize_export_harness.cu) for chosen genomes of configs/quantize.yaml (each
# stored by the fixture maker as a finished run's best) build with plain nvcc and no warning: a cluster genome as the
# shared library (its five extern "C" symbols present), a chained genome with a separate rotation pass
# (FUSED_ROT=0: an evo_quant_rotate beside each rotated class) and a resident (mode 4: dynamic shared memory,
# cooperative launch) with their self-tests; a split genome has its absmax pass (test_quantize_nvrtc compiles every
# mode); the self-test's CPU reference equals quantize_ref.c bit for bit; a genome without every knob is refused
# naming the knob.
# Exits 77 (skipped) when nvcc is not found. Run: bash tests/cli_quantize_export.sh build/evo .
set -u
EVO=$(realpath "$1")
SRC=$(realpath "$2")
FIXTURE=$(dirname "$EVO")/tests/test_export
[ -x "$FIXTURE" ] || { echo "cli_quantize_export: fixture maker $FIXTURE not built" >&2; exit 1; }
NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
if [ -z "$NVCC" ]; then
  echo "SKIP: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
  exit 77
fi
T=$(mktemp -d /tmp/evo-cli-qexport-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# qx NAME GENOME: the genome stored as a run's best, then exported by evo to NAME.cu
qx() {
  "$FIXTURE" --fixture genome "$1.db" "$SRC/configs/quantize.yaml" "$2" >"$1.key" 2>"$1.err" &&
    "$EVO" export --db "$1.db" -o "$1.cu" >/dev/null 2>>"$1.err"
}

qx cluster VEC=16,WARPS=16,MODE=2,CLUSTER=8,KEEP=16,UNROLL=2,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=1 ||
  fail "export cluster: $(cat cluster.err)"
qx chained VEC=16,WARPS=8,MODE=1,CLUSTER=1,KEEP=0,UNROLL=4,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=0,SLACK=2 ||
  fail "export chained: $(cat chained.err)"
qx split VEC=32,WARPS=4,MODE=0,CLUSTER=1,KEEP=0,UNROLL=2,ITERS=4,CVT=1,CACHE=0,FUSED_ROT=1,SLACK=1 ||
  fail "export split: $(cat split.err)"
qx resident VEC=32,WARPS=8,MODE=4,CLUSTER=1,KEEP=0,UNROLL=1,ITERS=4,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=1 ||
  fail "export resident: $(cat resident.err)"
checks=$((checks + 1))
"$FIXTURE" --fixture genome bad.db "$SRC/configs/quantize.yaml" VEC=16,WARPS=8 >bad.out 2>&1
[ $? = 2 ] && grep -q "MODE" bad.out || fail "missing knobs: want exit 2 naming MODE, got: $(cat bad.out)"
# chained (FUSED_ROT=0): head dims 64 and 128, fp16 and bf16, rotation off and on: 8 main kernels, and a separate
# rotation pass for each of the 4 rotated classes
checks=$((checks + 2))
n=$(grep -c "^template __global__ void evo_quant<" chained.cu)
[ "$n" = 8 ] || fail "chained.cu: $n main instantiations, want 8"
n=$(grep -c "^template __global__ void evo_quant_rotate<" chained.cu)
[ "$n" = 4 ] || fail "chained.cu: $n rotation passes, want 4 (one per rotated class: FUSED_ROT=0)"
checks=$((checks + 2))
grep -q "evo_quant_absmax<128,0,1,32,4,0," split.cu || fail "split.cu lacks its absmax pass"
! grep -q "^template __global__ void evo_quant_rotate<" cluster.cu || fail "cluster.cu (FUSED_ROT=1) has a separate rotation pass"

# EVO_TEST_NO_NVCC=1 (tools/test.sh's sanitizer run): the exports above are evo's code and were checked; the builds
# below are nvcc's time, spent once in the release run
if [ "${EVO_TEST_NO_NVCC:-0}" = 1 ]; then
  [ "$fails" -gt 0 ] && { echo "$fails of $checks checks failed" >&2; exit 1; }
  echo "$checks checks passed (exports only: EVO_TEST_NO_NVCC=1)"
  exit 0
fi
build() { local name=$1; shift; ("$NVCC" -arch=sm_90 -O3 "$@" >"$name.log" 2>&1; echo $? >"$name.rc") & }
build so -shared -Xcompiler -fPIC cluster.cu -o libq.so
build chained -DEVO_SELFTEST chained.cu -o chained-selftest
build resident -DEVO_SELFTEST resident.cu -o resident-selftest
for f in tasks/quantize_fp8/quantize_ref.c engine/core/numerics.c engine/core/evo.c; do
  gcc -O2 -std=c11 -D_GNU_SOURCE -I"$SRC/tasks/quantize_fp8" -I"$SRC/engine/core" -I"$SRC/tasks/attention_fp8" -I"$SRC/templates" -c "$SRC/$f" \
    -o "$(basename "${f%.c}").o" || fail "gcc $f"
done
build refcheck -DEVO_SELFTEST -DEVO_QX_FILE="\"$T/chained.cu\"" -I"$SRC/tasks/quantize_fp8" -I"$SRC/engine/core" -I"$SRC/tasks/attention_fp8" \
  -I"$SRC/templates" "$SRC/tests/quantize_export_refcheck.cu" quantize_ref.o numerics.o evo.o -o refcheck
wait
for name in so chained resident refcheck; do
  checks=$((checks + 2))
  [ "$(cat $name.rc)" = 0 ] || fail "nvcc $name: $(head -20 $name.log)"
  ! grep -qi "warning" $name.log || fail "nvcc $name warns: $(grep -i warning $name.log | head -5)"
done
for sym in evo_quantize_forward evo_quantize_forward_multi evo_quantize_scratch_bytes evo_quantize_scratch_zero_bytes \
  evo_quantize_genome; do
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
