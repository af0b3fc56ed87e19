#!/usr/bin/env bash
# cli_quantize_dispatch.sh — `evo export --dispatch` of the quantize_fp8 task on a fixture whose per-shape winners
# differ (test_export --fixture genomes: a mode 3 genome wins every unrotated shape of configs/quantize.yaml, a mode 7
# genome that keeps the rotated floats wins the rotated one): the buckets (rotation, size class), the entries and
# their kernels in the file, each kernel instantiated once; a PyTorch package of it lists each class once; the
# launcher's choice (the file's own pick_entry,
# compiled for the host by nvcc and run without a GPU) for calls in a bucket, between buckets and of a rotation no
# bucket has; a single export picks its one genome; the file and its self-test build with plain nvcc. Without nvcc
# the builds are skipped and the rest still runs. Run: bash tests/cli_quantize_dispatch.sh build/evo .
set -u
EVO=$(realpath "$1")
SRC=$(realpath "$2")
FIXTURE=$(dirname "$EVO")/tests/test_export
[ -x "$FIXTURE" ] || { echo "cli_quantize_dispatch: fixture maker $FIXTURE not built" >&2; exit 1; }
T=$(mktemp -d /tmp/evo-cli-qdispatch-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
has() { checks=$((checks + 1)); grep -qF -- "$3" "$2" || fail "$1: $2 lacks '$3'"; }

M3=VEC=32,WARPS=8,MODE=3,CLUSTER=1,KEEP=0,UNROLL=4,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=4
M7=VEC=32,WARPS=4,MODE=7,CLUSTER=1,KEEP=1,UNROLL=2,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=2
# timed shapes of configs/quantize.yaml, in order: big, long64, stress, big_rot, big_bf16
"$FIXTURE" --fixture genomes q.db "$SRC/configs/quantize.yaml" "$M3" 1.30:1.20:1.40:1.05:1.25 "$M7" 1.20:1.10:1.30:1.20:1.20 \
  >keys 2>fixture.err || { echo "FAIL: fixture: $(cat fixture.err)" >&2; exit 1; }

checks=$((checks + 1))
"$EVO" export --dispatch --db q.db >out.txt 2>err.txt || fail "export --dispatch: $(cat err.txt)"
D=variants/quantize_fp8-sm_90-dispatch.cu
has "summary" out.txt "wrote variants/quantize_fp8-sm_90-dispatch.cu: 4 buckets, 2 kernels (accuracy class exact)"
has "bucket stress" out.txt "plain, 2^21+1..2^22 elements             entry 0"
has "bucket rotated" out.txt "rotated, 2^24+1..2^25 elements           entry 1"
has "entries" $D "#define EVO_EXPORT_ENTRIES 2"
has "genome define" $D "#define EVO_EXPORT_GENOME \"dispatch of 2: $M3 | $M7\""
has "entry 0 knobs" $D "{{32, 8, 3, 1, 0, 4, 1, 1, 1, 1, 4}, \"$M3\""
has "entry 1 knobs" $D "{{32, 4, 7, 1, 1, 2, 1, 1, 1, 1, 2}, \"$M7\""
has "bucket rows" $D "    {0, 22, 0},"
has "bucket rows" $D "    {1, 25, 1},"
has "entry 1 row" $D "    {128, 0, 1, evo_quant<128,0,1,32,4,7,1,1,2,1,1,1,1>, NULL, NULL, 1},"
has "n_buckets" $D "static const int n_buckets = 4;"
checks=$((checks + 2))
n=$(grep -c "^template __global__ void evo_quant<" $D)
[ "$n" = 16 ] || fail "$D: $n instantiations, want 16 (two genomes x head dims 64, 128 x fp16, bf16 x rotation)"
n=$(grep "^template __global__ void evo_quant<" $D | sort | uniq -d | wc -l)
[ "$n" = 0 ] || fail "$D: $n kernels instantiated twice"

# a single export holds one entry and no bucket
checks=$((checks + 1))
"$EVO" export --db q.db -o single.cu >/dev/null 2>err2.txt || fail "export single: $(cat err2.txt)"
has "single entries" single.cu "#define EVO_EXPORT_ENTRIES 1"
has "single buckets" single.cu "static const int n_buckets = 0;"

# a PyTorch package of an attention file and the dispatching quantizer: each (head dim, dtype, rotation) once
checks=$((checks + 1))
"$EVO" export --torch pkg --kernel "$SRC/variants/attention_fp8-sm_90-dispatch-fp8.cu" --quantizer $D >torch.out \
  2>torch.err || fail "export --torch with the dispatching quantizer: $(cat torch.err)"
has "torch variants" pkg/evo_fp8.py 'QUANT_VARIANTS = "64:fp16:0,64:fp16:1,64:bf16:0,64:bf16:1,128:fp16:0,128:fp16:1,128:bf16:0,128:bf16:1"'
has "torch genome" pkg/evo_fp8.py "QUANT_GENOME = \"dispatch of 2: $M3 | $M7\""

NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
if [ -n "$NVCC" ] && [ "${EVO_TEST_NO_NVCC:-0}" != 1 ]; then
  # the launcher's choice, from the file itself: host code, no GPU needed
  cat >pick.cu <<'EOF'
#include "dispatch.cu"
#include <cstdio>
int main()
{
    const struct { int rot; unsigned long long n; } c[] = {
        {0, 4ull * 8 * 2048 * 64}, {0, 1ull << 24}, {0, 4ull * 16 * 4096 * 128}, {1, 4ull * 16 * 4096 * 128},
        {0, 100}, {0, 1ull << 23}, {0, 3ull << 25}, {1, 77}, {1, 1ull << 30}};
    for (const auto &x : c) printf("%d ", evo_export::pick_entry(x.rot, x.n));
    evo_export::forced_entry = 1;
    printf("%d\n", evo_export::pick_entry(0, 1ull << 22));
    return 0;
}
EOF
  cp $D dispatch.cu
  checks=$((checks + 1))
  if "$NVCC" -arch=sm_90 -std=c++17 pick.cu -o pick >pick.log 2>&1; then
    got=$(./pick)
    # in a bucket: 0 0 0 1; below every class: the smallest plain bucket; 2^23 between 22 and 24: the smaller;
    # 3 x 2^25 (q, k, v): the nearest, 25; rotated calls of any size: the rotated bucket; forced: 1
    [ "$got" = "0 0 0 1 0 0 0 1 1 1" ] || fail "pick_entry: got '$got', want '0 0 0 1 0 0 0 1 1 1'"
  else
    fail "pick.cu does not build: $(head -5 pick.log)"
  fi
  checks=$((checks + 1))
  "$NVCC" -arch=sm_90 -O3 -DEVO_SELFTEST $D -o selftest >st.log 2>&1 || fail "self-test build: $(head -5 st.log)"
  checks=$((checks + 1))
  ! grep -q "warning" st.log || fail "self-test build warns: $(grep -m3 warning st.log)"
else
  echo "nvcc not found (or EVO_TEST_NO_NVCC=1): the builds are skipped"
fi

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed"
  exit 1
fi
echo "$checks checks passed"
