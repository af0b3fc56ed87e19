#!/usr/bin/env bash
# cli_install.sh — evo installed (cmake --install BUILD --prefix P) and used in a folder of its own, away from the
# repository: `evo space` searches the default configuration built into the binary and says so; `evo init` writes
# it out (the same bytes as configs/default.yaml), refuses to replace anything, and then evo reads the file; a replay
# runs there. Run: bash tests/cli_install.sh build/evo .   (ctest runs it as cli_install)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
BUILD=$(dirname "$EVO")
T=$(mktemp -d /tmp/evo-cli-install-XXXXXX)
trap 'rm -rf "$T"' EXIT
export TMPDIR=$T/tmp EVO_CACHE=$T/cache
mkdir "$T/tmp" "$T/home"
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
t() { checks=$((checks + 1)); "$@"; } # t COMMAND... || fail "why": a counted check
run() { # run ARGS...: the installed evo; sets $rc, $out, $err
  "$E" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}

cmake --install "$BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log" >&2; exit 1; }
E=$T/prefix/bin/evo
t [ -x "$E" ] || fail "no $E after cmake --install"
cd "$T/home" || exit 1

run space
t [ "$rc" = 0 ] || fail "space from elsewhere: exit $rc: $err"
t grep -qx "config:   (built-in) configs/default.yaml" <<<"$out" || fail "space: $out"
t grep -qx "valid:    106224 (10.78%)" <<<"$out" || fail "space: the default space differs: $out"
t [ "$err" = "evo: note: no configs/default.yaml here: using the default search built into evo (evo init writes it out to edit)" ] ||
  fail "space: note '$err'"

run init
t [ "$rc" = 0 ] || fail "init: exit $rc: $err"
t [ "$out" = "wrote configs/default.yaml: the default search ($(stat -c %s "$SRC/configs/default.yaml") bytes); edit it, then evo run" ] ||
  fail "init: '$out'"
t cmp -s configs/default.yaml "$SRC/configs/default.yaml" || fail "init wrote something else than configs/default.yaml"
echo "# edited" >>configs/default.yaml
before=$(sha256sum configs/default.yaml)
run init
t [ "$rc" = 2 ] || fail "init over a file: exit $rc"
t [ "$err" = "evo: init: configs/default.yaml exists; evo init does not replace it" ] || fail "init over a file: '$err'"
t [ "$(sha256sum configs/default.yaml)" = "$before" ] || fail "init replaced the file"
ln -s nowhere.yaml dangling.yaml
run init dangling.yaml
t [ "$rc" = 2 ] && [ ! -e nowhere.yaml ] || fail "init through a dangling link: exit $rc, $(ls)"
run init no/such/dir.yaml
t [ "$rc" = 2 ] || fail "init into a missing folder: exit $rc"
t [ "$err" = "evo: init no/such/dir.yaml: no such directory no/such" ] || fail "init into a missing folder: '$err'"
run init mine.yaml
t [ "$rc" = 0 ] && cmp -s mine.yaml "$SRC/configs/default.yaml" || fail "init mine.yaml: exit $rc, $err"

run space
t [ "$rc" = 0 ] && [ -z "$err" ] || fail "space with configs/default.yaml here: exit $rc, '$err'"
t grep -qx "config:   configs/default.yaml" <<<"$out" || fail "space does not read ./configs/default.yaml: $out"

# evo init - : the configuration on standard output, nothing written
run init -
t [ "$rc" = 0 ] && [ "$out" = "$(cat "$SRC/configs/default.yaml")" ] && [ ! -e ./- ] || fail "init -: exit $rc, $(ls)"

# The shipped files are installed beside evo (PREFIX/share/evo), and the installed evo finds them there: export
# --torch from a fresh folder takes the shipped quantizer (it used to exit 2: no variants/ here).
for f in variants/quantize_fp8-sm_90-4a2ad3fb.cu variants/attention_fp8-sm_90-e40fd3dd.cu configs/default.yaml configs/quantize.yaml; do
  t cmp -s "$SRC/$f" "$T/prefix/share/evo/$f" || fail "not installed: share/evo/$f"
done
mkdir "$T/fresh" && cd "$T/fresh" || exit 1
"$BUILD/tests/test_export" --fixture e4m3 pop.db >/dev/null || fail "fixture e4m3"
run export --best --db pop.db --torch op
t [ "$rc" = 0 ] || fail "export --torch from a fresh folder: exit $rc: $err"
t cmp -s op/quantize_fp8-sm_90-4a2ad3fb.cu "$SRC/variants/quantize_fp8-sm_90-4a2ad3fb.cu" || fail "export --torch: not the shipped quantizer: $(ls op)"
t [ -s op/evo_fp8.py ] || fail "export --torch: no module"

# The search itself from elsewhere, on results recorded on a GPU (no GPU here): the built-in config in a fresh folder.
mkdir "$T/away" && cd "$T/away" || exit 1
run run --replay "$SRC/tests/data/replay.db" --population 6 --generations 1 --seed 3
t [ "$rc" = 0 ] || fail "run --replay from elsewhere: exit $rc: $err"
t grep -qF "using the default search built into evo" <<<"$err" || fail "run: no note on the built-in config: $err"
t [ -s population.db ] || fail "run: no population.db"
t [ "$(python3 "$SRC/tests/evo_db.py" scalar population.db "SELECT config_path FROM runs")" = "(built-in) configs/default.yaml" ] ||
  fail "run: the stored config path"
t [ -z "$(ls "$T/tmp")" ] || fail "work directories left: $(ls "$T/tmp")"

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "cli_install: $checks checks passed"
