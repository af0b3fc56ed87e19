#!/usr/bin/env bash
# cli_bench_ab.sh — the two A/B tools of the sm_90a template work: tools/bench/ab_table.py puts two sm90_bench timing
# logs side by side (each run's medians, B's median over A's, a shape only one log has, the causal label kept apart)
# and refuses a missing file, a FIFO and a log without timing lines (exit 2, the file named); tools/bench/causal_balance.py
# gives the persistent causal orders' max/mean work that the template's comment and docs/perf-notes.md quote, and
# refuses a malformed shape; tools/bench/ncu_sass_mix.py reads an Nsight Compute source page (mix, stalls, hottest
# body) and refuses other files; tools/bench/peer_ncu.py refuses a bad peer, shape or flag before it needs a GPU;
# tools/bench/compare_sdpa.py times its contenders in turn over rounds (timed_rounds, with a fake timer).
# Run: bash tests/cli_bench_ab.sh build/evo .   (ctest runs it)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (tools/setup.sh installs it)"; exit 77; }
SRC=$(realpath "$2")
T=$(mktemp -d /tmp/evo-cli-ab-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
AB="$SRC/tools/bench/ab_table.py"

# two runs per log, as sm90ab appends them; a twin line and a regs line that are no timing lines
cat >"$T/a.log" <<'LOG'
genome 128,64,2,192,2,2,0,5,1,1,0,56,2          regs 168 local 0 smem 119944 threads 384
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128)             700.0      698.0      702.0      720.0     785.0
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128) causal      410.0      408.0      412.0      430.0     670.0
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128) causal V_PATH 5 vs its V_PATH 4 twin: same bits (0 of 33554432 elements differ)
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128)             704.0      700.0      706.0      722.0     781.0
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128) causal      406.0      404.0      408.0      428.0     677.0
LOG
cat >"$T/b.log" <<'LOG'
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128)             702.0      700.0      704.0      721.0     783.0
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128) causal      390.0      388.0      392.0      400.0     705.0  (INCORRECT)
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128)             702.0      700.0      704.0      721.0     783.0
128,64,2,192,2,2,0,5,1,1,0,56,2                (4,16,4096,128) causal      392.0      390.0      394.0      402.0     700.0
64,64,2,192,2,2,0,5,1,1,0,56,2                 (1,16,16384,64)           1990.0     1985.0     1995.0     1980.0     552.0
LOG
out=$(python3 "$AB" "$T/a.log" "$T/b.log" --names before,after 2>&1); rc=$?
[ $rc = 0 ] || fail "exit $rc: $out"
grep -qF "| genome | shape | before events µs | after events µs | after / before | before graph µs | after graph µs |" \
  <<<"$out" || fail "header: $out"
# medians: A 702.0 (700, 704), B 702.0: 1.000; causal A 408.0 (410, 406), B 391.0: 0.958
grep -qF "| 128,64,2,192,2,2,0,5,1,1,0,56,2 | (4,16,4096,128) | 700.0 / 704.0 | 702.0 / 702.0 | 1.000 | 720.0 / 722.0 | 721.0 / 721.0 |" \
  <<<"$out" || fail "non-causal row: $out"
grep -qF "| 128,64,2,192,2,2,0,5,1,1,0,56,2 | (4,16,4096,128) causal | 410.0 / 406.0 | 390.0 / 392.0 | 0.958 | 430.0 / 428.0 | 400.0 / 402.0 |" \
  <<<"$out" || fail "causal row: $out"
grep -qF "| 64,64,2,192,2,2,0,5,1,1,0,56,2 | (1,16,16384,64) | - | 1990.0 | - | - | 1980.0 |" <<<"$out" ||
  fail "a shape only B has: $out"
