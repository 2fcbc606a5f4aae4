"""The ops of the issue's list beyond the three models, each computed on the card (no CPU
fallback) and compared with the same op on the CPU, forward and, where it has one, backward."""
import pytest
import torch

import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu.metrics as metrics
import hpusim.torch  # noqa: F401


def fallbacks():
    return dict(metrics.metric_global("cpu_fallback").stats())["TotalNumber"]


def check(fn, *tensors, tol=1e-5, grad=False):
    """fn on HPU copies of `tensors` against fn on the CPU, with no fallback; with grad, the
    inputs' gradients of fn(...).sum() too."""
    before = fallbacks()
    cpu_in = [t.clone().requires_grad_(grad) if t.is_floating_point() else t for t in tensors]
    hpu_in = [t.to("hpu").requires_grad_(grad) if t.is_floating_point() else t.to("hpu") for t in tensors]
    want, got = fn(*cpu_in), fn(*hpu_in)
    if grad:
        want.sum().backward()
        got.sum().backward()
    htcore.mark_step()
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.is_floating_point():
        assert torch.allclose(got.detach().cpu(), want.detach(), rtol=tol, atol=tol, equal_nan=True), \
            (got.detach().cpu() - want.detach()).abs().max()
    else:
        assert torch.equal(got.cpu(), want)
    if grad:
        for c, h in zip(cpu_in, hpu_in):
            if c.is_floating_point() and c.grad is None:
                assert h.grad is None
            elif c.is_floating_point():
                assert torch.allclose(h.grad.cpu(), c.grad, rtol=tol, atol=tol), (h.grad.cpu() - c.grad).abs().max()
    assert fallbacks() == before, torch.hpu.fallback_counts()


def test_clamp_with_numbers_tensors_and_one_bound():
    x = torch.randn(7, 9) * 3
    lo, hi = torch.randn(9) - 1, torch.randn(7, 1) + 1
    check(lambda t: t.clamp(-0.5, 0.75), x, grad=True)
    check(lambda t: t.clamp(min=0.1), x)
    check(lambda t: t.clamp(max=-0.2), x)
    check(lambda t: t.clamp(1.0, -1.0), x)   # a lower bound above the upper gives the upper
    check(lambda t, a, b: torch.clamp(t, a, b), x, lo, hi)
    check(lambda t: t.clamp(-3, 4), torch.randint(-9, 9, (5, 6)))
    check(lambda t: t.clamp(0.0, 1.0), torch.tensor([float("nan"), -2.0, 0.5]))


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 4, 0.5, -0.5, -1, -2, 1.7, -2.3])
def test_pow_with_a_number_exponent(exponent):
    x = torch.rand(6, 5) * 3 + 0.25
    check(lambda t: t.pow(exponent), x, tol=1e-5 if exponent in (0, 1, 2, 3, 4) else 1e-4, grad=exponent != 0)


def test_pow_of_negative_bases_and_integers():
    x = torch.randn(4, 8)
    check(lambda t: t.pow(3), x)
    check(lambda t: t ** 2, torch.randint(-50, 50, (3, 7)))
    check(lambda t: t.pow(1.5), x)    # NaN below 0, as on the CPU


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_and_log_softmax_over_any_dim(dim):
    x = torch.randn(3, 5, 6)
    check(lambda t: torch.softmax(t, dim), x, grad=True)
    check(lambda t: torch.log_softmax(t, dim) * torch.arange(6.0).to(t.device), x, grad=True)


def test_an_op_writing_a_transposed_view_permutes_into_it():
    x, y = torch.randn(4, 6), torch.randn(6, 4)
    def fn(a, b):
        out = a.clone()
        out.t().mul_(b).add_(1)   # in place through the transpose
        return out
    check(fn, x, y)


def test_amax_and_max_over_all():
    x = torch.randn(5, 7, 3)
    check(lambda t: t.amax(1), x)
    check(lambda t: t.amax((0, 2), keepdim=True), x)
    check(lambda t: t.max(), x)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_give_bool_tensors(op):
    x = torch.randn(5, 6).round()
    y = torch.randn(6).round()
    x[0, 0] = float("nan")
    check(lambda a, b: getattr(torch, op)(a, b), x, y)
    check(lambda a: getattr(torch, op)(a, 0.0), x)
    check(lambda a, b: getattr(torch, op)(a, b), torch.randint(-3, 3, (4, 5)), torch.randint(-3, 3, (5,)))
    check(lambda a, b: getattr(torch, op)(a, b), x.bfloat16(), y.bfloat16())
    check(lambda a, b: getattr(torch, op)(a, b), torch.randint(-3, 3, (4, 5)), torch.randn(4, 5))   # promoted


