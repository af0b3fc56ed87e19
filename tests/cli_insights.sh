# cli_insights.sh — `evo insights` option handling: usage text, exit 2 with a message for bad options.
# Run: bash tests/cli_insights.sh build/evo .   (ctest runs it as cli_insights)
set -u
evo=$1
fail=0
expect() { # expect CODE PATTERN -- ARGS...
    local code=$1 pattern=$2
    shift 3
    local out
    out=$("$evo" "$@" 2>&1)
    local rc=$?
    if [ "$rc" -ne "$code" ]; then echo "FAIL: evo $* exited $rc, expected $code: $out"; fail=1; return; fi
    if ! printf '%s' "$out" | grep -qF -- "$pattern"; then echo "FAIL: evo $*: no '$pattern' in: $out"; fail=1; fi
}
expect 0 "usage: evo insights [--config F] [--db F] [--json]" -- help insights
expect 0 "--json            machine-readable output" -- insights --help
expect 0 "insights  per-knob-value statistics that guide mutation" -- help
expect 2 "insights: unknown option '--bogus' (see 'evo help insights')" -- insights --bogus
expect 2 "insights: option '--db' needs a value" -- insights --db
expect 2 "insights: unexpected argument 'extra'" -- insights extra
[ $fail -eq 0 ] && echo "cli_insights: all passed"
exit $fail
