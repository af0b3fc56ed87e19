#!/usr/bin/env bash
# timing_study.sh — the timing-method comparison of docs/perf-notes.md and docs/results.md, on a GPU host: for each
# method, `evo check --genome G --retime 10` on configs/presets.yaml (G: the exported e40fd3dd's genome; the
# baseline genome is re-timed in every round too) (its timing line replaced, correctness cut to one
# seed and distribution: the gates' cost, not the timing, is what that changes), then the content-memoizing planted
# kernel with and without fresh inputs. Writes $OUT/methods.json (one evo check --json per method),
# $OUT/methods.log, $OUT/memo.json and prints a summary table last.
# Run: tools/bench/timing_study.sh [GENOME]   (after building; uses ./build/evo)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/timing-logs}
mkdir -p "$OUT"
GENOME=${1:-TILE_M=64,TILE_N=128,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=1,BIG_TILE_M=128,BIG_TILE_N=64}
ROUNDS=${ROUNDS:-10}
T=$(mktemp -d)
export EVO_CACHE=${EVO_CACHE:-$T/cache}

# name | timing keys (flush_l2, abort_factor and kernel_timeout_s as in presets.yaml)
BASE="warmup: 3, repetitions: 20, max_repetitions: 200, target_us: 1000, check_samples: 2"
methods=(
  "old|warmup: 3, repetitions: 20, max_repetitions: 20, target_us: 0, target_ci: 0, method: events, fresh_inputs: false, check_samples: 1"
  "events|$BASE, method: events"
  "graph|$BASE, method: graph"
  "cupti|$BASE, method: cupti"
  "cupti_ab|$BASE, method: cupti, interleave: true"
)
make_config() { # make_config KEYS OUTFILE: presets.yaml with these timing keys, one seed and one distribution
  python3 - "$1" "$2" <<'PY'
import re, sys
keys, out = sys.argv[1], sys.argv[2]
s = open("configs/presets.yaml").read()
s, n = re.subn(r"^timing: \{.*?\}\n", "timing: {%s, flush_l2: true, abort_factor: 3.0, kernel_timeout_s: 5}\n" % keys,
               s, flags=re.S | re.M)
assert n == 1
s = s.replace("seeds: [0, 1, 2]", "seeds: [0]").replace(
    "distributions: [normal, uniform, outliers, zero_head, large]", "distributions: [normal]")
open(out, "w").write(s)
PY
}
echo "[" >"$OUT/methods.json"
first=1
for m in "${methods[@]}"; do
  name=${m%%|*} keys=${m#*|}
  make_config "$keys" "$T/$name.yaml"
  grep "^timing:" "$T/$name.yaml" >>"$OUT/methods.log"
  start=$SECONDS
  timeout "${STUDY_TIMEOUT:-120}" ./build/evo check --genome "$GENOME" --config "$T/$name.yaml" --retime "$ROUNDS" --json >"$T/$name.json" \
    2>>"$OUT/methods.log"
  echo "--- $name: exit $? in $((SECONDS - start)) s" >>"$OUT/methods.log"
  [ $first = 1 ] || echo "," >>"$OUT/methods.json"
  first=0
  printf '{"method": "%s", "result": ' "$name" >>"$OUT/methods.json"
  if python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/$name.json" 2>/dev/null; then
    cat "$T/$name.json" >>"$OUT/methods.json"
  else
    echo null >>"$OUT/methods.json"
  fi
  echo "}" >>"$OUT/methods.json"
done
echo "]" >>"$OUT/methods.json"

# The content-memoizing kernel beside the correct one: fresh inputs (the default) and the same inputs every time.
python3 - "$T/planted-same.yaml" <<'PY'
import sys
s = open("tests/data/planted.yaml").read()
t = s.replace("timing: {warmup: 2, repetitions: 10, kernel_timeout_s: 3}",
              "timing: {warmup: 2, repetitions: 10, kernel_timeout_s: 3, fresh_inputs: false}")
assert t != s
open(sys.argv[1], "w").write(t)
PY
{
  echo '{"fresh":'
  timeout 120 ./build/evo check tests/planted/good.cu tests/planted/memo.cu --config tests/data/planted.yaml --json \
    2>>"$OUT/methods.log" || true
  echo ', "same":'
  timeout 120 ./build/evo check tests/planted/good.cu tests/planted/memo.cu --config "$T/planted-same.yaml" --json \
    2>>"$OUT/methods.log" || true
  echo '}'
} >"$OUT/memo.json"

python3 - "$OUT/methods.json" "$OUT/memo.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
print("method     shapes  worst spread  fitness CV  fitness mean  cost/cand s  timing.method used")
for r in rows:
    res = r["result"]
    if not res or "retime_summary" not in res:
        print("%-10s failed: %s" % (r["method"], (res or {}).get("detail", {}).get("reason", "no result")))
        continue
    t = res["retime_summary"]
    print("%-10s %6d  +-%8.2f %%  %8.3f %%  %12.4f  %11.3f  %s" % (r["method"], len(t["spread"]),
          100 * t["worst_spread"], 100 * t["fitness_cv"], t["fitness_mean"], t["cost_s"],
          res["detail"].get("timing", {}).get("method", "?")))
    names = [s["shape"].split("(")[0] for s in res["shapes"]]
    rounds = res["detail"]["retime"]["rounds"]
    print("   per shape spread %:", " ".join("%s %.2f" % (n, 100 * x) for n, x in zip(names, t["spread"])))
    print("   baseline spread %: ", " ".join("%s %.2f" % (n, 100 * x) for n, x in zip(names, t["baseline_spread"])))
    med = [sorted(r_["median_us"][i] for r_ in rounds)[len(rounds) // 2] for i in range(len(names))]
    ev = [sorted(r_.get("events_median_us", r_["median_us"])[i] for r_ in rounds)[len(rounds) // 2] for i in range(len(names))]
    reps = rounds[0].get("reps", [])
    print("   median us:         ", " ".join("%.2f" % x for x in med))
    print("   events median us:  ", " ".join("%.2f" % x for x in ev))
    print("   reps:              ", " ".join("%d" % x for x in reps))
try:
    text = open(sys.argv[2]).read()
    memo = json.loads(text)
    for k in ("fresh", "same"):
        g = {r["file"].split("/")[-1]: r for r in memo[k]}
        ratios = [m["median_us"] / s["median_us"] for m, s in zip(g["memo.cu"]["shapes"], g["good.cu"]["shapes"])]
        print("memo (%s inputs): %s, median / good.cu's: %s" % (k, g["memo.cu"]["verdict"],
              ", ".join("%.2f" % x for x in ratios)))
except Exception as e:
    print("memo: could not read (%s)" % e)
PY
