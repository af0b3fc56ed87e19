#!/usr/bin/env bash
# cli_export.sh — `evo export` from the command line: the default path, -o, --id by key prefix and number, the
# note and the warning, every refusal with its exit code, the database left unchanged, and tools/bench/compare_sdpa.py
# --dry-run reading the exported file. Needs no GPU and no nvcc (tests/cli_export_nvcc.sh compiles the files).
# Run: bash tests/cli_export.sh build/evo .   (ctest runs it; fixtures come from build/tests/test_export --fixture)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
FIXTURE=$(dirname "$EVO")/tests/test_export
if [ ! -x "$FIXTURE" ]; then
  echo "cli_export: fixture maker $FIXTURE not built" >&2
  exit 1
fi
T=$(mktemp -d /tmp/evo-cli-export-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# any command's exit code, stdout and stderr into rc, out and err; run: evo's
run_cmd() {
  "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
run() { run_cmd "$EVO" "$@"; }
compare_sdpa() { run_cmd python3 "$SRC/tools/bench/compare_sdpa.py" "$@"; }
sustained() { run_cmd python3 "$SRC/tools/bench/sustained.py" "$@"; }
expect_rc() { checks=$((checks + 1)); [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1 (stderr: $err)"; }
expect_out() { checks=$((checks + 1)); grep -qF -- "$1" <<<"$out" || fail "$2: stdout lacks '$1'"$'\n'"$out"; }
expect_err() { checks=$((checks + 1)); [ "$err" = "$1" ] || fail "$2: stderr '$err', want '$1'"; }
expect_err_has() { checks=$((checks + 1)); grep -qF -- "$1" <<<"$err" || fail "$2: stderr '$err' lacks '$1'"; }
expect_file_has() { checks=$((checks + 1)); grep -qF -- "$2" "$1" 2>/dev/null || fail "$3: $1 lacks '$2'"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

"$FIXTURE" --fixture e4m3 pop.db >keys.txt || fail "fixture e4m3"
"$FIXTURE" --fixture empty empty.db >/dev/null || fail "fixture empty"
key() { awk -v n="$1" '$1 == n { print $2 }' keys.txt; }
cid() { awk -v n="$1" '$1 == n { print $3 }' keys.txt; }
A=$(key A)
before=$(sha pop.db)

# ---- the best: the default path under variants/, the hand-written file above it passed over ----
run export --db pop.db
expect_rc 0 "export"
f=variants/attention_fp8-sm_90-${A:0:8}.cu
checks=$((checks + 1)); [ -s "$f" ] || fail "export: $f not written"
expect_out "wrote $f: candidate $(cid A) (${A:0:8}), accuracy class exact, 1.840x the baseline in run 1" "export summary"
expect_out "genome TILE_M=128,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=1,F16_SMEM=1,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64" "export genome"
expect_err "evo: note: passed over 1 better-ranked elite checked outside a run with \`evo check\` (the first: my_attn.cu, 2.500x); exported the best searched kernel" "export note"
expect_file_has "$f" "#define EVO_EXPORT_KEY \"$A\"" "exported key"
expect_file_has "$f" 'extern "C" int evo_attention_forward(const void *q, const void *k, const void *v, const float *q_scale,' "launcher"
checks=$((checks + 1)); ! grep -q '^#include "evo_attention_abi.h"' "$f" || fail "exported file still includes the ABI header"

# --best is the default; --id by prefix and by number give the same text but for the export date
run export --best --db pop.db -o best.cu
expect_rc 0 "export --best -o"
run export --id "${A:0:6}" --db pop.db -o by-prefix.cu
expect_rc 0 "export --id prefix"
expect_err "" "export --id: no note"
expect_out "wrote by-prefix.cu: candidate $(cid A) (${A:0:8}, by its key prefix), accuracy class exact, 1.840x the baseline in run 1" "export --id prefix: which reading"
run export --id "$(cid A)" --db pop.db --output by-number.cu
expect_rc 0 "export --id number"
expect_out "wrote by-number.cu: candidate $(cid A) (${A:0:8}, by its row id)" "export --id number: which reading"
run export --key "${A:0:6}" --db pop.db -o by-key.cu
expect_rc 0 "export --key"
run export --row "$(cid A)" --db pop.db -o by-row.cu
expect_rc 0 "export --row"
for g in best.cu by-prefix.cu by-number.cu by-key.cu by-row.cu; do
  checks=$((checks + 1))
  cmp -s <(grep -v '^ \*   exported ' "$f") <(grep -v '^ \*   exported ' "$g") || fail "$g differs from $f"
done

# a key the genome no longer renders to: written, with a warning
run export --id eeeeeeee --db pop.db -o rekeyed.cu
expect_rc 0 "export rekeyed"
expect_err_has "evo: warning: the compile key recomputed here (" "export rekeyed warning"

# ---- refusals ----
run export --db none.db
expect_rc 1 "no database"
expect_err "evo: no database at none.db — run \`evo run\` first" "no database"
checks=$((checks + 1)); [ ! -e none.db ] || fail "no database: created it"
run export --db empty.db
expect_rc 1 "no elites"
expect_err "evo: empty.db: no elites yet — no candidate has passed every gate; run \`evo run\`" "no elites"
run export --db pop.db --id deadbeef0
expect_rc 1 "unknown id"
expect_err "evo: pop.db: no candidate 'deadbeef0'" "unknown id"
run export --db pop.db --id 999
expect_rc 1 "unknown number"
run export --db pop.db --id "${A:0:4}"
expect_rc 2 "ambiguous prefix"
expect_err "evo: pop.db: key prefix '${A:0:4}' matches several candidates; give more digits" "ambiguous prefix"
run export --db pop.db --id "$(cid FILE)"
expect_rc 2 "hand-written file"
expect_err_has "is my_attn.cu, a hand-written kernel checked with \`evo check\`: that file is standalone already" "hand-written file"
B=$(key BAD)
run export --db pop.db --id "${B:0:8}"
expect_rc 1 "incorrect candidate"
expect_err_has "has no evaluation that passed every gate (latest: INCORRECT in run 1 generation 0)" "incorrect candidate"
S=$(key STALE)
run export --db pop.db --id "${S:0:8}"
expect_rc 1 "changed template"
expect_err_has "was measured with another version of attention_fp8.cu" "changed template"
run export --db pop.db --best --id 1
expect_rc 2 "--best --id"
expect_err "evo: export: --best and --id (--row, --key) exclude each other (see 'evo help export')" "--best --id"
run export --db pop.db --id 1 --key "${A:0:6}"
expect_rc 2 "--id and --key"
expect_err "evo: export: name one candidate: --id, --row or --key, once (see 'evo help export')" "--id and --key"
run export --db pop.db --row "${A:0:6}"
expect_rc 2 "--row of a key"
expect_err "evo: '${A:0:6}' is not a candidate's row id (a decimal number)" "--row of a key"

# ---- a row id that is also another candidate's key prefix: refused, naming both (it used to take the prefix) ----
cp pop.db amb.db
python3 - amb.db "$(cid A)" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
key = db.execute("SELECT key FROM candidates WHERE id = ?", (int(sys.argv[2]),)).fetchone()[0]
db.execute("UPDATE candidates SET key = ? WHERE id = ?", ("6442" + key[4:], int(sys.argv[2])))
db.execute("INSERT INTO candidates (id, key, task, arch, genome, template_hash, options, nvrtc_version) "
           "VALUES (6442, ?, 'attention_fp8', 'sm_90', 'X=1', '', '', '13.0')", ("ab" * 32,))
db.commit()
PY
run export --db amb.db --id 6442 -o amb.cu
expect_rc 2 "row id and key prefix"
expect_err "evo: '6442' names two candidates: candidate 6442 by its row id (key abababab) and candidate $(cid A) by its key prefix (key 6442${A:4:4}); give --row 6442 or --key 6442" "row id and key prefix"
checks=$((checks + 1)); [ ! -e amb.cu ] || fail "row id and key prefix: wrote amb.cu"
run export --db amb.db --key 6442 -o amb.cu
expect_rc 0 "--key of the prefix"
expect_out "wrote amb.cu: candidate $(cid A) (6442${A:4:4}, by its key prefix)" "--key of the prefix"
run export --db amb.db --row 6442 -o amb.cu
expect_rc 1 "--row of the row"
expect_err_has "evo: amb.db: candidate 6442 (abababab) has no evaluation that passed every gate" "--row of the row"

# ---- an output that is an input: the database itself, by any name, or its companions ----
mkdir -p sub
for o in pop.db ./sub/../pop.db pop.db-wal pop.db-shm pop.db-journal; do
  run export --db pop.db -o "$o"
  expect_rc 2 "export -o $o"
  expect_err_has "evo: export -o $o is the " "export -o $o"
  expect_err_has " --db pop.db, an input: evo never writes over what it reads" "export -o $o"
done
checks=$((checks + 1)); [ "$(sha pop.db)" = "$before" ] || fail "export -o the database: it changed"
cp pop.db s.db
run export --best --db s.db -o s.db
expect_rc 2 "--db s.db -o s.db"
checks=$((checks + 1)); cmp -s s.db pop.db || fail "--db s.db -o s.db: s.db changed"
mkdir -p torchdir && ln pop.db torchdir/evo_fp8.py # a hard link: the same file by another name
run export --db pop.db --torch torchdir --quantizer "$SRC/variants/quantize_fp8-sm_90-4a2ad3fb.cu"
expect_rc 2 "--torch over the database"
expect_err "evo: export --torch torchdir/evo_fp8.py is the same file as --db pop.db, an input: evo never writes over what it reads" "--torch over the database"
checks=$((checks + 1)); [ "$(sha pop.db)" = "$before" ] || fail "--torch over the database: it changed"

# ---- -o -: the file on standard output, the summary on stderr; never a file named "-" ----
run export --db pop.db -o -
expect_rc 0 "export -o -"
expect_out "#define EVO_EXPORT_KEY \"$A\"" "export -o -: the file"
expect_err_has "exported to standard output: candidate $(cid A) (${A:0:8}), accuracy class exact, 1.840x the baseline in run 1" "export -o -: summary"
checks=$((checks + 1)); [ ! -e ./- ] || fail "export -o - wrote a file named -"

# ---- a name with a newline or an escape sequence is written as given and shown escaped ----
run export --db pop.db -o $'nl\nname\e[1m.cu'
expect_rc 0 "export to a name with a newline"
expect_out "wrote nl\nname\u001b[1m.cu: candidate $(cid A) (${A:0:8}), accuracy class exact, 1.840x the baseline in run 1" "export to a name with a newline: shown escaped"
checks=$((checks + 1)); [ "$(grep -c . <<<"$out")" = 3 ] || fail "export to a name with a newline: $(grep -c . <<<"$out") lines"
checks=$((checks + 1)); [ -s $'nl\nname\e[1m.cu' ] || fail "export to a name with a newline: not written under its own name"

# ---- replacing a file keeps its mode (a 0600 file stays 0600) ----
echo old >private.cu && chmod 600 private.cu
run export --db pop.db -o private.cu
expect_rc 0 "export over a 0600 file"
checks=$((checks + 1)); [ "$(stat -c %a private.cu)" = 600 ] || fail "export over a 0600 file: mode $(stat -c %a private.cu)"
checks=$((checks + 1)); grep -q EVO_EXPORT_KEY private.cu || fail "export over a 0600 file: not replaced"
run export --db pop.db --frobnicate
expect_rc 2 "unknown option"
run export --db pop.db extra
expect_rc 2 "extra argument"
run export --db pop.db -o
expect_rc 2 "-o without a value"
run export --db pop.db -o no/such/dir/x.cu
expect_rc 2 "output in a missing directory"
expect_err "evo: export -o no/such/dir/x.cu: no such directory no/such/dir" "output in a missing directory"

# ---- -o is a regular file (replaced whole) or a new name: a FIFO, a link, a device or a directory is refused and
# left as it was, and no temporary file stays behind ----
mkdir outs && cd outs || exit 1
mkfifo fifo
echo target >target.txt
ln -s target.txt link.cu
ln -s nowhere.cu dangling.cu
mkdir adir
kinds=("fifo|a FIFO" "link.cu|a symbolic link" "dangling.cu|a symbolic link" "adir|a directory")
if mknod dev c 1 7 2>/dev/null; then kinds+=("dev|a device"); fi # /dev/full's numbers, as root
for pair in "${kinds[@]}"; do
  o=${pair%%|*}
  run export --db ../pop.db -o "$o"
  expect_rc 2 "export -o $o"
  expect_err "evo: export -o $o: is ${pair#*|}; evo writes only a regular file or a new name in an existing directory" "export -o $o"
done
checks=$((checks + 6))
[ -p fifo ] || fail "the FIFO was replaced"
[ -L link.cu ] && [ "$(cat target.txt)" = target ] || fail "the link or its target changed"
[ -L dangling.cu ] && [ ! -e nowhere.cu ] || fail "the dangling link was followed or replaced"
[ -d adir ] && [ -z "$(ls -A adir)" ] || fail "the directory changed"
[ ! -e dev ] || [ -c dev ] || fail "the device node was replaced"
[ -z "$(ls -A | grep -v -x -e fifo -e target.txt -e link.cu -e dangling.cu -e adir -e dev)" ] || fail "left behind: $(ls -A)"
echo old >old.cu
run export --db ../pop.db -o old.cu
expect_rc 0 "export over a regular file"
expect_file_has old.cu "#define EVO_EXPORT_KEY \"$A\"" "a regular file is replaced"
cd .. || exit 1
checks=$((checks + 1)); [ "$(sha pop.db)" = "$before" ] || fail "export changed the database"

# ---- tools/bench/compare_sdpa.py --dry-run reads the file's format, genome and variants (no GPU, no PyTorch) ----
if command -v python3 >/dev/null; then
  "$FIXTURE" --fixture u8sim u8.db >/dev/null || fail "fixture u8sim"
  "$EVO" export --db u8.db -o u8.cu >/dev/null 2>&1 || fail "export u8sim"
  for pair in "$f|e4m3" "u8.cu|u8sim"; do
    file=${pair%%|*}
    fmt=${pair#*|}
    compare_sdpa "$file" --dry-run --causal on --reps 7 --out "$T/res"
    expect_rc 0 "compare_sdpa --dry-run $fmt"
    expect_out "format $fmt" "dry-run format $fmt"
    expect_out "genome TILE_M=128,TILE_N=64,WARPS_M=4" "dry-run genome $fmt"
    expect_out "head dims 64 128" "dry-run head dims $fmt"
    expect_out "causal: on" "dry-run causal $fmt"
    expect_out "reps 7" "dry-run reps $fmt"
    expect_out "nvcc -shared -Xcompiler -fPIC -arch=sm_90 -O3" "dry-run nvcc line $fmt"
    expect_out "stress    (4, 8, 2048, 64)" "dry-run presets $fmt"
  done
  checks=$((checks + 1)); [ ! -e "$T/res" ] || fail "compare_sdpa --dry-run wrote results"
  # an export of the sm_90a family: its instantiations are evo_attn_sm90<D, ...>, built for sm_90a
  "$FIXTURE" --fixture hopper hopper.db >/dev/null || fail "fixture hopper"
  "$EVO" export --db hopper.db -o hopper.cu >/dev/null 2>&1 || fail "export hopper"
  compare_sdpa hopper.cu --dry-run
  expect_rc 0 "compare_sdpa --dry-run sm_90a family"
  expect_out "FAMILY=1" "dry-run genome sm_90a family"
  expect_out "head dims 64 128" "dry-run head dims sm_90a family"
  expect_out "-gencode=arch=compute_90a,code=sm_90a -O3" "dry-run nvcc line sm_90a family"
  compare_sdpa pop.db --dry-run
  expect_rc 2 "compare_sdpa on a file that is not an exported kernel"
  expect_err_has "not a kernel exported by evo" "compare_sdpa on a non-export"
  compare_sdpa "$f" --dry-run --causal sideways
  expect_rc 2 "compare_sdpa bad --causal"
  # tools/bench/sustained.py --dry-run: the problem, the contenders and the modes (no GPU, no PyTorch)
  sustained hopper.cu --dry-run --shape 4,16,4096,128 --causal --seconds 2 --peers cudnn
  expect_rc 0 "sustained --dry-run"
  expect_out "format e4m3, head dims 64 128" "sustained --dry-run file"
  expect_out "problem (4, 16, 4096, 128) causal; contenders: ours, cudnn; modes single, burst, 2 s each" \
    "sustained --dry-run plan"
  sustained hopper.cu --dry-run --shape 4,16,4096,96
  expect_rc 2 "sustained bad head dim"
  expect_err_has "--shape: '4,16,4096,96' needs positive B, H, S and D 64 or 128" "sustained bad head dim"
  sustained hopper.cu --dry-run --peers flash
  expect_rc 2 "sustained unknown peer"
  expect_err_has "--peers: unknown flash" "sustained unknown peer"
  sustained pop.db --dry-run
  expect_rc 2 "sustained on a non-export"
  expect_err_has "not a kernel exported by evo" "sustained on a non-export"
else
  echo "cli_export: python3 not found; compare_sdpa.py --dry-run not checked"
fi

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "$checks checks passed"
