#!/usr/bin/env bash
# cli_badinput.sh — bad input to run, check, compile, elite, history and insights: each gets one line naming the
# file:line:column, key, knob, option or database at fault, exit 2 (usage, config) or 1 (runtime), and leaves
# every database as it was (SHA-256 before and after) and creates none. No GPU needed (fake worker).
# Run: bash tests/cli_badinput.sh build/evo .   EVO_BADINPUT_TABLE=FILE appends one markdown row per case.
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
FIXTURE=$(dirname "$EVO")/tests/test_store # `test_store --fixture populated FILE`
CFGS=$SRC/tests/data/config
FAULTS=$SRC/tests/data/faults.yaml
T=$(mktemp -d /tmp/evo-cli-badinput-XXXXXX)
trap 'rm -rf "$T"' EXIT
export EVO_CACHE=$T/cache EVO_FAKE_WORKER=ok TMPDIR=$T/tmp
mkdir "$T/ws" "$T/tmp"
cd "$T/ws" || exit 1 # evo's default population.db would appear here

fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
sha() { if [ -d "$1" ]; then ls -A "$1"; elif [ -p "$1" ] || [ -L "$1" ]; then ls -l "$1"; else sha256sum "$1" | cut -d' ' -f1; fi; }
POP=$T/pop.db
"$FIXTURE" --fixture populated "$POP" || fail "fixture"

