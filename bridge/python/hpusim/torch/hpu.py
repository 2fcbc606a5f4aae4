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


# ---- streams and events: Synapse streams and events of the card ----

class Stream:
    """An HPU stream (a Synapse stream of the card). Work issued while it is current (`with
    torch.hpu.stream(s):`) goes to it; in lazy mode what was recorded is launched when the
    current stream changes."""

    def __init__(self, device=None, priority=0, _handle=None):
        _check_device(device)
        self._owned = _handle is None
        self.handle = _C.stream_create() if _handle is None else _handle
        self.device = torch.device("hpu", 0)
        self.priority = priority

    def __del__(self):
        if getattr(self, "_owned", False):
            try:
                _C.stream_destroy(self.handle)
            except Exception:
                pass

    def synchronize(self):
        _C.stream_synchronize(self.handle)

    def query(self):
        return _C.stream_query(self.handle)

    def wait_event(self, event):
        _C.stream_wait_event(self.handle, event.handle)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return f"<torch.hpu.Stream device=hpu:0 handle={self.handle:#x}>"


class Event:
    """An HPU event (a Synapse event); `elapsed_time` needs enable_timing=True on both, in ms."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise RuntimeError("torch.hpu.Event: interprocess events are not supported")
        self.enable_timing = enable_timing
        self.handle = _C.event_create(bool(enable_timing))
        self._recorded = False

    def __del__(self):
        if hasattr(self, "handle"):
            try:
                _C.event_destroy(self.handle)
            except Exception:
                pass

    def record(self, stream=None):
        stream = stream if stream is not None else current_stream()
        _C.event_record(self.handle, stream.handle)
        self._recorded = True

    def wait(self, stream=None):
        (stream if stream is not None else current_stream()).wait_event(self)

    def query(self):
        return _C.event_query(self.handle)

    def synchronize(self):
        _C.event_synchronize(self.handle)

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return _C.event_elapsed_ms(self.handle, end_event.handle)


def _check_device(device):
    if device is None:
        return
    index = device if isinstance(device, int) else torch.device(device).index
    if index not in (None, 0):
        raise RuntimeError(f"hpu:{index} does not exist: the bridge drives card 0 of the box")


def current_stream(device=None) -> Stream:
    _check_device(device)
    return Stream(_handle=_C.current_stream())


def default_stream(device=None) -> Stream:
    _check_device(device)
    return Stream(_handle=_C.default_stream())


def set_stream(stream: Stream) -> None:
    _C.set_current_stream(stream.handle if stream is not None else 0)


class stream:
    """Context manager: `stream` is the current stream inside the block (None: no change)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return None
        self.previous = current_stream()
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self.previous)
        return False


# The graph API exists in lazy mode only, as on the real stack (eager mode: AttributeError).
if _C.lazy_mode():
    from hpusim.torch.graphs import (HPUGraph, ModuleCacher, graph, is_current_stream_capturing,  # noqa: E402,F401
                                     make_graphed_callables, wrap_in_hpu_graph, wrap_in_hpu_graph_func)
