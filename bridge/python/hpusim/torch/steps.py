"""Per-step host and device time of a training loop on the simulated card, on the modeled host
clock (the preset's host cost table: deterministic), and whether each step is host-bound.

    report = StepReport()
    for batch in loader:
        with report.step():
            ...           # the step: forward, backward, optimizer, mark_step, loss.item()
    print(report.table())

Per step (milliseconds of host time; the block ends with a synchronisation, so the step's device
work is part of the step, as `hpusim run` measures its steps):

- `step_ms`: the step's span on the host clock;
- `host_ms`: the host's own work in it (recording and dispatching ops, building, hashing and
  compiling graphs, launching, copying), `step_ms - wait_ms`;
- `wait_ms`: host time spent waiting for the card (synchronisations, reading values back);
- `device_ms`: the card busy with the step's copies and launches (hpusim_deviceBusyNs);
- `idle_ms`: the card idle in the step, `step_ms - device_ms`;
- graphs launched, compiles, recipe-cache hits, CPU fallbacks, ops recorded, launches replayed
  (HPU graphs);
- `bound`: "host" when the host's work is longer than the card's, else "device"."""
import contextlib

from hpusim import _C


class StepReport:
    def __init__(self):
        self.rows = []

    @contextlib.contextmanager
    def step(self, **values):
        _C.init()
        start = _C.host_time_ns()
        wait0, busy0 = _C.host_wait_ns(), _C.device_busy_ns()
        before = _C.graph_counters()
        fallbacks = sum(_C.fallback_counts().values())
        yield
        _C.synchronize()
        _C.trace_span(f"step {len(self.rows)}", start)
        busy1 = _C.device_busy_ns()
        step_ns = _C.host_time_ns() - start
        wait_ns = _C.host_wait_ns() - wait0
        device_ns = busy1 - busy0
        after = _C.graph_counters()
        row = dict(values)
        row.update({
            "step": len(self.rows),
            "step_ms": step_ns / 1e6,
            "host_ms": max(0, step_ns - wait_ns) / 1e6,
            "wait_ms": wait_ns / 1e6,
            "device_ms": device_ns / 1e6,
            "idle_ms": max(0, step_ns - device_ns) / 1e6,
            "graphs": after["graphs"] - before["graphs"],
            "compiles": (after["compiles"] + after["eager_compiles"]) - (before["compiles"] + before["eager_compiles"]),
            "cache_hits": after["cache_hits"] - before["cache_hits"],
            "fallbacks": sum(_C.fallback_counts().values()) - fallbacks,
            "ops": after["ops_recorded"] - before["ops_recorded"],
            "replays": after["replayed_launches"] - before["replayed_launches"],
        })
        row["bound"] = "host" if row["host_ms"] > row["device_ms"] else "device"
        self.rows.append(row)

    def table(self):
        extra = [k for k in (self.rows[0] if self.rows else {}) if k not in _COLUMNS]
        head = f"{'step':>4} " + "".join(f"{k:>10} " for k in extra) + \
            f"{'step ms':>9} {'host ms':>9} {'wait ms':>9} {'device ms':>9} {'idle ms':>9} {'graphs':>6} " \
            f"{'compiles':>8} {'hits':>5} {'fallbacks':>9}  bound"
        lines = [head]
        for r in self.rows:
            lines.append(f"{r['step']:>4} " + "".join(_cell(r[k]) for k in extra) +
                         f"{r['step_ms']:>9.3f} {r['host_ms']:>9.3f} {r['wait_ms']:>9.3f} {r['device_ms']:>9.3f} "
                         f"{r['idle_ms']:>9.3f} {r['graphs']:>6} {r['compiles']:>8} {r['cache_hits']:>5} "
                         f"{r['fallbacks']:>9}  {r['bound']}")
        return "\n".join(lines)


_COLUMNS = {"step", "step_ms", "host_ms", "wait_ms", "device_ms", "idle_ms", "graphs", "compiles", "cache_hits",
            "fallbacks", "bound"}


def _cell(v):
    return f"{v:>10.4f} " if isinstance(v, float) else f"{str(v):>10} "


__all__ = ["StepReport"]
