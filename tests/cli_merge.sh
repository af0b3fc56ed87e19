#!/usr/bin/env bash
# cli_merge.sh — `evo merge OUT.db IN.db...`: every row of every input arrives (runs, candidates once per key with
# all their evaluations and per-shape results, lineage, generations, re-timings, profiles), merging again changes
# nothing, a schema-1 store is read as evo reads it, the inputs are never written; a newer schema, mixed tasks, a
# file that is no store and the output named as an input are refused before anything is written. `evo elite --show`
# on a store two GPU models wrote into ranks each model on its own. No GPU: the stores come from replays.
# Run: bash tests/cli_merge.sh build/evo .   (ctest runs it as cli_merge; a few seconds)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
T=$(mktemp -d /tmp/evo-cli-merge-XXXXXX)
export TMPDIR=$T/tmp
mkdir "$T/tmp"
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
R=$SRC/tests/data/replay.db
C=$SRC/tests/data/replay-space.yaml
sha() { sha256sum "$1" | cut -d' ' -f1; }
cd "$T" || exit 1

run() { "$EVO" run --replay "$R" --config "$C" --db "$T/$1.db" --quiet --strategy ga --population 16 --generations 4 \
  --seed "$2" >"$T/$1.out" 2>&1 || fail "run $1: $(cat "$T/$1.out")"; }
run a 1
run b 2
cp "$SRC/tests/data/replay-v1.db" "$T/v1.db" # schema 1
# a re-timing and a profile figure in a, so that every table has rows to carry
python3 - "$T/a.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
cid, ss = c.execute("SELECT candidate_id, shape_set FROM evaluations WHERE verdict = 'OK' ORDER BY id LIMIT 1").fetchone()
c.execute("INSERT INTO retimes (candidate_id, run_id, generation, shape_set, fitness, fitness_lo, fitness_hi, why, gpu, "
          "created_at) VALUES (?, 1, 3, ?, 1.01, 1.0, 1.02, 'end of run', 'NVIDIA H200 (GPU 0)', '2026-11-28T10:00:00Z')",
          (cid, ss))
c.execute("INSERT INTO profiles VALUES (?, 'mission(1,8,512,64)', 'tensor_pipe_util', 61.5, '%', '2026-11-28T10:00:00Z')",
          (cid,))
c.commit()
PY
sum_before=()
for f in a b v1; do sum_before+=("$(sha "$T/$f.db")"); done

"$EVO" merge "$T/out.db" "$T/a.db" "$T/b.db" "$T/v1.db" >"$T/m1.out" 2>&1 || fail "merge: $(cat "$T/m1.out")"
grep -q "^merged $T/a.db: runs 1 new (0 there already)" "$T/m1.out" || fail "merge output: $(cat "$T/m1.out")"
i=0
for f in a b v1; do
  [ "$(sha "$T/$f.db")" = "${sum_before[$i]}" ] || fail "input $f.db was written"
  [ ! -e "$T/$f.db-wal" ] && [ ! -e "$T/$f.db-shm" ] || fail "files left beside input $f.db: $(ls "$T")"
  i=$((i + 1))
done
python3 - "$T" <<'PY' || fail "lossless merge"
import sqlite3, sys
tmp = sys.argv[1]
ins = [sqlite3.connect("%s/%s.db" % (tmp, f)) for f in ("a", "b", "v1")]
out = sqlite3.connect(tmp + "/out.db")
assert out.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
assert out.execute("PRAGMA foreign_key_check").fetchall() == []
assert out.execute("PRAGMA user_version").fetchone()[0] >= 4
def run_key(c, rid):
    return c.execute("SELECT started_at, seed, task FROM runs WHERE id = ?", (rid,)).fetchone() if rid else None
def evals(c):
    rows = []
    for eid, cid, rid, gen, ss, v, fit, gpu, created in c.execute(
            "SELECT e.id, e.candidate_id, e.run_id, e.generation, e.shape_set, e.verdict, e.fitness, e.gpu, "
            "e.created_at FROM evaluations e"):
        key = c.execute("SELECT key FROM candidates WHERE id = ?", (cid,)).fetchone()[0]
        res = tuple(c.execute("SELECT position, shape, median_us, speedup FROM results WHERE evaluation_id = ? "
                              "ORDER BY position", (eid,)).fetchall())
        rows.append((key, run_key(c, rid), gen, ss, v, fit, gpu, created, res))
    return sorted(rows, key=repr)
