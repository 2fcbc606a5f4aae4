#!/usr/bin/env bash
# The main job: build (with the PyTorch bridge), then train the seeds' MNIST MLP in PyTorch on the
# simulated card (hl205 unless HPUSIM_PRESET says otherwise) for 5 steps in lazy mode, printing per
# step the loss, the modeled host and device time and whether the step is host- or device-bound,
# and writing the table and the timeline to build/out/ (mnist-<mode>.json, mnist-<mode>.pftrace);
# then the analyser's report of that timeline, ending with its verdict (host-bound, device-bound or
# balanced) and the path of its HTML report (build/out/mnist-<mode>.html).
#   --mode eager    the same in eager mode (PT_HPU_LAZY_MODE=0)
#   --steps N       N training steps
# The C++ model zoo's workloads run with build/hpusim run <mlp|conv-block|bert-layer>.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=lazy
steps=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mode) mode="${2:-}"; shift 2 || shift ;;
    --mode=*) mode="${1#--mode=}"; shift ;;
    --steps) steps="${2:-}"; shift 2 || shift ;;
    --steps=*) steps="${1#--steps=}"; shift ;;
    *) echo "run-main.sh: unknown argument '$1' (--mode lazy|eager, --steps N)" >&2; exit 2 ;;
  esac
done
case "$mode" in
  lazy) lazy=1 ;;
  eager) lazy=0 ;;
  *) echo "run-main.sh: --mode '$mode': lazy or eager" >&2; exit 2 ;;
esac
if ! [[ "$steps" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-main.sh: --steps '$steps': a positive number of steps" >&2
  exit 2
fi
"$root/scripts/build.sh"
build="${HPUSIM_BUILD_DIR:-$root/build}"
mkdir -p "$build/out"
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
export HPUSIM_TRACE="$build/out/mnist-$mode.pftrace"
export PT_HPU_LAZY_MODE="$lazy"
"$build/venv/bin/python" "$root/bridge/examples/mnist_training.py" --steps "$steps" --json "$build/out/mnist-$mode.json"
echo "table: $build/out/mnist-$mode.json; timeline: $HPUSIM_TRACE (ui.perfetto.dev)"
echo
"$build/hpusim" analyze "$HPUSIM_TRACE" --html "$build/out/mnist-$mode.html" --json "$build/out/mnist-$mode.report.json"
