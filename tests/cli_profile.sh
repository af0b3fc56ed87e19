#!/usr/bin/env bash
# cli_profile.sh — `evo profile` without a GPU: fake `nvcc` and `ncu` scripts on PATH play the toolkit (the ncu one
# prints captured-format output from tests/data/ncu/), so the command's arguments, the launch it picks, what it
# stores and every error path (no ncu, no counter access, unknown metrics, failing self-test, unknown candidate) are
# checked. Run: bash tests/cli_profile.sh build/evo .   (ctest runs it; the database comes from test_store --fixture)
set -u
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (this test reads databases and makes fixtures with it; tools/setup.sh installs it)"; exit 77; }
EVO=$1
SRC=$2
FIXTURE=$(dirname "$EVO")/tests/test_store
if [ ! -x "$FIXTURE" ]; then
  echo "cli_profile: fixture maker $FIXTURE not built" >&2
  exit 1
fi
T=$(mktemp -d /tmp/evo-cli-profile-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
checks=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
run() {
  "$EVO" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(<"$T/out")
  err=$(<"$T/err")
}
expect_rc() { checks=$((checks + 1)); [ "$rc" = "$1" ] || fail "$2: exit $rc, want $1 (stderr: $err)"; }
expect_out() { checks=$((checks + 1)); grep -qF -- "$1" <<<"$out" || fail "$2: stdout lacks '$1'"$'\n'"$out"; }
expect_err() { checks=$((checks + 1)); [ "$err" = "$1" ] || fail "$2: stderr '$err', want '$1'"; }
expect_err_has() { checks=$((checks + 1)); grep -qF -- "$1" <<<"$err" || fail "$2: stderr '$err' lacks '$1'"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# ---- the fake toolkit ----
mkdir -p "$T/bin" "$T/nobin"
cat >"$T/bin/nvcc" <<'EOF'
#!/usr/bin/env bash
# fake nvcc: records its arguments, writes an executable where -o says (or fails when FAKE_NVCC_FAIL is set)
echo "$*" >>"$FAKE_LOG/nvcc.args"
if [ -n "${FAKE_NVCC_FAIL:-}" ]; then echo 'kernel.cu(12): error: identifier "TILE" is undefined'; exit 2; fi
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
printf '#!/bin/sh\necho self-test "$@"\n' >"$out" && chmod +x "$out"
EOF
cat >"$T/bin/ncu" <<'EOF'
#!/usr/bin/env bash
# fake ncu: FAKE_NCU says how it behaves; every call's arguments are recorded, one line each
echo "$*" >>"$FAKE_LOG/ncu.args"
exe=
for a in "$@"; do case "$a" in */selftest) exe=$a ;; esac; done
[ -x "$exe" ] || { echo "==ERROR== $exe: not found"; exit 1; }
counting=0
case "$*" in *"--metrics launch__grid_size "*) counting=1 ;; esac
case "${FAKE_NCU:-ok}" in
  perm) cat "$FAKE_DATA/permission.txt"; exit 0 ;;
  fail) cat "$FAKE_DATA/selftest_failed.txt"; exit 1 ;;
  few) [ $counting = 1 ] && { sed -n '1,/^"ID"/p' "$FAKE_DATA/count.csv"; grep '^"[01]",' "$FAKE_DATA/count.csv"; exit 0; } ;;
  unknown)
    if [ $counting = 0 ] && [ ! -e "$FAKE_LOG/asked-once" ]; then
      touch "$FAKE_LOG/asked-once"; cat "$FAKE_DATA/unknown.txt"; exit 9
    fi ;;
  unknown-always) [ $counting = 0 ] && { cat "$FAKE_DATA/unknown.txt"; exit 9; } ;;
  nogrid)
    [ $counting = 1 ] && { echo "==ERROR== Failed to access the following 1 metrics: launch__grid_size"; exit 1; }
    case "$*" in *"--metrics gpu__time_duration.sum --print-units"*) cat "$FAKE_DATA/count.csv"; exit 0 ;; esac ;;
esac
if [ $counting = 1 ]; then cat "$FAKE_DATA/count.csv"; else cat "$FAKE_DATA/metrics.csv"; fi
EOF
chmod +x "$T/bin/nvcc" "$T/bin/ncu"
export FAKE_LOG=$T FAKE_DATA=$SRC/tests/data/ncu CUDA_HOME=$T/no-cuda
BASEPATH=/usr/bin:/bin
reset_logs() { rm -f "$T/ncu.args" "$T/nvcc.args" "$T/asked-once"; }

db=$T/pop.db
"$FIXTURE" --fixture populated "$db" || { echo "cli_profile: fixture failed" >&2; exit 1; }
G2="TILE_M=64,TILE_N=128,WARPS=4,STAGES=2"
KEY2=$(printf '%s' "attention_fp8|sm_90|$G2" | sha256sum | cut -d' ' -f1)
printf '/* an export of candidate 3 */\n#define EVO_EXPORT_KEY "%s"\n' "$KEY2" >"$T/cand3.cu"
printf '/* some other kernel */\n' >"$T/other.cu"