def test_logical_ops_and_bool_conversions():
    a, b = torch.randn(4, 7) > 0, torch.randn(7) > 0.5
    x = torch.randn(4, 7).round()
    check(lambda p, q: p & q, a, b)
    check(lambda p, q: p | q, a, b)
    check(lambda p, q: p ^ q, a, b)
    check(lambda p: ~p, a)
    check(lambda p, q: torch.logical_and(p, q), x, torch.randn(4, 7).round())
    check(lambda p: torch.logical_not(p), x)
    check(lambda p: p.float() * 2 + p.long(), a)
    check(lambda t: t.bool(), x)
    check(lambda t: t.bool(), torch.randint(-2, 2, (9,)))


def test_where_and_masked_fill():
    x, y = torch.randn(4, 6), torch.randn(6)
    mask = torch.randn(4, 1) > 0
    check(lambda c, a, b: torch.where(c > 0, a, b), x, x, y, grad=True)
    check(lambda c, a: torch.where(c, a, 0.5), mask, x)
    check(lambda a, c: a.masked_fill(c, -1e9), x, mask)
    check(lambda a, c: a.masked_fill(c, float("-inf")).softmax(-1), x, torch.randn(4, 6) > 1)
    check(lambda a, c: a.masked_fill(c, 7), torch.randint(0, 9, (3, 4)), torch.randn(3, 4) > 0)
    check(lambda a, c: torch.where(c, a, a * 2), x.bfloat16(), mask)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_max_min_argmax_argmin_over_a_dim(dim):
    x = torch.randn(5, 7, 3)
    x[1, 2, 0] = x[1, 4, 0]    # a tie: the first index wins
    check(lambda t: t.max(dim)[0], x, grad=True)
    check(lambda t: t.max(dim)[1], x)
    check(lambda t: t.min(dim, keepdim=True)[1], x)
    check(lambda t: t.min(dim)[0], x)
    check(lambda t: t.argmax(dim), x)
    check(lambda t: t.argmin(dim, keepdim=True), x)
    check(lambda t: t.amin(dim), x)


def test_argmax_over_every_element_nan_and_bf16():
    x = torch.randn(6, 5)
    check(lambda t: t.argmax(), x)
    check(lambda t: t.argmin(), x)
    check(lambda t: t.min(), x)
    x[2, 3] = float("nan")
    check(lambda t: t.max(1)[1], x)   # NaN is the maximum, as on the CPU
    check(lambda t: t.max(1)[0], x)
    check(lambda t: t.argmax(1), x.bfloat16())
    check(lambda t: t.max(0)[0], x.bfloat16())


def test_gather():
    x = torch.randn(4, 6)
    index = torch.randint(0, 6, (4, 3))
    check(lambda t, i: t.gather(1, i), x, index)
    check(lambda t, i: t.gather(0, i), x, torch.randint(0, 4, (2, 6)))
    check(lambda t, i: t.gather(1, i), torch.randint(0, 99, (4, 6)), index)
    logits, target = torch.randn(8, 10), torch.randint(0, 10, (8, 1))
    check(lambda t, i: t.log_softmax(-1).gather(1, i).mean(), logits, target)


def test_silu_and_gelu_forward_and_backward():
    x = torch.randn(6, 9) * 3
    check(torch.nn.functional.silu, x, grad=True)
    check(torch.nn.functional.gelu, x, grad=True)
    check(lambda t: torch.nn.functional.gelu(t, approximate="tanh"), x, grad=True)
    check(torch.nn.functional.silu, x.bfloat16(), tol=2e-2)
    check(torch.nn.functional.gelu, x.bfloat16(), tol=2e-2)


def check_factory(fn):
    """fn(device) made on the card against fn("cpu"), exactly, with no fallback."""
    before = fallbacks()
    got, want = fn("hpu"), fn("cpu")
    htcore.mark_step()
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.is_floating_point():   # the CPU's vector kernels round per lane group: within an ulp
        assert torch.allclose(got.cpu(), want, rtol=1e-6, atol=1e-6), (got.cpu() - want).abs().max()
    else:
        assert torch.equal(got.cpu(), want), (got.cpu(), want)
    assert fallbacks() == before, torch.hpu.fallback_counts()


