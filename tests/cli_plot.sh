#!/usr/bin/env bash
# cli_plot.sh — `evo plot` on a fixture of three runs (12 generations; one generation with nothing correct; 12 shapes):
# the files written, their validity as XML, element counts, notes, error paths, and the database left unchanged.
# Run: bash tests/cli_plot.sh build/evo .   (ctest runs it; the fixture comes from build/tests/test_plot --fixture)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$1
FIXTURE=$(dirname "$EVO")/tests/test_plot
if [ ! -x "$FIXTURE" ]; then
  echo "cli_plot: fixture maker $FIXTURE not built" >&2
  exit 1
fi
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 not found (it parses the SVG files)"
  exit 77
fi
T=$(mktemp -d /tmp/evo-cli-plot-XXXXXX)
trap 'rm -rf "$T"' EXIT

fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
run() {
  "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
expect_rc() { checks=$((checks + 1)); [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1 (stderr: $err)"; }
expect_err() { checks=$((checks + 1)); [ "$err" = "$1" ] || fail "$2: stderr '$err', want '$1'"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

db=$T/fx.db
"$FIXTURE" --fixture "$db" || { echo "cli_plot: fixture failed" >&2; exit 1; }
before=$(sha "$db")

# svg_check FILE 'python expressions over counts c[tag] and the text t, one per line'
svg_check() {
  checks=$((checks + 1))
  python3 - "$1" "$2" <<'PY' || fail "$1: content"
import sys, xml.etree.ElementTree as ET
path, exprs = sys.argv[1], sys.argv[2]
root = ET.parse(path).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
c = {}
for e in root.iter():
    tag = e.tag.replace(ns, "")
    c[tag] = c.get(tag, 0) + 1
bars = sum(1 for e in root.iter(ns + "rect") if e.find(ns + "title") is not None)
texts = [("".join(e.itertext())) for e in root.iter(ns + "text")]
w, h = float(root.get("width")), float(root.get("height"))
# every text stays on the canvas (a rotated label's anchor is its end)
for e in root.iter(ns + "text"):
    x, y = float(e.get("x")), float(e.get("y"))
    assert 0 <= x <= w and 0 <= y <= h, (x, y, "".join(e.itertext()))
ok = True
for line in exprs.strip().splitlines():
    if not eval(line):
        print(f"{path}: failed: {line}   (counts {c}, bars {bars})", file=sys.stderr)
        ok = False
sys.exit(0 if ok else 1)
PY
}

run plot --db "$db" --run 1 -o "$T/plots"
expect_rc 0 "plot run 1"
checks=$((checks + 1))
[ "$out" = "$T/plots/run1-fitness.svg"$'\n'"$T/plots/run1-elites.svg"$'\n'"$T/plots/run1-evaluations.svg" ] ||
  fail "plot run 1: printed '$out'"
# 11 generations with a best and a median (generation 0 had nothing correct): one line each, 11 markers each
svg_check "$T/plots/run1-fitness.svg" '
c["polyline"] == 2
c["circle"] == 11 + 1
c["rect"] == 1 + 11 + 1
"Run 1: best and median fitness per generation" in texts
"attention_fp8 on sm_90 · NVIDIA H100 80GB HBM3 · seed 7, population 8, strategy ga · done" in texts
"baseline" in texts and "generation" in texts
"0" in texts and "10" in texts
c["line"] >= 10'
# the top 5 of 55 correct candidates over 3 shapes
svg_check "$T/plots/run1-elites.svg" '
bars == 15
c["rect"] == 1 + 5 + 15
"mission" in texts and "(1,8,512,64)" in texts and "causal" in texts and "(2,8,2048,64)" in texts
any(t.startswith("#1 ") and t.endswith("(1.63x)") for t in texts)
"1.79" in texts
"Run 1: speedup per shape of the top 5 elites" in texts'
svg_check "$T/plots/run1-evaluations.svg" '
c["circle"] == 55 + 1
c["path"] == 11 + 1
"not shown: 30 evaluations without fitness (COMPILE_FAIL 15, INCORRECT 15)" in texts'

# nothing correct, one generation
run plot --db "$db" --run 2 -o "$T/plots"
expect_rc 0 "plot run 2"
svg_check "$T/plots/run2-fitness.svg" '
c.get("polyline", 0) == 0
c["circle"] == 1
"no candidate passed every gate in this run" in texts
"0" in texts and "1" not in texts'
svg_check "$T/plots/run2-elites.svg" '
bars == 0
c["rect"] == 1
"no candidate has passed every gate yet" in texts
"Run 2: speedup per shape of the elites" in texts'
svg_check "$T/plots/run2-evaluations.svg" '
c.get("circle", 0) == 0
"no evaluation of this run has a fitness" in texts
"not shown: 4 evaluations without fitness (INCORRECT 4)" in texts'

# 12 shapes, 5 elites, one speedup missing; the default run is the latest
run plot --db "$db" -o "$T/latest"
expect_rc 0 "plot latest"
checks=$((checks + 1)); [ -f "$T/latest/run3-elites.svg" ] || fail "plot latest: no run3-elites.svg"
svg_check "$T/latest/run3-elites.svg" '
bars == 12 * 5 - 1
texts.count("n/a") == 1
"s1000(2,4,1000,128) causal" in texts
sum(1 for e in root.iter(ns + "text") if "rotate(-40" in (e.get("transform") or "")) == 12'
svg_check "$T/latest/run3-fitness.svg" '
c.get("polyline", 0) == 0
c["circle"] == 2
c["rect"] == 1 + 1 + 1'
run plot --db "$db" --run 3 --top 2 -o "$T/top2"
expect_rc 0 "plot --top 2"
svg_check "$T/top2/run3-elites.svg" 'bars == 12 * 2 - 1'

# default output directory is plots/ in the working directory
(cd "$T" && "$EVO" plot --db fx.db --run 1 >/dev/null 2>&1)
checks=$((checks + 1)); [ -f "$T/plots/run1-fitness.svg" ] || fail "default directory plots/"

# errors
run plot --db "$T/none.db"
expect_rc 1 "plot missing db"
expect_err "evo: no database at $T/none.db — run \`evo run\` first" "plot missing db"
run plot --db "$db" --run 9 -o "$T/p9"
expect_rc 1 "plot --run 9"
expect_err "evo: $db: no run 9" "plot --run 9"
checks=$((checks + 1)); [ ! -e "$T/p9" ] || fail "plot --run 9 created its directory"
run plot --db "$db" --run x
expect_rc 2 "plot --run x"
expect_err "evo: plot: --run wants a run id (a positive integer), got 'x' (see 'evo help plot')" "plot --run x"
run plot --db "$db" --top 0
expect_rc 2 "plot --top 0"
run plot --db "$db" --top 11
expect_rc 2 "plot --top 11"
expect_err "evo: plot: --top wants an integer from 1 to 10, got '11' (see 'evo help plot')" "plot --top 11"
run plot --db "$db" extra
expect_rc 2 "plot extra argument"
: >"$T/afile"
run plot --db "$db" -o "$T/afile/sub"
expect_rc 1 "plot -o under a file"
checks=$((checks + 1)); [ -n "$err" ] || fail "plot -o under a file: no message"
# -o names a directory; each chart in it is a regular file or a new name. A FIFO (as DIR or as a chart) is refused
# before any chart is written, and left as it was.
mkfifo "$T/fifo"
run plot --db "$db" --run 1 -o "$T/fifo"
expect_rc 2 "plot -o FIFO"
expect_err "evo: plot -o $T/fifo: not a directory (evo plot writes its charts into one)" "plot -o FIFO"
mkdir "$T/withfifo" && mkfifo "$T/withfifo/run1-elites.svg"
run plot --db "$db" --run 1 -o "$T/withfifo"
expect_rc 2 "plot over a FIFO"
expect_err "evo: plot $T/withfifo/run1-elites.svg: is a FIFO; evo writes only a regular file or a new name in an existing directory" "plot over a FIFO"
checks=$((checks + 2))
[ -p "$T/fifo" ] && [ -p "$T/withfifo/run1-elites.svg" ] || fail "plot replaced a FIFO"
[ "$(ls -A "$T/withfifo")" = run1-elites.svg ] || fail "plot wrote charts before refusing: $(ls -A "$T/withfifo")"

checks=$((checks + 1)); [ "$(sha "$db")" = "$before" ] || fail "plot changed the database"

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "$checks checks passed"