[ "$(grep -c '^| [0-9]' <<<"$out")" = 3 ] || fail "three rows expected: $out"
# bad input: a missing file, a FIFO, a log without timing lines
out=$(python3 "$AB" "$T/a.log" "$T/none.log" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "none.log" <<<"$out" || fail "missing file: exit $rc: $out"
mkfifo "$T/fifo"
out=$(timeout 10 python3 "$AB" "$T/fifo" "$T/b.log" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "fifo: not a regular file" <<<"$out" || fail "FIFO: exit $rc: $out"
echo "nothing timed here" >"$T/empty.log"
out=$(python3 "$AB" "$T/a.log" "$T/empty.log" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "empty.log: no timing lines" <<<"$out" || fail "log without timing lines: exit $rc: $out"

# causal_balance.py: the figures the template's comment quotes (132 SMs, 128-row blocks, one tile of overhead)
CB="$SRC/tools/bench/causal_balance.py"
out=$(python3 "$CB" --tile-n 128 2>&1); rc=$?
[ $rc = 0 ] || fail "causal_balance exit $rc: $out"
grep -qE '^2,8,2048,64 +128 +1\.411 +1\.031 +1\.031 +1\.031$' <<<"$out" || fail "(2,8,2048,64): $out"
grep -qE '^4,8,2048,64 +128 +1\.194 +1\.031 ' <<<"$out" || fail "(4,8,2048,64): $out"
grep -qE '^4,16,4096,128 +128 +1\.061 +1\.005 +1\.005 ' <<<"$out" || fail "(4,16,4096,128): $out"
grep -qE '^1,16,16384,64 +128 +1\.063 +1\.004 +1\.002 +1\.472$' <<<"$out" || fail "(1,16,16384,64): $out"
# one wave (32 items on 132 SMs): nothing to reorder, the orders agree
out=$(python3 "$CB" --tile-n 128 1,8,512,64 2>&1)
grep -qE '^1,8,512,64 +128 +([0-9.]+) +\1 +\1 ' <<<"$out" || fail "one wave: $out"
out=$(python3 "$CB" 2,8,x 2>&1); rc=$?
[ $rc = 2 ] && grep -q "'2,8,x'" <<<"$out" || fail "malformed shape: exit $rc: $out"
out=$(python3 "$CB" --sms 0 2>&1); rc=$?
[ $rc = 2 ] || fail "--sms 0: exit $rc: $out"

# tools/bench/ncu_sass_mix.py on a source-page CSV as ncu writes it: the opcode mix, the stall reasons (all and the
# softmax's), the 'wait' samples by opcode and the hottest body; a file that is no such CSV: exit 2, named
MX="$SRC/tools/bench/ncu_sass_mix.py"
{
  echo '"Kernel Name","k_test",'
  echo '"Address","Source","Instructions Executed","stall_wait","stall_selected","stall_wait (Not Issued)"'
  echo '"0x10","      FFMA R1, R2, R3, R4","300","7","3","9"'
  echo '"0x20","      MUFU.EX2 R1, R1","300","40","10","9"'
  echo '"0x30","      @P0 BRA 0x10","300","0","5","0"'
  echo '"0x40","      EXIT","100","0","1","0"'
} >"$T/k-sass.csv"
out=$(python3 "$MX" "$T/k-sass.csv" --loop 2>&1); rc=$?
[ $rc = 0 ] || fail "ncu_sass_mix exit $rc: $out"
grep -q "kernel k_test" <<<"$out" || fail "ncu_sass_mix: kernel name: $out"
grep -q "warp instructions executed 1000" <<<"$out" || fail "ncu_sass_mix: total: $out"
grep -q "opcode mix: FFMA 30.0%, MUFU 30.0%, BRA 30.0%, EXIT 10.0%" <<<"$out" || fail "ncu_sass_mix: mix: $out"
grep -qE "warp-state samples 66, at softmax instructions 60 \(91 %\)" <<<"$out" || fail "ncu_sass_mix: samples: $out"
grep -qE "^ +wait +all +47 \(71.2 %\) +softmax +47$" <<<"$out" || fail "ncu_sass_mix: wait row: $out"
grep -q "'wait' samples by opcode: MUFU.EX2 40, FFMA 7" <<<"$out" || fail "ncu_sass_mix: wait by opcode: $out"
grep -q "hottest body (executed 300 times)" <<<"$out" || fail "ncu_sass_mix: loop: $out"
# --blocks: the three FFMA, MUFU, BRA lines ran 300 times each, one run of 3 (90 % of the issue), then EXIT
out=$(python3 "$MX" "$T/k-sass.csv" --blocks 2 2>&1); rc=$?
[ $rc = 0 ] || fail "ncu_sass_mix --blocks exit $rc: $out"
grep -qE "^ +0x10 +3 x 300 +90\.0% +65: FFMA1 MUFU1 BRA1$" <<<"$out" || fail "ncu_sass_mix --blocks: first run: $out"
grep -qE "^ +0x40 +1 x 100 +10\.0% +1: EXIT1$" <<<"$out" || fail "ncu_sass_mix --blocks: second run: $out"
out=$(python3 "$MX" "$T/k-sass.csv" --blocks -1 2>&1); rc=$?
[ $rc = 2 ] || fail "ncu_sass_mix --blocks -1: exit $rc: $out"
printf 'not,a,csv\n' >"$T/bad.csv"
out=$(python3 "$MX" "$T/bad.csv" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "bad.csv: not an ncu source-page CSV" <<<"$out" || fail "ncu_sass_mix bad file: exit $rc: $out"
out=$(python3 "$MX" "$T/missing.csv" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "missing.csv" <<<"$out" || fail "ncu_sass_mix missing file: exit $rc: $out"
# tools/bench/peer_ncu.py refuses a bad peer or shape (exit 2) before it needs PyTorch or a GPU
PN="$SRC/tools/bench/peer_ncu.py"
out=$(python3 "$PN" bogus 1,2,3,4 2>&1); rc=$?
[ $rc = 2 ] && grep -q "usage: peer_ncu.py" <<<"$out" || fail "peer_ncu bad peer: exit $rc: $out"
out=$(python3 "$PN" cudnn_fp8 1,2,x,4 2>&1); rc=$?
[ $rc = 2 ] && grep -q "shape '1,2,x,4'" <<<"$out" || fail "peer_ncu bad shape: exit $rc: $out"
out=$(python3 "$PN" cudnn 1,2,3,4 --causl 2>&1); rc=$?
[ $rc = 2 ] || fail "peer_ncu bad flag: exit $rc: $out"
# tools/bench/compare_sdpa.py's timing in rounds: the contenders in turn each round (a context entered around each
# of a backend's measurements), a contender's time the median of its round medians, one that fails left out of later
# rounds with its error, the check after timing run once; --rounds 0 refused (exit 2)
out=$(cd "$SRC/tools/bench" && python3 - <<'PY' 2>&1
import compare_sdpa as cs
class FakeTimer:
    rounds = 3
    class torch:
        class cuda:
            @staticmethod
            def synchronize():
                pass
    def __init__(self):
        self.n = 0
    def graph(self, fn, split=False):
        assert split
        self.n += 1
        fn()
        return {"median_us": 10 + self.n, "p10_us": 9, "p90_us": 12}
    def events(self, fn, split=False):
        fn()
        return {"median_us": 20, "p10_us": 19, "p90_us": 21}
calls, entered, after = [], [], []
class Ctx:
    def __enter__(self):
        entered.append(1)
    def __exit__(self, *exc):
        return False
def bad():
    raise RuntimeError("cannot capture")
a, b, c = {}, {}, {}
cs.timed_rounds(FakeTimer(), [(a, lambda: calls.append("a"), None, lambda: after.append(1)),
                              (b, lambda: calls.append("b"), Ctx, None), (c, bad, None, None)])
print("order", "".join(calls), "entered", len(entered), "after", len(after))
print("a", a["graph"]["round_medians_us"], a["graph"]["median_us"], a["events"]["median_us"])
print("b", b["graph"]["round_medians_us"], b["graph"]["median_us"])
print("c", c["graph"], c["events"])
PY
)
grep -q "^order aabbaabbaabb entered 6 after 1$" <<<"$out" || fail "timed_rounds order: $out"
grep -q "^a \[11, 14, 16\] 14 20$" <<<"$out" || fail "timed_rounds medians of a: $out"
grep -q "^b \[12, 15, 17\] 15$" <<<"$out" || fail "timed_rounds medians of b: $out"
grep -q "^c {'error': 'cannot capture'} {'error': 'cannot capture'}$" <<<"$out" || fail "timed_rounds failure: $out"
out=$(python3 "$SRC/tools/bench/compare_sdpa.py" --peers-only --rounds 0 --dry-run 2>&1); rc=$?
[ $rc = 2 ] && grep -q "want a positive count" <<<"$out" || fail "compare_sdpa --rounds 0: exit $rc: $out"
[ $fails = 0 ] && echo "cli_bench_ab: all passed"
exit $((fails > 0))
