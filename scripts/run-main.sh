#!/usr/bin/env bash
# The main job: build, then run the memory-system benchmark on the default preset (hl205).
# Extra arguments go to `hpusim bench memory`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
build="${HPUSIM_BUILD_DIR:-$root/build}"
mkdir -p "$build/out"
exec "$build/hpusim" bench memory --preset hl205 \
  --json "$build/out/bench-memory.json" --stats "$build/out/bench-memory.stats" \
  --trace "$build/out/bench-memory.pftrace" "$@"
