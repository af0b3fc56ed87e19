#!/usr/bin/env bash
# cli_skips.sh — `ctest --output-on-failure` hides a skipped test's output; the build's CTestCustom.cmake (written by
# tests/CMakeLists.txt) makes ctest print each skip's reason at the end (tests/skip_reasons.sh). Checked on a small
# project of its own that uses the build's CTestCustom.cmake: a test that skips, GPU tests as they run here, one
# that passes. Run: bash tests/cli_skips.sh build/evo .   (ctest runs it as cli_skips)
set -u
EVO=$(realpath "$1")
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
[ "$fails" = 0 ] && echo "cli_skips: the skip reasons are shown"
exit $((fails > 0))
