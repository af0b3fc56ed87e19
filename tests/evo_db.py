# evo_db.py — read-only looks into an evo database for the CLI tests (cli_faults.sh, cli_badinput.sh).
# Run: python3 tests/evo_db.py COMMAND DB [ARGS]; prints its answer, exits 1 (with the reason on stderr) when a
# check fails. Opens the file read-only, so a test never changes what it inspects.
import sqlite3
import sys


def connect(path):
    return sqlite3.connect("file:%s?mode=ro" % path, uri=True)


def scalar(db, sql, *args):
    """One value of a query; 0 while the file or its tables do not exist yet (a run still starting)."""
    try:
        row = connect(db).execute(sql, args).fetchone()
    except sqlite3.Error:
        return 0
    return row[0] if row and row[0] is not None else 0


def dump(db):
    """Every row of every evo table, one line each, in a stable order: `grep -Fvxf after before` then lists
    the rows that were lost or changed."""
    c = connect(db)
    tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    for t in tables:
        cols = [r[1] for r in c.execute("PRAGMA table_info(%s)" % t)]
        for row in c.execute("SELECT * FROM %s ORDER BY %s" % (t, ", ".join(cols))):
            print(t + "|" + "|".join(repr(v) for v in row))


def search(db, run):
    """What a run searched, free of ids and times: per generation the genomes evaluated and their verdicts, the
    lineage edges, and the generation rows. Equal for a run and the same run killed and resumed."""
    c = connect(db)
    for g, genome, verdict in c.execute(
            "SELECT e.generation, c.genome, e.verdict FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
            "WHERE e.run_id = ? ORDER BY 1, 2", (run,)):
        print("eval", g, genome, verdict)
    for row in c.execute(
            "SELECT l.generation, c.genome, p.genome, l.operator FROM lineage l JOIN candidates c ON c.id = l.child_id "
            "JOIN candidates p ON p.id = l.parent_id WHERE l.run_id = ? ORDER BY 1, 2, 3, 4", (run,)):
        print("lineage", *row)
    for row in c.execute(
            "SELECT generation, best_fitness, median_fitness, evaluated, reused, n_ok, n_invalid, n_compile_fail, "
            "n_resource_fail, n_launch_fail, n_crashed, n_timeout, n_incorrect, n_slow, n_regressed, best_genome "
            "FROM generations WHERE run_id = ? ORDER BY generation", (run,)):
        print("generation", *row)


def check_run(db, run):
    """The structure a finished run must have: state done, one generation row per planned generation, no
    candidate evaluated twice, every generation's counts adding up to what it evaluated and reused."""
    c = connect(db)
    problems = []
    row = c.execute("SELECT state, generations FROM runs WHERE id = ?", (run,)).fetchone()
    if not row:
        print("check_run: no run %d" % run, file=sys.stderr)
        return 1
    state, planned = row
    if state != "done":
        problems.append("run %s is %s, not done" % (run, state))
    gens = [r[0] for r in c.execute("SELECT generation FROM generations WHERE run_id = ? ORDER BY 1", (run,))]
    if gens != list(range(planned)):
        problems.append("generation rows %s, want 0..%d" % (gens, planned - 1))
    for cand, n in c.execute("SELECT candidate_id, count(*) FROM evaluations WHERE run_id = ? GROUP BY 1 "
                             "HAVING count(*) > 1", (run,)):
        problems.append("candidate %d evaluated %d times" % (cand, n))
    for row in c.execute("SELECT generation, evaluated + reused, n_ok + n_invalid + n_compile_fail + n_resource_fail "
                         "+ n_launch_fail + n_crashed + n_timeout + n_incorrect + n_slow + n_regressed "
                         "FROM generations WHERE run_id = ?", (run,)):
        if row[1] != row[2]:
            problems.append("generation %d: %d evaluated + reused but counts add up to %d" % row)
    stored = dict(c.execute("SELECT generation, count(*) FROM evaluations WHERE run_id = ? GROUP BY 1", (run,)))
    for g, evaluated in c.execute("SELECT generation, evaluated FROM generations WHERE run_id = ?", (run,)):
        if stored.get(g, 0) > evaluated:
            problems.append("generation %d: %d evaluations stored, the row says %d" % (g, stored.get(g, 0), evaluated))
    for p in problems:
        print("check_run: " + p, file=sys.stderr)
    return 1 if problems else 0


def main():
    cmd, db = sys.argv[1], sys.argv[2]
    if cmd == "scalar":
        print(scalar(db, sys.argv[3], *sys.argv[4:]))
    elif cmd == "dump":
        dump(db)
    elif cmd == "search":
        search(db, int(sys.argv[3]))
    elif cmd == "check_run":
        return check_run(db, int(sys.argv[3]))
    elif cmd == "quick_check":
        print(connect(db).execute("PRAGMA quick_check").fetchone()[0])
    else:
        print("evo_db.py: unknown command " + cmd, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
