#!/usr/bin/env bash
# cli_golden.sh — what evo prints and writes from the recorded fixtures stays the same across restructurings: a
# replayed GA search (console, the genomes/verdicts/fitness it stored, history), `evo elite --show` of it and of
# tests/data/replay.db, `evo export` of the best (a .cu and a --torch package), and `evo space` of three shipped configs,
# compared after a normalizer (dates, wall times and the temporary/source folders stripped) with tests/data/golden/.
# Run: bash tests/cli_golden.sh build/evo .        EVO_GOLDEN_UPDATE=1 rewrites the expected files (review the diff).
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
GOLD="$SRC/tests/data/golden"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
out="$tmp/out"
mkdir "$out"
R="$SRC/tests/data/replay.db"
cp "$SRC/tests/data/replay-space.yaml" space.yaml

# normalize FILE: dates, wall times, the source and temporary folders out; everything else must match.
normalize() {
  python3 - "$1" "$SRC" "$tmp" <<'PY'
import re, sys
path, src, tmp = sys.argv[1:4]
t = open(path, encoding="utf-8", errors="replace").read()
t = t.replace(tmp, "TMP").replace(src, "SRC")
# the compile keys computed here (the replayed runs' candidates, a key recomputed at export) hash this machine's
# NVRTC library (its size and date) and toolkit folders: each becomes a name by the database and candidate it keys
import os, sqlite3
keys = {}
for db in ("r.db", "rr.db"):
    if os.path.exists(os.path.join(tmp, db)):
        c = sqlite3.connect(os.path.join(tmp, db))
        for cid, key in c.execute("SELECT id, key FROM candidates ORDER BY id"):
            keys.setdefault(key, "KEY-%s-%d" % (db.split(".")[0], cid))
        c.close()
for key, name in keys.items():
    t = t.replace(key, name)
    t = re.sub(r"\b%s\b" % key[:8], name, t)
t = re.sub(r"recomputed here \([0-9a-f]{8}\)", "recomputed here (KEY-HERE)", t)
t = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "DATE", t)
t = re.sub(r"\d+:\d\d (elapsed|wall), ETA \d+:\d\d", r"T \1, ETA T", t)
t = re.sub(r"\d+:\d\d wall", "T wall", t)
t = re.sub(r"wall [0-9.]+ s", "wall T s", t)
# history's table: the wall column (the 6th) is the clock's
t = re.sub(r"^( +\d+ +\S+ +\S+ +\d+ +\d+ +)[0-9.]+", r"\1T", t, flags=re.M)
open(path, "w", encoding="utf-8").write(t)
PY
}
cap() { # cap NAME CMD...: stdout and stderr of CMD, then its exit status
  local name=$1
  shift
  "$@" >"$out/$name" 2>&1
  echo "exit $?" >>"$out/$name"
}

cap run "$EVO" run --replay "$R" --config space.yaml --db r.db --strategy ga --seed 1 --population 8 --generations 3
cap run_random "$EVO" run --replay "$R" --config space.yaml --db rr.db --strategy random --seed 3 --population 6 \
  --generations 2
python3 - r.db rr.db >"$out/stored" <<'PY'
import sqlite3, sys
for db in sys.argv[1:]:
    c = sqlite3.connect(db)
    for row in c.execute("SELECT c.genome, e.verdict, e.fitness, e.generation, e.accuracy FROM evaluations e "
                         "JOIN candidates c ON c.id = e.candidate_id ORDER BY e.id"):
        print(db, *row)
PY
cap elite "$EVO" elite --show --db r.db
cap elite_fixture "$EVO" elite --show --db "$R"
cap history "$EVO" history --db r.db
cap export "$EVO" export --best --db r.db -o -
cap export_fixture "$EVO" export --best --db "$R" -o -
cap torch "$EVO" export --best --db "$R" --torch pkg --quantizer "$SRC/variants/quantize_fp8-sm_90-4a2ad3fb.cu"
for f in $(cd pkg && ls | sort); do
  echo "== $f" >>"$out/torch_pkg"
  cat "pkg/$f" >>"$out/torch_pkg"
done
for c in hopper quantize default; do
  cap "space_$c" "$EVO" space --config "$SRC/configs/$c.yaml"
done

fails=0
for f in $(cd "$out" && ls); do
  normalize "$out/$f"
  if [ "${EVO_GOLDEN_UPDATE:-0}" = 1 ]; then
    mkdir -p "$GOLD" && cp "$out/$f" "$GOLD/$f"
  elif ! diff -u "$GOLD/$f" "$out/$f" >"$tmp/diff"; then
    echo "FAIL: $f differs from tests/data/golden/$f:" >&2
    head -40 "$tmp/diff" >&2
    fails=$((fails + 1))
  fi
done
n=$(ls "$out" | wc -l)
[ "$n" -ge 13 ] || { echo "FAIL: only $n outputs captured" >&2; fails=$((fails + 1)); }
[ "${EVO_GOLDEN_UPDATE:-0}" = 1 ] && { echo "golden: $n files written to $GOLD"; exit 0; }
[ $fails -eq 0 ] && echo "ok: $n outputs equal tests/data/golden/ after normalizing"
exit $((fails > 0))
