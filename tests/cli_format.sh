#!/usr/bin/env bash
# cli_format.sh — evo's C is in the style of .clang-format (tools/format.sh --check, clang-format 14), and the check
# fails on a file laid out otherwise. Without clang-format-14 it skips, unless EVO_REQUIRE_FORMAT=1 (CI sets it).
# Run: bash tests/cli_format.sh build/evo .
set -u
SRC=$(realpath "$2")
if ! command -v clang-format-14 >/dev/null; then
  [ "${EVO_REQUIRE_FORMAT:-0}" = 1 ] && { echo "FAIL: clang-format-14 is not installed and EVO_REQUIRE_FORMAT=1" >&2; exit 1; }
  echo "SKIP: clang-format-14 is not installed (apt-get install clang-format-14)"
  exit 77
fi
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
out=$(bash "$SRC/tools/format.sh" --check 2>&1) || fail "the sources differ from .clang-format: $out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tools" "$tmp/engine/core" "$tmp/tasks" "$tmp/tests"
cp "$SRC/tools/format.sh" "$tmp/tools/"
cp "$SRC/.clang-format" "$tmp/"
printf 'int evo_f(int a)\n{\n    int b = a + 1;\n    return b * 2;\n}\n' >"$tmp/engine/core/good.c"
printf 'int evo_g(int a) {\n  return a+1;\n}\n' >"$tmp/engine/core/bad.c"
out=$(bash "$tmp/tools/format.sh" --check 2>&1)
rc=$?
[ $rc = 1 ] || fail "--check on a badly laid out file: exit $rc, want 1"
case "$out" in *engine/core/bad.c*) ;; *) fail "--check does not name the file: $out" ;; esac
case "$out" in *good.c*) fail "--check names a file in the style: $out" ;; esac
[ $fails -eq 0 ] && echo "ok: the sources are in the style of .clang-format; a file laid out otherwise is caught"
exit $((fails > 0))
