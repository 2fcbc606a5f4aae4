"""The seeds' MNIST MLP (dropout, Adadelta) trained for 20 steps on the simulated card."""
import pytest

import model_check


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_training_matches_the_cpu(dtype, mode):
    model_check.check("mnist", 20, dtype, mode, flat_compiles=True)
