#!/usr/bin/env bash
# cli_export_dispatch.sh — `evo export --dispatch` on a fixture whose per-shape winners differ (test_export --fixture
# dispatch: F0 of family 0 wins mission and small, F1 of the sm_90a family wins long, wide and stress) and on
# tests/data/replay.db (four winners, family 0): the summary, the provenance table, the entries, the instantiations,
# the nvcc target; the launcher's choice for exact and nearest buckets, by compiling the file's own dispatch code
# (attn_dispatch_host.h and the table, cut out of the .cu) with the host C compiler and no CUDA; the refusals. Needs no
# GPU and no nvcc (tests/cli_export_nvcc.sh builds the files). Run: bash tests/cli_export_dispatch.sh build/evo .
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
FIXTURE=$(dirname "$EVO")/tests/test_export
CC=$(command -v cc || command -v gcc || true)
T=$(mktemp -d /tmp/evo-cli-export-dispatch-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
run() {
  "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
expect() { # expect WHAT GOT WANT
  checks=$((checks + 1))
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
has() { # has WHAT FILE PATTERN (fixed string)
  checks=$((checks + 1))
  grep -qF -- "$3" "$2" || fail "$1: $2 lacks '$3'"
}

"$FIXTURE" --fixture dispatch d.db >keys || { echo "FAIL: fixture" >&2; exit 1; }
F0=$(awk '$1 == "F0" {print $2}' keys)
F1=$(awk '$1 == "F1" {print $2}' keys)

run export --dispatch --db d.db
expect "export exit" "$rc" 0
expect "summary" "$(printf '%s\n' "$out" | head -1)" \
  "wrote variants/attention_fp8-sm_90-dispatch.cu: 5 buckets, 2 kernels (accuracy class exact)"
D=variants/attention_fp8-sm_90-dispatch.cu
checks=$((checks + 1))
[ -f $D ] || { fail "no $D"; exit 1; }

# The provenance table: bucket -> entry, key, class, speedup, total median, shapes, GPU (speedups as the fixture set).
table=$(sed -n '/^ \*   bucket /,/^ \*$/p' $D | sed '1d;$d' | awk '{print $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}')
want="d64 non-causal seq 257..512 bh 1..8 0 ${F0:0:8} exact 1.300x
d64 non-causal seq 257..512 bh 9..16 0 ${F0:0:8} exact 1.250x
d64 non-causal seq 1025..2048 bh 9..16 1 ${F1:0:8} exact 1.600x
d64 non-causal seq 1025..2048 bh 17..32 1 ${F1:0:8} exact 1.700x
d128 non-causal seq 257..512 bh 9..16 1 ${F1:0:8} exact 1.200x"
expect "provenance table" "$table" "$want"
has "GPU in the table" $D "mission(1,8,512,64); NVIDIA H200 (GPU 0)"
has "entry 0" $D " *   entry 0: candidate 2, key $F0, accuracy class exact, family 0"
has "entry 1" $D " *   entry 1: candidate 3, key $F1, accuracy class exact, family 1"
has "nvcc target" $D " *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -c attention_fp8-sm_90-dispatch.cu"
has "dispatch define" $D "#define EVO_EXPORT_DISPATCH 1"
has "sm90 host code" $D "#define EVO_EXPORT_SM90 1"
# Both templates, each once; the sm_90a host code once; entry 0 brings its D=64 kernel only (it wins no D=128
# bucket), entry 1 its D=64 and D=128 kernels: three instantiations, three variant rows; entry 1's kernels (FP16 P·V,
# a producer) each with its FP16-V twin (V_PATH 2) and, their Q·Kᵀ being FP16 (QK_MODE 2), their FP16-K-and-V twin
# (V_PATH 3): four instantiations more, the twins in their row's last columns but one; no kernel converts K and V
# per call (the last column: no V_PATH 3 genome among the winners).
expect "family-0 template once" "$(grep -c '^/\* ==== attention_fp8.cu, verbatim' $D)" 1
expect "family-1 template once" "$(grep -c '^/\* ==== attention_fp8_sm90.cu, verbatim' $D)" 1
expect "sm90 host once" "$(grep -c '^/\* ==== attn_sm90_host.c, verbatim' $D)" 1
expect "instantiations" "$(grep -c '^template __global__ void' $D)" 7
expect "FP16-V twins" "$(grep -c '^template __global__ void evo_attn_sm90<[0-9]*,64,2,64,3,2,2,2,1,0,0,56,0>.*its FP16-V twin' $D)" 2
expect "FP16-K-and-V twins" "$(grep -c '^template __global__ void evo_attn_sm90<[0-9]*,64,2,64,3,2,2,3,1,0,0,56,0>.*its FP16-K-and-V twin' $D)" 2
expect "family-0 instantiation" "$(grep -c '^template __global__ void evo_attn_fwd<64,' $D)" 1
rows=$(sed -n '/^static const variant variants/,/^};/p' $D | grep '^    {' |
  sed -E 's/.*, ([01]), (nullptr|\(const void \*\)[^ ]*), (nullptr|\(const void \*\)[^ ]*), ([01])\},$/\1 \2 \3 \4/; s/\(const void \*\)//g')
expect "variant rows (entry)" "$(printf '%s\n' "$rows" | cut -d' ' -f1 | tr '\n' ' ')" "0 1 1 "
expect "variant rows (twin)" "$(printf '%s\n' "$rows" | cut -d' ' -f2 | tr '\n' ' ')" \
  "nullptr evo_attn_sm90<64,64,2,64,3,2,2,2,1,0,0,56,0> evo_attn_sm90<128,64,2,64,3,2,2,2,1,0,0,56,0> "
expect "variant rows (K-and-V twin)" "$(printf '%s\n' "$rows" | cut -d' ' -f3 | tr '\n' ' ')" \
  "nullptr evo_attn_sm90<64,64,2,64,3,2,2,3,1,0,0,56,0> evo_attn_sm90<128,64,2,64,3,2,2,3,1,0,0,56,0> "
expect "variant rows (converts)" "$(printf '%s\n' "$rows" | cut -d' ' -f4 | tr '\n' ' ')" "0 0 0 "
expect "timed shapes (entry)" "$(sed -n '/^static const shape timed_shapes/,/^};/p' $D | grep -o '[0-9]*},$' | tr -d '},' | tr '\n' ' ')" \
  "0 0 1 1 1 "
has "self-test banner lists entries" $D 'printf("entry %d  %s  (%s, key %.8s)\n"'
has "shared self-test main" $D "namespace evo_selftest_main {"

# The launcher's choice, compiled from the file itself without CUDA: its copy of attn_dispatch_host.h and its table.
if [ -n "$CC" ]; then
  sed -n '/^\/\* ==== attn_dispatch_host.h, verbatim ==== \*\//,/^\/\* ==== end of the dispatch table ==== \*\//p' $D >pick.h
  cat >pick.c <<'EOF'
#include <stdio.h>
#include "pick.h"
int main(void)
{
    /* batch heads seq head_dim causal */
    static const int p[][5] = {
        {1, 8, 512, 64, 0},   /* mission: its own bucket (row 0) */
        {2, 8, 512, 64, 0},   /* small (row 1) */
        {2, 8, 2048, 64, 0},  /* long (row 2) */
        {4, 8, 2048, 64, 0},  /* stress (row 3) */
        {2, 8, 512, 128, 0},  /* wide (row 4) */
        {1, 8, 300, 64, 0},   /* seq 257..512, bh 8: mission's bucket */
        {4, 8, 4096, 64, 0},  /* no bucket: seq one class above stress's, same bh class -> row 3 */
        {1, 1, 1, 64, 0},     /* no bucket: seq class 8 (<= 256), bh 1..8 -> row 0 (one step) */
        {2, 8, 1024, 64, 0},  /* no bucket: one seq step from rows 1 and 2 -> the first, row 1 */
        {1, 8, 512, 64, 1},   /* causal: no causal bucket -> the nearest non-causal, row 0 */
        {64, 64, 8192, 128, 1}, /* D=128: the only D=128 bucket, row 4 */
        {1, 1, 64, 96, 0},    /* no bucket of head dim 96: -1 */
    };
    for (unsigned i = 0; i < sizeof p / sizeof p[0]; i++) {
        const int r = attn_dispatch_pick(evo_dispatch_buckets, evo_dispatch_n_buckets, p[i][0], p[i][1], p[i][2], p[i][3],
                                         p[i][4]);
        printf("%d:%d ", r, r < 0 ? -1 : evo_dispatch_buckets[r].entry);
    }
    printf("\n");
    return 0;
}
EOF
  checks=$((checks + 1))
  if "$CC" -std=c11 -Wall -Wextra -Werror -I. pick.c -o pick 2>cc.log; then
    expect "launcher's choice (row:entry)" "$(./pick)" "0:0 1:0 2:1 3:1 4:1 0:0 3:1 0:0 1:0 0:0 4:1 -1:-1 "
  else
    fail "the dispatch code of $D does not compile as C without CUDA: $(head -5 cc.log)"
  fi
else
  echo "note: no C compiler; the launcher's choice is not checked"
fi

# replay.db: four winners of family 0 (the mission tie goes to the smaller key), the nvcc target sm_90's.
run export --dispatch --db "$SRC/tests/data/replay.db" -o r.cu
expect "replay export exit" "$rc" 0
expect "replay summary" "$(printf '%s\n' "$out" | head -1)" "wrote r.cu: 5 buckets, 4 kernels (accuracy class exact)"
expect "replay entries" "$(printf '%s\n' "$out" | grep -o 'entry [0-9]  [0-9a-f]*' | tr '\n' ' ')" \
  "entry 0  504122bf entry 1  044adc28 entry 2  ae5a6d11 entry 3  6d0439c2 entry 1  044adc28 "
has "replay target" r.cu " *   nvcc -arch=sm_90 -O3 -c attention_fp8-sm_90-dispatch.cu"
has "replay no sm90" r.cu "#define EVO_EXPORT_SM90 0"
expect "replay instantiations" "$(grep -c '^template __global__ void' r.cu)" 5

# -o -: the file on stdout, the summary on stderr.
run export --dispatch --db d.db -o -
expect "-o - exit" "$rc" 0
checks=$((checks + 1))
printf '%s\n' "$out" | head -1 | grep -q "attention_fp8-sm_90-dispatch.cu — FP8 attention forward kernels" || fail "-o - stdout: $(printf '%s\n' "$out" | head -1)"
checks=$((checks + 1))
case "$err" in "exported to standard output: 5 buckets, 2 kernels"*) ;; *) fail "-o - stderr: $err" ;; esac

# Refusals: conflicting options (2), a class without winners (1), an unknown class (2), no database (1); the
# default single export is unchanged by --dispatch's existence (it still takes F1, the best geometric mean).
for args in "--dispatch --best" "--dispatch --id 1" "--dispatch --torch dir" "--dispatch --row 2"; do
  run export $args --db d.db
  expect "export $args exit" "$rc" 2
done
# A class admits the kernels of every stricter one: asked for fp8 on a store of exact kernels, the file holds them
# (its own default name); with F1 judged fp8, the exact file leaves F1 out and the fp8 file takes it where it wins.
run export --dispatch --accuracy fp8 --db d.db
expect "--accuracy fp8 exit" "$rc" 0
expect "--accuracy fp8 summary" "$(printf '%s\n' "$out" | head -1)" \
  "wrote variants/attention_fp8-sm_90-dispatch-fp8.cu: 5 buckets, 2 kernels (accuracy class fp8)"
cp d.db mixed.db
python3 - mixed.db "$F1" <<'PY' || fail "mixed fixture"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE evaluations SET accuracy = 'fp8' WHERE candidate_id = (SELECT id FROM candidates WHERE key = ?)",
          (sys.argv[2],))
