"""torch.profiler with ProfilerActivity.HPU, as on the real stack.

    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.HPU],
                                on_trace_ready=torch.profiler.tensorboard_trace_handler("logs")) as prof:
        for step in ...:
            ...
            prof.step()

While a profiler with the HPU activity records, the simulator's timeline records too (whether or
not HPUSIM_TRACE is set): the bridge's host work, Synapse's compiles and launches, the driver's
ioctls and the card's engines, and a "step N" span per profiler step on the modeled host clock.
export_chrome_trace (and so tensorboard_trace_handler) merges those events into the profiler's
Chrome trace: each of hpusim's processes keeps its name ("host: framework", "device (hl205)", ...)
under a pid of its own, its times shifted so the first profiled instant of the modeled clock
lines up with the profiler's first event. `hpusim analyze` reads the merged file. In a run without
HPUSIM_TRACE the timeline drops its events once each profiled window is taken.
"""
import gzip
import json
import os
import tempfile

import torch.profiler as _profiler
from torch.profiler import ProfilerActivity

from hpusim import _C

_PID_BASE = 1 << 24   # hpusim's processes in a merged trace: far from the profiler's own pids


def _wants_hpu(prof):
    return ProfilerActivity.HPU in (getattr(prof, "activities", None) or ())


def _events_between(events, start_us, end_us):
    """The timeline's events recorded in [start_us, end_us] (slices whole, metadata always)."""
    kept, open_slices = [], {}
    for e in events:
        ph = e.get("ph")
        if ph == "M":
            kept.append(e)
        elif ph == "B":
            open_slices.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        elif ph == "E":
            stack = open_slices.get((e.get("pid"), e.get("tid")))
            begin = stack.pop() if stack else None
            if begin is not None and start_us <= begin["ts"] <= end_us:
                kept.append(begin)
                kept.append(e)
        elif ph in ("i", "C") and start_us <= e.get("ts", -1) <= end_us:
            kept.append(e)
    return kept


def _start_trace(self, _original=_profiler.profile.start_trace):
    _original(self)
    if not _wants_hpu(self):
        return
    self._hpusim_was_recording = _C.trace_set_recording(True)
    self._hpusim_start_ns = _C.host_time_ns()
    self._hpusim_step_ns = self._hpusim_start_ns
    self._hpusim_steps = 0
    self._hpusim_events = None


def _step(self, _original=_profiler.profile.step):
    if _wants_hpu(self) and getattr(self, "_hpusim_step_ns", None) is not None:
        _C.synchronize()
        _C.trace_span(f"step {self._hpusim_steps}", self._hpusim_step_ns)
        self._hpusim_steps += 1
        self._hpusim_step_ns = _C.host_time_ns()
    _original(self)


def _stop_trace(self, _original=_profiler.profile.stop_trace):
    if _wants_hpu(self) and getattr(self, "_hpusim_start_ns", None) is not None:
        _C.synchronize()   # the device's work of the profiled steps is on the timeline
        end_ns = _C.host_time_ns()
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "timeline.json")
            _C.trace_write_chrome_json(path)
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        _C.trace_set_recording(self._hpusim_was_recording)
        if not self._hpusim_was_recording:
            _C.trace_discard()   # no trace file wants them: memory stays flat across profiled windows
        self._hpusim_events = (_events_between(events, self._hpusim_start_ns / 1000, end_ns / 1000),
                               self._hpusim_start_ns / 1000)
        self._hpusim_start_ns = self._hpusim_step_ns = None
    _original(self)


def _merge(path, events, start_us):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    own = trace["traceEvents"] if isinstance(trace, dict) else trace
    times = [e["ts"] for e in own if e.get("ph") in ("X", "B", "i") and isinstance(e.get("ts"), (int, float))]
    shift = (min(times) if times else 0.0) - start_us
    for e in events:
        e = dict(e)
        e["pid"] = _PID_BASE + int(e.get("pid", 0))
        if "ts" in e:
            e["ts"] = round(e["ts"] + shift, 3)
        own.append(e)
    with opener(path, "wt") as f:
        json.dump(trace, f)


def _export_chrome_trace(self, path, *args, _original=_profiler.profile.export_chrome_trace, **kwargs):
    _original(self, path, *args, **kwargs)
    recorded = getattr(self, "_hpusim_events", None)
    if _wants_hpu(self) and recorded:
        _merge(path, *recorded)


def install():
    """Makes torch.profiler.profile record the simulated card for ProfilerActivity.HPU."""
    if getattr(_profiler.profile, "_hpusim_installed", False):
        return
    _profiler.profile.start_trace = _start_trace
    _profiler.profile.stop_trace = _stop_trace
    _profiler.profile.step = _step
    _profiler.profile.export_chrome_trace = _export_chrome_trace
    _profiler.profile._hpusim_installed = True
