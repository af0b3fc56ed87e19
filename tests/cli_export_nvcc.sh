#!/usr/bin/env bash
# cli_export_nvcc.sh — kernels exported from the fixture stores (e4m3 and u8sim, two head dims each, and a kernel of
# the sm_90a family from a configs/hopper.yaml run) build with plain nvcc, without evo or its templates: as the
# self-test executable (-DEVO_SELFTEST) and as the shared library tools/bench/compare_sdpa.py loads (its three extern
# "C" symbols and the kernels present; the header's -c line is the same compile without -fPIC), with no compiler
# warning; each with the nvcc target its header names. The
# dispatching exports too: one holding both families (test_export --fixture dispatch, sm_90a) and one of four family-0
# genomes (tests/data/replay.db), the latter also for sm_80; and an sm_90a genome whose K and V are converted to FP16
# once per call (V_PATH 3): its conversion kernel, its rows marked, the workspace entry points; and one whose V is
# transposed once per call (V_PATH 5): its transpose kernel, its rows marked.
# Exits 77 (skipped) when nvcc is not found. Run: bash tests/cli_export_nvcc.sh build/evo .   (ctest runs it)
set -u
EVO=$(realpath "$1")
SRC=$(realpath "${2:-.}")
FIXTURE=$(dirname "$EVO")/tests/test_export
NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
if [ -z "$NVCC" ]; then
  echo "SKIP: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
  exit 77
fi
T=$(mktemp -d /tmp/evo-cli-export-nvcc-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# build NAME ARGS...: nvcc in the background with the target the file's header names ($TARGET), output in NAME.log
build() { local name=$1; shift; ("$NVCC" $TARGET -O3 "$@" >"$name.log" 2>&1; echo $? >"$name.rc") & }

"$FIXTURE" --fixture dispatch dispatch.db >/dev/null || fail "fixture dispatch"
# kv16: an sm_90a genome whose K and V are converted to FP16 once per call (V_PATH 3, configs/hopper-large.yaml)
KV16=FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=64,H_STAGES=2,H_PIPE=2,H_QK_MODE=2,H_V_PATH=3,H_OVERLAP=1,H_PINGPONG=1,H_O_ACC=1,H_PRODUCER_REGS=56,H_PERSIST=0
# vt: an sm_90a genome on Vᵀ transposed once per call (V_PATH 5, tests/data/sm90-e4m3.yaml)
VT=FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=128,H_STAGES=2,H_PIPE=2,H_QK_MODE=0,H_V_PATH=5,H_OVERLAP=1,H_PINGPONG=1,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=2
for fmt in e4m3 u8sim hopper dispatch replay kv16 vt; do
  case $fmt in
    kv16)
      "$FIXTURE" --fixture genome $fmt.db "$SRC/configs/hopper-large.yaml" "$KV16" >/dev/null || fail "fixture $fmt"
      "$EVO" export --db $fmt.db -o $fmt.cu >/dev/null 2>&1 || fail "export $fmt"
      ;;
    vt)
      "$FIXTURE" --fixture genome $fmt.db "$SRC/tests/data/sm90-e4m3.yaml" "$VT" >/dev/null || fail "fixture $fmt"
      "$EVO" export --db $fmt.db -o $fmt.cu >/dev/null 2>&1 || fail "export $fmt"
      ;;
    dispatch) "$EVO" export --dispatch --db dispatch.db -o $fmt.cu >/dev/null 2>&1 || fail "export $fmt" ;;
    replay) "$EVO" export --dispatch --db "$SRC/tests/data/replay.db" -o $fmt.cu >/dev/null 2>&1 || fail "export $fmt" ;;
    *)
      "$FIXTURE" --fixture $fmt $fmt.db >/dev/null || fail "fixture $fmt"
      "$EVO" export --db $fmt.db -o $fmt.cu >/dev/null 2>&1 || fail "export $fmt"
      ;;
  esac
  TARGET=$(sed -n 's/^ \*   nvcc \(-[^ ]*\) -O3 -c .*/\1/p' $fmt.cu | head -1)
  want=-arch=sm_90; [ $fmt = hopper ] || [ $fmt = dispatch ] || [ $fmt = kv16 ] || [ $fmt = vt ] && want=-gencode=arch=compute_90a,code=sm_90a
  checks=$((checks + 1)); [ "$TARGET" = "$want" ] || fail "$fmt.cu names nvcc target '$TARGET', not $want"
  # only the file itself: a copy in an empty directory, so no header next to it can be found
  mkdir -p alone && cp $fmt.cu alone/
  # the self-test and the shared library (its symbol table also shows the kernels an object would hold: the -c line
  # of the header compiles the same code without -fPIC, so it is not built a third time)
  build $fmt-selftest -DEVO_SELFTEST alone/$fmt.cu -o $fmt-selftest
  build $fmt-so -shared -Xcompiler -fPIC alone/$fmt.cu -o lib$fmt.so
