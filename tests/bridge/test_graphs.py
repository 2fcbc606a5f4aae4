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


def train_mnist_graphed_callables(steps):
    """The seeds' make_graphed_callables loop: the model's forward and backward are graphs, the
    loss and the optimizer step run lazily around them."""
    torch.manual_seed(0)
    model = models.MnistNet().to("hpu")
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)
    # A sample made without the HPU generator, so the dropout draws line up with the CPU run's.
    model = htcore.hpu.make_graphed_callables(model, (torch.zeros(200, 1, 28, 28, device="hpu"),))
    losses = []
    for _ in range(steps):
        x, target = torch.randn(200, 1, 28, 28, generator=data), torch.randint(0, 10, (200,), generator=data)
        x, target = x.to("hpu"), target.to("hpu")
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), target)
        loss.backward()
        htcore.mark_step()
        optimizer.step()
        htcore.mark_step()
        losses.append(loss.item())
    return losses


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
