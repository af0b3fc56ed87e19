# cli_worker.sh — the hidden `evo worker` subcommand: option errors exit 2 with a message, it is not listed by
# `evo help`, and a fake worker answers a scripted session on stdin/stdout. Run: bash tests/cli_worker.sh build/evo .
set -u
evo=$1
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect() { # expect CODE PATTERN -- ARGS...
    local code=$1 pattern=$2
    shift 3
    local out
    out=$("$evo" "$@" </dev/null 2>&1)
    local rc=$?
    if [ "$rc" -ne "$code" ]; then echo "FAIL: evo $* exited $rc, expected $code: $out"; fail=1; return; fi
    if ! printf '%s' "$out" | grep -qF -- "$pattern"; then echo "FAIL: evo $*: no '$pattern' in: $out"; fail=1; fi
}
expect 0 "usage: evo worker --gpu N [--config F] [--log FILE] [--fake MODE]" -- worker --help
expect 2 "worker: --gpu N is required (see 'evo help worker')" -- worker
expect 2 "worker: --gpu: '-1' is not a GPU ordinal" -- worker --gpu -1
expect 2 "worker: --gpu: '0x' is not a GPU ordinal" -- worker --gpu 0x
expect 2 "worker: unknown option '--bogus'" -- worker --gpu 0 --bogus
expect 2 "worker: --gpu needs a value" -- worker --gpu
expect 2 "worker: unexpected argument 'extra'" -- worker --gpu 0 extra
expect 2 "worker: --fake: unknown fake worker mode 'slow'" -- worker --gpu 0 --fake slow
expect 2 "unknown fake worker mode 'exit:300'" -- worker --gpu 0 --fake exit:300
expect 1 "worker: --log /nonexistent/dir/w.log: No such file or directory" -- worker --gpu 0 --log /nonexistent/dir/w.log
if "$evo" help | grep -q "worker"; then echo "FAIL: evo help lists the hidden worker command"; fail=1; fi

# A session: hello, an eval, a line that is not JSON, shutdown; whatever follows shutdown is not read.
session='{"op":"hello","id":1,"protocol":3}
{"op":"eval","id":2,"cubin":"/c","program":"p","variants":[{"symbol":"k","threads":256,"smem_bytes":0,"attr":[128,1,128,0]}],"check":true,"time":false,"is_baseline":false,"best_us":[]}
oops
{"op":"shutdown","id":3}
{"op":"hello","id":4,"protocol":3}'
out=$(printf '%s\n' "$session" | "$evo" worker --gpu 3 --fake ok --log "$tmp/w.log")
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: fake session exited $rc"; fail=1; }
lines=$(printf '%s\n' "$out" | wc -l)
[ "$lines" -eq 4 ] || { echo "FAIL: fake session wrote $lines lines, expected 4: $out"; fail=1; }
check_line() { # check_line N PATTERN
    if ! printf '%s\n' "$out" | sed -n "$1p" | grep -qF -- "$2"; then
        echo "FAIL: line $1 of the session lacks '$2': $out"; fail=1
    fi
}
check_line 1 '{"op":"hello","id":1,"protocol":3,"gpu":3,'
check_line 2 '{"op":"eval","id":2,"verdict":"OK","detail":{"fake":true,"request":2},"shapes":[{"shape":"fake0(512)"'
check_line 2 '"median_us":0,'
check_line 3 '{"op":"error","id":-1,"code":10,"status":"worker error","message":"message: not valid JSON'
check_line 4 '{"op":"shutdown","id":3,"exiting":true}'

# Stray writes to stdout cannot reach the protocol: the fake's own messages go to the log only.
out=$(printf '%s\n' '{"op":"eval","id":5,"cubin":"/c","program":"p","variants":[{"symbol":"k","threads":128,"smem_bytes":0,"attr":[64,0,64,0]}],"check":true,"time":true,"is_baseline":false,"best_us":[],"fault_injection":"exit:4"}' |
      "$evo" worker --gpu 0 --fake ok --log "$tmp/w.log")
rc=$?
[ $rc -eq 4 ] || { echo "FAIL: exit:4 exited $rc"; fail=1; }
[ -z "$out" ] || { echo "FAIL: exit:4 wrote to stdout: $out"; fail=1; }
grep -qF "request 5: exiting with status 4 as asked" "$tmp/w.log" || { echo "FAIL: log lacks the fake's message"; fail=1; }

[ $fail -eq 0 ] && echo "cli_worker: all passed"
exit $fail
