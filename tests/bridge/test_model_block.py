"""A transformer block (embedding, layer_norm, attention with softmax, gelu, AdamW) on the simulated
card. AdamW's step-dependent scalars (bias corrections) are graph constants, so its graph
recompiles each step in lazy mode, as on the real stack with torch.optim.AdamW."""
import pytest

import model_check


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_training_matches_the_cpu(dtype, mode):
    model_check.check("block", 8, dtype, mode, flat_compiles=False)
