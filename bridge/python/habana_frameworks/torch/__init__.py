"""habana_frameworks.torch as scripts import it: a thin alias of hpusim.torch."""
import sys

import hpusim.torch
from hpusim.torch import core, hpu

sys.modules[__name__ + ".hpu"] = hpu
sys.modules[__name__ + ".core"] = core
sys.modules[__name__ + ".hpu.metrics"] = hpu.metrics

__all__ = ["core", "hpu"]
