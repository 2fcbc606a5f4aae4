"""habana_frameworks.torch.hpu.metrics: graph compilations, CPU fallbacks and the recipe cache,
process-wide (metric_global) or over a block (metric_localcontext), and the PT_HPU_METRICS_FILE
dump, with the real stack's names, keys and formats."""
import atexit
import contextlib
import datetime
import json
import os

from hpusim import _C

_TRUTHY = {"y", "yes", "t", "true", "on", "1"}


class MetricNotFound(Exception):
    pass


class InvalidMetricDumpFileFormat(Exception):
    pass


class InvalidMetricDumpTrigger(Exception):
    pass


def _flag(name):
    return os.environ.get(name, "").strip().lower() in _TRUTHY


def _raw(name):
    """The metric's counters since the process started, as plain numbers and dicts."""
    if name == "graph_compilation":
        c = _C.graph_counters()
        return {"TotalNumber": c["compiles"], "TotalTime": c["compile_wall_us"], "recipe": list(c["compiled_recipes"])}
    if name == "cpu_fallback":
        ops = dict(_C.fallback_counts())
        return {"TotalNumber": sum(ops.values()), "FallbackOps": ops}
    if name == "recipe_cache":
        c = _C.graph_counters()
        return {"TotalHit": c["cache_hits"], "RecipeHit": dict(c["hits_by_recipe"]),
                "TotalMiss": c["compiles"] + c["eager_compiles"], "RecipeMiss": dict(c["misses_by_recipe"])}
    if name == "memory_defragmentation":
        return {"TotalNumber": 0, "TotalSuccessful": 0, "AvgTime": 0.0, "MaxTime": 0.0}
    raise MetricNotFound(f"Metric with given name ({name}) doesn't exist.")


def _names():
    names = ["graph_compilation", "cpu_fallback", "memory_defragmentation"]
    if _flag("PT_HPU_ENABLE_CACHE_METRICS"):
        names.append("recipe_cache")
    return names


def _minus(now, then):
    if isinstance(now, dict):
        out = {k: _minus(v, then.get(k, 0 if not isinstance(v, dict) else {})) for k, v in now.items()}
        return {k: v for k, v in out.items() if v}
    if isinstance(now, list):
        return now[len(then):]
    return now - then


class Metric:
    """A metric's counters from start() (or creation) to stop() (or now)."""

    def __init__(self, name, since_start_of_process=False):
        self._name = name
        self._base = None if since_start_of_process else _raw(name)
        self._frozen = None

    def name(self):
        return self._name

    def start(self):
        self._base = _raw(self._name)
        self._frozen = None

    def stop(self):
        self._frozen = self._counts()

    def reset(self):
        recipes = self._counts().get("recipe")
        self.start()
        if recipes is not None and self._base is not None:
            self._base["recipe"] = []   # reset() keeps the recipe list, as the real stack

    def _counts(self):
        if self._frozen is not None:
            return self._frozen
        now = _raw(self._name)
        return now if self._base is None else {k: _minus(v, self._base[k]) for k, v in now.items()}

    def stats(self):
        return _stats(self._name, self._counts())


def _stats(name, counts):
    """A metric's counters as its stats() list, in the documented order."""
    if name == "graph_compilation":
        stats = [("TotalNumber", counts["TotalNumber"]), ("TotalTime", counts["TotalTime"]),
                 ("AvgTime", counts["TotalTime"] / counts["TotalNumber"] if counts["TotalNumber"] else 0.0)]
        if _flag("PT_HPU_METRICS_GC_DETAILS"):
            stats.append(("recipe", counts["recipe"]))
        return stats
    return list(counts.items())


_GLOBAL = {}


def metric_global(name):
    """The process-wide metric, or None for a name that does not exist."""
    if name not in _names():
        return None
    if name not in _GLOBAL:
        _GLOBAL[name] = Metric(name, since_start_of_process=True)
    return _GLOBAL[name]


@contextlib.contextmanager
def metric_localcontext(name):
    if name not in _names():
        raise MetricNotFound(f"Metric with given name ({name}) doesn't exist.")
    metric = Metric(name)
    try:
        yield metric
    finally:
        metric.stop()


def _record(name, trigger):
    return {"metric_name": name, "triggered_by": trigger, "generated_on": datetime.datetime.now().isoformat(),
            "statistics": dict(metric_global(name).stats())}


def _text(record):
    lines = [f"Metric name: {record['metric_name']}", f"Triggered by: {record['triggered_by']}",
             f"Generated on: {record['generated_on']}", "Statistics:"]
    lines += [f"\t{k}: {v}" for k, v in record["statistics"].items()]
    return "\n".join(lines) + "\n\n"