c.commit()
PY
run export --dispatch --accuracy fp8 --db mixed.db -o mixed8.cu
expect "mixed fp8 exit" "$rc" 0
table=$(sed -n '/^ \*   bucket /,/^ \*$/p' mixed8.cu | sed '1d;$d' | awk '{print $9, $10, $11}')
want="${F0:0:8} exact 1.300x
${F0:0:8} exact 1.250x
${F1:0:8} fp8 1.600x
${F1:0:8} fp8 1.700x
${F1:0:8} fp8 1.200x"
expect "mixed fp8 table" "$table" "$want"
run export --dispatch --db mixed.db -o mixed0.cu
expect "mixed exact exit" "$rc" 0
table=$(sed -n '/^ \*   bucket /,/^ \*$/p' mixed0.cu | sed '1d;$d' | awk '{print $9, $10}' | sort -u)
checks=$((checks + 2))
grep -q "${F1:0:8}" <<<"$table" && fail "mixed exact table holds the fp8 kernel F1: $table"
grep -q "^${F0:0:8} exact$" <<<"$table" || fail "mixed exact table lacks F0: $table"
run export --dispatch --accuracy fast --db d.db
expect "--accuracy fast exit" "$rc" 2
run export --dispatch --db none.db
expect "missing db exit" "$rc" 1
run export --db d.db -o single.cu
expect "single export exit" "$rc" 0
has "single export takes F1" single.cu "#define EVO_EXPORT_KEY \"$F1\""
checks=$((checks + 1))
! grep -q "EVO_EXPORT_DISPATCH 1" single.cu || fail "the single export defines EVO_EXPORT_DISPATCH"
run help export
checks=$((checks + 1))
case "$out$err" in *"--dispatch"*) ;; *) fail "evo help export does not list --dispatch" ;; esac

