"""HPU graphs (lazy mode): capture compiles, replay runs the captured launches with the values
copied into the static tensors, recording, building and compiling nothing; the seeds' MNIST
trains through capture and replay with the CPU's losses; capture refuses what the real stack
refuses, with its messages, and the program goes on."""
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import habana_frameworks.torch.core as htcore
import hpusim.torch  # noqa: F401
from hpusim import _C

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402


def counters():
    return dict(_C.graph_counters())


def test_replay_computes_from_what_was_copied_into_the_static_inputs():
    w = torch.randn(8, 4)
    hw = w.to("hpu")
    static_x = torch.zeros(5, 8, device="hpu")
    g = htcore.hpu.HPUGraph()
    htcore.mark_step()   # the zeros are made
    before = counters()
    with htcore.hpu.graph(g):
        static_y = (static_x @ hw).relu() * 2 + 1
    captured = counters()
    assert captured["compiles"] - before["compiles"] == 1 and g.launches() == 1
    assert captured["graphs"] == before["graphs"]          # capturing runs nothing
    for _ in range(3):
        x = torch.randn(5, 8)
        static_x.copy_(x)                                   # a host copy into the static input
        g.replay()
        assert torch.allclose(static_y.cpu(), (x @ w).relu() * 2 + 1, atol=1e-5)
    after = counters()
    assert after["compiles"] == captured["compiles"]        # replays compile nothing
    assert after["ops_recorded"] == captured["ops_recorded"]   # ... and record nothing
    assert after["replayed_launches"] - captured["replayed_launches"] == 3


def test_mark_step_inside_a_capture_splits_it_into_launches():
    static_x = torch.ones(16, device="hpu")
    g = htcore.hpu.HPUGraph()
    with htcore.hpu.graph(g):
        a = static_x * 3
        htcore.mark_step()
        b = a + static_x
    assert g.launches() == 2
    static_x.copy_(torch.full((16,), 2.0))
    g.replay()
    assert torch.equal(b.cpu(), torch.full((16,), 8.0))


def train_mnist_capture_replay(steps):
    """The seeds' capture-and-replay loop: one eager warm-up step (the optimizer's state), then
    forward, loss, backward and the optimizer step captured once and replayed per batch."""
    torch.manual_seed(0)
    model = models.MnistNet().to("hpu")
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)

    def batch():
        return torch.randn(200, 1, 28, 28, generator=data), torch.randint(0, 10, (200,), generator=data)

    losses = []
    x, target = batch()
    static_x, static_target = x.to("hpu"), target.to("hpu")
    s = htcore.hpu.Stream()
    with htcore.hpu.stream(s):   # warm-up on a side stream, as the seed
        optimizer.zero_grad()
        loss = F.nll_loss(model(static_x), static_target)
        loss.backward()
        htcore.mark_step()
        optimizer.step()
        htcore.mark_step()
        losses.append(loss.item())
    optimizer.zero_grad(set_to_none=True)
    g = htcore.hpu.HPUGraph()
    with htcore.hpu.graph(g):
        static_loss = F.nll_loss(model(static_x), static_target)
        static_loss.backward()
        optimizer.step()
    compiles = counters()["compiles"]
    for _ in range(steps - 1):
        x, target = batch()
        static_x.copy_(x)
        static_target.copy_(target)
        g.replay()
        losses.append(static_loss.item())
    return losses, counters()["compiles"] - compiles


def test_the_seeds_mnist_trains_through_capture_and_replay():
    hpu, new_compiles = train_mnist_capture_replay(6)
    cpu = models.train_mnist("cpu", 6)
    assert max(abs(a - b) / abs(b) for a, b in zip(hpu, cpu)) < 1e-4, (hpu, cpu)
    assert new_compiles == 0


def test_each_replay_draws_new_random_numbers():
    static_x = torch.ones(1000, device="hpu")
    g = htcore.hpu.HPUGraph()
    with htcore.hpu.graph(g):
        y = F.dropout(static_x, 0.5)
    g.replay()
    first = y.cpu()
    g.replay()
    assert not torch.equal(first, y.cpu())
    assert set(first.unique().tolist()) == {0.0, 2.0}


