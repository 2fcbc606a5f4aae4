#!/usr/bin/env bash
# Installs dependencies if needed, then configures and builds hpusim into build/ (incrementally).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
build="${HPUSIM_BUILD_DIR:-$root/build}"
jobs="${HPUSIM_JOBS:-$(nproc)}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j "$jobs"
