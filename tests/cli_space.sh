# cli_space.sh — `evo space`: output, --json, exit codes and messages on bad configs and bad options.
# Run: bash tests/cli_space.sh build/evo .   (ctest runs it as cli_space)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# run ARGS...: sets rc, out (stdout) and err (stderr)
run() {
  "$EVO" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}
expect_rc() { [ "$rc" = "$1" ] || fail "$2: exit $rc, expected $1 (stderr: $err)"; }
expect_out() { grep -qF -- "$1" "$tmp/out" || fail "$2: stdout lacks '$1'"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "$2: stderr lacks '$1' (got: $err)"; }

# The default space, as text.
run space --config "$SRC/configs/family0.yaml"
expect_rc 0 "default"
expect_out "task:     attention_fp8" "default"
expect_out "knobs (14):" "default"
expect_out "  TILE_M       int  [16, 32, 64, 128, 256]" "default"
expect_out "  FAST_EXP     int  [0, 1]" "default"
expect_out "  CAUSAL_PAIR  int  [0]" "default"
expect_out "constraints (7):" "default"
expect_out "  3. WARPS_M * WARPS_N <= 8" "default"
expect_out "baseline: TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2," "default"
expect_out "total:    829440" "default"
expect_out "valid:    81840 (9.87%)" "default"
[ -z "$err" ] || fail "default: stderr not empty: $err"

# The same as JSON.
run space --config "$SRC/configs/family0.yaml" --json
expect_rc 0 "json"
if command -v python3 >/dev/null; then
  python3 - "$tmp/out" <<'EOF' || fail "json: content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["task"] == "attention_fp8", d["task"]
assert d["total"] == 829440 and d["valid"] == 81840 and d["exact"] is True, d
assert [k["name"] for k in d["knobs"]][:3] == ["TILE_M", "TILE_N", "WARPS_M"]
assert d["knobs"][0] == {"name": "TILE_M", "kind": "int", "domain": [16, 32, 64, 128, 256]}, d["knobs"][0]
assert len(d["knobs"]) == 14 and len(d["constraints"]) == 7
assert d["constraints"][1] == "TILE_N % (16 * WARPS_N) == 0"
assert d["baseline"].startswith("TILE_M=64,TILE_N=64,")
EOF
else
  expect_out '"valid":	81840' "json"
  expect_out '"total":	829440' "json"
fi

# Plain `evo space` reads configs/default.yaml in the working directory.
mkdir -p "$tmp/wd/configs" && cp "$SRC/configs/smoke.yaml" "$tmp/wd/configs/default.yaml"
(cd "$tmp/wd" && "$EVO" space >"$tmp/out" 2>"$tmp/err"); rc=$?
expect_rc 0 "default path"
expect_out "config:   configs/default.yaml" "default path"
expect_out "valid:    8 (100.00%)" "default path"

# Bad configs: exit 2, the message names file:line:column and the key; nothing on stdout.
run space --config "$SRC/tests/data/config/unknown_knob.yaml"
expect_rc 2 "unknown knob"
expect_err "unknown_knob.yaml:16:5: space.knobs.TILE_Q: unknown knob" "unknown knob"
[ -z "$out" ] || fail "unknown knob: stdout not empty"
run space --config "$SRC/tests/data/config/bad_constraint.yaml" --json
expect_rc 2 "bad constraint"
expect_err "bad_constraint.yaml:17:17: space.constraints[0]: unknown knob 'WARPS_Q'" "bad constraint"
run space --config "$SRC/tests/data/config/malformed.yaml"
expect_rc 2 "malformed"
expect_err "malformed.yaml:6:12: malformed YAML" "malformed"
for f in "$SRC"/tests/data/config/*.yaml; do
  case "$f" in */good.yaml) continue ;; esac
  run space --config "$f"
  expect_rc 2 "$(basename "$f")"
  case "$err" in "evo: $f:"[0-9]*) ;; *) fail "$(basename "$f"): message does not start with the file: $err" ;; esac
