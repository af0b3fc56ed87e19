# cli_families.sh — a space whose knobs have conditions (tests/data/families-space.yaml: family 0's knobs when
# FAMILY is 0, the H_ knobs when FAMILY is 1) read against a recording whose genome texts list every knob, the form
# stored before conditions (tests/data/families.db): `evo space` counts per family, a replay finds each genome under
# any of its older texts (the latest measured one), everything written lists active knobs only, one genome is one
# candidate however many older texts it had, `evo elite` and `evo export` show the genome as the config's space
# writes it, and a bad `when` is refused with file, line and knob, exit 2.
# Run: bash tests/cli_families.sh build/evo .   (ctest runs it as cli_families)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
F="$SRC/tests/data/families.db"
C="$SRC/tests/data/families-space.yaml"
before=$(sha256sum "$F" | cut -d' ' -f1)
cd "$tmp" || exit 1

# evo space: 432 family-0 genomes (216 valid) + 12 family-1 genomes; each knob's condition shown
"$EVO" space --config "$C" >space.out 2>&1 || fail "evo space: $(cat space.out)"
grep -q "^total:    444 (distinct genomes: summed over the conditions' cases)$" space.out || fail "space total: $(tail -2 space.out)"
grep -q "^valid:    228 " space.out || fail "space valid: $(tail -1 space.out)"
grep -q "^  TILE_M           int  \[32, 64, 128\]  when FAMILY == 0$" space.out || fail "space: TILE_M's condition"
grep -q "^  H_CONSUMERS      int  \[1, 2, 3\]  when FAMILY == 1$" space.out || fail "space: H_CONSUMERS's condition"
grep -q "^  FAMILY           int  \[0, 1\]$" space.out || fail "space: FAMILY has no condition"
"$EVO" space --config "$C" --json >space.json 2>&1 || fail "evo space --json"
python3 - space.json <<'PY' || fail "space --json"
import json, sys
s = json.load(open(sys.argv[1]))
w = {k["name"]: k.get("when") for k in s["knobs"]}
assert w["TILE_M"] == "FAMILY == 0" and w["H_STAGES"] == "FAMILY == 1" and w["FAMILY"] is None, w
assert (s["total"], s["valid"], s["exact"]) == (444, 228, True), s
PY

# Every valid genome the GPU can run replayed once (random, population 228): the search proposes 221 of the 228 the
# constraints allow, since the 7 family-1 genomes of TILE_N 128 (head dim 128, FP16 K and V) need more shared memory
# than sm_90 has since P·V gained its block of ones (can_implement: the recording measured them before). The 144
# family-0 genomes the recording kept and the 5 family-1 genomes are found under their older texts; the 72 family-0
# genomes whose rows became family 1 are not.
"$EVO" run --replay "$F" --config "$C" --db r.db --strategy random --seed 1 --population 228 --generations 1 \
  >run.out 2>&1 || fail "replay: $(cat run.out)"
grep -qx "on sm_90 the search proposes what the task can run there: 221 of the 228 genomes the constraints allow" run.out ||
  fail "replay: the filter's line: $(head -3 run.out)"
python3 - r.db "$F" <<'PY' || fail "replayed genomes"
import sqlite3, sys
r, f = sqlite3.connect(sys.argv[1]), sqlite3.connect("file:%s?immutable=1" % sys.argv[2], uri=True)
rows = r.execute("SELECT c.genome, e.verdict, e.fitness, c.key FROM evaluations e JOIN candidates c ON "
                 "c.id = e.candidate_id").fetchall()
assert len(rows) == 221, len(rows)
fam1 = [x for x in rows if x[0].startswith("FAMILY=1,")]
fam0 = [x for x in rows if x[0].endswith(",FAMILY=0")]
assert len(fam1) == 5 and len(fam0) == 216, (len(fam1), len(fam0))
# what the filter left out is what can_implement refuses: every TILE_N 128 genome
assert all("H_TILE_N=64," in g for g, *_ in fam1), fam1
# active knobs only, in the config's order
assert all("TILE_M" not in g and g.count("H_") == 12 for g, *_ in fam1), fam1[0]
assert all("H_" not in g and g.startswith("TILE_M=") for g, *_ in fam0), fam0[0]
nr = sum(v == "NOT_RECORDED" for _, v, _, _ in fam0)
assert nr == 72 and all(v != "NOT_RECORDED" for _, v, _, _ in fam1), (nr, [v for _, v, _, _ in fam1])
# one genome, one candidate: the 5 family-1 genomes have 5 keys, none repeated
assert len({k for *_, k in fam1}) == 5
# each family-1 genome's figures are its latest evaluation among the six texts stored for it
H = ("H_WG_ROWS", "H_CONSUMERS", "H_TILE_N", "H_STAGES", "H_PIPE", "H_QK_MODE", "H_V_PATH", "H_OVERLAP",
     "H_PINGPONG", "H_O_ACC", "H_PRODUCER_REGS", "H_PERSIST")
