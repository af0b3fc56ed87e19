# gpu_sm90_grid.sh — the sm_90a family (FAMILY 1) through evo's real gates on an H100/H200.
#   tests/data/grid-sm90.yaml: the genomes with FP16 scores and FP16 P·V (H_QK_MODE 2, H_V_PATH 1) on the presets,
#     S = 1, 77, 500, 1000, 4097, D 64 and 128, causal on and off, 3 seeds, 5 distributions, NaN-poisoned outputs
#     between canaries: every one must pass (OK, REGRESSED or SLOW).
#   tests/data/sm90-e4m3.yaml: the genomes with FP8 scores or e4m3 P, the fp8 accuracy class: every one must pass
#     that class's gate (each head within twice the FP8 model's error, structural probes included).
# Run: bash tests/gpu_sm90_grid.sh build/evo .   (ctest -L gpu; skipped without a driver or on a GPU other than sm_90)
set -u
EVO=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/skip_gpu.sh"
skip_without_driver
skip_unless_sm90 "the sm_90a family"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
for grid in grid-sm90 sm90-e4m3; do
  "$EVO" run --config "$SRC/tests/data/$grid.yaml" --db "$tmp/$grid.db" 2>&1 | tail -3
  [ -n "${OUT:-}" ] && cp "$tmp/$grid.db" "$OUT/$grid.db"
  python3 - "$tmp/$grid.db" "$grid" <<'PY' || fails=$((fails + 1))
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT c.genome, e.verdict, e.detail FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                  "WHERE e.generation = 0 AND c.genome LIKE '%FAMILY=1%'").fetchall()
counts = {}
for r in rows: counts[r[1]] = counts.get(r[1], 0) + 1
print(sys.argv[2], len(rows), "family-1 genomes:", counts)
def short(g): return ",".join(kv.split("=")[1] for kv in g.split(",") if kv.startswith("H_"))
for g, v, d in rows:
    try: dj = json.loads(d or "{}")
    except ValueError: dj = {}
    case = dj.get("case", {})
    print(" ", v, short(g), dj.get("reason", "")[:120], case.get("shape", ""), case.get("dist", ""),
          "rel_l2=%s" % dj.get("rel_l2", "-"))
hard = [r for r in rows if r[1] in ("CRASHED", "TIMEOUT", "LAUNCH_FAIL", "COMPILE_FAIL", "INVALID", "RESOURCE_FAIL")]
assert len(rows) >= 5, "the grid was not evaluated"
assert not hard, "family-1 genomes crashed, hung or did not build"
ok = sum(counts.get(k, 0) for k in ("OK", "REGRESSED", "SLOW"))
assert ok == len(rows), ("genomes of the accurate paths failed the exact gate" if sys.argv[2] == "grid-sm90"
                         else "e4m3 genomes failed the fp8 gate")
PY
done
exit $((fails > 0))
