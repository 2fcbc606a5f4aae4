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
            if c.is_floating_point():
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