def test_arange_and_linspace_on_the_device():
    check_factory(lambda d: torch.arange(10, device=d))
    for args in [(3, 17, 2), (-5, 5), (0.5, 4.0, 0.25), (10, 0, -3)]:
        check_factory(lambda d: torch.arange(*args, device=d))
    for args in [(0, 1, 7), (-3.5, 2.25, 100), (2, 2, 1), (1, -1, 4)]:
        check_factory(lambda d: torch.linspace(*args, device=d))
    check_factory(lambda d: torch.arange(12, device=d).view(3, 4).float().sum(1))


def test_random_fills_on_the_device():
    before = fallbacks()
    torch.manual_seed(7)
    u = torch.rand(100_000, device="hpu")
    n = torch.randn(100_000, device="hpu")
    i = torch.randint(-3, 5, (100_000,), device="hpu")
    e = torch.empty(50_000, device="hpu").uniform_(2, 4)
    g = torch.empty(50_000, device="hpu").normal_(1.5, 0.5)
    htcore.mark_step()
    assert fallbacks() == before, torch.hpu.fallback_counts()
    u, n, i, e, g = u.cpu(), n.cpu(), i.cpu(), e.cpu(), g.cpu()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 12 ** -0.5) < 0.01
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
    assert 0.0205 < (n > 2).float().mean() < 0.0250   # P(z > 2) = 0.02275
    assert 0.0205 < (n < -2).float().mean() < 0.0250
    assert i.dtype == torch.int64 and i.min() == -3 and i.max() == 4
    assert torch.equal(torch.bincount(i + 3).clamp(max=1), torch.ones(8, dtype=torch.int64))
    assert abs((i + 3).float().mean() - 3.5) < 0.05
    assert 2 <= e.min() and e.max() < 4 and abs(g.mean() - 1.5) < 0.02 and abs(g.std() - 0.5) < 0.02
    # The seed decides: the same seed gives the same numbers, the next draws differ.
    torch.manual_seed(7)
    again = torch.rand(100_000, device="hpu").cpu()
    assert torch.equal(again, u)
    assert not torch.equal(torch.rand(100_000, device="hpu").cpu(), u)


def test_slices_columns_and_chunks_are_read_and_written_in_place():
    x, y = torch.randn(6, 9), torch.randn(6, 3)
    def fn(a, b):
        out = a * 1
        out[:, 2].fill_(7)            # a column
        out[1:4, 3:6].mul_(b[1:4])    # a block with gaps between its rows
        out[:, ::4] += 1              # every 4th column
        q, k, v = out.chunk(3, 1)     # attention's fused-projection split
        return torch.cat([v * 2, q - k, out[:, 1:8:3]], 1)
    check(fn, x, y, grad=True)
    check(lambda a: a.split(2, 1)[1] * 3, x)
    check(lambda a: a.t()[2:5] + 1, x)
    check(lambda a: a.unsqueeze(0).expand(3, 6, 9)[:, 1:3, ::2].sum(), x)
    mask = torch.randn(6, 9) > 0
    check(lambda a, m: a.masked_fill(m[:, :4], 0)[:, 1], x[:, :4].contiguous(), mask)


def test_native_dropout_and_its_backward():
    torch.manual_seed(5)
    x = torch.randn(64, 33).to("hpu").requires_grad_()
    before = fallbacks()
    y, mask = torch.ops.aten.native_dropout(x, 0.25, True)
    assert mask.dtype == torch.bool and 0.7 < mask.float().mean().item() < 0.8
    assert torch.allclose(y.cpu(), x.detach().cpu() * mask.cpu() / 0.75, atol=1e-6)
    g = torch.randn(64, 33)
    dx = torch.ops.aten.native_dropout_backward(g.to("hpu"), mask, 1 / 0.75)
    assert torch.allclose(dx.cpu(), g * mask.cpu() * (1 / 0.75), atol=1e-6)
    y_eval, mask_eval = torch.ops.aten.native_dropout(x, 0.25, False)
    assert torch.equal(y_eval.cpu(), x.detach().cpu()) and bool(mask_eval.cpu().all())
    assert fallbacks() == before
