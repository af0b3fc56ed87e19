#!/usr/bin/env bash
# gpu_ci.sh — everything that needs the GPU, in one call on the GPU host: build, the gpu-labelled tests, a short
# real run on the smoke config, and one generation of the default config (worker start-up and per-candidate
# times). Logs and databases go to $OUT (default ./gpu-logs). Usage: tools/gpu_ci.sh [quick]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
export OUT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
tools/gpu_host.sh build || exit 1
export LD_LIBRARY_PATH=/tmp/evo-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
date -u +%FT%TZ | tee "$OUT/date.txt"
ctest --test-dir build -L gpu --output-on-failure 2>&1 | tee "$OUT/ctest-gpu.log" | tail -40
[ "${1:-}" = quick ] && exit 0
rm -f "$OUT/smoke.db"
build/evo run --config configs/smoke.yaml --generations 2 --db "$OUT/smoke.db" 2>&1 | tee "$OUT/run-smoke.log"
build/evo elite --show --db "$OUT/smoke.db" 2>&1 | head -30
cat "$OUT"/smoke.db.work/*/worker-gpu0.log 2>/dev/null | tail -5
rm -f "$OUT/default.db"
build/evo run --config configs/default.yaml --generations 1 --population 8 --db "$OUT/default.db" 2>&1 | tee "$OUT/run-default.log"
cat "$OUT"/default.db.work/*/worker-gpu0.log 2>/dev/null | tail -5
