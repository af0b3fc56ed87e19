#!/bin/bash
# fake-sanitizer.sh — stands in for compute-sanitizer in the tests that have no GPU: reads the options evo passes,
# runs the program after them (the fake worker), then writes a report in compute-sanitizer's format.
#   EVO_FAKE_SANITIZER_ERRORS=TOOL:N   that tool reports N errors (default: none)
#   EVO_FAKE_SANITIZER_RUNS=K          ... in its first K runs only (counted in EVO_FAKE_SANITIZER_STATE, a file)
#   EVO_FAKE_SANITIZER_NO_SUMMARY=1    the report ends without its summary (a sanitizer that died)
#   EVO_FAKE_SANITIZER_SLEEP=S         sleeps S seconds before starting the program (a slow instrumented run)
tool=memcheck
log=/dev/stdout
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2; shift 2 ;;
    --log-file) log=$2; shift 2 ;;
    --print-limit | --report-api-errors | --kernel-name) shift 2 ;;
    -*) echo "fake-sanitizer: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "${EVO_FAKE_SANITIZER_SLEEP:-}" ] && sleep "$EVO_FAKE_SANITIZER_SLEEP"
"$@"
rc=$?
n=0
if [ "${EVO_FAKE_SANITIZER_ERRORS%%:*}" = "$tool" ]; then
  n=${EVO_FAKE_SANITIZER_ERRORS#*:}
  if [ -n "${EVO_FAKE_SANITIZER_RUNS:-}" ]; then
    runs=$(cat "$EVO_FAKE_SANITIZER_STATE" 2>/dev/null || echo 0)
    echo $((runs + 1)) >"$EVO_FAKE_SANITIZER_STATE"
    [ "$runs" -ge "$EVO_FAKE_SANITIZER_RUNS" ] && n=0
  fi
fi
{
  echo "========= COMPUTE-SANITIZER"
  if [ "$n" -gt 0 ]; then
    if [ "$tool" = racecheck ]; then
      echo "========= Error: Race reported between Write access at evo_attn_fake+0x1a0 and Read access at evo_attn_fake+0x2c0 [128 hazards]"
      echo "=========     in fake.cu:42"
    else
      echo "========= Invalid __global__ read of size 1 bytes"
      echo "=========     at evo_attn_fake+0x90"
    fi
  fi
  if [ -z "${EVO_FAKE_SANITIZER_NO_SUMMARY:-}" ]; then
    [ "$tool" = racecheck ] && echo "========= RACECHECK SUMMARY: $n hazards displayed ($n errors, 0 warnings)"
    echo "========= ERROR SUMMARY: $n error$([ "$n" = 1 ] || echo s)"
  fi
} >"$log"
exit $rc
