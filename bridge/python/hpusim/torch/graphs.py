"""HPU graphs (lazy mode only): HPUGraph with capture_begin / capture_end / replay / reset, and
the `graph` context manager, as habana_frameworks.torch.hpu names them. What a capture records
is compiled into launches kept with the device addresses they use; replay submits them again
without recording, building, hashing or compiling, reading whatever was copied into the tensors
the capture used (its static inputs) and writing its static outputs."""
import gc

from hpusim import _C


class HPUGraph:
    """One captured graph. Capturing does not run the work (replay does); capture_begin(dry_run=True)
    replays once right after capture_end."""

    def __init__(self):
        self._graph = _C.HpuGraph()
        self._dry_run = False

    def capture_begin(self, dry_run=False):
        self._dry_run = bool(dry_run)
        self._graph.capture_begin()

    def capture_end(self):
        self._graph.capture_end()
        if self._dry_run:
            self.replay()

    def replay(self, asynchronous=False):
        """Submits the captured launches on the current stream; with asynchronous=False the host
        waits for them, as the real stack's default."""
        self._graph.replay()
        if not asynchronous:
            _C.synchronize()

    def reset(self):
        self._graph.reset()

    def launches(self):
        """How many launches the capture compiled (one per mark_step inside it, plus the last)."""
        return self._graph.launches()


_capture_stream = None


def is_current_stream_capturing():
    return _C.is_capturing()


class graph:
    """`with graph(g, stream=None, dry_run=False):` captures the block into g, on `stream` (a shared
    side stream when None), after a synchronisation."""

    def __init__(self, hpu_graph, stream=None, dry_run=False):
        from hpusim.torch import hpu
        global _capture_stream
        if stream is None:
            if _capture_stream is None:
                _capture_stream = hpu.Stream()
            stream = _capture_stream
        self.hpu_graph, self.dry_run = hpu_graph, dry_run
        self.stream_context = hpu.stream(stream)

    def __enter__(self):
        from hpusim.torch import hpu
        hpu.synchronize()
        gc.collect()
        self.stream_context.__enter__()
        self.hpu_graph.capture_begin(dry_run=self.dry_run)

    def __exit__(self, kind, value, traceback):
        try:
            if kind is None:
                self.hpu_graph.capture_end()
            else:
                self.hpu_graph._graph.capture_abort()
        finally:
            self.stream_context.__exit__(kind, value, traceback)
        return False


__all__ = ["HPUGraph", "graph", "is_current_stream_capturing"]
