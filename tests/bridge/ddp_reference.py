"""The model, data and optimizer of the DDP test (ddp_train.py), and their training on the CPU in
one process over the whole batch: what every rank's parameters must equal."""
import torch

BATCH, STEPS = 16, 4


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                               torch.nn.Tanh(), torch.nn.Linear(32, 4))


def make_optimizer(parameters):
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.9)


def make_batches():
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(BATCH, 16, generator=generator), torch.randn(BATCH, 4, generator=generator))
            for _ in range(STEPS)]


def train_on_cpu():
    model = make_model()
    optimizer = make_optimizer(model.parameters())
    for x, y in make_batches():
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {name: p.detach() for name, p in model.named_parameters()}
