"""hpex.optimizers: FusedAdamW and FusedSGD with the real stack's signatures and defaults.

Each step() runs one torch.ops.hpu node per parameter group (fused_adam_ / fused_sgd_) and, in
lazy mode, ends with a mark_step, as the real optimizers do. The math is PyTorch's AdamW / SGD
(single-tensor form); FusedAdamW's eps defaults to 1e-6, as on the real stack.
"""
import torch
from torch.optim.optimizer import required

from hpusim.torch import core

__all__ = ["FusedAdamW", "FusedSGD"]


def _group_state(group, device):
    """The group's device tensor [steps taken, lr]; lr copied in again when the group's changed."""
    state = group.get("step_state")
    lr = float(group["lr"])
    if state is None or state.device != device:
        steps = 0.0 if state is None else float(state[0].item())
        state = torch.tensor([steps, lr], dtype=torch.float32).to(device)
        group["step_state"] = state
        group["_state_lr"] = lr
    elif group.get("_state_lr") != lr:
        state[1:].copy_(torch.tensor([lr], dtype=torch.float32))
        group["_state_lr"] = lr
    return state


class _FusedOptimizer(torch.optim.Optimizer):
    """step(): the closure, one fused op per parameter group (_step_group), then a mark_step in
    lazy mode."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._step_group(group)
        if core.is_lazy():
            core.mark_step()
        return loss


class FusedAdamW(_FusedOptimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, bias_correction=True,
                 moments_dtype=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if moments_dtype not in (None, torch.float32, torch.float):
            raise ValueError(f"FusedAdamW: moments_dtype={moments_dtype} is not supported by hpusim "
                             "(the moments are f32)")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, bias_correction=bias_correction)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params, grads, exp_avgs, exp_avg_sqs = [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError("FusedAdamW does not support sparse gradients")
            state = self.state[p]
            if len(state) == 0:
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
        if params:
            beta1, beta2 = group["betas"]
            torch.ops.hpu.fused_adam_(params, grads, exp_avgs, exp_avg_sqs, _group_state(group, params[0].device),
                                      beta1, beta2, group["eps"], group["weight_decay"],
                                      bool(group["bias_correction"]), True)


class FusedSGD(_FusedOptimizer):
    def __init__(self, params, lr=required, momentum=0, weight_decay=0, dampening=0,
                 nesterov=False):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, dampening=dampening, nesterov=nesterov)
        super().__init__(params, defaults)

    def _step_group(self, group):
        momentum = group["momentum"]
        params, grads, buffers = [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            if momentum != 0:
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                buffers.append(state["momentum_buffer"])
        if params:
            torch.ops.hpu.fused_sgd_(params, grads, buffers, _group_state(group, params[0].device), momentum,
                                     group["dampening"], group["weight_decay"], bool(group["nesterov"]))
