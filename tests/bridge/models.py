"""The models the bridge's tests train on 'hpu' and on the CPU, with the same seeds and data."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MnistNet(nn.Module):
    """The seeds' MNIST MLP (hpu-graphs-training.txt), dropout probability as a parameter."""

    def __init__(self, p=0.5):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train_mnist(device, steps, p=0.0, mark_step=None, on_step=None):
    """Losses of `steps` Adadelta steps (lr 0.1, the seed's) on synthetic batches of 200."""
    torch.manual_seed(0)
    model = MnistNet(p).to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)
    losses = []
    for step in range(steps):
        x = torch.randn(200, 1, 28, 28, generator=data).to(device)
        target = torch.randint(0, 10, (200,), generator=data).to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), target)
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
