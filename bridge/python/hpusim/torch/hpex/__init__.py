"""habana_frameworks.torch.hpex: the fused operators that cut host overhead.

- optimizers.FusedAdamW, optimizers.FusedSGD: one Synapse node per parameter group; the step count
  and the learning rate live in a two-element device tensor the kernels read, so the graph is the
  same at every step (and a learning-rate schedule changes no graph).
- normalization.FusedClipNorm: the gradients' total norm and their clipping, one node.
- kernels.FusedSDPA: scaled dot-product attention as one recorded op forward and one backward.
"""
from hpusim.torch.hpex import kernels, normalization, optimizers

__all__ = ["kernels", "normalization", "optimizers"]
