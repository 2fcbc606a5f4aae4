"""Multi-card inference with HPU graphs, as the seeds describe it: a block with an all_reduce is
captured once and replayed on new inputs (PT_HPU_ENABLE_LAZY_COLLECTIVES=true). Without lazy
collectives the capture is refused with the real stack's message. Each rank prints "rank r: ok"."""
import os

import torch
import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.distributed.hccl as hccl
import torch.distributed as dist


def block(x, weight):
    y = x @ weight             # each rank's shard of a row-parallel linear layer
    dist.all_reduce(y)
    return torch.relu(y) + 1


def main():
    world, rank, _ = hccl.initialize_distributed_hpu()
    dist.init_process_group(backend="hccl")
    torch.manual_seed(0)
    weights = [torch.randn(8, 4) for _ in range(world)]
    weight = weights[rank].to("hpu")
    static_x = torch.zeros(3, 8, device="hpu")
    graph = torch.hpu.HPUGraph()
    if not hccl.lazy_collectives:
        try:
            with torch.hpu.graph(graph):
                block(static_x, weight)
        except RuntimeError as error:
            assert "collective nonSFG is not supported during hpu graph capturing" in str(error), error
            print(f"rank {rank}: ok", flush=True)
            return
        raise AssertionError("a collective was captured without lazy collectives")
    with torch.hpu.graph(graph):
        static_out = block(static_x, weight)
    for step in range(3):
        inputs = [torch.randn(3, 8, generator=torch.Generator().manual_seed(10 * step + r)) for r in range(world)]
        static_x.copy_(inputs[rank].to("hpu"))
        graph.replay()
        want = torch.relu(sum(inputs[r] @ weights[r] for r in range(world))) + 1
        torch.testing.assert_close(static_out.cpu(), want, rtol=1e-5, atol=1e-5)
    # The same block outside the graph, recorded lazily: the collective runs at mark_step.
    out = block(static_x, weight)
    htcore.mark_step()
    torch.testing.assert_close(out.cpu(), static_out.cpu(), rtol=0, atol=0)
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__":
    main()
