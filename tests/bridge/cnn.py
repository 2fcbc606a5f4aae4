"""A small CNN (conv, batch_norm, max_pool, SGD with momentum) for the bridge's tests."""
import os
import sys

import torch
import torch.nn.functional as F

import models

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bridge", "examples"))
from small_cnn import SmallCnn as Cnn  # noqa: E402


def train_cnn(device, steps, mark_step=None, on_step=None, autocast=False):
    """The losses of `steps` SGD steps, then an eval-mode forward's (the running statistics) loss and
    mean |logit|: well-conditioned, unlike the logits' signed sum, which cancels to a few percent of
    their magnitude and turns bf16 rounding differences between CPUs into tens of percent."""
    torch.manual_seed(0)
    model = Cnn().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(3)

    def batch():
        return torch.randn(8, 3, 16, 16, generator=data), torch.randint(0, 10, (8,), generator=data)

    losses = models.train_loop(device, model, optimizer, batch, F.cross_entropy, steps, mark_step, on_step, autocast)
    model.eval()
    with torch.no_grad():
        x, target = batch()
        logits = model(x.to(device)).float()
        losses.append(F.cross_entropy(logits, target.to(device)).item())
        losses.append(logits.abs().mean().item())
    return losses