def canon(text):
    kv = dict(x.split("=") for x in text.split(","))
    return "FAMILY=1," + ",".join("%s=%s" % (k, kv[k]) for k in H)
latest = {}
for eid, g, fit in f.execute("SELECT e.id, c.genome, e.fitness FROM evaluations e JOIN candidates c ON "
                             "c.id = e.candidate_id WHERE c.genome LIKE '%FAMILY=1%' ORDER BY e.id"):
    latest[canon(g)] = fit
assert len(latest) == 12, len(latest)
for g, v, fit, _ in fam1:
    assert abs(fit - latest[g]) < 1e-9, (g, fit, latest[g])
PY

# A space with nothing the GPU can run or the config admits (every genome of this one is of the exact class) is a
# config error before any generation, naming why the first genome is left out.
{ cat "$C"; echo "accuracy: [fp8]"; } >fp8only.yaml
"$EVO" run --replay "$F" --config fp8only.yaml --db none.db --generations 1 --population 4 >none.out 2>&1
rc=$?
[ $rc = 2 ] && grep -q "^evo: fp8only.yaml: none of the 228 genomes the constraints allow can run on sm_90 or is of an accuracy class the config admits; the first, TILE_M=32,.*,FAMILY=0: its arithmetic is of accuracy class exact, which the config does not admit (accuracy: \[fp8\])$" none.out ||
  fail "a space the filter empties: exit $rc: $(cat none.out)"
[ "$(python3 -c "import sqlite3; print(sqlite3.connect('none.db').execute('select count(*) from runs').fetchone()[0])")" = 0 ] ||
  fail "a space the filter empties: a run was stored"

# evo elite of the recording: as stored (its run's config has no conditions); with --config, as the conditional
# space writes the genomes
"$EVO" elite --show --db "$F" --top 40 --json >elite_stored.json 2>elite.err || fail "elite (stored): $(cat elite.err)"
"$EVO" elite --show --db "$F" --top 40 --json --config "$C" >elite_canon.json 2>elite.err ||
  fail "elite --config: $(cat elite.err)"
python3 - elite_stored.json elite_canon.json <<'PY' || fail "elite genomes"
import json, sys
stored = [e["genome"] for e in json.load(open(sys.argv[1]))]
canon = [e["genome"] for e in json.load(open(sys.argv[2]))]
assert len(stored) == len(canon) == 28, (len(stored), len(canon))  # the recording's 28 OK candidates
assert all(g.count("=") == 27 for g in stored), stored[0]
for s, c in zip(stored, canon):
    if ",FAMILY=1," in s:
        assert c == "FAMILY=1," + s.split(",FAMILY=1,")[1], (s, c)
    else:
        assert c == s.split(",H_WG_ROWS=")[0] and c.endswith(",FAMILY=0"), (s, c)
assert sum(c.startswith("FAMILY=1,") for c in canon) == 10, canon
PY

# A store whose run was made with the conditional config but whose candidate rows hold older texts (the fixture's,
# with its run's config made the conditional one): elite and export show the genome without its inactive knobs
cp "$F" cond.db
python3 - cond.db "$C" <<'PY' || fail "making cond.db"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE runs SET config_text = ?", (open(sys.argv[2]).read(),))
db.commit()
PY
"$EVO" elite --show --db cond.db >elite_cond.out 2>&1 || fail "elite of cond.db: $(cat elite_cond.out)"
grep -q ",FAMILY=0,H_" elite_cond.out && fail "elite of cond.db lists a family-0 genome's H_ knobs"
grep -q " FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=" elite_cond.out || fail "elite of cond.db: no family-1 genome: $(cat elite_cond.out)"
grep -q " TILE_M=[^ ]*,BIG_TILE_N=64,FAMILY=0$" elite_cond.out || fail "elite of cond.db: no family-0 genome: $(cat elite_cond.out)"
# the best family-0 candidate (the recording's family-1 rows were measured as family 0: they render otherwise)
id=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT c.id FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE e.verdict = '"'OK'"' AND c.genome LIKE '"'%FAMILY=0%'"' ORDER BY e.fitness DESC LIMIT 1").fetchone()[0])' cond.db)
"$EVO" export --db cond.db --id "$id" -o - >export.cu 2>export.err || fail "export of cond.db: $(cat export.err)"
grep -q "^ \*   genome        TILE_M=[^ ]*,FAMILY=0$" export.cu || fail "export: genome line $(grep -m1 ' genome ' export.cu)"
grep -q "H_CONSUMERS" export.cu && fail "export names an inactive knob"
grep -q "^  genome TILE_M=[^ ]*,FAMILY=0$" export.err || fail "export's summary: $(cat export.err)"

