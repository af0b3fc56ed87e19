#!/usr/bin/env python3
# make_families_db.py — writes tests/data/families.db: tests/data/replay.db (216 recorded family-0 genomes) with its
# genome texts in the form stored before knobs had conditions (every knob of the space listed, FAMILY and the H_
# knobs too), a third of them turned into family-1 genomes (six stored texts for each of the 12 family-1 genomes of
# tests/data/families-space.yaml, differing in the inactive family-0 knobs), and its run's config the same space
# without conditions. Run from the repository root: python3 tests/data/make_families_db.py
import os, re, shutil, sqlite3

SRC, OUT, CFG = "tests/data/replay.db", "tests/data/families.db", "tests/data/families-space.yaml"
BASELINE = ("TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,"
            "MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64")
FIXED = "H_WG_ROWS=64,%s,H_PIPE=2,H_QK_MODE=2,H_V_PATH=1,H_OVERLAP=1,H_PINGPONG=0,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=0"


def h_knobs(consumers, tile_n, stages):
    return FIXED % ("H_CONSUMERS=%d,H_TILE_N=%d,H_STAGES=%d" % (consumers, tile_n, stages))


def old_config(text):
    # the space before conditions: plain domains, the family-1 tile of the larger space, a full baseline
    text = re.sub(r'\{values: (\[[^\]]*\]), when: "[^"]*"\}', r"\1", text)
    text = text.replace("H_TILE_N:        [64, 128]", "H_TILE_N:        [64, 128, 192, 256]")
    text = text.replace(BASELINE + ',FAMILY=0"', BASELINE + ",FAMILY=0," + h_knobs(2, 128, 3) + '"')
    return "\n".join(l for l in text.split("\n") if not l.startswith("#")) + "\n"


for f in (OUT, OUT + "-wal", OUT + "-shm"):
    if os.path.exists(f):
        os.remove(f)
shutil.copyfile(SRC, OUT)
db = sqlite3.connect(OUT)
for cid, genome in db.execute("SELECT id, genome FROM candidates ORDER BY id").fetchall():
    if cid % 3 == 0 and genome != BASELINE:
        n = cid // 3
        text = genome + ",FAMILY=1," + h_knobs([1, 2, 3][n % 3], [64, 128][n // 3 % 2], [2, 3][n // 6 % 2])
    else:
        text = genome + ",FAMILY=0," + h_knobs([1, 2, 3][cid % 3], [64, 128, 192, 256][cid % 4], [2, 3][cid % 2])
    db.execute("UPDATE candidates SET genome = ? WHERE id = ?", (text, cid))
db.execute("UPDATE runs SET config_text = ?, config_path = ?", (old_config(open(CFG).read()), CFG))
db.execute("UPDATE generations SET best_genome = (SELECT c.genome FROM candidates c JOIN evaluations e ON "
           "e.candidate_id = c.id WHERE e.run_id = generations.run_id AND e.verdict = 'OK' ORDER BY e.fitness DESC "
           "LIMIT 1)")
db.commit()
db.execute("VACUUM")
db.close()
