"""torch.hpu.Stream and Event on Synapse streams and events: work issued under `torch.hpu.stream`
goes to that stream, events order streams on the device and time their work in ms."""
import pytest
import torch

import hpusim.torch  # noqa: F401


def test_work_on_a_side_stream_is_timed_by_events_and_ordered_by_them():
    a = torch.randn(256, 256)
    side, other = torch.hpu.Stream(), torch.hpu.Stream()
    start, end = torch.hpu.Event(enable_timing=True), torch.hpu.Event(enable_timing=True)
    x = a.to("hpu")
    torch.hpu.synchronize()
    with torch.hpu.stream(side):
        assert torch.hpu.current_stream() == side
        start.record()
        y = x @ x
        end.record()
    assert torch.hpu.current_stream() == torch.hpu.default_stream()
    other.wait_stream(side)   # on the device: the other stream's work follows the side stream's
    with torch.hpu.stream(other):
        z = y + 1
    end.synchronize()
    assert end.query() and side.query()
    elapsed = start.elapsed_time(end)
    assert 0 < elapsed < 10, elapsed   # milliseconds: the GEMM's launch on the card
    assert torch.allclose(z.cpu(), a @ a + 1, rtol=1e-4, atol=1e-3)


def test_elapsed_time_needs_timing_events():
    plain, timed = torch.hpu.Event(), torch.hpu.Event(enable_timing=True)
    plain.record()
    timed.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        plain.elapsed_time(timed)
    with pytest.raises(RuntimeError, match="recorded first"):
        torch.hpu.Event(enable_timing=True).elapsed_time(timed)


def test_the_stream_context_restores_the_previous_stream():
    outer, inner = torch.hpu.Stream(), torch.hpu.Stream()
    with torch.hpu.stream(outer):
        with torch.hpu.stream(inner):
            assert torch.hpu.current_stream() == inner
        assert torch.hpu.current_stream() == outer
    assert torch.hpu.current_stream() == torch.hpu.default_stream()
    with torch.hpu.stream(None):
        assert torch.hpu.current_stream() == torch.hpu.default_stream()
