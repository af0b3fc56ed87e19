# gpu_grid.sh — every knob value of the default space, through the real gates: the genomes of tests/data/grid-*.yaml
# (both 8-bit formats) on every preset plus S = 1, 77, 500, 1000, B=3/H=5, D 64 and 128, causal on and off, 3 seeds,
# 5 distributions, NaN-poisoned outputs between canaries. None may be INCORRECT, CRASHED, TIMEOUT or fail to compile.
# Run: bash tests/gpu_grid.sh build/evo .   (ctest -L gpu; skipped without a driver)
set -u
EVO=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/skip_gpu.sh"
skip_without_driver
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
for fmt in e4m3 u8sim; do
  "$EVO" run --config "$SRC/tests/data/grid-$fmt.yaml" --db "$tmp/$fmt.db" 2>&1 | tail -3
  [ -n "${OUT:-}" ] && cp "$tmp/$fmt.db" "$OUT/grid-$fmt.db"
  python3 - "$tmp/$fmt.db" "$fmt" <<'PY' || fails=$((fails + 1))
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT c.genome, e.verdict, e.detail FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                  "WHERE e.generation = 0").fetchall()
bad = [r for r in rows if r[1] in ("INCORRECT", "CRASHED", "TIMEOUT", "LAUNCH_FAIL", "COMPILE_FAIL")]
counts = {}
for r in rows: counts[r[1]] = counts.get(r[1], 0) + 1
print(sys.argv[2], len(rows), "genomes:", counts)
for r in bad: print("BAD", r[1], r[0], r[2][:300])
ok = counts.get("OK", 0) + counts.get("REGRESSED", 0) + counts.get("SLOW", 0)
assert len(rows) >= 31, "the grid was not evaluated"
assert not bad and ok >= 18, "failures on the grid"
PY
done
exit $((fails > 0))
