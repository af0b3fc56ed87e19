#!/usr/bin/env bash
# cli_layering.sh — the engine names no task: no file under engine/ includes a header of tasks/, and the only
# engine file that names a task's table is the task list (engine/core/task.c). A task is a plug-in; this keeps it so.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fail=0
headers=$(cd "$root/tasks" && find . -name '*.h' -o -name '*.cuh' | xargs -n1 basename | sort -u)
[ -n "$headers" ] || { echo "FAIL: no task headers found under $root/tasks"; exit 1; }
for h in $headers; do
  if hits=$(grep -rn --include='*.c' --include='*.h' "#include \"$h\"" "$root/engine"); then
    echo "FAIL: the engine includes the task header $h:"; echo "$hits"; fail=1
  fi
done
if hits=$(grep -rln --include='*.c' --include='*.h' 'evo_task_[a-z0-9_]*fp8' "$root/engine" | grep -v '/engine/core/task\.c$'); then
  echo "FAIL: engine files other than core/task.c name a task's table:"; echo "$hits"; fail=1
fi
[ $fail -eq 0 ] && echo "ok: engine/ includes no header of tasks/ ($(echo "$headers" | wc -l) headers checked)"
exit $fail