want = sorted((r for c in ins for r in evals(c)), key=repr)
got = evals(out)
assert got == want, "evaluations differ: %d merged, %d in the inputs" % (len(got), len(want))
keys = set()
for c in ins:
    keys |= {k for (k,) in c.execute("SELECT key FROM candidates")}
assert out.execute("SELECT count(*) FROM candidates").fetchone()[0] == len(keys), "a key is not exactly one candidate"
assert out.execute("SELECT count(*) FROM runs").fetchone()[0] == 3
def lineage(c):
    return sorted(c.execute("SELECT r.started_at, r.seed, l.generation, x.key, p.key, l.operator FROM lineage l JOIN runs "
                            "r ON r.id = l.run_id JOIN candidates x ON x.id = l.child_id JOIN candidates p ON "
                            "p.id = l.parent_id").fetchall())
assert lineage(out) == sorted(r for c in ins for r in lineage(c)), "lineage"
assert len(lineage(out)) > 0, "the runs have no lineage to carry"
def gens(c):
    return sorted(c.execute("SELECT r.started_at, r.seed, g.generation, g.best_fitness, g.evaluated FROM generations g "
                            "JOIN runs r ON r.id = g.run_id").fetchall())
assert gens(out) == sorted(r for c in ins for r in gens(c)), "generations"
def side(c):
    return (sorted(c.execute("SELECT x.key, t.generation, t.fitness, t.why FROM retimes t JOIN candidates x ON "
                             "x.id = t.candidate_id").fetchall()),
            sorted(c.execute("SELECT x.key, p.shape, p.metric, p.value FROM profiles p JOIN candidates x ON "
                             "x.id = p.candidate_id").fetchall()))
assert side(out) == side(ins[0]) and len(side(out)[0]) == 1 and len(side(out)[1]) == 1, "re-timings, profiles"
print("merge: %d evaluations, %d candidates, %d lineage edges of 3 stores (one of schema 1)" % (
    len(got), len(keys), len(lineage(out))))
PY
# idempotent: merging the same files again adds nothing and changes nothing
python3 "$SRC/tests/evo_db.py" dump "$T/out.db" >"$T/out.before"
"$EVO" merge "$T/out.db" "$T/a.db" "$T/b.db" "$T/v1.db" >"$T/m2.out" 2>&1 || fail "merge again: $(cat "$T/m2.out")"
grep -q "^$T/out.db: 0 runs, 0 candidates, 0 evaluations added" "$T/m2.out" || fail "merge again: $(cat "$T/m2.out")"
python3 "$SRC/tests/evo_db.py" dump "$T/out.db" >"$T/out.after"
cmp -s "$T/out.before" "$T/out.after" || fail "merging again changed the store"
# a merged store merged into another is the same rows again
"$EVO" merge -q "$T/out2.db" "$T/out.db" "$T/a.db" || fail "merge of a merged store"
[ "$(python3 "$SRC/tests/evo_db.py" scalar "$T/out2.db" "SELECT count(*) FROM evaluations")" = \
  "$(python3 "$SRC/tests/evo_db.py" scalar "$T/out.db" "SELECT count(*) FROM evaluations")" ] || fail "merge of a merged store"

