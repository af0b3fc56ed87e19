#!/usr/bin/env bash
# cli_sm90_rules.sh — attn_sm90_check's register rules hold where ptxas decides: tools/sm90_nvrtc_check (built here)
# compiles with NVRTC for sm_90a a sample of the genomes each measured exception admits — PERSIST with 32 free consumer
# registers under V_PATH 4 and 5, 24 free (28 with QK_MODE 1) for two 64-row consumers under V_PATH 4 and 5, a
# producer of 24 registers (32 with PERSIST 2) that only issues TMA, a producer of 40 converting Q and K beside the
# transpose of V (128- and 256-key tiles only), FP16 scores with PERSIST and a producer warpgroup under V_PATH 3 — and
# every one must compile without spill, stack or serialized wgmma (docs/templates.md; the full runs are
# docs/data/nvrtc-persist-slack-2026-11-29.log, nvrtc-slack24-2026-11-29.log, nvrtc-qk2-transpose-2026-11-29.log,
# nvrtc-tma-producer-2026-11-29.log and nvrtc-qk2-persist-2026-11-29.log). Also: a malformed option is refused with
# exit 2. No GPU needed; exits 77 (skipped) without a C compiler or NVRTC.
# Run: bash tests/cli_sm90_rules.sh build/evo .
set -u
SRC=$(realpath "${2:-.}")
CUDA=${CUDA_HOME:-/usr/local/cuda}
CC=$(command -v cc || command -v gcc || true)
[ -n "$CC" ] || { echo "SKIP: no C compiler"; exit 77; }
[ -f "$CUDA/include/nvrtc.h" ] || { echo "SKIP: NVRTC not found under $CUDA (CUDA_HOME)"; exit 77; }
T=$(mktemp -d /tmp/evo-cli-sm90-rules-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$CC" -std=c11 -O2 -Wall -Werror -I"$SRC/templates" -I"$SRC/tasks/attention_fp8" -I"$CUDA/include" \
  "$SRC/tools/sm90_nvrtc_check.c" "$SRC/tasks/attention_fp8/attn_sm90_host.c" -L"$CUDA/lib64" -lnvrtc \
  -Wl,-rpath,"$CUDA/lib64" -o "$T/check" 2>"$T/cc.log" || fail "building sm90_nvrtc_check: $(cat "$T/cc.log")"

run() { # run NAME EXPECTED-SELECTED ARGS...: the sample compiles clean and selects what the rule admits
  "$T/check" "${@:3}" "$SRC" >"$T/out" 2>&1 || fail "$1: exit $?: $(grep -E '^FAIL|failed' "$T/out" | head -5)"
  grep -q "selected" "$T/out" && grep -Eq "^[0-9]+ compiled, 0 failed or spilled$" "$T/out" ||
    fail "$1: $(tail -3 "$T/out")"
  local sel
  sel=$(sed -n 's/.* legal genomes, \([0-9]*\) selected.*/\1/p' "$T/out")
  [ "$sel" = "$2" ] || fail "$1: $sel genomes selected, want $2 (the rule changed? re-run the full check)"
  echo "ok: $1: $(tail -1 "$T/out")"
}
# PERSIST with 32 to 47 free registers: V_PATH 4 and 5 only (252 at both head dims, one of each but for STAGES)
run "PERSIST, 32-47 free, head dim 128" 136 --d 128 --slack 32,47 --persist --distinct --every 17
# two 64-row consumers, V_PATH 4 and 5, 24 to 31 free (87 at both head dims, one of each but for STAGES)
run "two consumers, 24-31 free, head dim 64" 69 --d 64 --slack 24,31 --distinct --every 7
# FP16 scores beside the transpose of V: a producer of 56 at every tile size (with the transpose's steps unrolled, 40
# spilled at 128- and 256-key tiles too, docs/data/nvrtc-transpose-2026-11-29.log), so none with less is admitted
for v in 0 4; do
  "$T/check" --d 64 --qk 2 --vpath $v --producer-below 56 --every 1000000 "$SRC" >"$T/out" 2>&1
  grep -q " 0 selected" "$T/out" || fail "QK_MODE 2, V_PATH $v, a producer under 56 admitted: $(head -1 "$T/out")"
done
echo "ok: QK_MODE 2 beside the V transpose only with a producer of 56"
# and every such genome at head dim 64 compiles clean (one of each but for STAGES)
run "QK_MODE 2 beside the V transpose, head dim 64" 94 --d 64 --qk 2 --vpath 4 --distinct --every 10
# the TMA-only producer under 56 registers (673 at both head dims before the 24-free rule)
run "TMA-only producer, head dim 64" 480 --d 64 --producer-below 56 --vpath 5 --distinct --every 58
# FP16 scores with PERSIST and a producer warpgroup: V_PATH 3 (and 1) at head dim 64, where the others spill
run "QK_MODE 2 with PERSIST, V_PATH 3, head dim 64" 130 --d 64 --persist --qk 2 --vpath 3 --distinct --every 16
for v in 0 4 5; do # only genomes without a producer warpgroup (PIPE 0 or 1) may remain
  "$T/check" --d 64 --persist --qk 2 --vpath $v --producer-below 1000 --every 1000000 "$SRC" >"$T/out" 2>&1
  grep -q " 0 selected" "$T/out" || fail "V_PATH $v, QK_MODE 2, PERSIST with a producer warpgroup admitted: $(head -1 "$T/out")"
done
echo "ok: QK_MODE 2 with PERSIST and a producer only for V_PATH 1 and 3"
# every genome selected by the slack window is V_PATH 4 or 5: no other path may use PERSIST with under 48 free
for v in 0 1 3; do
  "$T/check" --d 64 --slack 32,47 --persist --vpath $v --every 1000000 "$SRC" >"$T/out" 2>&1
  grep -q " 0 selected" "$T/out" || fail "V_PATH $v with PERSIST and under 48 free registers admitted: $(head -1 "$T/out")"
done
echo "ok: no other V path admitted with PERSIST under 48 free registers"

"$T/check" --slack 5 "$SRC" >"$T/out" 2>&1
[ $? = 2 ] && grep -q -- "--slack takes LO,HI" "$T/out" || fail "--slack 5: $(cat "$T/out")"
"$T/check" --bogus "$SRC" >"$T/out" 2>&1
[ $? = 2 ] && grep -q "usage:" "$T/out" || fail "--bogus: $(cat "$T/out")"
echo "ok: bad options refused with exit 2"
echo "cli_sm90_rules: all passed"
