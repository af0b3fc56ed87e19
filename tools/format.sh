#!/usr/bin/env bash
# format.sh — keeps evo's C in the style of .clang-format: every .c and .h under engine/, tasks/ and tests/.
# The style is pinned to clang-format 14 (Debian 12's clang-format-14; other major versions lay some lines out
# differently). Usage: tools/format.sh            rewrite the files in place
#                      tools/format.sh --check    list the files that differ and exit 1 if any does (CI runs this)
# Exit 2: clang-format-14 is not installed (apt-get install clang-format-14).
set -u
cd "$(dirname "$0")/.."
cf=${EVO_CLANG_FORMAT:-clang-format-14}
if ! command -v "$cf" >/dev/null; then
  echo "format.sh: $cf is not installed (apt-get install clang-format-14)" >&2
  exit 2
fi
"$cf" --version | grep -q "version 14\." || {
  echo "format.sh: $cf is $("$cf" --version), the style is pinned to version 14" >&2
  exit 2
}
mapfile -t files < <(find engine tasks tests -type f \( -name '*.c' -o -name '*.h' \) | sort)
if [ "${1:-}" != --check ]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "format.sh: $f differs from .clang-format (tools/format.sh rewrites it)" >&2
    bad=$((bad + 1))
  fi
done
[ $bad -eq 0 ] && echo "format.sh: ${#files[@]} files in the style of .clang-format"
exit $((bad > 0))