@pytest.mark.parametrize("action, message", [
    (lambda t: torch.special.digamma(t), r"cpu fallback is not supported during hpu graph capturing \(aten::digamma\)"),
    (lambda t: (t * 2).sum().item(), r"\.item\(\) is not supported during hpu graph capturing"),
    (lambda t: (t * 2).cpu(), "copying a tensor to the host is not supported during hpu graph capturing"),
    (lambda t: (t * 2, torch.hpu.synchronize()), r"torch\.hpu\.synchronize\(\) is not supported during hpu graph capturing"),
])
def test_capture_refuses_what_the_real_stack_refuses(action, message):
    static_x = torch.rand(4, 4, device="hpu") + 0.5
    htcore.mark_step()
    with pytest.raises(RuntimeError, match=message):
        with htcore.hpu.graph(htcore.hpu.HPUGraph()):
            action(static_x)
    assert not htcore.hpu.is_current_stream_capturing()
    assert torch.allclose((static_x * 3).cpu(), static_x.cpu() * 3)   # the program goes on


def test_graph_misuse_is_named():
    g = htcore.hpu.HPUGraph()
    with pytest.raises(RuntimeError, match="HPUGraph.replay: nothing captured"):
        g.replay()
    with pytest.raises(RuntimeError, match="HPUGraph.capture_end: this graph is not capturing"):
        g.capture_end()
    with htcore.hpu.graph(g):
        torch.ones(2, device="hpu") + 1
    with pytest.raises(RuntimeError, match="captured already"):
        g.capture_begin()
    g.reset()
    assert g.launches() == 0


def test_eager_mode_has_no_graph_api():
    done = subprocess.run([sys.executable, "-c", "import torch, hpusim.torch; print(hasattr(torch.hpu, 'HPUGraph'))"],
                          env=dict(os.environ, PT_HPU_LAZY_MODE="0"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def mnist_loop(device, steps, prepare=None, last_batch=200):
    """The seeds' MNIST training loop (mark_step around the optimizer step on the card), the model
    passed through prepare() first (make_graphed_callables, ModuleCacher); the last batch may be
    smaller. On the CPU, dropout draws from the card's generator."""
    torch.manual_seed(0)
    model = models.MnistNet()
    if device == "cpu":
        model.dropout = models.DeviceGeneratorDropout(0.5, seed=0)
    model = model.to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)
    if prepare:
        model = prepare(model)
    losses = []
    for step in range(steps):
        n = last_batch if step == steps - 1 else 200
        x, target = torch.randn(200, 1, 28, 28, generator=data)[:n], torch.randint(0, 10, (200,), generator=data)[:n]
        x, target = x.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), target)
        loss.backward()
        if device == "hpu":
            htcore.mark_step()
        optimizer.step()
        if device == "hpu":
            htcore.mark_step()
        losses.append(loss.item())
    return losses, model


def train_mnist_graphed_callables(steps):
    # A sample made without the HPU generator, so the dropout draws line up with the CPU run's.
    sample = (torch.zeros(200, 1, 28, 28, device="hpu"),)
    return mnist_loop("hpu", steps, lambda m: htcore.hpu.make_graphed_callables(m, sample))[0]


def test_the_seeds_mnist_trains_with_make_graphed_callables():
    before = counters()
    hpu = train_mnist_graphed_callables(6)
    after = counters()
    cpu = models.train_mnist("cpu", 6)
    assert max(abs(a - b) / abs(b) for a, b in zip(hpu, cpu)) < 1e-4, (hpu, cpu)
    assert after["replayed_launches"] - before["replayed_launches"] == 2 * 6   # a forward and a backward per step


