"""The seeds' examples that need nothing beyond the bridge's lazy and eager modes, run as the seeds
write them (synthetic data where they download): weight sharing, the dynamic-ops example (boolean
indexing between two modules, without ModuleCacher), and the loop-variable advice (an index
recompiles each iteration, torch.roll does not). The digamma fallback log is test_fallback_log.py."""
import itertools

import torch
import torch.nn as nn
import torch.optim as optim

import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu.metrics as metrics


class WeightShareModule(torch.nn.Module):
    def __init__(self):
        super(WeightShareModule, self).__init__()
        self.a = torch.nn.Parameter(torch.ones([2]))
        self.b = torch.nn.Parameter(torch.ones([2]))

    def forward(self, input):
        c = self.a * input + self.b * input
        return c


def test_weight_sharing_survives_the_move_to_hpu():
    module = WeightShareModule()
    module.a = module.b
    module.to("hpu")
    assert module.a is module.b and module.a.device.type == "hpu"
    x = torch.tensor([1.0, 2.0])
    module(x.to("hpu")).sum().backward()
    reference = WeightShareModule()
    reference.a = reference.b
    reference(x).sum().backward()
    assert torch.equal(module.a.grad.cpu(), reference.a.grad)   # both uses accumulate into one grad


def dynamic_ops(device, iterations):
    torch.manual_seed(0)
    module1 = nn.Linear(10, 3).to(device)
    module2 = nn.ReLU().to(device)
    all_params = itertools.chain(module1.parameters(), module2.parameters())
    optimizer = optim.Adadelta(all_params, lr=0.1)
    generator = torch.Generator().manual_seed(4)
    real_inputs = [torch.randn(5, 10, generator=generator) for _ in range(iterations)]
    real_targets = [real_inputs[i].mean() for i in range(iterations)]
    losses = []
    for data, target in zip(real_inputs, real_targets):
        data = data.to(device)
        target = target.to(device)
        tmp = module1(data)
        # dynamic op
        tmp = tmp[torch.where(tmp > 0)]
        tmp = module2(tmp)
        loss = torch.abs(tmp.mean() - target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if device == "hpu":
            htcore.mark_step()
        losses.append(loss.item())
    return losses


def test_the_dynamic_ops_example_trains_as_on_the_cpu():
    hpu, cpu = dynamic_ops("hpu", 12), dynamic_ops("cpu", 12)
    assert max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(hpu, cpu)) < 1e-4, (hpu, cpu)


def test_a_loop_index_recompiles_and_torch_roll_does_not():
    gc = metrics.metric_global("graph_compilation")

    def compiles_per_iteration(body):
        steps = torch.arange(12.0).to("hpu")
        htcore.mark_step()
        counts = []
        for i in range(4, 10):
            steps, value = body(steps, i)
            htcore.mark_step()
            counts.append(dict(gc.stats())["TotalNumber"])
        return [b - a for a, b in zip(counts, counts[1:])], value.item()

    def indexed(steps, i):   # the original V-Diffusion loop
        return steps, steps[i] * 2 + steps[i + 1]

    def rolled(steps, i):    # the seed's fix
        t_1, t_2 = steps[0], steps[1]
        return torch.roll(steps, shifts=(-1), dims=(0)), t_1 * 2 + t_2

    new_compiles, value = compiles_per_iteration(indexed)
    assert new_compiles == [1] * 5 and value == 9 * 2 + 10
    new_compiles, value = compiles_per_iteration(rolled)
    assert new_compiles == [0] * 5 and value == 5 * 2 + 6