# tools/bench/dispatch_vs_single.py --dry-run: per shape, the fastest genome of the class there and the --best export
# (F0 wins mission and small, F1 long, wide and stress, and F1 is the top elite), each exported once
python3 "$SRC/tools/bench/dispatch_vs_single.py" --db d.db --class exact --evo "$EVO" --out dvs --dry-run >dvs.out 2>&1
expect "dispatch_vs_single exit" "$?" 0
f0=${F0:0:8} f1=${F1:0:8}
has "dispatch_vs_single mission" dvs.out "mission (1, 8, 512, 64): dispatch vs $f0, $f1"
has "dispatch_vs_single long" dvs.out "long (2, 8, 2048, 64): dispatch vs $f1"
has "dispatch_vs_single files" dvs.out "dispatch_vs_single: 2 single-genome files exported to dvs/dispatch-vs-single; no GPU run (--dry-run)"
for k in $f0 $f1; do
  has "dispatch_vs_single $k.cu" dvs/dispatch-vs-single/$k.cu "#define EVO_EXPORT_KEY \"$k"
done
python3 "$SRC/tools/bench/dispatch_vs_single.py" --db nothing.db --evo "$EVO" --out dvs --dry-run >dvs.out 2>&1
expect "dispatch_vs_single without a store" "$?" 2

# tools/bench/twins.py --dry-run: the entry points the file has (F1's kernels have both FP16 twins), and the refusals
python3 "$SRC/tools/bench/twins.py" $D --shapes "2,8,512,64;1,2,77,128" --causal on --dry-run >tw.out 2>&1
expect "twins exit" "$?" 0
has "twins plan" tw.out "twins: $D: 2 shapes x 1 causal settings; entry points: codes, V16, KV16; 3 rounds"
python3 "$SRC/tools/bench/twins.py" $D --shapes "2,8,512,96" --dry-run >tw.out 2>&1
expect "twins bad shape" "$?" 2
has "twins bad shape message" tw.out "'2,8,512,96' needs positive B, H, S and D 64 or 128"
python3 "$SRC/tools/bench/twins.py" d.db --dry-run >tw.out 2>&1
expect "twins on a store" "$?" 2

if [ "$fails" -ne 0 ]; then
  echo "cli_export_dispatch: $fails of $checks checks failed" >&2
  exit 1
fi
echo "cli_export_dispatch: $checks checks passed"
