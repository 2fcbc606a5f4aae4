"""habana_frameworks.torch.core (htcore): the lazy-mode step boundary."""
from hpusim import _C
from hpusim.torch import metrics


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """Launches what lazy mode has recorded (one graph); with sync=True also waits for the card."""
    _C.mark_step(bool(sync))
    metrics._on_mark_step()


def is_lazy() -> bool:
    return _C.lazy_mode()


from hpusim.torch import hpu  # noqa: E402  (htcore.hpu, as the seeds write htcore.hpu.HPUGraph())

__all__ = ["mark_step", "is_lazy", "hpu"]