# ---- a profile that works ----
reset_logs
PATH=$T/bin:$BASEPATH run profile --db "$db" --id f2e6 --cu "$T/cand3.cu"
expect_rc 0 "profile"
expect_out "candidate 3 (f2e61753, by its key prefix), $G2: building the self-test of $T/cand3.cu" "profile header"
expect_out "mission(1,8,512,64): tensor pipe 71.3 %, DRAM throughput 12.5 %, achieved occupancy 18.7 %, bank conflicts 1234567, issue slots 40.2 %, duration 20.42 µs" "profile mission"
expect_out "long(2,8,2048,64): tensor pipe 71.3 %" "profile long"
expect_out "  ncu launch 0, void evo_attn_fwd<64, 0, 64, 64, 4, 1, 2, 1, 1, 1, 0, 1, 1>(evo_attn_params); tensor pipe from sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active" "profile launch"
expect_out "stored in $db for candidate 3; \`evo elite --show\` prints them" "profile stored"
# nvcc: the candidate's arch, the self-test switched on
checks=$((checks + 1))
grep -q -- "^-arch=sm_90 -O3 -lineinfo -DEVO_SELFTEST -o /.*/selftest $T/cand3.cu\$" "$T/nvcc.args" || fail "nvcc args: $(cat "$T/nvcc.args")"
# an export of the sm_90a family names its arch: nvcc gets the -gencode form
printf '/* an export of candidate 3 */\n#define EVO_EXPORT_KEY "%s"\n#define EVO_EXPORT_ARCH "sm_90a"\n' "$KEY2" >"$T/cand3a.cu"
: >"$T/nvcc.args"
PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3a.cu" --shape mission
checks=$((checks + 1))
grep -q -- "^-gencode=arch=compute_90a,code=sm_90a -O3 -lineinfo -DEVO_SELFTEST -o /.*/selftest $T/cand3a.cu\$" "$T/nvcc.args" ||
  fail "nvcc args for an sm_90a export: $(cat "$T/nvcc.args")"
reset_logs
PATH=$T/bin:$BASEPATH run profile --db "$db" --id f2e6 --cu "$T/cand3.cu"
# ncu: two runs per shape; the second profiles launch 42 - 5 + 1 = 38 (after 30 check and 7 warm-up launches)
checks=$((checks + 1)); [ "$(wc -l <"$T/ncu.args")" = 4 ] || fail "ncu runs: $(cat "$T/ncu.args")"
first=$(sed -n 1p "$T/ncu.args")
second=$(sed -n 2p "$T/ncu.args")
checks=$((checks + 1))
case "$first" in
  "--clock-control none --target-processes all --kernel-name regex:evo_attn --metrics launch__grid_size --print-units base --csv "*"/selftest --shape mission --reps 5") ;;
  *) fail "counting run: $first" ;;
esac
checks=$((checks + 1))
case "$second" in
  "--clock-control none --target-processes all --kernel-name regex:evo_attn --launch-skip 38 --launch-count 1 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active --print-units base --csv "*"/selftest --shape mission --reps 5") ;;
  *) fail "metrics run: $second" ;;
esac
checks=$((checks + 1)); grep -q -- "--shape long --reps 5\$" "$T/ncu.args" || fail "no run for shape long"

# what evo elite shows now
run elite --show --db "$db"
expect_out "ncu long(2,8,2048,64): tensor pipe 71.3 %, DRAM throughput 12.5 %, achieved occupancy 18.7 %, bank conflicts 1234567, issue slots 40.2 %, duration 20.4 us" "elite shows the profile"
run elite --show --db "$db" --json
flat=$(tr -d ' \t\n' <<<"$out")
checks=$((checks + 1))
grep -qF '"metric":"duration","value":20.416,"unit":"us"' <<<"$flat" || fail "elite --json lacks the duration"

# --shape by name picks one shape; profiling again replaces the figures
reset_logs
PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu" --shape long
expect_rc 0 "profile --shape long"
checks=$((checks + 1)); [ "$(wc -l <"$T/ncu.args")" = 2 ] || fail "--shape long: $(cat "$T/ncu.args")"
run elite --show --db "$db" --json
checks=$((checks + 1))
python3 -c '
import json, sys
e = [x for x in json.load(sys.stdin) if x["candidate_id"] == 3][0]
assert len(e["profile"]) == 12, e["profile"]   # 2 shapes x 6 metrics, upserted, not added
' <<<"$out" || fail "profiles of candidate 3: want 12"