def test_a_graphed_function_and_its_gradients():
    w = torch.randn(6, 3, requires_grad=True)
    hw = w.detach().to("hpu").requires_grad_()

    def f(x, weight):
        return (x @ weight).tanh(), x.sum(1)

    graphed = htcore.hpu.make_graphed_callables(f, (torch.randn(4, 6, device="hpu", requires_grad=True), hw))
    for _ in range(2):
        # The gradients returned are the backward graph's static tensors: a parameter's .grad may
        # be one of them, so it is cleared before the next backward (as optimizer.zero_grad does).
        hw.grad, w.grad = None, None
        x = torch.randn(4, 6)
        hx = x.to("hpu").requires_grad_()
        cx = x.clone().requires_grad_()
        y, s = graphed(hx, hw)
        cy, cs = f(cx, w)
        (y * 2 + s.unsqueeze(1)).sum().backward()
        (cy * 2 + cs.unsqueeze(1)).sum().backward()
        assert torch.allclose(y.cpu(), cy.detach(), atol=1e-5) and torch.allclose(s.cpu(), cs.detach(), atol=1e-5)
        assert torch.allclose(hx.grad.cpu(), cx.grad, atol=1e-5)
        assert torch.allclose(hw.grad.cpu(), w.grad, atol=1e-5)


def test_make_graphed_callables_refuses_what_the_real_stack_refuses():
    with pytest.raises(AssertionError, match="sample_args for each callable must be a tuple of Tensors"):
        htcore.hpu.make_graphed_callables(lambda x, n: x * n, (torch.ones(2, device="hpu"), 3))
    m = torch.nn.Linear(2, 2).to("hpu")
    m.register_forward_hook(lambda *a: None)
    with pytest.raises(AssertionError, match="Modules must not have hooks registered"):
        htcore.hpu.make_graphed_callables(m, (torch.ones(1, 2, device="hpu"),))


def test_the_seeds_mnist_trains_with_module_cacher_and_a_smaller_last_batch():
    hpu, model = mnist_loop("hpu", 5, lambda m: htcore.hpu.ModuleCacher(max_graphs=10)(model=m, inplace=True),
                            last_batch=120)
    stats = model.hpu_graph_statistics()
    cpu, _ = mnist_loop("cpu", 5, last_batch=120)
    assert max(abs(a - b) / abs(b) for a, b in zip(hpu, cpu)) < 1e-4, (hpu, cpu)
    assert stats["cached"] == 2 and stats["graphs"] == 2 and stats["hits"] == 3, stats


def test_module_cacher_keys_on_python_values_and_leaves_eval_uncached():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x, scale=1.0):
            return self.fc(x) * scale

    torch.manual_seed(3)
    model = Scaled()
    reference = Scaled()
    reference.load_state_dict(model.state_dict())
    model = htcore.hpu.ModuleCacher(max_graphs=2)(model=model.to("hpu"), inplace=True)
    x = torch.randn(5, 4)
    for scale in (1.0, 2.0, 1.0, 3.0):   # 3.0: the cache is full, it runs uncached
        y = model(x.to("hpu"), scale=scale)
        y.sum().backward()
        assert torch.allclose(y.detach().cpu(), reference(x, scale=scale).detach(), atol=1e-5)
    model.eval()
    with torch.no_grad():
        model(x.to("hpu"))
    stats = model.hpu_graph_statistics()
    assert stats["cached"] == 2 and stats["hits"] == 1 and stats["uncached_train"] == 1 and stats["uncached_eval"] == 1
    with pytest.raises(NotImplementedError, match="use_lfu=True is not supported"):
        htcore.hpu.ModuleCacher()(model=Scaled(), use_lfu=True)


def test_wrap_in_hpu_graph_inference_returns_the_same_outputs_on_every_hit():
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.Linear(8, 2)).eval()
    reference = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.Linear(8, 2)).eval()
    reference.load_state_dict(model.state_dict())
    wrapped = htcore.hpu.wrap_in_hpu_graph(model.to("hpu"))
    assert wrapped is model
    before = counters()
    outs = []
    for n in (3, 3, 3, 5):
        x = torch.randn(n, 6)
        with torch.no_grad():
            y = wrapped(x.to("hpu"))
            assert torch.allclose(y.cpu(), reference(x), atol=1e-5)
        outs.append(y)
    assert outs[0] is outs[1] is outs[2] and outs[3] is not outs[0]   # static outputs; a new shape, a new graph
    after = counters()
    assert after["captured_launches"] - before["captured_launches"] == 2
    x = torch.randn(3, 6)
    with torch.no_grad():
        assert torch.allclose(wrapped(x.to("hpu"), bypass_hpu_graphs=True).cpu(), reference(x), atol=1e-5)
    model.clear_cache()
    with pytest.raises(NotImplementedError, match="disable_tensor_cache=True is not supported"):
        htcore.hpu.wrap_in_hpu_graph(torch.nn.Linear(2, 2), disable_tensor_cache=True)


