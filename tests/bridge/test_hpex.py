"""habana_frameworks.torch.hpex on the simulated card: FusedAdamW, FusedSGD and FusedClipNorm against
PyTorch's unfused optimizers and clip_grad_norm_ on the CPU (f32 within 1e-5 relative), FusedSDPA
against the attention formula on the CPU (f32 within 1e-5, bf16 within the bridge's 2e-2), one
graph for every step (the step count and lr read from a device tensor), and the host time a fused
optimizer saves."""
import copy

import pytest
import torch

import habana_frameworks.torch.core as htcore
from habana_frameworks.torch.hpex.kernels import FusedSDPA
from habana_frameworks.torch.hpex.normalization import FusedClipNorm
from habana_frameworks.torch.hpex.optimizers import FusedAdamW, FusedSGD
import habana_frameworks.torch.hpu.metrics as metrics
import hpusim.torch

F32 = dict(rtol=1e-5, atol=1e-6)


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 33), torch.nn.Tanh(), torch.nn.Linear(33, 5))


def batches(n):
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 20, generator=gen), torch.randn(16, 5, generator=gen)) for _ in range(n)]


def train(model, optimizer, data, device, clip=None, schedule=None):
    for step, (x, y) in enumerate(data):
        optimizer.zero_grad()
        loss = ((model(x.to(device)) - y.to(device)) ** 2).mean()
        loss.backward()
        if clip is not None:
            clip(model)
        if schedule is not None:
            for group in optimizer.param_groups:
                group["lr"] = schedule(step)
        optimizer.step()
        htcore.mark_step()
    return model


def compiles():
    stats = dict(metrics.metric_global("graph_compilation").stats())
    return stats["TotalNumber"]


def assert_models_close(hpu_model, cpu_model, **tol):
    for a, b in zip(hpu_model.parameters(), cpu_model.parameters()):
        torch.testing.assert_close(a.detach().cpu(), b.detach(), **tol)


@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_fused_adamw_matches_torch_adamw_and_keeps_one_graph(weight_decay):
    cpu, dev = mlp(), mlp().to("hpu")
    data = batches(8)
    schedule = lambda step: 1e-2 if step < 4 else 5e-3   # a learning-rate change compiles nothing
    train(cpu, torch.optim.AdamW(cpu.parameters(), lr=1e-2, eps=1e-8, weight_decay=weight_decay), data, "cpu",
          schedule=schedule)
    opt = FusedAdamW(dev.parameters(), lr=1e-2, eps=1e-8, weight_decay=weight_decay)
    train(dev, opt, data[:3], "hpu", schedule=schedule)
    warm = compiles()
    train(dev, opt, data[3:], "hpu", schedule=lambda step: schedule(step + 3))
    assert compiles() == warm, "steps after the warm-up compile nothing, the lr change included"
    assert_models_close(dev, cpu, **F32)
    state = opt.param_groups[0]["step_state"].cpu()
    assert state[0].item() == 8 and state[1].item() == pytest.approx(5e-3)


def test_fused_adamw_defaults_and_no_bias_correction():
    assert FusedAdamW([torch.zeros(1, requires_grad=True)]).defaults["eps"] == 1e-6
    params = [torch.randn(70), torch.randn(3, 5)]
    grads = [torch.randn(70), torch.randn(3, 5)]
    cpu = [[t.clone() for t in params], grads, [torch.zeros_like(t) for t in params], [torch.zeros_like(t) for t in params]]
    hpu = [[t.to("hpu") for t in lst] for lst in cpu]
    for lists, state in ((cpu, torch.tensor([0.0, 1e-2])), (hpu, torch.tensor([0.0, 1e-2]).to("hpu"))):
        for _ in range(2):
            torch.ops.hpu.fused_adam_(*lists, state, 0.9, 0.99, 1e-6, 0.01, False, True)
    for a, b in zip(hpu[0] + hpu[2] + hpu[3], cpu[0] + cpu[2] + cpu[3]):
        torch.testing.assert_close(a.cpu(), b, **F32)


@pytest.mark.parametrize("kwargs", [dict(momentum=0.0), dict(momentum=0.9, dampening=0.1, weight_decay=1e-3),
                                    dict(momentum=0.9, nesterov=True, weight_decay=1e-2)])
def test_fused_sgd_matches_torch_sgd(kwargs):
    cpu, dev = mlp(), mlp().to("hpu")
    data = batches(4)
    train(cpu, torch.optim.SGD(cpu.parameters(), lr=0.05, **kwargs), data, "cpu")
    train(dev, FusedSGD(dev.parameters(), lr=0.05, **kwargs), data, "hpu")
    assert_models_close(dev, cpu, **F32)


