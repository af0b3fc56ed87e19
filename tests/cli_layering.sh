#!/usr/bin/env bash
# cli_layering.sh — the engine names no task: no file under engine/ includes a header of tasks/, names a task (a folder
# of tasks/), a task's table (evo_task_<name>) or a kernel symbol a task defines (extern "C" names of its .cu/.cuh
# files and of templates/ kernels only a task loads). A task is a plug-in; this keeps it so (the build keeps the
# layers: tests/cli_layers.sh). The check is run once on a copy of engine/ with a planted name, which must fail.
# Run: bash tests/cli_layering.sh build/evo .
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

headers=$(cd "$root/tasks" && find . -name '*.h' -o -name '*.cuh' | xargs -n1 basename | sort -u)
[ -n "$headers" ] || { echo "FAIL: no task headers found under $root/tasks"; exit 1; }
names=$(cd "$root/tasks" && find . -mindepth 1 -maxdepth 1 -type d | xargs -n1 basename | sort -u)
[ -n "$names" ] || { echo "FAIL: no task folders under $root/tasks"; exit 1; }
# extern "C" symbols of the tasks' device code (kernels and exported launchers)
symbols=$(cat "$root"/tasks/*/*.cu "$root"/tasks/*/*.cuh 2>/dev/null | tr '\n' ' ' |
  grep -oE 'extern "C"[^;{(]*\b(evo_[a-z0-9_]+) *\(' | grep -oE 'evo_[a-z0-9_]+ *\($' | tr -d ' (' | sort -u)
[ "$(echo "$symbols" | wc -w)" -ge 5 ] || { echo "FAIL: found only $(echo "$symbols" | wc -w) task symbols"; exit 1; }

# check DIR: prints each offence, returns 1 when there is one
check() {
  local dir=$1 bad=0 hits
  for h in $headers; do
    if hits=$(grep -rn --include='*.c' --include='*.h' "#include \"$h\"" "$dir"); then
      echo "engine includes the task header $h:"; echo "$hits"; bad=1
    fi
  done
  for n in $names; do
    if hits=$(grep -rnw -e "$n" -e "evo_task_$n" "$dir"); then
      echo "engine names the task $n:"; echo "$hits"; bad=1
    fi
  done
  for s in $symbols; do
    if hits=$(grep -rnw -e "$s" "$dir"); then
      echo "engine names the task's symbol $s:"; echo "$hits"; bad=1
    fi
  done
  return $bad
}

fail=0
if ! out=$(check "$root/engine"); then
  echo "FAIL: $out"; fail=1
fi
# The check itself: a task's kernel symbol planted in a copy of engine/ is found.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/engine" "$tmp/engine"
planted=$(echo "$symbols" | head -1)
echo "/* calls $planted */" >>"$tmp/engine/core/util.c"
if out=$(check "$tmp/engine"); then
  echo "FAIL: a planted $planted in engine/core/util.c was not found"; fail=1
elif ! grep -q "util.c:.*$planted" <<<"$out"; then
  echo "FAIL: the planted $planted was not the offence reported: $out"; fail=1
fi
[ $fail -eq 0 ] && echo "ok: engine/ names no task ($(echo $names | wc -w) names, $(echo "$headers" | wc -l) headers," \
  "$(echo "$symbols" | wc -w) symbols checked; a planted one is found)"
exit $fail
