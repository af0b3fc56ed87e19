#!/usr/bin/env bash
# quantize_build.sh — builds tools/bench/quantize_bench.cu twice: the harness binary and the shared library that
# tools/bench/compare_quantize.py loads (ctypes), with the CPU reference linked in.
# Usage: tools/bench/quantize_build.sh [OUTDIR] [ARCH]      (defaults: build/quantize, sm_90; needs nvcc and gcc)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/quantize}
arch=${2:-sm_90}
mkdir -p "$out"
inc=(-Itasks/quantize_fp8 -Iengine/core -Itasks/attention_fp8 -Itemplates)
for f in tasks/quantize_fp8/quantize_ref.c engine/core/numerics.c engine/core/evo.c; do
  gcc -O2 -std=c11 -fPIC -D_GNU_SOURCE -Wall -Wextra -Werror "${inc[@]}" -c "$f" -o "$out/$(basename "${f%.c}").o"
done
objs=("$out/quantize_ref.o" "$out/numerics.o" "$out/evo.o")
nv=(nvcc -O2 -std=c++17 -arch="$arch" "${inc[@]}" -Xcompiler -fPIC -Xptxas -warn-spills)
"${nv[@]}" tools/bench/quantize_bench.cu "${objs[@]}" -o "$out/quantize_bench" &
"${nv[@]}" -DQB_LIB -shared tools/bench/quantize_bench.cu "${objs[@]}" -o "$out/libquantize_bench.so" &
wait %1 && wait %2
echo "built $out/quantize_bench and $out/libquantize_bench.so ($arch)"