def test_fused_sgd_refuses_nesterov_without_momentum():
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        FusedSGD([torch.zeros(1, requires_grad=True)], lr=0.1, nesterov=True)


def test_fused_clip_norm_matches_clip_grad_norm():
    cpu, dev = mlp(), mlp().to("hpu")
    data = batches(3)
    norms = {"cpu": [], "hpu": []}

    def clip_cpu(model):
        norms["cpu"].append(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.3))

    fused = FusedClipNorm(dev.parameters(), 0.3)

    def clip_hpu(model):
        norms["hpu"].append(fused.clip_norm(model.parameters()).cpu())

    train(cpu, torch.optim.SGD(cpu.parameters(), lr=0.1), data, "cpu", clip=clip_cpu)
    train(dev, torch.optim.SGD(dev.parameters(), lr=0.1), data, "hpu", clip=clip_hpu)
    for got, want in zip(norms["hpu"], norms["cpu"]):
        torch.testing.assert_close(got, want, **F32)
    assert_models_close(dev, cpu, **F32)
    # Gradients under the limit stay as they are (the coefficient clamps at 1).
    p = torch.nn.Parameter(torch.ones(10, device="hpu"))
    p.grad = torch.full((10,), 0.01, device="hpu")
    FusedClipNorm([p], 5.0).clip_norm([p])
    assert torch.equal(p.grad.cpu(), torch.full((10,), 0.01))
    assert FusedClipNorm([p], 1.0).clip_norm([torch.nn.Parameter(torch.ones(2))]).item() == 0.0
    with pytest.raises(ValueError, match="norm_type=1.0 is not supported"):
        FusedClipNorm([p], 1.0, norm_type=1.0)


def test_a_fused_optimizer_step_records_fewer_ops_and_less_host_time():
    rows = {}
    for name in ("AdamW", "FusedAdamW"):
        model = mlp().to("hpu")
        opt = (torch.optim.AdamW(model.parameters(), lr=1e-3) if name == "AdamW"
               else FusedAdamW(model.parameters(), lr=1e-3))
        report = hpusim.torch.StepReport()
        for x, y in batches(4):
            with report.step():
                opt.zero_grad()
                loss = ((model(x.to("hpu")) - y.to("hpu")) ** 2).mean()
                loss.backward()
                htcore.mark_step()
                opt.step()
                htcore.mark_step()
                loss.item()
        rows[name] = report.rows[-1]
    assert rows["FusedAdamW"]["ops"] < rows["AdamW"]["ops"] / 2
    assert rows["FusedAdamW"]["host_ms"] < rows["AdamW"]["host_ms"]
    assert rows["FusedAdamW"]["compiles"] == 0   # (AdamW's bias corrections are graph constants: it recompiles)


# ---- FusedSDPA ----

