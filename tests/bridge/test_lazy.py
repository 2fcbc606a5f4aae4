"""Values computed by the simulated card: ops lowered to Synapse graphs, in lazy mode (the default:
one graph per mark_step or needed value) and eager mode (PT_HPU_LAZY_MODE=0: a graph per op),
against the same computation on the CPU; recipes cached so a training loop stops compiling."""
import json
import os
import subprocess
import sys

import torch

import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu.metrics as metrics
import hpusim.torch  # noqa: F401

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402


def rel(a, b):
    return max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))


def close(hpu, cpu, tol=1e-5):
    got = hpu.cpu()
    assert got.shape == cpu.shape and got.dtype == cpu.dtype
    assert torch.allclose(got, cpu, rtol=tol, atol=tol), (got - cpu).abs().max()


def test_lazy_is_the_default_mode():
    assert htcore.is_lazy()


def test_elementwise_with_broadcasting_and_scalars():
    a, b, c = torch.randn(6, 7), torch.randn(7), torch.rand(6, 1) + 0.5
    ha, hb, hc = a.to("hpu"), b.to("hpu"), c.to("hpu")
    with metrics.metric_localcontext("cpu_fallback") as fallbacks:
        close(ha + hb * 2 - 1.5, a + b * 2 - 1.5)
        close(torch.sub(ha, hb, alpha=0.25) / hc, torch.sub(a, b, alpha=0.25) / c)
        close(torch.maximum(ha, hb).relu() * torch.minimum(ha, hc), torch.maximum(a, b).relu() * torch.minimum(a, c))
        close(torch.addcmul(ha, hb, hc, value=0.3), torch.addcmul(a, b, c, value=0.3))
        close(torch.addcdiv(ha, hb, hc, value=-2), torch.addcdiv(a, b, c, value=-2))
        close(hc.sqrt().log().neg().exp().abs(), c.sqrt().log().neg().exp().abs())
        close(ha.tanh() + ha.sigmoid() + hc.rsqrt(), a.tanh() + a.sigmoid() + c.rsqrt())
    assert dict(fallbacks.stats())["TotalNumber"] == 0


def test_in_place_updates_and_views_keep_program_order():
    x = torch.randn(5, 8)
    h = x.to("hpu")
    y = h * 1.0          # read before the in-place updates below
    h.mul_(3).add_(1)
    h[1:3].zero_()       # a contiguous slice: a region of the same storage
    h[:, 2].fill_(7)     # a column: a strided_insert into the storage, in program order
    expected = x.clone()
    expected.mul_(3).add_(1)
    expected[1:3].zero_()
    expected[:, 2].fill_(7)
    close(h, expected)
    close(y, x)


def test_matmul_family_with_transposed_operands():
    a, b, bias = torch.randn(33, 20), torch.randn(40, 20), torch.randn(40)
    ha, hb, hbias = a.to("hpu"), b.to("hpu"), bias.to("hpu")
    close(ha @ hb.t(), a @ b.t(), 1e-4)
    close(torch.addmm(hbias, ha, hb.t(), beta=0.5, alpha=2.0), torch.addmm(bias, a, b.t(), beta=0.5, alpha=2.0), 1e-4)
    close(torch.nn.functional.linear(ha, hb, hbias), torch.nn.functional.linear(a, b, bias), 1e-4)
    p, q = torch.randn(3, 9, 16), torch.randn(3, 16, 5)
    close(torch.bmm(p.to("hpu"), q.to("hpu")), torch.bmm(p, q), 1e-4)
    close(ha.t().contiguous(), a.t().contiguous())


