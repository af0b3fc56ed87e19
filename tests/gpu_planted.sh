# gpu_planted.sh — `evo check` on the planted kernels of tests/planted/: the correct one passes, every planted
# fault is rejected with its status, and the worker survives the trap and the endless loop (GPU; skipped without).
# Run: bash tests/gpu_planted.sh build/evo .   (ctest -L gpu)
set -u
EVO=$(realpath "$1")
SRC=$(realpath "$2")
if [ ! -e /proc/driver/nvidia/version ] && ! ldconfig -p 2>/dev/null | grep -q libcuda.so.1; then
  echo "skipped: no NVIDIA driver on this machine"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$SRC"
files=(good skip_tile nan_outliers oob_read race causal_mask multiple_of_64 timing_cheat write_past spin trap)
paths=()
for f in "${files[@]}"; do paths+=("tests/planted/$f.cu"); done
"$EVO" check --config tests/data/planted.yaml --json "${paths[@]}" >"$tmp/out.json" 2>"$tmp/err"
rc=$?
cat "$tmp/err" >&2
[ -n "${OUT:-}" ] && cp "$tmp/out.json" "$OUT/planted.json"
python3 - "$tmp/out.json" "$rc" <<'PY'
import json, sys
res = {r["file"].split("/")[-1][:-3]: r for r in json.load(open(sys.argv[1]))}
expect = {"good": {"OK", "REGRESSED"}, "skip_tile": {"INCORRECT"}, "nan_outliers": {"INCORRECT"},
          "oob_read": {"INCORRECT", "CRASHED"}, "race": {"INCORRECT"}, "causal_mask": {"INCORRECT"},
          "multiple_of_64": {"INCORRECT"}, "timing_cheat": {"INCORRECT"}, "write_past": {"INCORRECT"},
          "spin": {"TIMEOUT"}, "trap": {"CRASHED"}}
bad = 0
for name, allowed in expect.items():
    r = res.get(name)
    v = r["verdict"] if r else "missing"
    reason = r["detail"].get("reason", "") if r else ""
    ok = v in allowed
    if name == "timing_cheat" and ok:
        ok = r["detail"].get("stage") == "output of a timed launch"
    if name == "write_past" and ok:
        ok = "canary" in reason
    print("%-15s %-10s %s  %s" % (name, v, "ok" if ok else "WRONG", reason))
    bad += not ok
assert int(sys.argv[2]) == 1, "evo check must exit 1 when a kernel is rejected"
sys.exit(1 if bad else 0)
PY
