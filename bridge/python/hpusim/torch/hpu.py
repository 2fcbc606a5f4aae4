"""torch.hpu: the simulated card as torch sees it (one device, hpu:0)."""
import os

import torch

from hpusim import _C
from hpusim.torch import metrics  # noqa: F401  (torch.hpu.metrics)

SynapseError = _C.SynapseError


def is_available() -> bool:
    return _C.device_count() > 0


def device_count() -> int:
    return _C.device_count()


def current_device() -> int:
    return 0


def set_device(device) -> None:
    index = torch.device("hpu", device).index if isinstance(device, int) else torch.device(device).index
    if index not in (None, 0):
        raise RuntimeError(f"hpu:{index} does not exist: the bridge drives card 0 of the box")


def is_initialized() -> bool:
    return True


def _lazy_init() -> None:
    _C.init()


def init() -> None:
    _C.init()


def get_device_name(device=None) -> str:
    """GAUDI, GAUDI2 or GAUDI3: the card's generation (the preset's), as the card reports it."""
    return _C.device_name()


def synchronize(device=None) -> None:
    _C.synchronize()


def memory_allocated(device=None) -> int:
    return _C.memory_stats()["InUse"]


def max_memory_allocated(device=None) -> int:
    return _C.memory_stats()["MaxInUse"]


def memory_reserved(device=None) -> int:
    return _C.memory_stats()["Limit"]


def memory_stats(device=None) -> dict:
    """The real stack's keys: Limit, InUse, MaxInUse, NumAllocs, NumFrees, ActiveAllocs,
    MaxAllocSize, TotalSystemAllocs, TotalSystemFrees, TotalActiveAllocs."""
    return dict(_C.memory_stats())


def reset_peak_memory_stats(device=None) -> None:
    _C.reset_peak_memory_stats()


def reset_accumulated_memory_stats(device=None) -> None:
    _C.reset_accumulated_memory_stats()


def mem_get_info(device=None):
    """(free, total) bytes of the card's device memory."""
    return tuple(_C.mem_get_info())


def fallback_counts() -> dict:
    """How often each op ran on the CPU instead of the card ('aten::add.Tensor' -> calls)."""
    return dict(_C.fallback_counts())


# The HPU generator (bridge/README.md "Random numbers"): a seed and the count of device draws.
def manual_seed(seed) -> None:
    _C.manual_seed(int(seed) & 0xFFFFFFFFFFFFFFFF)


manual_seed_all = manual_seed


def seed() -> int:
    s = int.from_bytes(os.urandom(8), "little")
    manual_seed(s)
    return s


seed_all = seed


def initial_seed() -> int:
    return _C.initial_seed()


def get_rng_state(device="hpu") -> torch.Tensor:
    s, offset = _C.rng_state()
    return torch.tensor(list(s.to_bytes(8, "little") + offset.to_bytes(8, "little")), dtype=torch.uint8)


def set_rng_state(new_state: torch.Tensor, device="hpu") -> None:
    data = bytes(new_state.to(torch.uint8).tolist())
    if len(data) != 16:
        raise RuntimeError(f"the HPU generator's state is 16 bytes (seed, offset), got {len(data)}")
    _C.set_rng_state(int.from_bytes(data[:8], "little"), int.from_bytes(data[8:], "little"))


get_rng_state_all = lambda: [get_rng_state()]  # noqa: E731
set_rng_state_all = lambda states: set_rng_state(states[0])  # noqa: E731
