"""The 'hpu' device: tensors in the simulated card's memory, copies through its DMA, views without
device work, memory statistics, out-of-memory, and ops without a lowering on the CPU fallback
(values compared with the same ops on CPU tensors)."""
import pytest
import torch

import hpusim.torch  # noqa: F401  (registers torch.hpu)
import habana_frameworks.torch.core as htcore


def test_the_device_is_there():
    assert torch.hpu.is_available()
    assert torch.hpu.device_count() == 1
    assert torch.hpu.current_device() == 0
    free, total = torch.hpu.mem_get_info()
    assert 0 < free <= total
    with pytest.raises(RuntimeError, match="hpu:1 does not exist"):
        torch.empty(4, device="hpu:1")


def test_copies_round_trip_every_dtype():
    for dtype in (torch.float32, torch.bfloat16, torch.int32, torch.int64, torch.uint8, torch.bool):
        cpu = (torch.arange(1000) % 7 - 3).to(dtype)
        on_card = cpu.to("hpu")
        assert on_card.device.type == "hpu" and on_card.dtype == dtype
        assert torch.equal(on_card.cpu(), cpu), dtype


def test_views_are_metadata_and_strided_copies_land_right():
    cpu = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    x = cpu.to("hpu")
    before = torch.hpu.memory_stats()["NumAllocs"]
    v = x.t()[1:5:2]
    assert v.shape == (2, 4) and v.device.type == "hpu"
    assert torch.hpu.memory_stats()["NumAllocs"] == before  # a view allocates nothing
    assert torch.equal(v.cpu(), cpu.t()[1:5:2])
    # Writing into a strided view of a device tensor changes exactly those elements.
    x.t()[1:5:2] = torch.full((2, 4), -1.0)
    expected = cpu.clone()
    expected.t()[1:5:2] = -1.0
    assert torch.equal(x.cpu(), expected)
    assert torch.equal(x.view(2, 12).cpu(), expected.view(2, 12))
    assert torch.equal(x.t().contiguous().cpu(), expected.t().contiguous())


def test_scalars_read_back():
    x = torch.tensor([2.5, -1.0]).to("hpu")
    assert x[0].item() == 2.5
    assert float(x[1]) == -1.0


def test_ops_without_a_lowering_run_on_the_cpu_fallback_and_are_counted():
    a = torch.randn(8, 5)
    before = torch.hpu.fallback_counts()
    got = torch.cumsum(torch.erf(a.to("hpu")), 1)
    assert got.device.type == "hpu"
    assert torch.allclose(got.cpu(), torch.cumsum(torch.erf(a), 1))
    counts = torch.hpu.fallback_counts()
    # Counted under the name the program called (they reach the fallback as their out= forms).
    assert counts.get("aten::erf", 0) == before.get("aten::erf", 0) + 1
    assert counts.get("aten::cumsum", 0) == before.get("aten::cumsum", 0) + 1


def test_memory_statistics_follow_allocations():
    torch.hpu.synchronize()
    base = torch.hpu.memory_allocated()
    torch.hpu.reset_peak_memory_stats()
    x = torch.empty(1 << 20, dtype=torch.float32, device="hpu")
    assert torch.hpu.memory_allocated() == base + (4 << 20)
    assert torch.hpu.max_memory_allocated() >= base + (4 << 20)
    stats = torch.hpu.memory_stats()
    assert stats["MaxAllocSize"] >= 4 << 20
    assert stats["Limit"] == torch.hpu.mem_get_info()[1]
    del x
    assert torch.hpu.memory_allocated() == base
    assert torch.hpu.max_memory_allocated() >= base + (4 << 20)
    assert torch.hpu.memory_stats()["NumFrees"] >= 1


def test_out_of_memory_names_the_size_and_nothing_breaks():
    free, total = torch.hpu.mem_get_info()
    with pytest.raises(torch.OutOfMemoryError, match=f"PT_DEVMEM Allocation failed for size::{total * 2} "):
        torch.empty(total * 2, dtype=torch.uint8, device="hpu")
    x = torch.ones(16).to("hpu")
    assert torch.equal(x.cpu(), torch.ones(16))
    assert torch.hpu.mem_get_info()[0] <= free


