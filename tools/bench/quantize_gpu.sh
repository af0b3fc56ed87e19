#!/usr/bin/env bash
# quantize_gpu.sh — on a GPU host: the quantize_fp8 harness (self-tests, every genome bit-exact against the CPU
# reference, timing against a device-to-device copy) and then PyTorch side by side; logs and JSON under OUT.
# Usage: tools/bench/quantize_gpu.sh OUT [BUILD_DIR]    (BUILD_DIR: default build/quantize, built with
#        tools/bench/quantize_build.sh when it holds no quantize_bench; prints a summary last)
# Time limits in seconds (0: none): QB_BENCH_TIMEOUT, QB_COMPARE_TIMEOUT; extra options: QB_BENCH_ARGS, QB_COMPARE_ARGS;
# QB_COMPARE=0 leaves PyTorch out.
# QB_NCU="G1,G2": also profile those genomes and the probes on (4,16,4096,128) fp16 with ncu (ncu.txt); QB_NCU_ROT=1:
# the rotated shape.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: tools/bench/quantize_gpu.sh OUT [BUILD_DIR]}
bd=${2:-build/quantize}
mkdir -p "$out"
if [ ! -x "$bd/quantize_bench" ]; then tools/bench/quantize_build.sh "$bd" || exit 1; fi
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; date -u +%FT%TZ; } \
  > "$out/gpu.txt" 2>&1
# in a session of its own, so that a time limit (QB_BENCH_TIMEOUT seconds) also ends its forked GPU child
setsid "$bd/quantize_bench" --out "$out" ${QB_BENCH_ARGS:-} > "$out/bench.log" 2>&1 &
bench_pid=$!
if [ "${QB_BENCH_TIMEOUT:-0}" -gt 0 ]; then
  ( sleep "$QB_BENCH_TIMEOUT"; echo "time limit: bench stopped" >> "$out/bench.log"; kill -9 -- "-$bench_pid" ) 2>/dev/null &
  watch_pid=$!
fi
wait "$bench_pid"
echo "bench rc=$?" >> "$out/bench.log"
[ -n "${watch_pid:-}" ] && kill "$watch_pid" 2>/dev/null
awk '/^CHECKED/ && $6 == 0 {sub(":", "", $3); print $3}' "$out/bench.log" > "$out/passing.txt"
if [ "${QB_COMPARE:-1}" != 0 ]; then
  PYTHONUNBUFFERED=1 timeout -k 5 "${QB_COMPARE_TIMEOUT:-0}" python3 tools/bench/compare_quantize.py --lib "$bd/libquantize_bench.so" --variants "$out/passing.txt" \
    --out "$out" ${QB_COMPARE_ARGS:-} > "$out/compare.log" 2>&1
  echo "compare rc=$?" >> "$out/compare.log"
fi
if [ -n "${QB_NCU:-}" ]; then
  timeout -k 5 "${QB_NCU_TIMEOUT:-0}" ncu --clock-control none --target-processes all \
    -k 'regex:evo_quant|probe_encode|copy_kernel' --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section WarpStateStats --section LaunchStats \
    "$bd/quantize_bench" ${QB_NCU_ROT:+--main-rot} --main-only --no-check --reps 1 --flush read --genomes "$QB_NCU" --out /tmp \
    > "$out/ncu.txt" 2>&1
  echo "ncu rc=$?" >> "$out/ncu.txt"
fi

cat "$out/gpu.txt"
grep -E "^(device|selftest|copy|CRASH|HUNG|  FAIL|done|bench rc|time limit)" "$out/bench.log" | head -60
echo "variants passing: $(wc -l < "$out/passing.txt") of $(grep -c '^CHECKED' "$out/bench.log")"
python3 - "$out/quantize_bench.jsonl" <<'EOF'
import json, sys
copy, rows, probes = {}, {}, {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "copy" in r:
        copy[(tuple(r["copy"]), r.get("flush", "write"))] = r["memcpy_us"]
        probes[(tuple(r["copy"]), r.get("flush", "write"))] = (r.get("probe_encode_us"), r.get("probe_absmax_us"))
    elif "time" in r:
        rows.setdefault((tuple(r["shape"]), r["bf16"], r["rot"], r.get("flush", "write")), []).append(r)
print(f"{'shape':>18} {'dt':>4} {'rot':>3} {'flush':>5} {'copy us':>8} {'probe':>6} {'best':>5} {'us':>8} {'GB/s':>6} {'%copy':>6}   runners-up (% of copy)")
for (shape, bf, rot, fl), rs in sorted(rows.items()):
    rs.sort(key=lambda r: r["us"])
    c = copy.get((shape, fl), float("nan"))
    pe = probes.get((shape, fl), (None, None))[0] or float("nan")
    b = rs[0]
    more = " ".join(f"{r['genome']}:{100 * c / r['us']:.0f}" for r in rs[1:6])
    print(f"{','.join(map(str, shape)):>18} {'bf16' if bf else 'fp16':>4} {rot:>3} {fl:>5} {c:8.2f} {pe:6.2f} {b['genome']:>5} "
          f"{b['us']:8.2f} {b['gbps']:6.0f} {100 * c / b['us']:6.1f}   {more}")
for fl in ("read", "write"):
    main = [r for (s, bf, rot, f), rs in rows.items() if s == (4, 16, 4096, 128) and bf == 0 and rot == 0 and f == fl for r in rs]
    if main:
        print(f"(4,16,4096,128) fp16 flush={fl}, every genome (us): " + " ".join(f"{r['genome']}:{r['us']:.1f}" for r in sorted(main, key=lambda r: r["us"])))
EOF
tail -32 "$out/compare.log"
if [ -f "$out/ncu.txt" ]; then
  grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|L2 Hit Rate|Achieved Occupancy|Registers Per Thread|Warp Cycles Per Issued|Issue Slots Busy|ncu rc|==ERROR" "$out/ncu.txt" \
    | sed -E 's/ +/ /g' | awk 'NR % 9 != 0 || 1' | head -150
fi
