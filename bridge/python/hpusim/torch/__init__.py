"""PyTorch on the simulated card: importing this registers the 'hpu' device and `torch.hpu`.

The card is brought up on first use from HPUSIM_PRESET / HPUSIM_SET (the preset and overrides, as
for any program using hpusim's Synapse API). Importing prints nothing.
"""
import atexit
import os
import sys

os.environ.setdefault("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1")

import torch  # noqa: E402  (libtorch must be loaded before the bridge's library)

from hpusim import _C  # noqa: E402
from hpusim.torch import core, hpu  # noqa: E402

_C.lazy_mode()  # PT_HPU_LAZY_MODE and PT_HPU_MAX_COMPOUND_OP_SIZE checked now, a bad value named

if not hasattr(torch, "hpu"):
    torch._register_device_module("hpu", hpu)

    # torch.manual_seed seeds the built-in devices it knows; 'hpu' is not among them (as the real
    # stack does, the seeding functions are extended to it).
    _cpu_manual_seed = torch.random.manual_seed

    def _manual_seed(seed):
        generator = _cpu_manual_seed(seed)
        hpu.manual_seed(seed)
        return generator

    torch.manual_seed = torch.random.manual_seed = _manual_seed


def _fallback_summary_at_exit():
    # With LOG_LEVEL_PT_FALLBACK set, the ops that ran on the CPU, most frequent first.
    try:
        summary = _C.fallback_summary() if _C.fallback_logging() else ""
    except RuntimeError:
        return  # a bad LOG_LEVEL_PT_FALLBACK was reported at the first fallback
    if summary:
        sys.stderr.write(summary)


def _shutdown_at_exit():
    # Runs last (registered first): what is pending runs, the card is released and the
    # HPUSIM_TRACE timeline written.
    try:
        _C.shutdown()
    except RuntimeError as error:
        sys.stderr.write(f"hpusim: releasing the card at exit: {error}\n")


atexit.register(_shutdown_at_exit)
atexit.register(_fallback_summary_at_exit)

from hpusim.torch.steps import StepReport  # noqa: E402
from hpusim.torch import profiler as _profiler  # noqa: E402

_profiler.install()   # torch.profiler's ProfilerActivity.HPU records the simulated card

# torch.compile's "hpu_backend", registered in eager mode as the real stack registers it (its
# import costs ~2 s, which lazy-mode programs do not pay).
if not _C.lazy_mode():
    from hpusim.torch import dynamo  # noqa: E402,F401

__all__ = ["core", "hpu", "StepReport"]
