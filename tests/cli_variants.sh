#!/usr/bin/env bash
# cli_variants.sh — every kernel committed to variants/ builds with plain nvcc both ways, for the target its header
# names (`nvcc -arch=sm_90 -c`, or the sm_90a gencode form), and
# with -DEVO_SELFTEST to an executable (running it needs a GPU: see docs/usage.md). Exits 77 (skipped) when nvcc
# is not found. Run: bash tests/cli_variants.sh build/evo .   (ctest runs it)
set -u
SRC=$(realpath "$2")
shopt -s nullglob
files=("$SRC"/variants/*.cu)
if [ ${#files[@]} -eq 0 ]; then
  echo "cli_variants: variants/ holds no exported kernel; 0 passed, 0 failed"
  exit 0
fi
NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
if [ -z "$NVCC" ]; then
  echo "SKIP: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
  exit 77
fi
T=$(mktemp -d /tmp/evo-cli-variants-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
checks=0
i=0
for f in "${files[@]}"; do
  i=$((i + 1))
  mkdir -p "$T/$i" && cp "$f" "$T/$i/"
  g=$T/$i/$(basename "$f")
  # the target the file's header names (-arch=sm_90, or the gencode form for sm_90a's wgmma kernels)
  tgt=$(sed -n 's/^ \*   nvcc \(-[^ ]*\) -O3 -c .*/\1/p' "$f" | head -1)
  [ -n "$tgt" ] || tgt=-arch=sm_90
  ("$NVCC" "$tgt" -O3 -c "$g" -o "$T/$i/k.o" >"$T/$i/obj.log" 2>&1; echo $? >"$T/$i/obj.rc") &
  ("$NVCC" "$tgt" -O3 -DEVO_SELFTEST "$g" -o "$T/$i/selftest" >"$T/$i/selftest.log" 2>&1
   echo $? >"$T/$i/selftest.rc") &
  wait
  for kind in obj selftest; do
    checks=$((checks + 1))
    if [ "$(cat "$T/$i/$kind.rc")" != 0 ]; then
      echo "FAIL: variants/$(basename "$f") does not build ($kind): $(head -20 "$T/$i/$kind.log")" >&2
      fails=$((fails + 1))
    fi
  done
done
echo "$((checks - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
