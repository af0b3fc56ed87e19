#!/usr/bin/env bash
# cli_export_nvcc.sh — kernels exported from the fixture stores (e4m3 and u8sim, two head dims each, and a kernel of
# the sm_90a family from a configs/hopper.yaml run) build with plain nvcc, without evo or its templates: as an
# object (-c), as the self-test executable (-DEVO_SELFTEST) and as the shared library tools/bench/compare_sdpa.py loads
# (its three extern "C" symbols present), with no compiler warning; each with the nvcc target its header names.
# Exits 77 (skipped) when nvcc is not found. Run: bash tests/cli_export_nvcc.sh build/evo .   (ctest runs it)
set -u
EVO=$(realpath "$1")
FIXTURE=$(dirname "$EVO")/tests/test_export
NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
if [ -z "$NVCC" ]; then
  echo "SKIP: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
  exit 77
fi
T=$(mktemp -d /tmp/evo-cli-export-nvcc-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# build NAME ARGS...: nvcc in the background with the target the file's header names ($TARGET), output in NAME.log
build() { local name=$1; shift; ("$NVCC" $TARGET -O3 "$@" >"$name.log" 2>&1; echo $? >"$name.rc") & }

for fmt in e4m3 u8sim hopper; do
  "$FIXTURE" --fixture $fmt $fmt.db >/dev/null || fail "fixture $fmt"
  "$EVO" export --db $fmt.db -o $fmt.cu >/dev/null 2>&1 || fail "export $fmt"
  TARGET=$(sed -n 's/^ \*   nvcc \(-[^ ]*\) -O3 -c .*/\1/p' $fmt.cu | head -1)
  want=-arch=sm_90; [ $fmt = hopper ] && want=-gencode=arch=compute_90a,code=sm_90a
  checks=$((checks + 1)); [ "$TARGET" = "$want" ] || fail "$fmt.cu names nvcc target '$TARGET', not $want"
  # only the file itself: a copy in an empty directory, so no header next to it can be found
  mkdir -p alone && cp $fmt.cu alone/
  build $fmt-obj -c alone/$fmt.cu -o $fmt.o
  build $fmt-selftest -DEVO_SELFTEST alone/$fmt.cu -o $fmt-selftest
  build $fmt-so -shared -Xcompiler -fPIC alone/$fmt.cu -o lib$fmt.so
done
wait
for fmt in e4m3 u8sim hopper; do
  for kind in obj selftest so; do
    checks=$((checks + 1))
    [ "$(cat $fmt-$kind.rc)" = 0 ] || fail "nvcc $fmt $kind: $(head -20 $fmt-$kind.log)"
    checks=$((checks + 1))
    ! grep -qi "warning" $fmt-$kind.log || fail "nvcc $fmt $kind warns: $(grep -i warning $fmt-$kind.log | head -5)"
  done
  checks=$((checks + 1)); [ -x $fmt-selftest ] || fail "$fmt: no self-test executable"
  for sym in evo_attention_forward evo_attention_genome evo_attention_format; do
    checks=$((checks + 1))
    nm -D --defined-only lib$fmt.so 2>/dev/null | grep -q " T $sym$" || fail "lib$fmt.so does not export $sym"
  done
  checks=$((checks + 1))
  if [ $fmt = hopper ]; then
    nm -C --defined-only $fmt.o 2>/dev/null | grep -q "evo_attn_sm90<64, 64, 2, 64, 3, 2, 2, 1, 1, 0, 0, 56, 0, 0>" ||
      fail "$fmt.o lacks the D=64 instantiation of the sm_90a family"
  else
    nm -C --defined-only $fmt.o 2>/dev/null | grep -q "evo_attn_fwd<64, $([ $fmt = e4m3 ] && echo 0 || echo 1), 128, 64, 4" ||
      fail "$fmt.o lacks the D=64 instantiation"
  fi
done

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "$checks checks passed"
