# cli_compile.sh — `evo compile`: a deterministic sample of 24 genomes of the default space, extremes included,
# compiles with NVRTC for sm_80, sm_89 and sm_90 or is rejected before compiling with a stated reason; every
# genome that passes has no spills. Also --genome, JSON output and bad input. No GPU needed.
# Run: bash tests/cli_compile.sh build/evo .   (ctest runs it as cli_compile)
# EVO_TEST_ARCHS (default "sm_80 sm_89 sm_90"): the archs the sample compiles for; tools/test.sh's sanitizer run
# takes sm_90 alone (the same evo code for each arch under the sanitizers; the release run compiles all three).
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export EVO_CACHE="$tmp/cache" # a fresh cache: every genome really compiles

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
run() {
  "$EVO" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
expect_rc() { [ "$rc" = "$1" ] || fail "$2: exit $rc, expected $1 (stderr: $(cat "$tmp/err"))"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "$2: stderr lacks '$1' (got: $(cat "$tmp/err"))"; }

for arch in ${EVO_TEST_ARCHS:-sm_80 sm_89 sm_90}; do
  run compile --config "$SRC/configs/family0.yaml" --sample 24 --arch "$arch" --json
  expect_rc 0 "sample $arch"
  cp "$tmp/out" "$tmp/$arch.json"
  python3 - "$tmp/$arch.json" "$arch" <<'PY' || fail "sample $arch: content"
import json, sys
d = json.load(open(sys.argv[1])); arch = sys.argv[2]
c = d["candidates"]
assert d["arch"] == arch and len(c) == 24, (d["arch"], len(c))
genomes = [x["genome"] for x in c]
assert len(set(genomes)) == 24, "duplicates"
assert genomes[0].startswith("TILE_M=64,TILE_N=64,WARPS_M=4,"), "baseline first"
for extreme in ("TILE_M=16,", "TILE_M=256,", "TILE_N=32,", "TILE_N=256,", "STAGES=1,", "STAGES=3,", "MIN_BLOCKS=4,",
                "BIG_TILE_M=256,"):
    assert any(extreme in g for g in genomes), "extreme missing: " + extreme
ok = 0
for x in c:
    v = x["verdict"]
    assert v in ("OK", "INVALID", "RESOURCE_FAIL", "COMPILE_FAIL"), v
    if v == "OK":
        ok += 1
        assert x["spill_bytes"] == 0 and x["stack_bytes"] == 0, x
        dims = [(v["head_dim"], v["min_waves"]) for v in x["variants"]]
        big = "BIG_TILE_M=0," not in x["genome"]
        assert dims == ([(64, 0), (128, 0), (64, 1)] if big else [(64, 0), (128, 0)]), (dims, x["genome"])
        for var in x["variants"]:
            assert var["registers"] > 0 and var["registers"] <= 255, var
            assert var["lowered"].startswith("_Z12evo_attn_fwdILi%d" % var["head_dim"]), var["lowered"]
    else:
        assert x["why"], x
    if v == "COMPILE_FAIL":
        raise AssertionError("a sampled genome does not compile: " + x["why"])
    if "QK_8BIT=1" in x["genome"]:
        if arch == "sm_80":
            assert v == "INVALID" and "sm_89" in x["why"], x
        else:
            assert v in ("OK", "RESOURCE_FAIL"), x
assert ok >= 10, "only %d of 24 compiled cleanly" % ok
print(arch, ok, "OK")
PY
done

# One genome, as text; the same genome again is a cache hit.
g="TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"
run compile --config "$SRC/configs/family0.yaml" --genome "$g" --arch sm_90
expect_rc 0 "genome"
grep -q "^OK .*d64: [0-9]* r / 20480 B / 0 B, d128: [0-9]* r / 40960 B / 0 B" "$tmp/out" || fail "genome: line ($(cat "$tmp/out"))"
run compile --config "$SRC/configs/family0.yaml" --genome "$g" --arch sm_90 --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["candidates"][0]["cache_hit"] is True' "$tmp/out" ||
  fail "genome: second compile is not a cache hit"

# Bad input: exit 2 with the knob or option named.
run compile --config "$SRC/configs/family0.yaml" --genome "${g/TILE_M=64/TILE_Q=64}"
expect_rc 2 "unknown knob"
expect_err "TILE_Q"
run compile --config "$SRC/configs/family0.yaml" --genome "${g/TILE_N=64/TILE_N=48}"
expect_rc 2 "value outside the domain"
expect_err "TILE_N"
run compile --config "$SRC/configs/family0.yaml" --sample 0
expect_rc 2 "sample 0"
run compile --config "$SRC/configs/family0.yaml" --arch sm_42 --genome "$g"
expect_rc 2 "unknown arch"
expect_err "sm_42"
# A genome the space allows but this arch cannot run: rejected before compiling, exit 2 with the reason.
run compile --config "$SRC/configs/family0.yaml" --genome "${g/QK_8BIT=0/QK_8BIT=1}" --arch sm_80
expect_rc 2 "e4m3 mma on sm_80"
expect_err "INVALID: QK_8BIT=1 with e4m3 needs the FP8 mma of sm_89"

# Both families in one space (configs/hopper.yaml): a FAMILY=1 genome compiles for sm_90a (one wgmma kernel per
# head dim, no spills); on sm_80 it is INVALID before compiling; the family-1 seeds compile.
h=$(sed -n 's/^  - "\(.*FAMILY=1.*H_QK_MODE=1.*\)"$/\1/p' "$SRC/configs/hopper.yaml" | head -1)
[ -n "$h" ] || fail "hopper.yaml has no FAMILY=1 seed with H_QK_MODE=1"
run compile --config "$SRC/configs/hopper.yaml" --genome "$h" --arch sm_90 --json
expect_rc 0 "family 1 on sm_90"
python3 - "$tmp/out" <<'PY' || fail "family 1 on sm_90: content"
import json, sys
c = json.load(open(sys.argv[1]))["candidates"][0]
assert c["verdict"] == "OK", c
v = c["variants"]
assert [(x["head_dim"], x["family"]) for x in v] == [(64, 1), (128, 1)], v
assert all(x["name_expr"].startswith("evo_attn_sm90<") for x in v), v
assert all(x["spill_store_bytes"] == 0 and 0 < x["registers"] <= 255 for x in v), v
PY
run compile --config "$SRC/configs/hopper.yaml" --genome "$h" --arch sm_80
expect_rc 2 "family 1 on sm_80"
expect_err "FAMILY=1 (wgmma + TMA) runs on sm_90"
# family 0's knobs with FAMILY=0 and the seed's H_ knobs, inactive now: given, they are dropped (the old genome form)
f0="TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1"
f0="$f0,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"
run compile --config "$SRC/configs/hopper.yaml" --genome "$f0,${h/FAMILY=1/FAMILY=0}" --arch sm_80
expect_rc 0 "the same H_ knobs as family 0 on sm_80"
# V_PATH 5 (tests/data/sm90-e4m3.yaml): the attention kernels of both head dims and the transpose of V, no spills
vt="FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=128,H_STAGES=2,H_PIPE=2,H_QK_MODE=0,H_V_PATH=5,H_OVERLAP=1"
vt="$vt,H_PINGPONG=1,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=2"
run compile --config "$SRC/tests/data/sm90-e4m3.yaml" --genome "$vt" --arch sm_90 --json
expect_rc 0 "V_PATH 5 on sm_90"
python3 - "$tmp/out" <<'PY' || fail "V_PATH 5 on sm_90: content"
import json, sys
c = json.load(open(sys.argv[1]))["candidates"][0]
assert c["verdict"] == "OK", c
v = c["variants"]
assert [x["name_expr"] for x in v] == ["evo_attn_sm90<64,64,2,128,2,2,0,5,1,1,0,56,2>",
                                       "evo_attn_sm90<128,64,2,128,2,2,0,5,1,1,0,56,2>", "evo_vt_transpose<128>"], v
assert all(x["spill_store_bytes"] == 0 and 0 < x["registers"] <= 255 for x in v), v
PY

[ $fails = 0 ] && echo "cli_compile: all checks passed"
exit $((fails > 0))