def test_reductions_softmax_and_nll_loss_forward_and_backward():
    x = torch.randn(12, 10)
    target = torch.randint(0, 10, (12,))
    close(x.to("hpu").sum(0), x.sum(0))
    close(x.to("hpu").mean(1, keepdim=True), x.mean(1, keepdim=True))
    close(x.to("hpu").sum(), x.sum(), 1e-4)
    close(torch.softmax(x.to("hpu"), 1), torch.softmax(x, 1))
    results = {}
    for device in ("cpu", "hpu"):
        leaf = x.clone().to(device).requires_grad_()
        loss = torch.nn.functional.cross_entropy(leaf, target.to(device))
        loss.backward()
        results[device] = (loss.detach().cpu(), leaf.grad.cpu())
    assert torch.allclose(results["hpu"][0], results["cpu"][0], rtol=1e-5)
    assert torch.allclose(results["hpu"][1], results["cpu"][1], rtol=1e-5, atol=1e-7)


def test_int64_tensors_round_trip_through_the_device_as_int32():
    t = torch.tensor([[3, -7, 2**31 - 1], [0, 5, -(2**31)]])
    h = t.to("hpu")
    assert torch.equal(h.cpu(), t)
    assert h[1, 1].item() == 5
    assert torch.equal(h.t().contiguous().cpu(), t.t().contiguous())


def test_a_python_index_is_part_of_the_graph():
    x = torch.randn(6, 16).to("hpu")
    htcore.mark_step()
    gc = metrics.metric_global("graph_compilation")
    counts = []
    for i in range(4):
        y = x[i] * 2.0
        htcore.mark_step()
        counts.append(dict(gc.stats())["TotalNumber"])
    assert counts[3] - counts[0] == 3   # one compile per index, as on the real stack
    for _ in range(3):
        y = x[1] * 2.0
        htcore.mark_step()
    assert dict(gc.stats())["TotalNumber"] == counts[3]   # seen before: the recipe cache
    close(y, x.cpu()[1] * 2.0)


def test_one_op_graphs_give_the_same_values():
    env = dict(os.environ, PT_HPU_MAX_COMPOUND_OP_SIZE="1")
    script = ("import sys, json, torch, hpusim.torch; sys.path.insert(0, %r); import models\n"
              "import habana_frameworks.torch.core as htcore\n"
              "h = models.train_mnist('hpu', 3, mark_step=htcore.mark_step); c = models.train_mnist('cpu', 3)\n"
              "print(json.dumps([h, c, hpusim._C.graph_counters()['graphs']]))" % os.path.dirname(__file__))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    hpu, cpu, graphs = json.loads(done.stdout.strip().splitlines()[-1])
    assert rel(hpu, cpu) < 1e-4
    assert graphs > 3 * 50   # a graph per op, not two per step


def test_a_bad_mode_value_is_an_error_naming_the_variable():
    full = dict(os.environ, PT_HPU_LAZY_MODE="2")
    done = subprocess.run([sys.executable, "-c", "import hpusim.torch"], env=full, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode != 0
    assert "PT_HPU_LAZY_MODE='2': expected an integer 0 .. 1" in done.stderr


def test_cat_and_stack_copy_each_input_into_its_part_of_the_output():
    a, b = torch.randn(3, 4), torch.randn(2, 4)
    before = sum(torch.hpu.fallback_counts().values())
    close(torch.cat([a.to("hpu"), b.to("hpu")]), torch.cat([a, b]))
    close(torch.stack([a.to("hpu"), (a * 2).to("hpu")], 0), torch.stack([a, a * 2], 0))
    c = torch.randn(4, 3)
    close(torch.cat([a.to("hpu").t(), c.to("hpu")]), torch.cat([a.t(), c]))   # a permuted input
    assert sum(torch.hpu.fallback_counts().values()) == before
    # Along an inner dim the output's parts are strided: each is a strided_insert.
    close(torch.cat([a.to("hpu"), a.to("hpu")], 1), torch.cat([a, a], 1))
    close(torch.stack([a.to("hpu"), c.t().to("hpu")], 2), torch.stack([a, c.t()], 2))
    assert sum(torch.hpu.fallback_counts().values()) == before