done
run space --config "$tmp/missing.yaml"
expect_rc 2 "missing file"
expect_err "missing.yaml: No such file or directory" "missing file"

# Bad command lines: exit 2 and a pointer to the help.
run space --bogus
expect_rc 2 "bad option"
expect_err "see 'evo help space'" "bad option"
run space --config
expect_rc 2 "option without value"
expect_err "option '--config' is unknown or needs a value" "option without value"
run space "$SRC/configs/family0.yaml"
expect_rc 2 "stray argument"
expect_err "unexpected argument" "stray argument"
run space --help
expect_rc 0 "help"
expect_out "usage: evo space [--config F] [--json]" "help"

# The space a search walks on a GPU: off sm_90, the attention task keeps to family 0 (FAMILY=1 is sm_90 only)
run space --config "$SRC/configs/hopper.yaml" --arch sm_80
expect_rc 0 "arch sm_80"
expect_out "on sm_80 a search keeps to FAMILY == 0: FAMILY=1 (wgmma + TMA) runs on sm_90 (H100, H200) only, not sm_80" "arch sm_80"
expect_out "valid:    81840 (8.31%)" "arch sm_80"
expect_out "proposed: 38600 on sm_80 (what the task can implement at its limits, of a class the config admits)" "arch sm_80"
run space --config "$SRC/configs/hopper.yaml" --arch sm_90
expect_rc 0 "arch sm_90"
expect_out "valid:    106224 (10.78%)" "arch sm_90"
grep -q "keeps to" "$tmp/out" && fail "arch sm_90: a rule was added"
# ... and of those what the task can implement at the GPU's limits (shared memory, registers): what a search proposes
expect_out "proposed: 79615 on sm_90 (what the task can implement at its limits, of a class the config admits)" "arch sm_90"
run space --config "$SRC/configs/hopper.yaml"
expect_out "valid:    106224 (10.78%)" "no arch"
grep -q "^proposed:" "$tmp/out" && fail "no arch: a proposed count without a GPU to count for"
run space --config "$SRC/configs/hopper.yaml" --arch sm_90 --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["proposed_on_arch"] == {"arch": "sm_90", "genomes": 79615} and d["valid"] == 106224, d.get("proposed_on_arch")' "$tmp/out" ||
  fail "arch sm_90 --json: proposed_on_arch"
run space --config "$SRC/configs/family0.yaml" --arch sm_80
expect_rc 0 "default, arch sm_80"
grep -q "keeps to" "$tmp/out" && fail "default, arch sm_80: a rule was added to a space of one family"
# the shipped default holds both families: on sm_80 the search keeps to family 0, on sm_90 it walks both
run space --config "$SRC/configs/default.yaml" --arch sm_80
expect_rc 0 "default.yaml, arch sm_80"
expect_out "valid:    81840 (8.31%)" "default.yaml, arch sm_80"
run space --config "$SRC/configs/default.yaml" --arch sm_90
expect_out "valid:    106224 (10.78%)" "default.yaml, arch sm_90"
run space --arch sm_70
expect_rc 2 "arch sm_70"
expect_err "space: --arch takes sm_80, sm_86, sm_89 or sm_90, not 'sm_70'" "arch sm_70"

# The GPU grids evaluate generation 0 only: the baseline and the seeds, as many as the population holds, so a seed
# past population - 1 would never reach the gates it is listed for.
for grid in "$SRC"/tests/data/grid-*.yaml "$SRC"/tests/data/sm90-e4m3.yaml; do
  short=$(python3 - "$grid" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
m = re.search(r"^evolution:.*population: (\d+)", s, re.M)
seeds = len(re.findall(r'^  - "', s[s.find("\nseeds:"):], re.M)) if "\nseeds:" in s else 0
print("" if m and int(m.group(1)) >= seeds + 1 else "population %s < %d seeds + the baseline" % (m.group(1) if m else "?", seeds))
PY
)
  [ -z "$short" ] || fail "$(basename "$grid"): $short"
done

[ "$fails" = 0 ] && echo "cli_space: all checks passed"
exit $((fails > 0))
