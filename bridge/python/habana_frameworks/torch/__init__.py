"""habana_frameworks.torch as scripts import it: a thin alias of hpusim.torch."""
import sys

import hpusim.torch
from hpusim.torch import hpu

sys.modules[__name__ + ".hpu"] = hpu

__all__ = ["hpu"]
