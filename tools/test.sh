#!/usr/bin/env bash
# test.sh — the tests, as CI runs them (.ci/run) and README says: set up and build (tools/setup.sh), run every
# test; then build with -Werror at -O0 (build-debug/, compile only), and with AddressSanitizer and
# UndefinedBehaviorSanitizer (build-sanitize/) and run the unit and CLI tests there (GPU tests are left out: the
# sanitizers and the CUDA driver do not share a process well). The sanitizer build leaves MPI out (-DEVO_MPI=OFF: the
# MPI library's own allocations would read as leaks), so it checks that evo without MPI builds and refuses --islands.
# Usage: tools/test.sh          (from anywhere; EVO_TEST_SANITIZE=0 stops after the first ctest)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
tools/setup.sh
ctest --test-dir build --output-on-failure -j2
[ "${EVO_TEST_SANITIZE:-1}" = 0 ] && exit 0
echo "== Debug build (-O0, -Werror)"
cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-debug -j "$jobs"
echo "== ASan + UBSan build (without MPI: --islands then says so), unit and CLI tests"
cmake -S . -B build-sanitize -DEVO_SANITIZE=ON -DEVO_MPI=OFF >/dev/null
cmake --build build-sanitize -j "$jobs"
# Left out here, run in the release build above: cli_format (the sources' layout), cli_golden (outputs byte for byte
# against tests/data/golden/; the paths it drives run under the sanitizers in cli_replay, cli_export, cli_store), and
# the tests whose time is an external compiler's — test_support_nvrtc and test_quantize_nvrtc (NVRTC on the support
# and quantizer kernels; evo's compile wrapper runs under the sanitizers in test_compile), cli_export_nvcc (nvcc on
# exported files; the export runs under the sanitizers in cli_export) and cli_variants (nvcc on the files in
# variants/; no evo code runs in it).
# Shortened here: cli_compile compiles its sample for sm_90 alone (EVO_TEST_ARCHS: the same evo code for every arch),
# cli_quantize_export exports its quantizers but leaves nvcc's builds of them to the release run (EVO_TEST_NO_NVCC),
# test_sm90_family checks the family's host rules but leaves its NVRTC compiles to the release run (EVO_TEST_NO_NVRTC).
EVO_TEST_ARCHS=sm_90 EVO_TEST_NO_NVCC=1 EVO_TEST_NO_NVRTC=1 ctest --test-dir build-sanitize --output-on-failure -j2 -LE gpu \
  -E '^(cli_golden|cli_format|test_support_nvrtc|test_quantize_nvrtc|cli_export_nvcc|cli_variants)$'
