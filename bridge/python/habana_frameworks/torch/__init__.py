"""habana_frameworks.torch as scripts import it: a thin alias of hpusim.torch."""
import sys

import hpusim.torch
from hpusim.torch import core, hpex, hpu

sys.modules[__name__ + ".hpex"] = hpex
for _name in ("kernels", "normalization", "optimizers"):
    sys.modules[__name__ + ".hpex." + _name] = getattr(hpex, _name)
sys.modules[__name__ + ".hpu"] = hpu
sys.modules[__name__ + ".core"] = core
sys.modules[__name__ + ".hpu.metrics"] = hpu.metrics

__all__ = ["core", "hpex", "hpu"]
