"""A small CNN (conv, batch_norm, max_pool, SGD with momentum) for the bridge's tests."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import models


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


def train_cnn(device, steps, mark_step=None, on_step=None, autocast=False):
    """The losses of `steps` SGD steps, then an eval-mode forward's sum (the running statistics)."""
    torch.manual_seed(0)
    model = Cnn().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(3)

    def batch():
        return torch.randn(8, 3, 16, 16, generator=data), torch.randint(0, 10, (8,), generator=data)

    losses = models.train_loop(device, model, optimizer, batch, F.cross_entropy, steps, mark_step, on_step, autocast)
    model.eval()
    with torch.no_grad():
        losses.append(model(batch()[0].to(device)).float().sum().item())
    return losses
