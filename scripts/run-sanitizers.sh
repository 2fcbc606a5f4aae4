#!/usr/bin/env bash
# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer, in a build tree of its
# own (build-sanitize/, or HPUSIM_SANITIZE_BUILD_DIR). Any report stops the test that made it.
# It takes long on 2 cores (the build about 30 minutes, the suite a few): run it before resolving an
# issue that touches memory handling. Arguments go to ctest (e.g. -R Synapse).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
build="${HPUSIM_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
jobs="${HPUSIM_JOBS:-$(nproc)}"
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
fi
cmake --build "$build" -j "$jobs"
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1800 "$@"