# ncu does not know two tensor metrics: asked again without them, the HMMA figure stays
reset_logs
FAKE_NCU=unknown PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu" --shape mission
expect_rc 0 "profile, unknown metrics"
checks=$((checks + 1)); [ "$(wc -l <"$T/ncu.args")" = 3 ] || fail "unknown metrics: want 3 ncu runs"
third=$(sed -n 3p "$T/ncu.args")
checks=$((checks + 1))
case "$third" in
  *",sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active --print-units"*) ;;
  *) fail "retry still asks for unknown metrics: $third" ;;
esac
expect_out "tensor pipe 71.3 %" "unknown metrics: tensor pipe"

# an ncu without the launch statistic counts launches by their duration instead
reset_logs
FAKE_NCU=nogrid PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu" --shape mission
expect_rc 0 "profile, no launch__grid_size"
checks=$((checks + 1)); [ "$(wc -l <"$T/ncu.args")" = 3 ] || fail "no launch__grid_size: want 3 ncu runs"
checks=$((checks + 1)); grep -q -- "--launch-skip 38 " "$T/ncu.args" || fail "no launch__grid_size: launch 38 not asked"

# ---- errors: each exits 1 (2 for usage) and leaves the database as it was ----
before=$(sha "$db")
PATH=$T/nobin run profile --db "$db" --id 3 --cu "$T/cand3.cu"
expect_rc 1 "no ncu"
expect_err "evo: ncu not found: install Nsight Compute or pass --ncu PATH" "no ncu"
PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu" --ncu "$T/nobin/ncu"
expect_rc 1 "--ncu missing"
expect_err "evo: ncu not found at $T/nobin/ncu: install Nsight Compute or pass --ncu PATH" "--ncu missing"
FAKE_NCU=perm PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu"
expect_rc 1 "no counter access"
expect_err_has "evo: ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): the driver lets only administrators profile. Run evo profile as root, or allow every user by loading the nvidia module with NVreg_RestrictProfilingToAdminUsers=0" "no counter access"
FAKE_NCU=fail PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu"
expect_rc 1 "self-test fails"
expect_err_has "evo: the self-test failed under ncu for shape mission:" "self-test fails"
expect_err_has "FAIL  D=64 S=77 causal=1 outliers" "self-test fails: its output quoted"
FAKE_NCU=few PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu"
expect_rc 1 "too few launches"
expect_err_has "evo: the self-test made 2 launches of the kernel, fewer than the 5 timed ones asked for shape mission" "too few launches"
FAKE_NCU=unknown-always PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu"
expect_rc 1 "unknown metrics twice"
expect_err_has "evo: ncu does not know the metrics evo asks for:" "unknown metrics twice"
FAKE_NVCC_FAIL=1 PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu"
expect_rc 1 "nvcc fails"
expect_err_has "evo: nvcc could not build the self-test of $T/cand3.cu (exit 2):" "nvcc fails"
expect_err_has 'identifier "TILE" is undefined' "nvcc fails: its log quoted"
PATH=$T/bin:$BASEPATH run profile --db "$db" --id 999 --cu "$T/cand3.cu"
expect_rc 1 "unknown candidate"
expect_err "evo: $db: no candidate '999'" "unknown candidate"
PATH=$T/bin:$BASEPATH run profile --db "$db" --id 4 --cu "$T/cand3.cu"
expect_rc 1 "incorrect candidate"
expect_err_has "has no correct evaluation; only kernels that passed every gate are profiled" "incorrect candidate"
PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/other.cu"
expect_rc 2 "--cu of another kernel"
expect_err "evo: $T/other.cu: not an export of candidate 3 (its key ${KEY2:0:16}... does not appear in the file)" "--cu of another kernel"
PATH=$T/bin:$BASEPATH run profile --db "$db" --id 3 --cu "$T/cand3.cu" --shape wide
expect_rc 2 "--shape unknown"
expect_err "evo: profile: candidate f2e61753 has no timed shape 'wide' (its shapes: mission(1,8,512,64), long(2,8,2048,64)) (see 'evo help profile')" "--shape unknown"
run profile --db "$db"
expect_rc 2 "no --id"
expect_err "evo: profile: --id is required (a candidate id or key prefix; --row N, --key PREFIX) (see 'evo help profile')" "no --id"
run profile --db "$T/none.db" --id 3
expect_rc 1 "no database"
expect_err "evo: no database at $T/none.db — run \`evo run\` first" "no database"
checks=$((checks + 1)); [ ! -e "$T/none.db" ] || fail "profile created a database"
checks=$((checks + 1)); [ "$(sha "$db")" = "$before" ] || fail "a failed profile changed the database"
checks=$((checks + 1)); [ -z "$(find /tmp -maxdepth 1 -name 'evo-profile-*' -newer "$T/cand3.cu" 2>/dev/null)" ] ||
  fail "temporary directories left behind: $(find /tmp -maxdepth 1 -name 'evo-profile-*' -newer "$T/cand3.cu")"

if [ "$fails" -gt 0 ]; then
  echo "$fails of $checks checks failed" >&2
  exit 1
fi
echo "$checks checks passed"
