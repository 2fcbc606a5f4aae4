"""The seeds' MNIST MLP training (hpu-graphs-training.txt, "Training Loop Without HPU Graphs") on
the simulated card, with synthetic batches instead of the MNIST download: per step the loss,
the modeled host and device time and whether the step is host- or device-bound.

    PT_HPU_LAZY_MODE=1 python mnist_training.py --steps 5      # lazy (the default)
    PT_HPU_LAZY_MODE=0 python mnist_training.py --steps 5      # eager
    HPUSIM_TRACE=mnist.json python mnist_training.py           # and the timeline
"""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import habana_frameworks.torch.core as htcore
import hpusim.torch


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)
        self.dropout = nn.Dropout(0.5)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def synthetic_batches(steps, batch_size):
    """MNIST-shaped batches (normalised images, labels 0-9) from a fixed generator."""
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        data = (torch.rand(batch_size, 1, 28, 28, generator=generator) - 0.1307) / 0.3081
        yield data, torch.randint(0, 10, (batch_size,), generator=generator)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--json", help="also write the per-step table as a JSON array to this file")
    args = parser.parse_args()
    if args.steps < 1 or args.batch_size < 1:
        parser.error("--steps and --batch-size must be at least 1")

    torch.manual_seed(0)
    device = torch.device("hpu")
    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=0.1)
    mode = "lazy" if htcore.is_lazy() else "eager"
    print(f"MNIST MLP, batch {args.batch_size}, {args.steps} steps, {mode} mode, on {torch.hpu.get_device_name()}")
    report = hpusim.torch.StepReport()
    for data, target in synthetic_batches(args.steps, args.batch_size):
        with report.step() as _:
            data, target = data.to(device), target.to(device)
            output = model(data)
            loss = F.nll_loss(output, target)
            optimizer.zero_grad()
            loss.backward()
            htcore.mark_step()
            optimizer.step()
            htcore.mark_step()
            value = loss.item()
        report.rows[-1]["loss"] = value
        row = report.rows[-1]
        print(f"step {row['step']}: loss {value:.4f}, host {row['host_ms']:.3f} ms, device {row['device_ms']:.3f} ms, "
              f"{row['bound']}-bound", flush=True)
    print(report.table())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report.rows, f, indent=1)


if __name__ == "__main__":
    main()
