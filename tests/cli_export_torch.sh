#!/usr/bin/env bash
# cli_export_torch.sh — `evo export --torch DIR`: the kernel's .cu (what -o writes, but for the export time), the quantizer's
# .cu and evo_fp8.py with every placeholder filled by the concrete facts of the two files (and byte for byte what
# --kernel writes from the exported file alone); the default quantizer found under variants/; every refusal
# (exit 2, nothing written, the database unchanged). Needs no GPU, nvcc or PyTorch (tests/torch_op_cpu.py imports
# the module; tests/gpu_torch_op.py runs it).
# Run: bash tests/cli_export_torch.sh build/evo .   (ctest runs it; fixtures come from build/tests/test_export)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$(realpath "$1")
SRC=$(realpath "$2")
FIXTURE=$(dirname "$EVO")/tests/test_export
[ -x "$FIXTURE" ] || { echo "cli_export_torch: fixture maker $FIXTURE not built" >&2; exit 1; }
T=$(mktemp -d /tmp/evo-cli-export-torch-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
run() { "$EVO" "$@" >"$T/out" 2>"$T/err"; rc=$?; out=$(cat "$T/out"); err=$(cat "$T/err"); }
expect_rc() { checks=$((checks + 1)); [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1 (stderr: $err)"; }
expect_err_has() { checks=$((checks + 1)); grep -qF -- "$1" <<<"$err" || fail "$2: stderr '$err' lacks '$1'"; }
expect_line() { checks=$((checks + 1)); grep -qxF -- "$2" "$1" || fail "$3: $1 lacks the line '$2'"; }

"$FIXTURE" --fixture e4m3 pop.db >keys.txt || fail "fixture e4m3"
A=$(awk '$1 == "A" { print substr($2, 1, 8) }' keys.txt)
QSRC="$SRC/variants/quantize_fp8-sm_90-4a2ad3fb.cu"
before=$(sha256sum pop.db | cut -d' ' -f1)

# --quantizer given; DIR created with its parents
run export --db pop.db --best --torch dest/pkg --quantizer "$QSRC"
expect_rc 0 "export --torch"
K="attention_fp8-sm_90-$A.cu"
for f in "$K" quantize_fp8-sm_90-4a2ad3fb.cu evo_fp8.py; do
  checks=$((checks + 1)); [ -f "dest/pkg/$f" ] || fail "dest/pkg/$f missing"
done
checks=$((checks + 1)); grep -qE '@[A-Z_]+@' dest/pkg/evo_fp8.py && fail "placeholders left in evo_fp8.py"
checks=$((checks + 1)); cmp -s "$QSRC" dest/pkg/quantize_fp8-sm_90-4a2ad3fb.cu || fail "the quantizer was not copied as is"
expect_line dest/pkg/evo_fp8.py "ATTENTION_CU = \"$K\"" "module: attention file"
expect_line dest/pkg/evo_fp8.py 'QUANTIZE_CU = "quantize_fp8-sm_90-4a2ad3fb.cu"' "module: quantizer file"
expect_line dest/pkg/evo_fp8.py 'GENOME = "TILE_M=128,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=1,F16_SMEM=1,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"' "module: genome"
expect_line dest/pkg/evo_fp8.py 'QUANT_GENOME = "VEC=32,WARPS=8,MODE=3,CLUSTER=1,KEEP=0,UNROLL=4,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=4"' "module: quantizer genome"
expect_line dest/pkg/evo_fp8.py 'ARCH = "sm_90"' "module: arch"
expect_line dest/pkg/evo_fp8.py 'ATTN_FORMAT = "e4m3"' "module: format"
expect_line dest/pkg/evo_fp8.py 'ATTN_HEAD_DIMS = "64,128"' "module: head dims"
expect_line dest/pkg/evo_fp8.py 'QUANT_VARIANTS = "64:fp16:0,64:fp16:1,64:bf16:0,64:bf16:1,128:fp16:0,128:fp16:1,128:bf16:0,128:bf16:1"' "module: quantizer variants"
# the C++ operators go in whole (OPS_CPP), and the module is valid Python
checks=$((checks + 1))
python3 - dest/pkg/evo_fp8.py "$SRC/tasks/attention_fp8/torch_ops.cpp" <<'PY' || fail "OPS_CPP is not torch_ops.cpp, or the module does not parse"
import ast, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
ops = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "OPS_CPP"]
sys.exit(0 if ops == [open(sys.argv[2], encoding="utf-8").read()] else 1)
PY
run export --db pop.db --best -o plain.cu
# the same file but for the export time in its provenance (the two commands may fall in different seconds)
checks=$((checks + 1))
cmp -s <(grep -v '^ \*   exported  ' plain.cu) <(grep -v '^ \*   exported  ' "dest/pkg/$K") ||
  fail "the kernel under --torch differs from what -o writes"
checks=$((checks + 1)); [ "$(grep -c '^ \*   exported  ' plain.cu)" = 1 ] || fail "no export time line in plain.cu"
# --kernel: the module for a file evo export already wrote, without the database: the same module
run export --torch py --kernel "dest/pkg/$K" --quantizer "$QSRC"
expect_rc 0 "export --torch --kernel"
checks=$((checks + 1)); cmp -s py/evo_fp8.py dest/pkg/evo_fp8.py || fail "--kernel and --best write different modules"
checks=$((checks + 1)); cmp -s py/"$K" "dest/pkg/$K" || fail "--kernel did not copy the kernel as it is"
# the same output rule: a link among its outputs is refused, its target untouched
echo keep >target.txt && ln -s ../target.txt py/evo_fp8.py.new && mv py/evo_fp8.py.new py/evo_fp8.py
run export --torch py --kernel "dest/pkg/$K" --quantizer "$QSRC"
expect_rc 2 "--kernel with a linked output"; expect_err_has "is a symbolic link" "--kernel with a linked output"
checks=$((checks + 1)); [ "$(cat target.txt)" = keep ] || fail "--kernel wrote through a link"
echo "int x;" >notexport.cu
run export --torch n0 --kernel notexport.cu --quantizer "$QSRC"
expect_rc 2 "--kernel of a hand-written file"; expect_err_has "notexport.cu: not a file evo export wrote" "--kernel of a hand-written file"
run export --kernel "dest/pkg/$K"
expect_rc 2 "--kernel without --torch"; expect_err_has "--kernel goes with --torch DIR" "--kernel without --torch"
run export --torch n0 --kernel "dest/pkg/$K" --best
expect_rc 2 "--kernel with --best"; expect_err_has "no --best, --id or --accuracy" "--kernel with --best"

# again into the same directory (files replaced), with another module name; the default quantizer from variants/
mkdir -p variants && cp "$QSRC" variants/
run export --db pop.db --best --torch dest/pkg --module my_ops
expect_rc 0 "export --torch, default quantizer"
expect_line dest/pkg/my_ops.py 'QUANTIZE_CU = "quantize_fp8-sm_90-4a2ad3fb.cu"' "default quantizer"
# two candidates for the default: refused
cp variants/quantize_fp8-sm_90-4a2ad3fb.cu variants/quantize_fp8-sm_90-00000000.cu
run export --db pop.db --best --torch dest/two
expect_rc 2 "two default quantizers"; expect_err_has "choose one with --quantizer" "two default quantizers"
rm variants/quantize_fp8-sm_90-00000000.cu

# refusals: nothing written
: >afile
run export --db pop.db --best --torch afile --quantizer "$QSRC"
expect_rc 2 "DIR is a file"; expect_err_has "is not a directory" "DIR is a file"
ln -s dest/pkg linkdir
run export --db pop.db --best --torch linkdir --quantizer "$QSRC"
expect_rc 2 "DIR is a link"; expect_err_has "symbolic link" "DIR is a link"
run export --db pop.db --best --torch n1 --module 9lives
expect_rc 2 "bad module name"; expect_err_has "'9lives' is not a Python module name" "bad module name"
run export --db pop.db --best --torch n2 --quantizer plain.cu
expect_rc 2 "not a quantizer"; expect_err_has "plain.cu: not a quantizer written by evo export" "not a quantizer"
sed 's/^#define EVO_EXPORT_ARCH "sm_90"/#define EVO_EXPORT_ARCH "sm_80"/' "$QSRC" >q80.cu
run export --db pop.db --best --torch n3 --quantizer q80.cu
expect_rc 2 "arch mismatch"; expect_err_has "q80.cu for sm_80: export both for one GPU" "arch mismatch"
run export --db pop.db --best --torch n4 --quantizer missing.cu
expect_rc 2 "missing quantizer"; expect_err_has "missing.cu: no such file" "missing quantizer"
mkdir n5 && ln -s ../plain.cu "n5/evo_fp8.py"
run export --db pop.db --best --torch n5 --quantizer "$QSRC"
expect_rc 2 "symlinked output"; checks=$((checks + 1)); [ ! -e "n5/$K" ] || fail "a file was written before the refusal"
run export --db pop.db --best -o x.cu --torch n6
expect_rc 2 "-o with --torch"
run export --db pop.db --best --quantizer "$QSRC"
expect_rc 2 "--quantizer without --torch"
for d in n1 n2 n3 n4 n6; do checks=$((checks + 1)); [ ! -e "$d" ] || fail "$d was created by a refused export"; done
checks=$((checks + 1)); [ "$(sha256sum pop.db | cut -d' ' -f1)" = "$before" ] || fail "the database changed"

# a dispatching file of both families (test_export --fixture dispatch: family 0 and sm_90a) packaged with --kernel:
# head dims of both families' instantiations, the sm_90a arch beside the sm_90 quantizer, the dispatch genome
"$FIXTURE" --fixture dispatch d.db >dkeys.txt || fail "fixture dispatch"
run export --dispatch --db d.db -o attention_fp8-sm_90a-dispatch.cu
expect_rc 0 "export --dispatch"
run export --torch dpkg --kernel attention_fp8-sm_90a-dispatch.cu --quantizer "$QSRC"
expect_rc 0 "export --torch --kernel (a dispatching file)"
expect_line dpkg/evo_fp8.py 'ARCH = "sm_90a"' "dispatch module: attention arch"
expect_line dpkg/evo_fp8.py 'QUANT_ARCH = "sm_90"' "dispatch module: quantizer arch"
expect_line dpkg/evo_fp8.py 'ATTN_HEAD_DIMS = "64,128"' "dispatch module: head dims of both families"
checks=$((checks + 1)); grep -q '^GENOME = "dispatch: .* | .*FAMILY=1' dpkg/evo_fp8.py || fail "dispatch module: genome"
# evo export --dispatch --torch DIR: the same module, straight from the store
run export --dispatch --db d.db --torch dpkg2 --quantizer "$QSRC"
expect_rc 0 "export --dispatch --torch"
checks=$((checks + 1)); grep -qF "PyTorch ops of the dispatching export (5 buckets, 2 kernels, accuracy class exact)" \
  <<<"$out" || fail "export --dispatch --torch: summary '$out'"
checks=$((checks + 1))
# the same file but for the export time (a dispatching file says it as " * Exported DATE by evo ...")
cmp -s <(grep -v '^ \* Exported ' dpkg/attention_fp8-sm_90a-dispatch.cu) \
  <(grep -v '^ \* Exported ' dpkg2/attention_fp8-sm_90-dispatch.cu) || fail "--dispatch --torch wrote another file"
checks=$((checks + 1))
diff <(grep -v '^ATTENTION_CU = ' dpkg/evo_fp8.py) <(grep -v '^ATTENTION_CU = ' dpkg2/evo_fp8.py) >/dev/null ||
  fail "--dispatch --torch and --kernel wrote different modules"
run export --dispatch --db d.db --torch dpkg3 --kernel attention_fp8-sm_90a-dispatch.cu
expect_rc 2 "--dispatch with --kernel"; expect_err_has "--dispatch and --kernel exclude each other" "--dispatch --kernel"

echo "cli_export_torch: $checks checks, $fails failed"
[ "$fails" = 0 ]
