"""The models the bridge's tests train on 'hpu' and on the CPU, with the same seeds and data."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bridge", "examples"))
from mnist_training import Net as MnistNet  # noqa: E402  (the seeds' MLP, as the main job runs it)


def _mix32(x):
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


class DeviceGeneratorDropout(nn.Module):
    """Dropout on the CPU with the card's generator (bridge/README.md "Random numbers"): the k-th
    draw after manual_seed(s) uses kernel seed low32(s + k); element i of the tensor (row-major)
    is kept iff (mix32(i ^ mix32(seed ^ 0x9e3779b9)) >> 8) * 2^-24 >= 1 - keep. The reference the
    card's dropout is checked against; the arithmetic is torch's (_dropout_impl)."""

    def __init__(self, p, seed=0):
        super().__init__()
        self.p, self.seed, self.draws = p, seed, 0

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        kernel_seed = np.uint32((self.seed + self.draws) & 0xFFFFFFFF)
        self.draws += 1
        key = _mix32(np.array([kernel_seed ^ np.uint32(0x9E3779B9)], dtype=np.uint32))[0]
        index = np.arange(x.numel(), dtype=np.uint32)
        u = (_mix32(index ^ key) >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)
        noise = torch.from_numpy((u >= np.float32(1.0 - (1.0 - self.p))).astype(np.float32)).view(x.shape).to(x.dtype)
        noise.div_(1 - self.p)
        return x * noise


def train_loop(device, model, optimizer, batch, loss_fn, steps, mark_step=None, on_step=None, autocast=False):
    """The training loop every model test runs: `steps` batches from batch() (CPU tensors), the
    seeds' mark_step before and after the optimizer step, the losses read back each step."""
    losses = []
    for step in range(steps):
        x, target = batch()
        x, target = x.to(device), target.to(device)
        optimizer.zero_grad()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model(x), target)
        loss.backward()
        if mark_step:
            mark_step()
        optimizer.step()
        if mark_step:
            mark_step()
        losses.append(loss.item())
        if on_step:
            on_step(step)
    return losses


def train_mnist(device, steps, mark_step=None, on_step=None, autocast=False):
    """Losses of `steps` Adadelta steps (lr 0.1, the seed's) on synthetic batches of 200; on the
    CPU, dropout (p 0.5) draws from the card's generator."""
    torch.manual_seed(0)
    model = MnistNet()
    if device == "cpu":
        model.dropout = DeviceGeneratorDropout(0.5, seed=0)
    model = model.to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)

    def batch():
        return torch.randn(200, 1, 28, 28, generator=data), torch.randint(0, 10, (200,), generator=data)

    return train_loop(device, model, optimizer, batch, F.nll_loss, steps, mark_step, on_step, autocast)