def metrics_dump(file_name, format="json"):
    """Writes the global metrics to file_name, "json" or "text", triggered_by "user"."""
    if format not in ("json", "text"):
        raise InvalidMetricDumpFileFormat(f"Unsupported metric dump file format: {format} (json or text)")
    records = [_record(n, "user") for n in _names()]
    with open(file_name, "w") as f:
        if format == "json":
            f.write("[" + ",\n".join(json.dumps(r) for r in records) + "]\n")
        else:
            f.write("".join(_text(r) for r in records))


class _Saver:
    """PT_HPU_METRICS_FILE: records appended at the configured triggers, the file opened at the
    first record (never overwriting: name.1, name.2, ...)."""

    TRIGGERS = ("process_exit", "mark_step", "metric_change")

    def __init__(self, path):
        fmt = os.environ.get("PT_HPU_METRICS_FILE_FORMAT", "json")
        if fmt not in ("json", "text"):
            raise InvalidMetricDumpFileFormat(f"PT_HPU_METRICS_FILE_FORMAT={fmt}: json or text")
        triggers = [t.strip() for t in os.environ.get("PT_HPU_METRICS_DUMP_TRIGGERS", "process_exit").split(",") if t.strip()]
        for t in triggers:
            if t not in self.TRIGGERS:
                raise InvalidMetricDumpTrigger(f"PT_HPU_METRICS_DUMP_TRIGGERS: unknown trigger '{t}' "
                                               f"(process_exit, mark_step, metric_change)")
        self.format, self.triggers, self.file, self.path = fmt, set(triggers), None, path
        self.first = True
        self.last = {}
        rank = os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
        if rank is not None:
            stem, ext = os.path.splitext(path)
            self.path = f"{stem}-rank{rank}{ext}"

    def _open(self):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        candidate, n = self.path, 0
        while True:
            try:
                self.file = open(candidate, "x")
                break
            except FileExistsError:
                n += 1
                candidate = f"{self.path}.{n}"
        if self.format == "json":
            self.file.write("[")

    def write(self, records):
        if not records:
            return
        if self.file is None:
            self._open()
        for r in records:
            if self.format == "json":
                self.file.write(("" if self.first else ",\n") + json.dumps(r))
            else:
                self.file.write(_text(r))
            self.first = False
        self.file.flush()

    def changed(self, trigger):
        """metric_change: one record per graph compilation and per CPU fallback, in order, with
        the metric's statistics just after it and the event's own timestamp (microseconds, raw,
        as the real stack writes it); the recipe cache, which moves at every launch, one record
        when it changed since the last look."""
        records = []
        for metric, detail, value, timestamp_us in _C.take_metric_events():
            counts = self.last[metric]
            if metric == "graph_compilation":
                counts["TotalNumber"] += 1
                counts["TotalTime"] += value
                counts["recipe"].append((detail, value))
            else:
                counts["TotalNumber"] += 1
                counts["FallbackOps"][detail] = counts["FallbackOps"].get(detail, 0) + 1
            records.append({"metric_name": metric, "triggered_by": trigger, "generated_on": timestamp_us,
                            "statistics": dict(_stats(metric, json.loads(json.dumps(counts))))})
        for name in _names():
            now = _raw(name)
            if name not in ("graph_compilation", "cpu_fallback") and self.last.get(name) not in (None, now):
                records.append(_record(name, trigger))
            self.last[name] = now
        return records

    def on_mark_step(self):
        if "metric_change" in self.triggers:
            self.write(self.changed("metric_change"))
        if "mark_step" in self.triggers and _C.lazy_mode():
            self.write([_record(n, "mark_step") for n in _names()])

    def close(self):
        if "metric_change" in self.triggers:
            self.write(self.changed("metric_change"))
        if "process_exit" in self.triggers and _C.device_acquired():
            self.write([_record(n, "process_exit") for n in _names()])
        if self.file is not None:
            if self.format == "json":
                self.file.write("]\n")
            self.file.close()


_saver = None
_path = os.environ.get("PT_HPU_METRICS_FILE", os.environ.get("HABANA_PT_METRICS_FILE"))
if _path:
    _saver = _Saver(_path)
    for _name in _names():
        _saver.last[_name] = _raw(_name)
    if "metric_change" in _saver.triggers:
        _C.enable_metric_events(True)
    atexit.register(_saver.close)


def _on_mark_step():
    if _saver is not None:
        _saver.on_mark_step()


__all__ = ["metric_global", "metric_localcontext", "metrics_dump", "MetricNotFound", "InvalidMetricDumpFileFormat",
           "InvalidMetricDumpTrigger"]
