#!/usr/bin/env bash
# The whole test suite: build, then run every test with ctest and print its summary.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
build="${HPUSIM_BUILD_DIR:-$root/build}"
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
ctest --test-dir "$build" --output-on-failure -j "${HPUSIM_JOBS:-$(nproc)}" --timeout 600