# expect NAME RC MESSAGE [DB] -- ARGS...: evo ARGS exits RC with MESSAGE in its one-line error; DB (default: the
# populated fixture) keeps its SHA-256, no new file appears in the working directory, no check work dir is left.
expect() {
  local name=$1 want_rc=$2 msg=$3 db=$POP
  shift 3
  if [ "$1" != -- ]; then db=$1; shift; fi
  shift
  local before listing rc err
  before=$(sha "$db")
  "${as[@]}" "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  err=$(cat "$T/err")
  checks=$((checks + 4))
  [ "$rc" = "$want_rc" ] || fail "$name: exit $rc, want $want_rc (stderr: $err)"
  grep -qF -- "$msg" <<<"$err" || fail "$name: stderr '$err' lacks '$msg'"
  [ "$(sha "$db")" = "$before" ] || fail "$name: $db changed"
  listing=$(find "$T/ws" "$T/tmp" -mindepth 1)
  [ -z "$listing" ] || fail "$name: left files behind: $listing"
  rm -rf "${T:?}"/ws/* "${T:?}"/tmp/*
  if [ -n "${EVO_BADINPUT_TABLE:-}" ]; then
    local line
    line=$(grep -m1 '^evo: ' <<<"$err" | sed -e "s|$T/||g" -e "s|$SRC/||g" -e 's/|/\\|/g')
    printf '| %s | `%s` | %s |\n' "$name" "${line#evo: }" "$rc" >>"$EVO_BADINPUT_TABLE"
  fi
}
as=() # a command (setpriv, env) that expect runs evo under
# variant NAME SED: a copy of tests/data/config/good.yaml edited by SED, at $T/NAME.yaml
variant() { sed "$2" "$CFGS/good.yaml" >"$T/$1.yaml"; }

# ---- evo run: configuration errors are refused before the store is opened ----
R=(run --db "$POP" --config)
expect "run: malformed YAML" 2 "malformed.yaml:6:12: malformed YAML: did not find expected ',' or ']'" -- "${R[@]}" "$CFGS/malformed.yaml"
expect "run: wrong type" 2 "wrong_type.yaml:22:40: shapes[1].seq: expected an integer, found 'long'" -- "${R[@]}" "$CFGS/wrong_type.yaml"
expect "run: unknown key" 2 "unknown_key.yaml:31:3: evolution.populaton: unknown key (did you mean 'population'?)" -- "${R[@]}" "$CFGS/unknown_key.yaml"
expect "run: unknown knob" 2 "unknown_knob.yaml:16:5: space.knobs.TILE_Q: unknown knob" -- "${R[@]}" "$CFGS/unknown_knob.yaml"
expect "run: knob value the template cannot take (STAGES: [2, 9])" 2 "illegal_stages.yaml:8:17: space.knobs.STAGES[1]: 9 is not a legal value; legal: 1..4" -- "${R[@]}" "$CFGS/illegal_stages.yaml"
expect "run: knob value the template cannot take (WARPS_N: [1, -2])" 2 "illegal_warps_n.yaml:7:18: space.knobs.WARPS_N[1]: -2 is not a legal value; legal: 1, 2, 4" -- "${R[@]}" "$CFGS/illegal_warps_n.yaml"
expect "run: knob value the template cannot take (TILE_N: [0, 64])" 2 "illegal_tile_n.yaml:5:14: space.knobs.TILE_N[0]: 0 is not a legal value; legal: 16..256 in steps of 16" -- "${R[@]}" "$CFGS/illegal_tile_n.yaml"
expect "space: knob value the template cannot take" 2 "illegal_stages.yaml:8:17: space.knobs.STAGES[1]: 9 is not a legal value" -- space --config "$CFGS/illegal_stages.yaml"
expect "run: a tagged string as a number (population: !!str 216)" 2 "tagged_number.yaml:31:15: evolution.population: expected an integer, found '!!str 216' (a value tagged !!str is not an integer; write it plain)" -- "${R[@]}" "$CFGS/tagged_number.yaml"
expect "run: compile.extra_options NVRTC refuses" 2 "extra_options.yaml:34:61: compile.extra_options: NVRTC refuses these options: nvrtc: error: unrecognized option --bogus-flag found" -- "${R[@]}" "$CFGS/extra_options.yaml"
expect "space: compile.extra_options NVRTC refuses" 2 "extra_options.yaml:34:61: compile.extra_options: NVRTC refuses these options" -- space --config "$CFGS/extra_options.yaml"
python3 -c 'print("task: attention_fp8\nx: [" + ",".join(["1"] * 1000000) + "]")' >"$T/big.yaml"
expect "run: a 2 MB configuration" 2 "big.yaml: 2000025 bytes; evo reads at most 1048576 (cannot read the configuration)" -- "${R[@]}" "$T/big.yaml"
python3 -c 'print("task: attention_fp8\nx: [" + ",".join(["1"] * 200000) + "]")' >"$T/nodes.yaml"
expect "run: 200000 YAML nodes" 2 "nodes.yaml:2:199995: top level: more than 100000 YAML nodes (values, lists, mappings); a configuration has a few hundred" -- "${R[@]}" "$T/nodes.yaml"
expect "run: /dev/zero as config" 2 "/dev/zero: more than 1048576 bytes; evo reads at most 1048576 (cannot read the configuration)" -- "${R[@]}" /dev/zero
expect "run: empty domain" 2 "empty_domain.yaml:8:13: space.knobs.STAGES: empty domain: a knob needs at least one value" -- "${R[@]}" "$CFGS/empty_domain.yaml"
expect "run: impossible constraint" 2 "unsatisfiable.yaml:17:7: space.constraints[0]: no genome satisfies this constraint" -- "${R[@]}" "$CFGS/unsatisfiable.yaml"
expect "run: negative number" 2 "negative.yaml:22:22: shapes[1].batch: -1 is out of range: must be 1 to 65535" -- "${R[@]}" "$CFGS/negative.yaml"
variant huge_population 's/population: 4/population: 99999999999999999999999/'
expect "run: absurd population" 2 "huge_population.yaml:31:15: evolution.population: 99999999999999999999999 is out of range: must be 2 to 100000" -- "${R[@]}" "$T/huge_population.yaml"
variant huge_seq 's/seq: 64,/seq: 2147483648,/'
expect "run: absurd sequence length" 2 "huge_seq.yaml:21:40: shapes[0].seq: 2147483648 is out of range: must be 1 to 1048576" -- "${R[@]}" "$T/huge_seq.yaml"
variant inf_tolerance 's/rel_l2: 2.0e-3/rel_l2: 1e400/'
expect "run: infinite tolerance" 2 "inf_tolerance.yaml:28:23: correctness.tolerance.rel_l2: 1e400 is not a finite number" -- "${R[@]}" "$T/inf_tolerance.yaml"
variant nan_tolerance 's/rel_l2: 2.0e-3/rel_l2: .nan/'
expect "run: NaN tolerance" 2 "nan_tolerance.yaml:28:23: correctness.tolerance.rel_l2: expected a number, found '.nan'" -- "${R[@]}" "$T/nan_tolerance.yaml"
variant huge_knob 's/TILE_M: \[64, 128\]/TILE_M: [64, 99999999999]/'
expect "run: knob value past 32 bits" 2 "huge_knob.yaml:4:18: space.knobs.TILE_M[1]: 99999999999 is out of range" -- "${R[@]}" "$T/huge_knob.yaml"
variant float_knob 's/TILE_M: \[64, 128\]/TILE_M: [64, 1e2]/'
expect "run: float knob value" 2 "float_knob.yaml:4:18: space.knobs.TILE_M[1]: expected an integer, found '1e2'" -- "${R[@]}" "$T/float_knob.yaml"
variant two_impossible 's|    - "TILE_M / WARPS_M <= 32"|    - "TILE_M / WARPS_M <= 32"\n    - "TILE_M > 1000"|'
expect "run: constraints impossible together" 2 "two_impossible.yaml:18:7: space.constraints[1]: no genome satisfies this constraint together with the ones before it" -- "${R[@]}" "$T/two_impossible.yaml"
python3 - "$CFGS/good.yaml" "$T/deep.yaml" <<'PY'
import sys
text = open(sys.argv[1]).read().replace('"TILE_M / WARPS_M <= 32"', '"' + "(" * 100000 + "1" + ")" * 100000 + '"')
open(sys.argv[2], "w").write(text)
PY
expect "run: constraint nested 100000 deep" 2 "deep.yaml:17:72: space.constraints[0]: expression nested deeper than 64 levels" -- "${R[@]}" "$T/deep.yaml"
python3 -c 'print("task: " + "[" * 100000 + "]" * 100000)' >"$T/deep_yaml.yaml"
expect "run: YAML nested 100000 deep" 2 "deep_yaml.yaml:1:38: top level: lists and mappings nested more than 32 deep; a configuration nests 4" -- "${R[@]}" "$T/deep_yaml.yaml"
head -c 4096 /dev/urandom | tr -d '\n' >"$T/random.yaml"
expect "run: random bytes as config" 2 "random.yaml:1:" -- "${R[@]}" "$T/random.yaml"
printf 'task: attention_fp8\0\nformat: e4m3\n' >"$T/nul.yaml"
expect "run: NUL byte in config" 2 "nul.yaml:1:20: malformed YAML: control characters are not allowed" -- "${R[@]}" "$T/nul.yaml"
mkdir "$T/dir.yaml"
expect "run: a directory as config" 2 "dir.yaml: read failed: Is a directory (cannot read the configuration)" -- "${R[@]}" "$T/dir.yaml"
expect "run: missing config" 2 "nonexistent.yaml: No such file or directory" -- "${R[@]}" "$T/nonexistent.yaml"
expect "run: bad config, no database yet" 2 "malformed.yaml:6:12: malformed YAML" -- run --config "$CFGS/malformed.yaml"

# ---- evo run: options ----
expect "run --generations -1" 2 "run: --generations takes 1 to 1000000, not '-1'" -- run --db "$POP" --generations -1
expect "run --generations 1e20" 2 "run: --generations takes 1 to 1000000, not '99999999999999999999'" -- run --db "$POP" --generations 99999999999999999999
expect "run --population 1" 2 "run: --population takes 2 to 100000, not '1'" -- run --db "$POP" --population 1
expect "run --seed -5" 2 "run: --seed takes 0 to 9223372036854775807, not '-5'" -- run --db "$POP" --seed -5
expect "run --seed 2^63" 2 "run: --seed takes 0 to 9223372036854775807, not '9223372036854775808'" -- run --db "$POP" --seed 9223372036854775808
expect "run --jobs 0" 2 "run: --jobs takes 1 to 1024, not '0'" -- run --db "$POP" --jobs 0
expect "run --time-budget nan" 2 "run: --time-budget takes seconds > 0, not 'nan'" -- run --db "$POP" --time-budget nan
expect "run --gpus a" 2 "run: --gpus takes ordinals like 0,1,3, not 'a'" -- run --db "$POP" --gpus a
for g in 0,,1 ,0 0,1,; do
  expect "run --gpus $g" 2 "run: --gpus takes ordinals like 0,1,3, not '$g' (an empty entry)" -- run --db "$POP" --config "$FAULTS" --gpus "$g"
done
expect "run --gpus 0,0 (before any database is made)" 2 "run: --gpus names GPU 0 twice in '0,0'" -- run --db "$T/ws/new.db" --config "$FAULTS" --gpus 0,0
expect "run --strategy bogus" 2 "run: --strategy takes one of ga, random, seeds, not 'bogus'" -- run --db "$POP" --config "$FAULTS" --strategy bogus
expect "run --resume with --config" 2 "run: --resume continues a run with its own config, population, seed and strategy" -- run --db "$POP" --resume 1 --config "$FAULTS"
expect "run --resume of no such run" 2 "--resume 5: $POP has no such run" -- run --db "$POP" --resume 5
expect "run --resume without a database" 2 "--resume 1: no database at $T/ws/none.db" -- run --db "$T/ws/none.db" --resume 1

# ---- messages keep their reason: a 100 KB argument is cut to its head and tail ----
long=$(printf 'a%.0s' $(seq 100000)) tail60=$(printf 'a%.0s' $(seq 60))
expect "run --config with a 100 KB name" 2 "a...[100000 bytes]...$tail60: File name too long (cannot read the configuration)" -- run --db "$POP" --config "$long"
expect "run --generations with a 100 KB value" 2 "run: --generations takes 1 to 1000000, not 'aaaa" -- run --db "$POP" --generations "$long"
checks=$((checks + 1))
grep -qF "a...[100000 bytes]...$tail60' (see 'evo help run')" "$T/err" || fail "long option value: $(cat "$T/err")"
# A new database in a folder evo may not write names the folder and the reason (root writes anywhere: run as nobody).
mkdir "$T/ro" && chmod 555 "$T/ro" && chmod 755 "$T"
[ "$(id -u)" = 0 ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
expect "run: new database in a read-only folder" 1 "$T/ro/new.db: cannot create a file in $T/ro: Permission denied" "$T/ro" -- run --config "$FAULTS" --db "$T/ro/new.db"
as=()
chmod 700 "$T"
# The driver's loader names the library once.
as=(env -u EVO_FAKE_WORKER EVO_LIBCUDA=/nonexistent/libcuda.so.1)
expect "run: no CUDA driver" 1 "run: the NVIDIA CUDA driver was not found (/nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory)" -- run --db "$POP" --config "$FAULTS"
as=()
checks=$((checks + 2))
[ "$(grep -o 'libcuda.so.1' "$T/err" | wc -l)" = 1 ] || fail "driver message names the library more than once: $(cat "$T/err")"
grep -qF "commands that need no GPU: evo space, evo compile, evo elite, evo history, evo export, evo plot, evo insights, evo init, and evo run --replay DB" "$T/err" ||
  fail "the no-GPU message does not list every command that needs no GPU: $(cat "$T/err")"

# ---- evo run --replay: the source is input, checked before anything is created, and never the output ----
expect "run --replay of a missing file" 2 "--replay $T/ws/none.db: No such file or directory" -- run --replay "$T/ws/none.db" --config "$FAULTS"
expect "run --replay and --db the same file" 2 "--replay $POP and --db $T/ws/../pop.db are the same file: a replay reads one database and writes another" -- run --replay "$POP" --db "$T/ws/../pop.db" --config "$FAULTS"
cp "$POP" "$T/src.db"
expect "run --replay, --db its -wal file" 2 "--db $T/src.db-wal is the -wal file of --replay $T/src.db, an input" "$T/src.db" -- run --replay "$T/src.db" --db "$T/src.db-wal" --config "$FAULTS"
expect "run --replay, --db its -journal file" 2 "--db $T/src.db-journal is the -journal file of --replay $T/src.db, an input" "$T/src.db" -- run --replay "$T/src.db" --db "$T/src.db-journal" --config "$FAULTS"
cp "$POP" "$T/ws.db-wal"
expect "run --replay from the -wal name of --db" 2 "--replay $T/ws.db-wal is the name of the -wal file of --db $T/ws.db: SQLite would take it" "$T/ws.db-wal" -- run --replay "$T/ws.db-wal" --db "$T/ws.db" --config "$FAULTS"
cp "$FAULTS" "$T/cfg.db-wal"
expect "run --config named as the -wal file of --db" 2 "--config $T/cfg.db-wal is the name of the -wal file of --db $T/cfg.db: SQLite would take it" "$T/cfg.db-wal" -- run --replay "$POP" --db "$T/cfg.db" --config "$T/cfg.db-wal"
[ ! -e "$T/cfg.db" ] && [ ! -e "$T/ws.db" ] || fail "a refused run created its database"
printf '__global__ void k() {}\n' >"$T/k.db-wal"
expect "check: the kernel file named as the -wal file of --db" 2 "check: the kernel file $T/k.db-wal is the name of the -wal file of --db $T/k.db" "$T/k.db-wal" -- check --db "$T/k.db" "$T/k.db-wal" --config "$FAULTS"
head -c 4096 /dev/urandom >"$T/noise.db"
expect "run --replay of a file that is not a database" 2 "--replay: $T/noise.db: not an evo database (file is not a database)" "$T/noise.db" -- run --replay "$T/noise.db" --config "$FAULTS"

# ---- corrupt databases: refused untouched by every command that opens one ----
head -c 8192 /dev/urandom >"$T/random.db"
head -c 40000 "$POP" >"$T/truncated.db"
cp "$POP" "$T/page.db"
printf '\377%.0s' $(seq 64) | dd of="$T/page.db" bs=1 seek=4096 conv=notrunc 2>/dev/null
mkdir "$T/dir.db"
for case in "random.db|not an evo database (file is not a database)" \
            "truncated.db|corrupt database (database disk image is malformed); left untouched" \
            "page.db|corrupt database (quick_check: *** in database main *** Page 2: btreeInitPage() returns error code 11); left untouched" \
            "dir.db|not an evo database (not a regular file)"; do
  f=$T/${case%%|*}
  msg="$f: ${case#*|}"
  expect "run on ${case%%|*}" 1 "$msg" "$f" -- run --config "$FAULTS" --db "$f"
  expect "run --resume on ${case%%|*}" 1 "$msg" "$f" -- run --resume 1 --db "$f"
  expect "elite on ${case%%|*}" 1 "$msg" "$f" -- elite --show --db "$f"
  expect "history on ${case%%|*}" 1 "$msg" "$f" -- history --db "$f"
  expect "insights on ${case%%|*}" 1 "$msg" "$f" -- insights --config "$FAULTS" --db "$f"
done
rm -f "$T"/*.db-wal "$T"/*.db-shm

# ---- evo elite / history / insights: options ----
expect "elite --top -1" 2 "elite: --top wants a positive integer, got '-1'" -- elite --db "$POP" --top -1
expect "elite --top 99999999999" 2 "elite: --top wants a positive integer, got '99999999999'" -- elite --db "$POP" --top 99999999999
expect "history --run -3" 2 "history: --run wants a run id (a positive integer), got '-3'" -- history --db "$POP" --run -3
expect "history --run 1x" 2 "history: --run wants a run id (a positive integer), got '1x'" -- history --db "$POP" --run 1x
expect "history --run 9 (none)" 1 "$POP: no run 9" -- history --db "$POP" --run 9
expect "insights: malformed config" 2 "malformed.yaml:6:12: malformed YAML" -- insights --db "$POP" --config "$CFGS/malformed.yaml"
expect "insights: unknown option" 2 "insights: unknown option '--bogus'" -- insights --db "$POP" --bogus
expect "elite: missing database" 1 "no database at $T/ws/none.db — run \`evo run\` first" -- elite --db "$T/ws/none.db"
expect "elite --arch foo" 2 "elite: --arch takes sm_80, sm_86, sm_89 or sm_90, not 'foo'" -- elite --db "$POP" --arch foo
expect "elite --task foo" 2 "elite: --task takes one of attention_fp8, quantize_fp8, not 'foo'" -- elite --db "$POP" --task foo

# ---- paths evo writes: a regular file (replaced whole) or a new name in an existing directory, nothing else ----
mkfifo "$T/fifo.cu"
ln -s "$T/fifo.cu" "$T/link.cu"
mkdir "$T/charts" && mkfifo "$T/charts/run1-fitness.svg"
expect "export -o a FIFO" 2 "export -o $T/fifo.cu: is a FIFO; evo writes only a regular file or a new name in an existing directory" -- export --db "$POP" -o "$T/fifo.cu"
expect "export -o a symbolic link" 2 "export -o $T/link.cu: is a symbolic link; evo writes only a regular file or a new name in an existing directory" -- export --db "$POP" -o "$T/link.cu"
expect "export -o in a missing directory" 2 "export -o $T/none/x.cu: no such directory $T/none" -- export --db "$POP" -o "$T/none/x.cu"
expect "plot: a chart that is a FIFO" 2 "plot $T/charts/run1-fitness.svg: is a FIFO; evo writes only a regular file or a new name in an existing directory" -- plot --db "$POP" --run 1 -o "$T/charts"
expect "run --db a FIFO" 1 "$T/fifo.cu: not an evo database (not a regular file)" "$T/fifo.cu" -- run --config "$FAULTS" --db "$T/fifo.cu"
ln -s "$T/none/x.db" "$T/dangling.db"
expect "run --db a dangling link" 2 "$T/dangling.db: is a symbolic link; evo writes only a regular file or a new name in an existing directory" "$T/dangling.db" -- run --config "$FAULTS" --db "$T/dangling.db"
# ... and never a file the command reads: the database, by any name or through its companions, the config, a kernel
expect "export -o the database it reads" 2 "export -o $POP is the same file as --db $POP, an input: evo never writes over what it reads" -- export --best --db "$POP" -o "$POP"
expect "export -o the database by another name" 2 "export -o $T/ws/../pop.db is the same file as --db $POP, an input: evo never writes over what it reads" -- export --db "$POP" -o "$T/ws/../pop.db"
expect "export -o the database's -wal" 2 "export -o $POP-wal is the -wal file of --db $POP, an input: evo never writes over what it reads" -- export --db "$POP" -o "$POP-wal"
mkdir "$T/charts2" && ln "$POP" "$T/charts2/run1-fitness.svg"
expect "plot: a chart that is the database (a hard link)" 2 "plot $T/charts2/run1-fitness.svg is the same file as --db $POP, an input: evo never writes over what it reads" -- plot --db "$POP" --run 1 -o "$T/charts2"
cp "$FAULTS" "$T/cfg.yaml"
expect "run --db the config" 2 "--db $T/cfg.yaml is the same file as --config $T/cfg.yaml, an input: evo never writes over what it reads" "$T/cfg.yaml" -- run --config "$T/cfg.yaml" --db "$T/cfg.yaml"
# "-" names standard output only where a command says so (export -o -, init -): anywhere else it is refused
expect "run --db -" 2 "-: a database is a file; '-' (standard input or output) cannot be one" -- run --config "$FAULTS" --db -
expect "run --config -" 2 "-: evo reads a configuration from a file, not from standard input" -- run --db "$POP" --config -
expect "plot -o -" 2 "plot -o -: evo plot writes three files into a folder, not to standard output" -- plot --db "$POP" --run 1 -o -
expect "export --torch -" 2 "export: --torch wants a directory, not '-' (three files go there)" -- export --db "$POP" --torch -
# SQLite opens a database by a full path of at most 504 bytes: a deeper folder is said to be the reason
deep=$T/$(printf 'd%.0s' $(seq 60))
for _ in 1 2 3 4 5 6 7 8; do deep=$deep/$(printf 'e%.0s' $(seq 60)); done
mkdir -p "$deep"
expect "run in a folder too deep for SQLite" 2 "/population.db: its full path is $((${#deep} + 14)) bytes, longer than SQLite opens (504 bytes at most: its limit of 512, less room for the -journal name); use a folder with a shorter path, or a shorter --db" -- run --config "$FAULTS" --db "$deep/population.db"
checks=$((checks + 1)); [ -z "$(ls "$deep")" ] || fail "too deep for SQLite: files appeared: $(ls "$deep")"
# a name with a newline or a terminal escape in it is shown escaped, as --json shows it: one line, no colours
nl=$'new\nline.cu' esc=$'red\e[31m.cu'
expect "check: a file name with a newline" 2 "check: $T/new\nline.cu: no such file" -- check "$T/$nl" --config "$FAULTS"
checks=$((checks + 1)); [ "$(wc -l <"$T/err")" = 1 ] || fail "a file name with a newline: $(wc -l <"$T/err") lines: $(cat "$T/err")"
expect "check: a file name with an escape sequence" 2 "check: $T/red\u001b[31m.cu: no such file" -- check "$T/$esc" --config "$FAULTS"
checks=$((checks + 1)); ! grep -q $'\e' "$T/err" || fail "an escape sequence reached the terminal: $(cat -v "$T/err")"
expect "history --db with a newline in its name" 1 "no database at $T/new\nline.cu — run \`evo run\` first" -- history --db "$T/$nl"

# ---- evo compile --genome: the genome parser ----
G="TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1"
C=(compile --config "$FAULTS" --arch sm_90 --genome)
expect "genome: empty" 2 "compile: --genome: genome is empty" -- "${C[@]}" ""
expect "genome: unknown knob" 2 "compile: --genome: genome: unknown knob 'TILE_Q'" -- "${C[@]}" "${G/TILE_M=64/TILE_Q=64}"
expect "genome: knob in lower case" 2 "compile: --genome: genome: unknown knob 'tile_m'" -- "${C[@]}" "${G/TILE_M=64/tile_m=64}"
expect "genome: value outside the domain" 2 "compile: --genome: genome: knob 'TILE_M': value '-64' is not in its domain (64, 128)" -- "${C[@]}" "${G/TILE_M=64/TILE_M=-64}"
expect "genome: value not a number" 2 "compile: --genome: genome: knob 'TILE_M': value '64x' is not an integer (domain: 64, 128)" -- "${C[@]}" "${G/TILE_M=64/TILE_M=64x}"
expect "genome: value past 64 bits" 2 "compile: --genome: genome: knob 'TILE_M': value '99999999999999999999' is not an integer" -- "${C[@]}" "${G/TILE_M=64/TILE_M=99999999999999999999}"
expect "genome: knob twice" 2 "compile: --genome: genome: knob 'TILE_M' given twice" -- "${C[@]}" "$G,TILE_M=128"
expect "genome: knob missing" 2 "compile: --genome: genome: knob 'TILE_M' is missing" -- "${C[@]}" "${G/TILE_M=64,/}"
expect "genome: knob without value" 2 "compile: --genome: genome: knob 'TILE_M' has no value" -- "${C[@]}" "${G/TILE_M=64/TILE_M=}"
expect "genome: entry without =" 2 "compile: --genome: genome entry 'TILE_M' is not KNOB=VALUE" -- "${C[@]}" "${G/TILE_M=64/TILE_M}"
expect "genome: empty entry" 2 "compile: --genome: genome entry 2 is empty (entries are KNOB=VALUE, separated by ',')" -- "${C[@]}" "${G/,/,,}"
expect "genome: 5000-character knob" 2 "compile: --genome: genome: unknown knob 'AAAA" -- "${C[@]}" "$(printf 'A%.0s' $(seq 5000))=1"
variant stages2 's|"TILE_M / WARPS_M <= 32"|"STAGES == 2"|'
expect "genome: violates a constraint" 2 "compile: INVALID: " -- compile --config "$T/stages2.yaml" --arch sm_90 --genome "${G/STAGES=2/STAGES=1}"
expect "compile --arch sm_999" 2 "sm_999" -- compile --config "$FAULTS" --arch sm_999 --genome "$G"
expect "compile --sample -1" 2 "compile: --sample takes a count from 1 to 100000, not '-1'" -- compile --config "$FAULTS" --sample -1

# ---- evo check: kernel files that do not compile name the file and line ----
printf '#include "evo_attention_abi.h"\nextern "C" __global__ void evo_attn_d64(int x) {\n  int y = undefined_thing;\n}\n' >"$T/bad.cu"
expect "check: kernel that does not compile" 2 "check: $T/bad.cu does not compile (compile_error)" -- check "$T/bad.cu" --config "$FAULTS"
checks=$((checks + 1))
grep -qF "bad.cu(3): error: identifier \"undefined_thing\" is undefined" "$T/err" || fail "check: no file(line) in $(cat "$T/err")"
head -c 2048 /dev/urandom | tr -d '\000' >"$T/random.cu"
expect "check: random bytes as a kernel" 2 "check: $T/random.cu does not compile (compile_error)" -- check "$T/random.cu" --config "$FAULTS"
printf '__global__ void k() {}\n\000garbage' >"$T/nul.cu"
expect "check: a NUL byte in a kernel" 2 "check: $T/nul.cu does not compile: byte 23 is NUL (not a CUDA source file)" -- check "$T/nul.cu" --config "$FAULTS"
printf 'extern "C" __global__ void something_else(float *x) { x[0] = 1; }\n' >"$T/nokernel.cu"
expect "check: no evo_attn_d64 kernel" 1 "check: 1 of 1 kernel file rejected" -- check "$T/nokernel.cu" --config "$FAULTS"
checks=$((checks + 1))
grep -qF "reason: $T/nokernel.cu defines no extern \"C\" kernel evo_attn_d64 (the config's shapes need variant d64)" "$T/out" ||
  fail "check: no reason for the missing kernel: $(cat "$T/out")"
expect "check: missing file" 2 "check: $T/none.cu: no such file" -- check "$T/none.cu" --config "$FAULTS"
# one file that does not compile decides the exit status (2), whatever the others did; with or without a GPU
expect "check: a good kernel and one that does not compile" 2 "check: 1 of 2 kernel files do not compile" -- check "$SRC/tests/planted/good.cu" "$T/bad.cu" --config "$FAULTS"
as=(env -u EVO_FAKE_WORKER EVO_LIBCUDA=/nonexistent/libcuda.so.1)
expect "check, no GPU: a good kernel and one that does not compile" 2 "check: 1 of 2 kernel files do not compile" -- check "$SRC/tests/planted/good.cu" "$T/bad.cu" --config "$FAULTS"
as=()
# --json: every outcome is JSON on stdout, a file that does not compile and an error of the command included
expect "check --json: a kernel that does not compile" 2 "check: $T/bad.cu does not compile (compile_error)" -- check "$T/bad.cu" --config "$FAULTS" --json
checks=$((checks + 1))
python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["verdict"] == "COMPILE_FAIL" and o["compile"]["outcome"] == "compile_error" and "undefined_thing" in o["compile"]["log"], o' "$T/out" ||
  fail "check --json of a kernel that does not compile: stdout '$(cat "$T/out")'"
expect "check --json: a bad option" 2 "check: unknown option '--bogus'" -- check "$T/bad.cu" --json --bogus
checks=$((checks + 1))
python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["exit"] == 2 and o["status"] == "usage error" and "--bogus" in o["error"], o' "$T/out" ||
  fail "check --json of a bad option: stdout '$(cat "$T/out")'"
expect "check --json: two files, one does not compile" 2 "check: 1 of 2 kernel files do not compile" -- check "$SRC/tests/planted/good.cu" "$T/bad.cu" --config "$FAULTS" --json
checks=$((checks + 1))
python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); assert [o["verdict"] for o in a] == ["OK", "COMPILE_FAIL"], a' "$T/out" ||
  fail "check --json of two files: stdout '$(cat "$T/out")'"
expect "check: malformed config" 2 "malformed.yaml:6:12: malformed YAML" -- check "$T/bad.cu" --config "$CFGS/malformed.yaml"
expect "check --db corrupt" 1 "$T/random.db: not an evo database (file is not a database)" "$T/random.db" -- check "$T/bad.cu" --config "$FAULTS" --db "$T/random.db"
: >"$T/empty.cu" # an empty file compiles, and an empty file would make a new database: never the kernel's own file
expect "check --db the kernel file" 2 "check --db $T/empty.cu is the same file as the kernel file $T/empty.cu, an input: evo never writes over what it reads" "$T/empty.cu" -- check "$T/empty.cu" --config "$FAULTS" --db "$T/empty.cu"

# ---- evo check: untrusted kernel source. The compiler may read only the kernel's folder, evo's headers and the
# toolkit's (sandbox.h), so no spelling of a path outside them gets a file's text into a message; its memory, CPU
# time and output are limited, and what ended a compile is named with its value. ----
mkdir -p "$T/x" "$T/k"
echo 'SECRET_51e7_TOKEN here' >"$T/x/secret.txt"
ln -s "$T/x/secret.txt" "$T/k/inside.h"
printf '#include "%s"\n' "$T/x/secret.txt" >"$T/k/abs.cu"
printf '#include "/proc/self/environ"\n' >"$T/k/environ.cu"
printf '#include "inside.h"\n' >"$T/k/link.cu"
printf '#define STR(x) #x\n#define XSTR(x) STR(x)\n#define DIR %s\n#include XSTR(DIR/secret.txt)\n' "$T/x" >"$T/k/computed.cu"
if EVO_SECRET=SECRET_51e7_TOKEN "$EVO" compile --config "$FAULTS" --arch sm_90 --genome "$G" >/dev/null 2>&1 &&
  [ "$(EVO_NO_LANDLOCK= "$EVO" check "$T/k/abs.cu" --config "$FAULTS" 2>&1 | grep -c 'access denied')" = 1 ]; then
  as=(env EVO_SECRET=SECRET_51e7_TOKEN)
  expect "check: #include of a file outside the kernel's folder" 2 "check: $T/k/abs.cu does not compile (access denied: \"$T/x/secret.txt\" is outside what the compiler may read: the kernel's folder, evo's headers, the CUDA Toolkit's headers (a link counts where it points))" -- check "$T/k/abs.cu" --config "$FAULTS"
  expect "check: #include \"/proc/self/environ\"" 2 "check: $T/k/environ.cu does not compile (access denied: \"/proc/self/environ\" is outside what the compiler may read" -- check "$T/k/environ.cu" --config "$FAULTS"
  expect "check: a link in the kernel's folder to a file outside" 2 "check: $T/k/link.cu does not compile (access denied: \"inside.h\" is outside what the compiler may read" -- check "$T/k/link.cu" --config "$FAULTS"
  expect "check: an #include whose path a macro builds" 2 "check: $T/k/computed.cu does not compile (access denied: \"$T/x/secret.txt\" is outside what the compiler may read" -- check "$T/k/computed.cu" --config "$FAULTS"
  as=()
  for f in abs environ link computed; do
    checks=$((checks + 1))
    env EVO_SECRET=SECRET_51e7_TOKEN "$EVO" check "$T/k/$f.cu" --config "$FAULTS" --json >"$T/out" 2>"$T/err"
    ! grep -q SECRET_51e7 "$T/out" "$T/err" || fail "check $f.cu: the secret is in the output: $(cat "$T/out" "$T/err")"
  done
  rm -rf "${T:?}"/ws/* "${T:?}"/tmp/*
else
  echo "cli_badinput: the file sandbox cases are skipped (no Landlock here)"
fi
for l in "mem max_memory_mb: 1024" "cpu max_cpu_s: 1" "out max_output_mb: 1"; do # one limit each: no race between them
  { cat "$FAULTS"; echo "compile: {${l#* }}"; } >"$T/${l%% *}.yaml"
done
truncate -s 20G "$T/k/huge.h"
printf '#include "huge.h"\n' >"$T/k/sparse.cu"
printf 'template <int D, long I> struct T { T<D - 1, 2 * I> a; T<D - 1, 2 * I + 1> b; };\ntemplate <long I> struct T<0, I> { char c; };\nextern "C" __global__ void evo_attn_d64(long *o) { *o = sizeof(T<40, 0>); }\n' >"$T/k/bomb.cu"
SECONDS=0
expect "check: #include of a 20 GB sparse file (compile.max_memory_mb: 1024)" 2 "check: $T/k/sparse.cu does not compile (memory limit: the compile process grew to " -- check "$T/k/sparse.cu" --config "$T/mem.yaml"
checks=$((checks + 2))
grep -qF "MiB, past its limit of 1024 MiB (compile.max_memory_mb))" "$T/err" || fail "sparse include: $(cat "$T/err")"
[ $SECONDS -lt 30 ] || fail "sparse include: took $SECONDS s under a 1 GiB limit"
SECONDS=0
expect "check: a template bomb (compile.max_memory_mb: 1024)" 2 "check: $T/k/bomb.cu does not compile (memory limit: the compile process grew to " -- check "$T/k/bomb.cu" --config "$T/mem.yaml"
checks=$((checks + 1))
[ $SECONDS -lt 30 ] || fail "template bomb: took $SECONDS s under a 1 GiB limit"
python3 -c '
print("extern \"C\" __global__ void evo_attn_d64(float *o) { o[0] = 1; }")
for i in range(30000): print("#warning a line to make the compile log large, number %d" % i)' >"$T/k/loud.cu"
expect "check: a compile log of 3 MB (compile.max_output_mb: 1)" 2 "check: $T/k/loud.cu does not compile (output limit: the compile process wrote more than 1 MiB to one file (compile.max_output_mb))" -- check "$T/k/loud.cu" --config "$T/out.yaml"
# ptxas works more than ten seconds on this one (tests/test_compile.c: slow_src)
printf '__global__ void __launch_bounds__(1024, 2) hot(float *o, const float *in)\n{\n    float r[96];\n#pragma unroll\n    for (int i = 0; i < 96; i++) r[i] = in[threadIdx.x + i * 1024];\n    float s = 0;\n#pragma unroll\n    for (int j = 0; j < 96; j++)\n#pragma unroll\n        for (int i = 0; i < 96; i++) s += r[i] * r[(i + j) %% 96];\n    o[threadIdx.x] = s;\n}\n' >"$T/k/slow.cu"
expect "check: a compile past its CPU time (compile.max_cpu_s: 1)" 2 "check: $T/k/slow.cu does not compile (CPU time limit: the compile process used " -- check "$T/k/slow.cu" --config "$T/cpu.yaml"
{ cat "$FAULTS"; echo "compile: {timeout_s: 0.5}"; } >"$T/timeout.yaml"
expect "check: a compile past its time limit (compile.timeout_s: 0.5)" 2 "check: $T/k/slow.cu does not compile (timeout: the compile process was killed at its time limit of 0.5 s (compile.timeout_s))" -- check "$T/k/slow.cu" --config "$T/timeout.yaml"
# A compile process killed by a signal says which, whenever the signal comes: NVRTC has handlers of its own for
# SIGTERM while it parses (0 s after the process starts lands there on a loaded machine), none later.
for delay in 0 0 0.05 0.3; do
  "$EVO" check "$T/k/slow.cu" --config "$FAULTS" >"$T/out" 2>"$T/err" &
  checker=$!
  victim=
  for _ in $(seq 1200); do # up to a minute: a loaded machine may start the compile late
    for st in $(grep -l "^PPid:[[:space:]]*$checker\$" /proc/[0-9]*/status 2>/dev/null); do
      pid=$(cut -d/ -f3 <<<"$st") # the compile process is evo forked, not the worker evo started
      tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ' check ' && victim=$pid
    done
    [ -n "$victim" ] && break
    sleep 0.05
  done
  sleep "$delay"
  [ -n "$victim" ] && kill -TERM "$victim"
  wait "$checker"
  rc=$?
  checks=$((checks + 2))
  [ "$rc" = 2 ] || fail "check, compile process killed after $delay s: exit $rc, want 2 ($(cat "$T/err"))"
  grep -qF "check: $T/k/slow.cu does not compile (the compile process was killed by SIGTERM (Terminated))" "$T/err" ||
    fail "check, compile process killed after $delay s: $(cat "$T/err")"
