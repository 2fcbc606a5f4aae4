"""torch.compile(backend="hpu_backend") in eager mode (PT_HPU_LAZY_MODE=0, where the real stack
registers it): a model with a data-dependent branch (a graph break) trains with the CPU's losses,
each dynamo graph's forward and backward one compiled Synapse graph per call, no new graph
compilation after the first step; a new shape compiles again; options are checked by name."""
import json
import os
import subprocess
import sys

import hpusim.torch  # noqa: F401

SCRIPT = r'''
import json, sys, torch, hpusim.torch
import torch.nn.functional as F
from hpusim import _C

class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        h = F.relu(self.a(x))
        if h.sum() > 135:         # data-dependent Python: dynamo breaks the graph here
            h = h * 2
        return F.log_softmax(self.b(h), -1)

def train(device, compiled, batches):
    torch.manual_seed(0)
    model = Branchy().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = torch.compile(model, backend="hpu_backend") if compiled else model
    data = torch.Generator().manual_seed(1)
    losses, compiles, branches = [], [], []
    for n in batches:
        x, t = torch.randn(n, 8, generator=data), torch.randint(0, 4, (n,), generator=data)
        x, t = x.to(device), t.to(device)
        with torch.no_grad():
            branches.append(bool(F.relu(model.a(x)).sum() > 135))
        optimizer.zero_grad()
        loss = F.nll_loss(step(x), t)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if device == "hpu":
            compiles.append(_C.graph_counters()["compiles"])
    return losses, compiles, branches

batches = [int(b) for b in sys.argv[1].split(",")]
hpu, compiles, branches = train("hpu", True, batches)
cpu, _, _ = train("cpu", False, batches)
print(json.dumps({"hpu": hpu, "cpu": cpu, "compiles": compiles, "branches": branches,
                  "fallbacks": torch.hpu.fallback_counts()}))
'''


def run(script, *args, **env):
    full = dict(os.environ, PT_HPU_LAZY_MODE="0")
    full.update(env)
    done = subprocess.run([sys.executable, "-c", script, *args], env=full, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_a_model_with_a_data_dependent_branch_trains_as_on_the_cpu():
    result = json.loads(run(SCRIPT, "32,32,32,32,32,32,32,32").splitlines()[-1])
    hpu, cpu, compiles = result["hpu"], result["cpu"], result["compiles"]
    assert max(abs(a - b) / abs(b) for a, b in zip(hpu, cpu)) < 1e-4, (hpu, cpu)
    assert any(result["branches"]) and not all(result["branches"]), result["branches"]   # both paths taken
    assert compiles[0] > 0
    # Both paths have been compiled by the step after each was first taken; then nothing new.
    settled = max(result["branches"].index(True), result["branches"].index(False)) + 1
    assert len(set(compiles[settled:])) == 1, compiles
    assert result["fallbacks"] == {}


def test_a_new_shape_compiles_again():
    result = json.loads(run(SCRIPT, "32,32,32,32,32,32,32,32,20,20,20,20").splitlines()[-1])
    compiles = result["compiles"]
    assert compiles[8] > compiles[7] and len(set(compiles[9:])) == 1, compiles
    assert max(abs(a - b) / abs(b) for a, b in zip(result["hpu"], result["cpu"])) < 1e-4


OPTIONS = r'''
import sys, torch, hpusim.torch
model = torch.nn.Linear(3, 2).to("hpu")
try:
    torch.compile(model, backend="hpu_backend", options=eval(sys.argv[1]))(torch.ones(1, 3, device="hpu"))
    print("ok")
except Exception as e:
    print(type(e).__name__, e)
'''


def test_options_are_honoured_accepted_or_refused_by_name():
    assert run(OPTIONS, "{'keep_input_mutations': True, 'force_static_compile': True}").strip().endswith("ok")
    out = run(OPTIONS, "{'use_graph_freezing': True}")
    assert "hpu_backend: option 'use_graph_freezing' (graph freezing) is not supported by hpusim" in out
    assert "hpu_backend: unknown option 'warp_speed'" in run(OPTIONS, "{'warp_speed': 9}")


def test_lazy_mode_has_no_hpu_backend_as_on_the_real_stack():
    out = run("import torch, hpusim.torch, torch._dynamo\n"
              "print('hpu_backend' in torch._dynamo.list_backends())", PT_HPU_LAZY_MODE="1")
    assert out.strip() == "False"


MNIST = r'''
import json, os, sys, torch, hpusim.torch
import torch.nn.functional as F
from hpusim import _C
sys.path.insert(0, os.path.join(sys.argv[1]))
import models
compiled = []

def prepare(model):
    return torch.compile(model, backend="hpu_backend")

def mnist(device, steps):
    torch.manual_seed(0)
    model = models.MnistNet()
    if device == "cpu":
        model.dropout = models.DeviceGeneratorDropout(0.5, seed=0)
    model = model.to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    step = prepare(model) if device == "hpu" else model
    data = torch.Generator().manual_seed(1)
    losses, counts = [], []
    for _ in range(steps):
        x, t = torch.randn(200, 1, 28, 28, generator=data), torch.randint(0, 10, (200,), generator=data)
        x, t = x.to(device), t.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(step(x), t)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if device == "hpu":
            c = _C.graph_counters()
            counts.append([c["compiles"], c["captured_launches"], c["replayed_launches"]])
    return losses, counts

hpu, counts = mnist("hpu", 5)
cpu, _ = mnist("cpu", 5)
print(json.dumps({"hpu": hpu, "cpu": cpu, "counts": counts, "fallbacks": torch.hpu.fallback_counts()}))
'''


def test_the_seeds_mnist_compiles_its_forward_and_backward_once_and_replays_them():
    result = json.loads(run(MNIST, os.path.dirname(os.path.abspath(__file__))).splitlines()[-1])
    assert max(abs(a - b) / abs(b) for a, b in zip(result["hpu"], result["cpu"])) < 1e-4, result
    counts = result["counts"]
    assert counts[0][1] == 2                      # the forward and the backward graph, captured at step 0
    assert all(c[:2] == counts[0][:2] for c in counts)   # nothing compiled or captured afterwards
    assert [c[2] for c in counts] == [2 * (k + 1) for k in range(5)]   # each step replays both
    assert result["fallbacks"] == {}
