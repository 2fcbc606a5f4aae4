"""A CNN (convolution, batch_norm, max and average pooling, SGD with momentum) on the simulated
card; its last value is an eval-mode forward on the running statistics."""
import pytest

import model_check


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_training_matches_the_cpu(dtype, mode):
    model_check.check("cnn", 8, dtype, mode, flat_compiles=True)