done
if [ -n "${EVO_BADINPUT_TABLE:-}" ]; then
  printf '| check: the compile process killed by a signal | `%s` | %s |\n' \
    "$(grep -m1 '^evo: ' "$T/err" | sed -e "s|$T/||g" -e 's/^evo: //')" "$rc" >>"$EVO_BADINPUT_TABLE"
fi
rm -rf "${T:?}"/ws/* "${T:?}"/tmp/*
# Where the kernel has no Landlock (EVO_NO_LANDLOCK=1 stands for it): a warning, or with sandbox: required a refusal.
as=(env EVO_NO_LANDLOCK=1)
{ cat "$FAULTS"; echo "compile: {sandbox: required}"; } >"$T/required.yaml"
expect "check: compile.sandbox: required, no Landlock" 2 "compile.sandbox is required, but EVO_NO_LANDLOCK is set" -- check "$T/bad.cu" --config "$T/required.yaml"
expect "check: no Landlock (a warning)" 2 "evo: warning: kernels are compiled without file confinement: EVO_NO_LANDLOCK is set; the compiler can read any file evo can (compile.sandbox: required refuses to compile instead)" -- check "$T/bad.cu" --config "$FAULTS"
as=()
# A cache folder is made, never the folders above it: HOME=/nonexistent used to create /nonexistent/.cache/evo.
as=(env -u EVO_CACHE -u XDG_CACHE_HOME HOME="$T/nohome")
expect "check: HOME that does not exist" 2 "compile cache $T/nohome/.cache/evo: HOME=$T/nohome, but $T/nohome is not a folder; evo does not create it (set EVO_CACHE to a folder whose parent exists)" -- check "$T/bad.cu" --config "$FAULTS"
as=()
checks=$((checks + 1))
[ ! -e "$T/nohome" ] || fail "HOME=$T/nohome: it was created"

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "cli_badinput: $checks checks passed"
