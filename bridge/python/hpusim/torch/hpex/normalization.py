"""hpex.normalization.FusedClipNorm: clip the gradients by their total 2-norm in one node."""
import torch

from hpusim.torch import core

__all__ = ["FusedClipNorm"]


class FusedClipNorm:
    def __init__(self, parameters, max_norm, norm_type=2.0):
        if float(norm_type) != 2.0:
            raise ValueError(f"FusedClipNorm: norm_type={norm_type} is not supported (the fused kernel computes "
                             "the 2-norm)")
        self.max_norm = float(max_norm)
        self.norm_type = 2.0

    def clip_norm(self, parameters):
        """Scales every gradient by min(max_norm / (total_norm + 1e-6), 1); returns total_norm.

        In lazy mode a mark_step runs before and after, as on the real stack."""
        if isinstance(parameters, torch.Tensor):
            parameters = [parameters]
        grads = [p.grad for p in parameters if p.grad is not None]
        if not grads:
            return torch.tensor(0.0)
        if core.is_lazy():
            core.mark_step()
        with torch.no_grad():
            total_norm = torch.ops.hpu.fused_clip_norm_(grads, self.max_norm)
        if core.is_lazy():
            core.mark_step()
        return total_norm
