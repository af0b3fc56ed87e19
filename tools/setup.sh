#!/usr/bin/env bash
# setup.sh — install what evo builds against (if missing) and build it into build/.
# Usage: tools/setup.sh            (from the repository root; root or sudo for the package install)
# Needs the CUDA Toolkit (nvcc, NVRTC) already installed; installs cmake, gcc, SQLite, cJSON, libyaml and python3 (the
# tests read databases and make fixtures with it) from apt.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake gcc make pkg-config libsqlite3-dev libcjson-dev libyaml-dev python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "evo setup: missing packages: ${missing[*]}" >&2
    echo "evo setup: as root run: apt-get install ${missing[*]}" >&2
    exit 2
  fi
fi

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
if ! command -v nvcc >/dev/null; then
  echo "evo setup: the CUDA Toolkit (nvcc, NVRTC) was not found; install it from NVIDIA and put its bin/ on PATH" >&2
  exit 2
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${EVO_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$jobs"