def control_flow_example(device, steps):
    """The seeds' dynamic-control-flow example: three graphed modules, a random path per step."""
    import itertools
    import random
    torch.manual_seed(0)
    random.seed(0)
    module1 = torch.nn.Linear(784, 128).to(device)
    module2 = torch.nn.Linear(128, 100).to(device)
    module3 = torch.nn.Linear(100, 50).to(device)   # the seed's 128 -> 50 cannot follow module2's 100
    optimizer = torch.optim.Adadelta(itertools.chain(module1.parameters(), module2.parameters(),
                                                     module3.parameters()), lr=0.1)
    x = torch.randn(5, 784).to(device)
    h = torch.randn(5, 128).to(device)
    h3 = torch.randn(5, 100).to(device)
    if device == "hpu":
        # A sample's requires_grad says whether the graphed module passes gradients back to its
        # input (as with CUDA graphs): module2 and module3 get theirs from module1's output.
        module1 = torch.hpu.make_graphed_callables(module1, (x,))
        module2 = torch.hpu.make_graphed_callables(module2, (h.requires_grad_(),))
        module3 = torch.hpu.make_graphed_callables(module3, (h3.requires_grad_(),))
    real_inputs = [torch.rand(5, 784) for _ in range(steps)]
    losses, paths = [], []
    for data in real_inputs:
        target = data.mean().to(device)
        data = data.to(device)
        optimizer.zero_grad()
        tmp = module1(data)
        path = random.random() > 0.5
        if path:
            tmp = module3(module2(tmp))
        loss = torch.abs(tmp.mean() - target)
        loss.backward()
        optimizer.step()
        if device == "hpu":
            htcore.mark_step()
        losses.append(loss.item())
        paths.append(path)
    return losses, paths


def test_the_seeds_dynamic_control_flow_example_with_three_graphed_modules():
    hpu, hpu_paths = control_flow_example("hpu", 8)
    cpu, cpu_paths = control_flow_example("cpu", 8)
    assert hpu_paths == cpu_paths and any(hpu_paths) and not all(hpu_paths)
    assert max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(hpu, cpu)) < 1e-4, (hpu, cpu)


def dynamic_ops_example(device, steps):
    """The seeds' dynamic-ops example: two ModuleCacher modules around boolean indexing."""
    import itertools
    torch.manual_seed(0)
    module1 = torch.nn.Linear(10, 3).to(device)
    module2 = torch.nn.ReLU().to(device)
    optimizer = torch.optim.Adadelta(itertools.chain(module1.parameters(), module2.parameters()), lr=0.1)
    if device == "hpu":
        htcore.hpu.ModuleCacher(max_graphs=10)(model=module1, inplace=True)
        htcore.hpu.ModuleCacher(max_graphs=10)(model=module2, inplace=True)
    real_inputs = [torch.randn(5, 10) for _ in range(steps)]
    losses = []
    for data in real_inputs:
        target = data.mean().to(device)
        data = data.to(device)
        optimizer.zero_grad()
        tmp = module1(data)
        tmp = tmp[torch.where(tmp > 0)]   # dynamic op
        tmp = module2(tmp)
        loss = torch.abs(tmp.mean() - target)
        loss.backward()
        optimizer.step()
        if device == "hpu":
            htcore.mark_step()
        losses.append(loss.item())
    return losses, (module1.hpu_graph_statistics(), module2.hpu_graph_statistics()) if device == "hpu" else None


def test_the_seeds_dynamic_ops_example_with_module_cacher():
    hpu, (stats1, stats2) = dynamic_ops_example("hpu", 12)
    cpu, _ = dynamic_ops_example("cpu", 12)
    assert max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(hpu, cpu)) < 1e-4, (hpu, cpu)
    assert stats1["cached"] == 1 and stats1["hits"] == 11       # one shape
    assert 1 < stats2["cached"] <= 10                              # a graph per size of the selection