# ---- refused before anything is written ----
refused() { # refused RC MESSAGE ARGS...: exit RC, the message on stderr, out.db as it was, no new output
  local want=$1 msg=$2
  shift 2
  local before
  before=$(sha "$T/out.db")
  "$EVO" merge "$@" >"$T/r.out" 2>"$T/r.err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "merge $*: exit $rc, want $want ($(cat "$T/r.err"))"
  grep -qF -- "$msg" "$T/r.err" || fail "merge $*: stderr '$(cat "$T/r.err")' lacks '$msg'"
  [ "$(sha "$T/out.db")" = "$before" ] || fail "merge $*: out.db changed"
}
cp "$T/a.db" "$T/newer.db" && python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 99'); c.commit()" "$T/newer.db"
refused 1 "newer.db: schema version 99 is newer than this evo understands" "$T/out.db" "$T/b.db" "$T/newer.db"
cp "$T/a.db" "$T/quant.db" && python3 - "$T/quant.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE runs SET task = 'quantize_fp8'")
c.execute("UPDATE candidates SET task = 'quantize_fp8'")
c.commit()
PY
refused 2 "quant.db holds task quantize_fp8 but $T/out.db holds attention_fp8; evo merge combines stores of one task" \
  "$T/out.db" "$T/quant.db"
refused 2 "quant.db holds task quantize_fp8 but $T/a.db holds attention_fp8" "$T/new.db" "$T/a.db" "$T/quant.db"
[ ! -e "$T/new.db" ] || fail "a refused merge created its output"
echo "not a database" >"$T/text.db"
refused 1 "text.db: not an evo database" "$T/out.db" "$T/text.db"
refused 2 "is the output itself" "$T/out.db" "$T/a.db" "$T/out.db"
refused 2 "missing.db: no such file" "$T/out.db" "$T/missing.db"
refused 2 "give the output and at least one store to merge" "$T/out.db"
# a store named as the other's -wal (or -journal) file: SQLite would use it as that journal (and delete it)
cp "$T/a.db" "$T/out.db-wal"
wal_before=$(sha "$T/out.db-wal")
refused 2 "merge: input $T/out.db-wal is the name of the -wal file of the output $T/out.db: SQLite would take it" \
  "$T/out.db" "$T/out.db-wal"
[ "$(sha "$T/out.db-wal")" = "$wal_before" ] || fail "a refused merge changed the store named out.db-wal"
rm -f "$T/out.db-wal"
refused 2 "merge: the output $T/a.db-journal is the -journal file of input $T/a.db" "$T/a.db-journal" "$T/a.db"
[ ! -e "$T/a.db-journal" ] || fail "a refused merge created a.db-journal"

# ---- evo elite --show on a store two GPU models wrote into: each model ranked on its own ----
cp "$T/b.db" "$T/h100.db"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE evaluations SET gpu = 'NVIDIA H100 80GB HBM3 (GPU 1)'\"); c.commit()" "$T/h100.db"
"$EVO" merge -q "$T/two.db" "$T/a.db" "$T/h100.db" || fail "merge of two GPU models"
"$EVO" elite --show --top 2 --db "$T/two.db" >"$T/two.out" 2>&1 || fail "elite on two models: $(cat "$T/two.out")"
"$EVO" elite --show --top 2 --json --db "$T/two.db" >"$T/two.json" 2>&1 || fail "elite --json on two models"
python3 - "$T" <<'PY' || fail "elite per GPU model"
import json, re, sqlite3, sys
tmp = sys.argv[1]
text = open(tmp + "/two.out").read()
heads = re.findall(r"^== (.*) \(speedups against the baseline timed on this GPU model\)$", text, re.M)
assert len(heads) == 2 and heads[0] == "NVIDIA H100 80GB HBM3" and heads[1].startswith("replay of "), heads
def top(db):
    return sqlite3.connect(db).execute("SELECT max(fitness) FROM evaluations WHERE verdict = 'OK'").fetchone()[0]
js = json.load(open(tmp + "/two.json"))
by = {}
for e in js:
    by.setdefault(e["gpu_model"], []).append(e)
assert sorted(by) == sorted(heads) and all(len(v) == 2 for v in by.values()), {k: len(v) for k, v in by.items()}
assert abs(by["NVIDIA H100 80GB HBM3"][0]["fitness"] - top(tmp + "/h100.db")) < 1e-12
assert abs(by[heads[1]][0]["fitness"] - top(tmp + "/a.db")) < 1e-12
print("elite: %s ranked on their own" % " and ".join(heads))
PY

[ $fails -eq 0 ] && echo "ok: evo merge is lossless and idempotent, refuses what it must; elite ranks per GPU model"
exit $((fails > 0))
