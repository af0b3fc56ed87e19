#!/usr/bin/env bash
# gpu_host.sh — build evo on a GPU host that has the CUDA toolkit but no package access, then run what is asked.
# The Debian packages evo links (SQLite, cJSON, libyaml) travel in .debs/ (tools/fetch: ../shared/gpu-host/
# fetch-debs.sh .debs on a machine with package access) and are unpacked into a private prefix, never into /.
# Usage: tools/gpu_host.sh build | test | <any command to run with the environment set>
# Logs go to $OUT when it is set (else ./gpu-logs).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
D=/tmp/evo-deps
if [ ! -d $D/usr ]; then
  mkdir -p $D
  for f in .debs/*.deb; do dpkg -x "$f" $D; done
fi
export CMAKE_PREFIX_PATH=$D/usr LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
build() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu \
        -DCMAKE_INCLUDE_PATH=$D/usr/include >"$OUT/cmake.log" 2>&1 &&
    cmake --build build -j "$(nproc)" >>"$OUT/cmake.log" 2>&1
  local rc=$?
  tail -3 "$OUT/cmake.log"
  return $rc
}
case "${1:-build}" in
  build) build ;;
  test) build && ctest --test-dir build --output-on-failure -j4 2>&1 | tee "$OUT/ctest.log" ;;
  *) "$@" ;;
esac