done
# the dispatching file of family-0 kernels builds for sm_80 too
TARGET=-arch=sm_80 build replay80-selftest -DEVO_SELFTEST alone/replay.cu -o replay80-selftest
wait
for kind in selftest; do
  checks=$((checks + 1))
  [ "$(cat replay80-$kind.rc)" = 0 ] || fail "nvcc -arch=sm_80 replay $kind: $(head -20 replay80-$kind.log)"
  checks=$((checks + 1))
  ! grep -qi "warning" replay80-$kind.log || fail "nvcc sm_80 replay $kind warns: $(grep -i warning replay80-$kind.log | head -5)"
done
for fmt in e4m3 u8sim hopper dispatch replay kv16 vt; do
  for kind in selftest so; do
    checks=$((checks + 1))
    [ "$(cat $fmt-$kind.rc)" = 0 ] || fail "nvcc $fmt $kind: $(head -20 $fmt-$kind.log)"
    checks=$((checks + 1))
    ! grep -qi "warning" $fmt-$kind.log || fail "nvcc $fmt $kind warns: $(grep -i warning $fmt-$kind.log | head -5)"
  done
  checks=$((checks + 1)); [ -x $fmt-selftest ] || fail "$fmt: no self-test executable"
  syms="evo_attention_forward evo_attention_genome evo_attention_format evo_attention_forward_ws evo_attention_workspace_bytes"
  [ $fmt = dispatch ] || [ $fmt = replay ] && syms="$syms evo_attention_dispatch evo_attention_entries evo_attention_entry_genome"
  for sym in $syms; do
    checks=$((checks + 1))
    nm -D --defined-only lib$fmt.so 2>/dev/null | grep -q " T $sym$" || fail "lib$fmt.so does not export $sym"
  done
  checks=$((checks + 1))
  if [ $fmt = hopper ] || [ $fmt = dispatch ]; then
    nm -C --defined-only lib$fmt.so 2>/dev/null | grep -q "evo_attn_sm90<64, 64, 2, 64, 3, 2, 2, 1, 1, 0, 0, 56, 0, 0>" ||
      fail "lib$fmt.so lacks the D=64 instantiation of the sm_90a family"
  elif [ $fmt = kv16 ]; then
    # the V_PATH 3 kernels, their row marked to convert (and their own FP16-K-and-V entry), the conversion kernel
    nm -C --defined-only lib$fmt.so 2>/dev/null | grep -q "evo_attn_sm90<128, 64, 2, 64, 2, 2, 2, 3, 1, 1, 1, 56, 0, 0>" ||
      fail "lib$fmt.so lacks the D=128 V_PATH 3 kernel"
    checks=$((checks + 1))
    nm -C --defined-only lib$fmt.so 2>/dev/null | grep -q "evo_kv16_convert<16>" ||
      fail "lib$fmt.so lacks the conversion kernel"
    checks=$((checks + 1))
    grep -qF '    {128, (const void *)evo_attn_sm90<128,64,2,64,2,2,2,3,1,1,1,56,0>, 384, 128, 167048, 0, 1, 64, 64, 0, 0, nullptr, (const void *)evo_attn_sm90<128,64,2,64,2,2,2,3,1,1,1,56,0>, 1},' $fmt.cu ||
      fail "$fmt.cu: the D=128 row does not convert: $(grep -F '{128, (const void *)evo_attn_sm90' $fmt.cu)"
  elif [ $fmt = vt ]; then
    # the V_PATH 5 kernels, their rows marked to transpose V first, the transpose kernel
    nm -C --defined-only lib$fmt.so 2>/dev/null | grep -q "evo_attn_sm90<128, 64, 2, 128, 2, 2, 0, 5, 1, 1, 0, 56, 2, 0>" ||
      fail "lib$fmt.so lacks the D=128 V_PATH 5 kernel"
    checks=$((checks + 1))
    nm -C --defined-only lib$fmt.so 2>/dev/null | grep -q "evo_vt_transpose<128>" || fail "lib$fmt.so lacks the transpose kernel"
    checks=$((checks + 1))
    grep -qF '    {128, (const void *)evo_attn_sm90<128,64,2,128,2,2,0,5,1,1,0,56,2>, 384, 128, 119944, 0, 1, 64, 128, 2, 1, nullptr, nullptr, 2},' $fmt.cu ||
      fail "$fmt.cu: the D=128 row does not transpose V: $(grep -F '{128, (const void *)evo_attn_sm90' $fmt.cu)"
  elif [ $fmt = replay ]; then
    expect_n=$(nm -C --defined-only lib$fmt.so 2>/dev/null | grep -E " [tT] void evo_attn_fwd<" | grep -vc clone)
    [ "$expect_n" = 5 ] || fail "lib$fmt.so has $expect_n family-0 kernels, not 5 (four genomes, one with two head dims)"
  else
    nm -C --defined-only lib$fmt.so 2>/dev/null | grep -q "evo_attn_fwd<64, $([ $fmt = e4m3 ] && echo 0 || echo 1), 128, 64, 4" ||
      fail "lib$fmt.so lacks the D=64 instantiation"
  fi
  if [ $fmt = dispatch ]; then
    checks=$((checks + 1))
    nm -C --defined-only lib$fmt.so 2>/dev/null | grep -q "evo_attn_fwd<64, 0, 64, 64, 4, 1, 3," ||
      fail "lib$fmt.so lacks the family-0 D=64 instantiation of entry 0"
  fi
done

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "$checks checks passed"