def attention(q, k, v, mask=None, causal=False, scale=None):
    s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        s = s.masked_fill(~torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


def sdpa_case(shape_q, shape_kv, dtype, tol, mask=None, causal=False, scale=None, recompute=None, heads_kv=None):
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(*shape_q, generator=gen).to(dtype).requires_grad_()
    k = torch.randn(*shape_kv, generator=gen).to(dtype).requires_grad_()
    v = torch.randn(*shape_kv, generator=gen).to(dtype).requires_grad_()
    grad = torch.randn(*shape_q[:-1], shape_kv[-1], generator=gen).to(dtype)
    reps = shape_q[-3] // shape_kv[-3]
    out = attention(q, k.repeat_interleave(reps, -3), v.repeat_interleave(reps, -3), mask, causal, scale)
    out.backward(grad)
    qh, kh, vh = (t.detach().to("hpu").requires_grad_() for t in (q, k, v))
    mh = None if mask is None else mask.to("hpu")
    outh = FusedSDPA.apply(qh, kh, vh, mh, 0.0, causal, scale, "None", recompute)
    outh.backward(grad.to("hpu"))
    torch.testing.assert_close(outh.cpu(), out.detach(), **tol)
    for a, b in ((qh, q), (kh, k), (vh, v)):
        torch.testing.assert_close(a.grad.cpu(), b.grad, **tol)


@pytest.mark.parametrize("recompute", [False, True])
def test_fused_sdpa_f32_matches_the_formula(recompute):
    sdpa_case((2, 3, 10, 16), (2, 3, 12, 16), torch.float32, F32, recompute=recompute)
    sdpa_case((2, 3, 10, 16), (2, 3, 10, 16), torch.float32, F32, causal=True, recompute=recompute)
    keep = torch.rand(10, 12, generator=torch.Generator().manual_seed(5)) > 0.3
    keep[:, 0] = True
    sdpa_case((2, 3, 10, 16), (2, 3, 12, 16), torch.float32, F32, mask=keep, scale=0.2, recompute=recompute)
    bias = torch.randn(2, 1, 10, 12, generator=torch.Generator().manual_seed(6))
    sdpa_case((2, 3, 10, 16), (2, 3, 12, 16), torch.float32, F32, mask=bias, recompute=recompute)
    sdpa_case((2, 4, 10, 16), (2, 2, 12, 16), torch.float32, F32, recompute=recompute)   # GQA


def test_fused_sdpa_bf16():
    sdpa_case((2, 2, 16, 32), (2, 2, 16, 32), torch.bfloat16, dict(rtol=2e-2, atol=2e-2), causal=True)


def test_fused_sdpa_is_one_recorded_op_each_way_and_dropout_recomputes_the_same_mask():
    q, k, v = (torch.randn(1, 2, 8, 16, device="hpu", requires_grad=True) for _ in range(3))
    report = hpusim.torch.StepReport()
    with report.step():
        FusedSDPA.apply(q, k, v).sum().backward()
    assert report.rows[-1]["ops"] <= 6   # forward, the sum and its backward, the backward: not 10+
    grads = []
    for recompute in (False, True):
        for t in (q, k, v):
            t.grad = None
        torch.manual_seed(7)
        out = FusedSDPA.apply(q, k, v, None, 0.5, False, None, "None", recompute)
        out.backward(torch.ones_like(out))
        grads.append([t.grad.cpu() for t in (q, k, v)] + [out.cpu()])
    for a, b in zip(*grads):
        assert torch.equal(a, b)
    assert torch.isfinite(grads[0][3]).all()


def test_fused_sdpa_refuses_what_it_does_not_model():
    q = torch.randn(1, 1, 4, 8, device="hpu")
    with pytest.raises(ValueError, match="softmax_mode='fast' is not supported"):
        FusedSDPA.apply(q, q, q, softmax_mode="fast")
    with pytest.raises(ValueError, match="valid_seq_len is not supported"):
        FusedSDPA.apply(q, q, q, valid_seq_len=torch.tensor([4]))
    with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal=True"):
        FusedSDPA.apply(q, q, q, torch.ones(4, 4, dtype=torch.bool, device="hpu"), 0.0, True)


@pytest.mark.skipif(not htcore.is_lazy(), reason="HPU graphs are a lazy-mode API")
def test_a_captured_training_step_with_fused_adamw_replays_every_step():
    """The step count lives on the card, so a captured optimizer step advances it at every replay."""
    cpu, dev = mlp(), mlp().to("hpu")
    data = batches(6)
    train(cpu, torch.optim.AdamW(cpu.parameters(), lr=1e-2, eps=1e-8, weight_decay=0.01), data, "cpu")
    opt = FusedAdamW(dev.parameters(), lr=1e-2, eps=1e-8, weight_decay=0.01)
    static_x, static_y = torch.zeros(16, 20, device="hpu"), torch.zeros(16, 5, device="hpu")

    def step():
        opt.zero_grad(set_to_none=False)
        loss = ((dev(static_x) - static_y) ** 2).mean()
        loss.backward()
        opt.step()

    static_x.copy_(data[0][0])
    static_y.copy_(data[0][1])
    step()   # the warm-up creates the optimizer's state
    htcore.mark_step()
    graph = torch.hpu.HPUGraph()
    before = compiles()
    for i, (x, y) in enumerate(data[1:]):
        static_x.copy_(x)
        static_y.copy_(y)
        if i == 0:
            with torch.hpu.graph(graph):
                step()
        graph.replay()
    assert compiles() - before <= 2   # the capture's graphs; the replays compile nothing
    assert_models_close(dev, cpu, **F32)
    assert opt.param_groups[0]["step_state"][0].item() == 6


@pytest.mark.skipif(htcore.is_lazy(), reason="torch.compile's hpu_backend is an eager-mode API")
def test_torch_compile_traces_fused_sdpa_into_one_graph():
    def f(q, k, v):
        return FusedSDPA.apply(q, k, v, None, 0.0, True).sum()

    q, k, v = (torch.randn(1, 2, 8, 16, device="hpu", requires_grad=True) for _ in range(3))
    explained = torch._dynamo.explain(f)(q, k, v)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    compiled = torch.compile(f, backend="hpu_backend")(q, k, v)
    compiled.backward()
    want = [t.grad.cpu() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    eager = f(q, k, v)
    eager.backward()
    assert compiled.item() == eager.item()
    for a, t in zip(want, (q, k, v)):
        assert torch.equal(a, t.grad.cpu())
