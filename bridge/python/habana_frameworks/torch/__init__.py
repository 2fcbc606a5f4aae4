"""habana_frameworks.torch as scripts import it: a thin alias of hpusim.torch.

As on the real stack, importing it also imports `distributed.hccl` (which reads the launcher's
environment and registers torch.distributed's "hccl" backend)."""
import sys

import hpusim.torch
from hpusim.torch import core, hpex, hpu
from hpusim.torch import distributed
from hpusim.torch.distributed import hccl as _hccl

sys.modules[__name__ + ".hpex"] = hpex
for _name in ("kernels", "normalization", "optimizers"):
    sys.modules[__name__ + ".hpex." + _name] = getattr(hpex, _name)
sys.modules[__name__ + ".hpu"] = hpu
sys.modules[__name__ + ".core"] = core
sys.modules[__name__ + ".hpu.metrics"] = hpu.metrics
sys.modules[__name__ + ".distributed"] = distributed
sys.modules[__name__ + ".distributed.hccl"] = _hccl
distributed.hccl = _hccl

__all__ = ["core", "distributed", "hpex", "hpu"]
