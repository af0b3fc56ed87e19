# gpu_quant_grid.sh — the quantizer's modes through the real gates: the genomes of tests/data/grid-quantize.yaml
# (every mode, 0 to 7, fused and separate rotation, both encoders) on rotated and plain shapes, fp16 and bf16, S = 1, 77,
# 1000, heads across rounds, one after another in one worker. All must be evaluated and none may be INCORRECT,
# CRASHED, TIMEOUT, LAUNCH_FAIL or fail to compile (bit-exact codes and scales against the reference).
# Run: bash tests/gpu_quant_grid.sh build/evo .   (ctest -L gpu; skipped without a driver or an sm_90 GPU)
set -u
EVO=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/skip_gpu.sh"
skip_without_driver
skip_unless_sm90 "the grid (clusters, modes 4 to 6 and 8)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$EVO" run --config "$SRC/tests/data/grid-quantize.yaml" --db "$tmp/q.db" 2>&1 | tail -3
[ -n "${OUT:-}" ] && cp "$tmp/q.db" "$OUT/grid-quantize.db"
python3 - "$tmp/q.db" "$SRC/tests/data/grid-quantize.yaml" <<'PY'
import re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
seeds = set(re.findall(r'^  - "([^"]+)"', open(sys.argv[2]).read(), re.M))
rows = db.execute("SELECT c.genome, e.verdict, e.detail FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                  "WHERE e.generation = 0").fetchall()
counts = {}
for r in rows: counts[r[1]] = counts.get(r[1], 0) + 1
print(len(rows), "evaluations:", counts)
bad = [r for r in rows if r[1] in ("INCORRECT", "CRASHED", "TIMEOUT", "LAUNCH_FAIL", "COMPILE_FAIL", "INVALID")]
for r in bad: print("BAD", r[1], r[0], r[2][:300])
missing = seeds - {r[0] for r in rows}
for g in sorted(missing): print("NOT EVALUATED", g)
assert len(seeds) == 26, "the grid lost genomes"
assert not bad and not missing, "failures on the quantizer grid"
PY
