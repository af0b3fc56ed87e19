#!/usr/bin/env bash
# cli_layers.sh — the build holds the layers: a file of a layer that includes a header of a layer above it (or of a
# task) does not compile, and one that includes a header below it does. Builds the probes tests/CMakeLists.txt
# declares (layer_probes.txt in the build folder: target, up|down, layer, header) in the build evo was built in.
# Run: bash tests/cli_layers.sh build/evo .   (ctest runs it as cli_layers)
set -u
EVO=$(realpath "$1")
B=$(dirname "$EVO")
list="$B/layer_probes.txt"
[ -s "$list" ] || { echo "FAIL: no $list (configure the build first)"; exit 1; }
fails=0 up=0 down=0
while read -r target dir layer header; do
  out=$(cmake --build "$B" --target "$target" 2>&1)
  rc=$?
  if [ "$dir" = up ]; then
    up=$((up + 1))
    if [ $rc -eq 0 ]; then
      echo "FAIL: engine/$layer includes $header (a layer above it or a task) and it compiled" >&2
      fails=$((fails + 1))
    elif ! grep -q "$header: No such file or directory" <<<"$out"; then
      echo "FAIL: the $layer probe including $header failed, but not for the missing header:" >&2
      tail -5 <<<"$out" >&2
      fails=$((fails + 1))
    fi
  else
    down=$((down + 1))
    [ $rc -eq 0 ] || { echo "FAIL: engine/$layer cannot include $header (below it):" >&2; tail -5 <<<"$out" >&2; fails=$((fails + 1)); }
  fi
done <"$list"
[ $up -ge 10 ] && [ $down -ge 5 ] || { echo "FAIL: only $up upward and $down downward probes" >&2; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo "ok: $up upward includes fail to compile, $down downward ones compile"
exit $((fails > 0))
