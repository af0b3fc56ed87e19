#!/usr/bin/env bash
# cli_timing.sh — measurement and gate coverage without a GPU: `evo check` runs the compile gate and prints its log
# where there is no driver (exit 1, or 2 when the file does not compile); the fake worker, given a config, reports
# the gate cases of cases.h (the softmax scale 0.07 and S = 4097 of configs/family0.yaml among them); `evo check
# --retime N` summarizes N rounds; `evo run` re-times its elites at the end and `evo elite --show` prints their
# intervals and the re-timing; the store migrates to schema 3 with the replay fixture reading the same.
# Run: bash tests/cli_timing.sh build/evo .
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
T=$(mktemp -d /tmp/evo-cli-timing-XXXXXX)
export EVO_CACHE=$T/cache TMPDIR=$T
trap 'rm -rf "$T"' EXIT

fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
t() { checks=$((checks + 1)); "$@"; }
run() { # run ARGS...: sets $rc, $out, $err
  "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
expect_rc() { t [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1"$'\n'"stdout: $out"$'\n'"stderr: $err"; }
expect_err_has() { t grep -qF -- "$1" <<<"$err" || fail "$2: stderr '$err' lacks '$1'"; }
expect_out_has() { t grep -qF -- "$1" <<<"$out" || fail "$2: stdout lacks '$1'"$'\n'"$out"; }
json() { python3 -c "import json,sys; d=json.load(open('$T/out')); print($1)"; }

# ---- evo check where there is no driver: the compile gate and its log ----
if [ -e /proc/driver/nvidia/version ] || ldconfig -p 2>/dev/null | grep -q libcuda.so.1; then
  echo "no-driver part skipped: this machine has an NVIDIA driver"
else
  run check "$SRC/tests/planted/good.cu" --config "$SRC/tests/data/planted.yaml"
  expect_rc 1 "no driver"
  expect_out_has "tests/planted/good.cu: compiles for sm_90" "no driver"
  expect_out_has "evo_attn_d64" "no driver: kernels"
  expect_out_has "spill stores 0" "no driver: spills"
  expect_out_has "ptxas info    : Used" "no driver: the log"
  expect_err_has "the GPU gates (device resources, correctness, timing) need an NVIDIA GPU" "no driver"
  printf '#include "evo_attention_abi.h"\nextern "C" __global__ void evo_attn_d64(const evo_attn_params p) { int x = ; }\n' \
    >"$T/broken.cu"
  run check "$T/broken.cu" --config "$SRC/tests/data/planted.yaml"
  expect_rc 2 "no driver, compile error"
  expect_err_has "broken.cu does not compile (compile_error)" "no driver, compile error"
  expect_err_has "error: expected an expression" "no driver, compile error"
  run check "$SRC/tests/planted/good.cu" "$T/broken.cu" --config "$SRC/tests/data/planted.yaml" --json
  expect_rc 2 "no driver, two files, one broken"
  expect_err_has "1 of 2 kernel files do not compile" "no driver, two files"
  t [ "$(json 'd[0]["kernels"][0]["spill_store_bytes"]')" = 0 ] || fail "no driver --json: kernels"
fi

# ---- the fake worker reports the gate cases of the config: the second scale, the long sequence ----
export EVO_FAKE_WORKER=ok
run check "$SRC/tests/planted/good.cu" --config "$SRC/configs/family0.yaml" --json
expect_rc 0 "fake check"
t [ "$(json 'd["detail"]["cases"]["axes"]["softmax_scale"]')" = "[0, 0.07]" ] || fail "cases: softmax scales: $out"
t [ "$(json 'd["detail"]["cases"]["axes"]["causal"]')" = "[False, True]" ] || fail "cases: causal: $out"
t [ "$(json 'd["detail"]["cases"]["largest"]["seq"]')" = 4097 ] || fail "cases: longest sequence: $out"
# good.cu serves head dims 64 and 128: each of the 782 correctness cases runs once (160 on timed shapes, 384 extra,
# 238 structural probes)
t [ "$(json 'd["detail"]["cases"]["checked"]')" = 782 ] || fail "cases: count: $out"
t [ "$(json 'round(d["speedup_lo"], 4)')" = 0.993 ] || fail "check: interval: $out"

# ---- --retime N: the rounds and their summary ----
run check "$SRC/tests/planted/good.cu" --config "$SRC/configs/family0.yaml" --retime 4
expect_rc 0 "retime"
expect_out_has "re-timed 4 times in one worker" "retime"
expect_out_has "fitness mean 1.0503, CV 0.096 %; worst shape spread +-0.10 %; timing cost per candidate 0.020 s" \
  "retime summary"
run check "$SRC/tests/planted/good.cu" --config "$SRC/configs/family0.yaml" --retime 4 --json
t [ "$(json 'd["retime_summary"]["rounds"]')" = 4 ] || fail "retime --json: rounds"
t [ "$(json 'len(d["detail"]["retime"]["rounds"])')" = 4 ] || fail "retime --json: detail rounds"
run check "$SRC/tests/planted/good.cu" --config "$SRC/configs/family0.yaml" --retime 0
expect_rc 2 "retime 0"
expect_err_has "--retime: '0' is not a count from 1 to 100" "retime 0"

# ---- --genome: a genome of the config's space through the same gates ----
G="TILE_M=64,TILE_N=128,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=1,BIG_TILE_M=128,BIG_TILE_N=64"
run check --config "$SRC/configs/presets.yaml" --genome "$G" --retime 2
expect_rc 0 "--genome"
expect_out_has "genome $G: OK on fake" "--genome"
expect_out_has "re-timed 2 times in one worker" "--genome --retime"
run check --config "$SRC/configs/presets.yaml" --genome "$G" "$SRC/tests/planted/good.cu"
expect_rc 2 "--genome with a file"
expect_err_has "--genome checks a genome instead of files" "--genome with a file"
run check --config "$SRC/configs/presets.yaml" --genome "TILE_M=7"
expect_rc 2 "--genome bad"
expect_err_has "check: --genome:" "--genome bad"

# ---- a run re-times its elites at the end; evo elite --show has their intervals and the re-timing ----
run run --config "$SRC/tests/data/faults.yaml" --db "$T/run.db" --generations 2
expect_rc 0 "run"
expect_out_has "elites re-timed at the end of run (baseline re-timed first), fitness [95% interval]:" "run: end"
expect_out_has "rank order kept: no swap beyond the noise" "run: rank order"
t [ "$(python3 "$SRC/tests/evo_db.py" scalar "$T/run.db" "SELECT count(*) FROM retimes WHERE why = 'end of run'")" = 1 ] ||
  fail "run: the re-timing is not stored"
t [ "$(python3 "$SRC/tests/evo_db.py" scalar "$T/run.db" "SELECT fitness_lo < fitness AND fitness < fitness_hi FROM evaluations WHERE verdict = 'OK' LIMIT 1")" = 1 ] ||
  fail "run: no fitness interval stored"
run elite --show --db "$T/run.db"
expect_rc 0 "elite --show"
expect_out_has "±0.71%" "elite --show: the interval"
expect_out_has "re-timed (end of run, run 1 generation 1): 1.000x [0.993..1.007]" "elite --show: the re-timing"
expect_out_has "95% interval µs" "elite --show: per-shape intervals"
unset EVO_FAKE_WORKER

# ---- an older store (the replay fixture, schema 1): the same elites read-only and after migrating ----
cp "$SRC/tests/data/replay-v1.db" "$T/old.db"
"$EVO" elite --show --db "$T/old.db" --json >"$T/before.json" 2>&1 || fail "old store read-only"
run run --replay "$SRC/tests/data/replay.db" --config "$SRC/tests/data/replay-space.yaml" --db "$T/old.db" \
  --generations 1 --population 4
expect_rc 0 "migrating run on the old store"
python3 - "$T/before.json" "$T/old.db" "$EVO" <<'PY' || fail "old store: elites changed by the migration"
import json, subprocess, sys
before = json.load(open(sys.argv[1]))
after = json.loads(subprocess.run([sys.argv[3], "elite", "--show", "--json", "--db", sys.argv[2], "--top", "3"],
                                  capture_output=True, text=True).stdout)
key = lambda e: (e["key"], e["fitness"], [s["median_us"] for s in e["shapes"]])
assert [key(e) for e in before][:3] == [key(e) for e in after][:3], (before[:1], after[:1])
assert all(e["fitness_lo"] is None for e in before)
PY

echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
