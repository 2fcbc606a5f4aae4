#!/usr/bin/env bash
# The Python side of the build: a virtual environment inside the build tree (<build>/venv) with
# torch 2.13.0 (the CPU wheel: always pinned, an unpinned torch pulls a multi-GB CUDA build),
# numpy, pytest, pillow (the analyser's HTML test reads its screenshot) and mpi4py (a program of
# mpirun's ranks calling MPI from Python, tests/bridge). Idempotent: it does nothing when they are
# there. Usage: install-python.sh BUILD
set -euo pipefail
build="$1"
venv="$build/venv"
torch_version=2.13.0
mpi4py_version=4.1.2
python="${HPUSIM_HOST_PYTHON:-python3}"
mkdir -p "$build"
if [ ! -x "$venv/bin/python" ]; then
  echo "hpusim: creating the Python environment $venv"
  "$python" -m venv "$venv"
fi
have() {
  "$venv/bin/python" - "$torch_version" <<'PY' 2>/dev/null
import sys
import numpy, pytest, torch, PIL, mpi4py
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] else 1)
PY
}
if ! have; then
  echo "hpusim: installing torch==$torch_version, numpy, pytest, pillow and mpi4py==$mpi4py_version into $venv"
  "$venv/bin/pip" install --disable-pip-version-check --no-build-isolation -q "torch==$torch_version" numpy pytest pillow \
    "mpi4py==$mpi4py_version"
  have || { echo "hpusim: torch $torch_version, numpy, pytest, pillow or mpi4py is not importable from $venv" >&2; exit 1; }
fi