# A new run in a store whose rows hold older texts (r.db's rows rewritten so): its prior elites are read as
# genomes of the space, and a genome is proposed and evaluated once per generation whatever text its row holds
python3 - r.db <<'PY' || fail "rewriting r.db"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
F0 = "TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"
H = "H_WG_ROWS=64,H_CONSUMERS=3,H_TILE_N=256,H_STAGES=4,H_PIPE=2,H_QK_MODE=2,H_V_PATH=1,H_OVERLAP=1,H_PINGPONG=0,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=0"
for cid, g in db.execute("SELECT id, genome FROM candidates").fetchall():
    old = F0 + "," + g if g.startswith("FAMILY=1,") else g + "," + H
    db.execute("UPDATE candidates SET genome = ? WHERE id = ?", (old, cid))
db.commit()
PY
"$EVO" elite --show --db r.db >elite_r.out 2>&1 || fail "elite of r.db: $(cat elite_r.out)"
grep -q "H_TILE_N=256" elite_r.out && fail "elite of r.db shows an inactive knob: $(cat elite_r.out)"
"$EVO" run --replay "$F" --config "$C" --db r.db --strategy ga --seed 2 --population 12 --generations 2 \
  --quiet >seeded.out 2>&1 || fail "run seeded from elites: $(cat seeded.out)"
python3 - r.db <<'PY' || fail "seeded run"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
gens = db.execute("SELECT generation, evaluated, reused FROM generations WHERE run_id = 2 ORDER BY 1").fetchall()
# generation 0: 12 distinct genomes (the elites among them read from older texts), each looked up or evaluated once;
# generation 1: 9 children beside the 3 carried elites
assert [(g, e + r) for g, e, r in gens] == [(0, 12), (1, 9)], gens
rows = db.execute("SELECT e.generation, e.candidate_id FROM evaluations e WHERE e.run_id = 2").fetchall()
assert len(rows) == len(set(rows)), "a candidate evaluated twice in one generation"
PY

# a bad condition: file, line, column and the knob's path; exit 2
sed 's/H_STAGES:        {values: \[2, 3\], when: "FAMILY == 1"}/H_STAGES:        {values: [2, 3], when: "H_STAGES > 2"}/' \
  "$C" >self.yaml
"$EVO" space --config self.yaml >self.out 2>&1
rc=$?
[ $rc = 2 ] || fail "a condition reading its own knob: exit $rc, want 2"
grep -q "self.yaml:27:[0-9]*: space.knobs.H_STAGES.when: the condition of knob 'H_STAGES' reads 'H_STAGES' itself" \
  self.out || fail "self condition: $(cat self.out)"
sed -e 's/H_WG_ROWS:       {values: \[64\], when: "FAMILY == 1"}/H_WG_ROWS:       {values: [64], when: "H_PIPE == 2"}/' \
  -e 's/H_PIPE:          {values: \[2\], when: "FAMILY == 1"}/H_PIPE:          {values: [2], when: "H_WG_ROWS == 64"}/' \
  "$C" >cycle.yaml
"$EVO" space --config cycle.yaml >cycle.out 2>&1
rc=$?
[ $rc = 2 ] || fail "conditions in a cycle: exit $rc, want 2"
grep -q "cycle.yaml:[0-9]*:[0-9]*: space.knobs.H_PIPE.when: the conditions of knobs form a cycle (H_PIPE -> H_WG_ROWS -> H_PIPE" \
  cycle.out || fail "cycle: $(cat cycle.out)"
sed 's/TILE_N:          {values: \[32, 64, 128\], when: "FAMILY == 0"}/TILE_N:          {values: [32, 64, 128], when: "FAMILY == Q"}/' \
  "$C" >unknown.yaml
"$EVO" space --config unknown.yaml >unknown.out 2>&1
rc=$?
[ $rc = 2 ] || fail "a condition naming no knob: exit $rc, want 2"
grep -q "unknown.yaml:10:[0-9]*: space.knobs.TILE_N.when: unknown knob 'Q'" unknown.out || fail "unknown: $(cat unknown.out)"
sed 's/TILE_N:          {values: \[32, 64, 128\], when: "FAMILY == 0"}/TILE_N:          {values: [32, 64, 128], if: "FAMILY == 0"}/' \
  "$C" >key.yaml
"$EVO" space --config key.yaml >key.out 2>&1
rc=$?
[ $rc = 2 ] || fail "an unknown key beside values: exit $rc, want 2"
grep -q "key.yaml:10:[0-9]*: space.knobs.TILE_N" key.out || fail "unknown key: $(cat key.out)"

[ "$(sha256sum "$F" | cut -d' ' -f1)" = "$before" ] || fail "the recording changed"
[ $fails = 0 ] && echo "cli_families: all checks passed"
exit $((fails > 0))
