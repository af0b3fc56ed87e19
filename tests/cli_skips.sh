#!/usr/bin/env bash
# cli_skips.sh — `ctest --output-on-failure` hides a skipped test's output; the build's CTestCustom.cmake (written by
# tests/CMakeLists.txt) makes ctest print each skip's reason at the end (tests/skip_reasons.sh). Checked on a small
# project of its own that uses the build's CTestCustom.cmake: a test that skips, GPU tests as they run here, one
# that passes. Run: bash tests/cli_skips.sh build/evo .   (ctest runs it as cli_skips)
set -u
EVO=$(realpath "$1")
SRC=$(realpath "$2")
BUILD=$(dirname "$EVO")
T=$(mktemp -d /tmp/evo-cli-skips-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
[ -r "$BUILD/CTestCustom.cmake" ] || { echo "FAIL: no $BUILD/CTestCustom.cmake" >&2; exit 1; }
mkdir "$T/proj"
cat >"$T/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(skips NONE)
enable_testing()
add_test(NAME gpu_fake COMMAND sh -c "echo 'SKIP: no NVIDIA driver on this machine'; exit 77")
add_test(NAME gpu_support COMMAND "$BUILD/tests/gpu_support")
add_test(NAME passes COMMAND sh -c "echo 'passes; SKIP: in the middle of a line is no skip'; exit 0")
set_tests_properties(gpu_fake gpu_support passes PROPERTIES SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION "^SKIP: ")
CMAKE
cmake -S "$T/proj" -B "$T/b" >/dev/null || exit 1
sed "s|$BUILD|$T/b|g" "$BUILD/CTestCustom.cmake" >"$T/b/CTestCustom.cmake"
ctest --test-dir "$T/b" --output-on-failure >"$T/out" 2>&1
grep -qx "Skipped, and why:" "$T/out" || fail "no summary of skips: $(cat "$T/out")"
grep -qx "  gpu_fake: no NVIDIA driver on this machine" "$T/out" || fail "the skip reason is not shown: $(cat "$T/out")"
if grep -q "gpu_support .*Skipped" "$T/out"; then
  grep -q "^  gpu_support: " "$T/out" || fail "gpu_support skipped without its reason: $(cat "$T/out")"
fi
grep -q "passes .*Passed" "$T/out" && ! grep -q "^  passes:" "$T/out" || fail "a passing test counted as a skip: $(cat "$T/out")"
# The Python tests say why they skip where ctest lists it (they used to skip without a reason there).
for t in torch_op_cpu gpu_torch_op; do
  grep -q "^add_test(\[=\[$t\]=\]" "$BUILD/tests/CTestTestfile.cmake" || fail "$t is not registered"
  grep "^set_tests_properties(\[=\[$t\]=\]" "$BUILD/tests/CTestTestfile.cmake" | grep -q 'SKIP_REGULAR_EXPRESSION "^SKIP: "' ||
    fail "$t has no skip expression: ctest would not show why it skipped"
done
if command -v python3 >/dev/null && ! python3 -c 'import torch' 2>/dev/null; then
  python3 "$SRC/tests/torch_op_cpu.py" >"$T/torch.out" 2>&1
  rc=$?
  [ $rc = 77 ] && head -1 "$T/torch.out" | grep -q '^SKIP: PyTorch is not importable here' ||
    fail "torch_op_cpu without PyTorch: exit $rc, first line '$(head -1 "$T/torch.out")'"
fi

# Without python3 the CLI tests that need it skip at once with the reason (cli_faults used to loop for minutes).
mkdir "$T/nopy"
for d in ${PATH//:/ }; do
  for f in "$d"/*; do
    b=${f##*/}
    case $b in python3* | python) continue ;; esac
    [ -x "$f" ] && [ ! -e "$T/nopy/$b" ] && ln -s "$f" "$T/nopy/$b"
  done
done
for t in cli_faults cli_replay cli_badinput cli_compile; do
  SECONDS=0
  PATH=$T/nopy bash "$SRC/tests/$t.sh" "$EVO" "$SRC" >"$T/nopy.out" 2>&1
  rc=$?
  [ $rc = 77 ] && [ $SECONDS -lt 10 ] && [ "$(head -1 "$T/nopy.out")" = "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)" ] ||
    fail "$t without python3: exit $rc after $SECONDS s: $(head -3 "$T/nopy.out")"
done
# tools/setup.sh checks for python3 with the rest, and says how to install it (here: as a user without sudo)
mkdir "$T/fake"
printf '#!/bin/sh\n[ "$3" = python3 ] && exit 1; echo "install ok installed"\n' >"$T/fake/dpkg-query"
printf '#!/bin/sh\necho 1000\n' >"$T/fake/id"
printf '#!/bin/sh\nexit 1\n' >"$T/fake/sudo"
chmod +x "$T/fake/"*
PATH=$T/fake:$PATH bash "$SRC/tools/setup.sh" >"$T/setup.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -qx "evo setup: missing packages: python3" "$T/setup.out" &&
  grep -qx "evo setup: as root run: apt-get install python3" "$T/setup.out" || fail "setup without python3: exit $rc: $(cat "$T/setup.out")"

[ "$fails" = 0 ] && echo "cli_skips: the skip reasons are shown"
exit $((fails > 0))
