"""The issue's models trained on the simulated card in lazy and eager mode, in f32 and under
bf16 autocast, against the same script on the CPU: the seeds' MNIST MLP (Adadelta, dropout) over
20 steps, a transformer block (embedding, layer_norm, attention with softmax, gelu, AdamW) and a
CNN (convolution, batch_norm, max and average pooling, SGD with momentum; its last value is an
eval-mode forward on the running statistics).
f32 losses within 1e-4 relative of the CPU's, bf16 within 2e-2; no CPU fallback."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def train(model, steps, dtype, mode):
    env = dict(os.environ, PT_HPU_LAZY_MODE="1" if mode == "lazy" else "0")
    done = subprocess.run([sys.executable, os.path.join(HERE, "run_model.py"), model, str(steps), dtype], env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def rel(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@pytest.mark.parametrize("dtype,tol", [("f32", 1e-4), ("bf16", 2e-2)])
@pytest.mark.parametrize("model,steps", [("mnist", 20), ("block", 8), ("cnn", 8)])
def test_training_matches_the_cpu(model, steps, dtype, tol, mode):
    result = train(model, steps, dtype, mode)
    assert len(result["hpu"]) == steps
    assert rel(result["hpu"], result["cpu"]) < tol, (result["hpu"], result["cpu"])
    assert result["fallbacks"]["TotalNumber"] == 0, result["fallbacks"]
    compiles = result["compiles"]
    if mode == "eager":
        assert compiles[-1] == 0   # eager ops' graphs are not graph compilations
    elif model == "mnist":
        # The first steps compile (no optimizer state yet at the first), then none.
        assert compiles[1] > 0 and compiles[-1] == compiles[2], compiles
