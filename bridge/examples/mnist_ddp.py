"""The MNIST MLP of mnist_training.py trained with DistributedDataParallel on the cards of a box,
one card per rank, the gradients all-reduced by the cards' NIC ports (torch.distributed's "hccl"
backend). Launched as on the real stack, by mpirun or torchrun:

    mpirun -np 2 python mnist_ddp.py --steps 5               # HLS-1 class box, cards 0 and 1
    torchrun --nproc_per_node 2 mnist_ddp.py                  # the same, the ranks meeting over TCP
    HPUSIM_PRESET=hl225 mpirun -np 4 python mnist_ddp.py      # four Gaudi-2-class cards (HLS-2)
    HPUSIM_TRACE=ddp.json mpirun -np 2 python mnist_ddp.py    # ddp.rank<r>.json: each rank's timeline
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
import torch.optim as optim

import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.distributed.hccl as hccl
import torch.distributed as dist
from hpusim import _C as simulator
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnist_training import Net, synthetic_batches  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=200, help="the global batch, split between the ranks")
    parser.add_argument("--bucket-cap-mb", type=float, default=100.0)
    args = parser.parse_args()
    world_size, rank, _ = hccl.initialize_distributed_hpu()
    if args.steps < 1 or args.batch_size % world_size != 0:
        parser.error(f"--steps must be at least 1 and --batch-size a multiple of the {world_size} ranks")
    dist.init_process_group(backend="hccl")

    torch.manual_seed(0)
    model = DistributedDataParallel(Net().to("hpu"), bucket_cap_mb=args.bucket_cap_mb,
                                    gradient_as_bucket_view=True)
    optimizer = optim.Adadelta(model.parameters(), lr=0.1)
    per_rank = args.batch_size // world_size
    if rank == 0:
        print(f"MNIST MLP, DDP on {world_size} ranks of {torch.hpu.get_device_name()}, global batch "
              f"{args.batch_size}, {args.steps} steps, {'lazy' if htcore.is_lazy() else 'eager'} mode")
    model.train()
    for step, (data, target) in enumerate(synthetic_batches(args.steps, args.batch_size)):
        shard = slice(rank * per_rank, (rank + 1) * per_rank)
        start_ns = simulator.host_time_ns()   # the rank's modeled host clock
        optimizer.zero_grad()
        loss = F.nll_loss(model(data[shard].to("hpu")), target[shard].to("hpu"))
        loss.backward()
        optimizer.step()
        htcore.mark_step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        mean_loss = mean_loss.item() / world_size
        if rank == 0:
            print(f"step {step}: loss {mean_loss:.4f}, modeled host time {(simulator.host_time_ns() - start_ns) / 1e3:.1f} us")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