def test_resize_keeps_the_contents():
    x = torch.arange(6, dtype=torch.float32).to("hpu")
    x.resize_(12)
    assert torch.equal(x[:6].cpu(), torch.arange(6, dtype=torch.float32))


def test_habana_frameworks_names_the_same_module():
    import habana_frameworks.torch as ht
    import habana_frameworks.torch.hpu as hthpu

    assert ht.hpu is torch.hpu
    assert hthpu is torch.hpu


def test_pinned_host_memory_comes_from_synhostmalloc_and_copies_both_ways():
    source = torch.randn(1000)
    pinned = source.pin_memory()
    assert pinned.is_pinned() and not source.is_pinned()
    assert torch.equal(pinned, source)
    on_card = pinned.to("hpu", non_blocking=True)
    back = torch.empty(1000, pin_memory=True)
    assert back.is_pinned()
    back.copy_(on_card * 2)
    assert torch.equal(back, source * 2)


def test_work_for_a_released_card_is_a_clear_error():
    import subprocess
    import sys
    script = (
        "import torch, hpusim.torch\n"
        "from hpusim import _C\n"
        "x = torch.ones(4, device='hpu') * 2\n"
        "_C.shutdown()\n"
        "for work in (lambda: torch.ones(2, device='hpu'), lambda: x.cpu()):\n"
        "    try:\n"
        "        work()\n"
        "    except RuntimeError as e:\n"
        "        print(e)\n"
        "print((torch.ones(2) + 1).tolist())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[:2] == ["hpu: the card was released (at exit, or by hpusim._C.shutdown()); no more work can reach it"] * 2
    assert lines[2] == "[2.0, 2.0]"   # the process goes on


def test_a_graph_that_cannot_launch_loses_its_values_loudly():
    # The workspace of a lazy graph does not fit: the launch fails, naming why, and the tensors it
    # should have written say so when read, instead of returning whatever memory held.
    x = torch.rand(2048, 2048).to("hpu")
    htcore.mark_step()
    free, _ = torch.hpu.mem_get_info()
    filler = torch.empty(free - (22 << 20), dtype=torch.uint8, device="hpu")
    y = x.softmax(0)          # 16 MB, and its temporaries (permuted copies) need a workspace of 32 MB
    with pytest.raises(Exception, match="synDeviceMalloc \\(workspace\\) failed"):
        htcore.mark_step()
    with pytest.raises(RuntimeError, match="this HPU tensor's value was lost: the graph that computes it failed"):
        y.cpu()
    del filler
    y.copy_(x)                # written whole: its value is defined again
    assert torch.equal(y.cpu(), x.cpu())


def test_set_moves_a_tensor_onto_another_storage_without_device_work():
    before = dict(torch.hpu.fallback_counts())
    a = torch.arange(6.0).to("hpu")
    b = torch.empty(0, device="hpu").set_(a)
    assert b.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    c = torch.empty(0, device="hpu").set_(a.untyped_storage(), 2, (2, 2), (2, 1))
    assert torch.equal(c.cpu(), torch.tensor([[2.0, 3.0], [4.0, 5.0]]))
    c.mul_(10)    # the same storage as a
    assert torch.equal(a.cpu(), torch.tensor([0.0, 1.0, 20.0, 30.0, 40.0, 50.0]))
    assert torch.empty(3, device="hpu").set_().shape == (0,)
    with pytest.raises(RuntimeError, match="set_: 28 bytes of geometry over a storage of 24"):
        torch.empty(0, device="hpu").set_(a.untyped_storage(), 2, (5,), (1,))
    with pytest.raises(RuntimeError, match="set_: the storage is on cpu, not on the HPU"):
        torch.empty(0, device="hpu").set_(torch.ones(3).untyped_storage())
    assert torch.hpu.fallback_counts() == before
