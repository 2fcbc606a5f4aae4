#!/usr/bin/env bash
# Installs dependencies if needed (Debian packages; torch, numpy and pytest in build/venv), then
# configures and builds hpusim into build/ (incrementally).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
build="${HPUSIM_BUILD_DIR:-$root/build}"
jobs="${HPUSIM_JOBS:-$(nproc)}"
"$root/scripts/install-python.sh" "$build"
python="$build/venv/bin/python"
if [ ! -f "$build/build.ninja" ] || ! grep -q "^HPUSIM_PYTHON:.*=$python\$" "$build/CMakeCache.txt"; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHPUSIM_PYTHON="$python"
fi
cmake --build "$build" -j "$jobs"
