#!/usr/bin/env bash
# cli_codegen.sh — generated code is what its generator writes: the sm_90a wgmma block of
# tasks/attention_fp8/attention_fp8_sm90.cu equals tools/gen_sm90_wgmma.py's output (--check), and --check fails on a
# copy whose block was edited by hand.
# Run: bash tests/cli_codegen.sh build/evo .
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (tools/setup.sh installs it)"; exit 77; }
SRC=$(realpath "$2")
F="$SRC/tasks/attention_fp8/attention_fp8_sm90.cu"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
out=$(python3 "$SRC/tools/gen_sm90_wgmma.py" --check "$F" 2>&1) || fail "the generated block of $F is out of date: $out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed '0,/wgmma.mma_async.sync.aligned.m64n64k32/s//wgmma.mma_async.sync.aligned.m64n64k16/' "$F" >"$tmp/edited.cu"
cmp -s "$F" "$tmp/edited.cu" && fail "the edit did not change the copy"
python3 "$SRC/tools/gen_sm90_wgmma.py" --check "$tmp/edited.cu" >/dev/null 2>&1
rc=$?
[ $rc = 1 ] || fail "--check on a hand-edited block: exit $rc, want 1"
[ $fails -eq 0 ] && echo "ok: the generated wgmma block is current; a hand edit is caught"
exit $((fails > 0))
