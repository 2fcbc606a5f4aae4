#!/usr/bin/env bash
# The main job: build, then run the model zoo's MNIST MLP training step through the Synapse API
# for 5 steps on the default preset (hl205). A first argument without a dash names another
# workload (bert-layer, conv-block); the other arguments go to `hpusim run`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
build="${HPUSIM_BUILD_DIR:-$root/build}"
mkdir -p "$build/out"
workload=mlp
if [[ $# -gt 0 && "$1" != -* ]]; then
  workload="$1"
  shift
fi
exec "$build/hpusim" run "$workload" --steps 5 \
  --json "$build/out/run-$workload.json" --trace "$build/out/run-$workload.pftrace" "$@"
