"""What the model tests share: one model trained in a process of its own (run_model.py) in a mode
and dtype, checked against the same script on the CPU. f32 losses within 1e-4 relative of the
CPU's, bf16 autocast within 2e-2; no CPU fallback; in lazy mode, graph compilations stop after
the first steps (eager ops' graphs are not graph compilations)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = {"f32": 1e-4, "bf16": 2e-2}


def train(model, steps, dtype, mode):
    env = dict(os.environ, PT_HPU_LAZY_MODE="1" if mode == "lazy" else "0")
    done = subprocess.run([sys.executable, os.path.join(HERE, "run_model.py"), model, str(steps), dtype], env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check(model, steps, dtype, mode, flat_compiles=True):
    result = train(model, steps, dtype, mode)
    hpu, cpu = result["hpu"], result["cpu"]
    assert len(hpu) >= steps and len(hpu) == len(cpu)
    worst = max(abs(x - y) / abs(y) for x, y in zip(hpu, cpu))
    assert worst < TOLERANCE[dtype], (hpu, cpu)
    assert result["fallbacks"]["TotalNumber"] == 0, result["fallbacks"]
    compiles = result["compiles"]
    if mode == "eager":
        assert compiles[-1] == 0, compiles
    elif flat_compiles:
        # The first steps compile (no optimizer state yet at the first), then none.
        assert compiles[1] > 0 and compiles[-1] == compiles[2], compiles
    return result
