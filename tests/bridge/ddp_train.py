"""One rank of a DDP training run on the simulated box, as a user's script is written: launched by
`mpirun -np N python ddp_train.py OUT_DIR [options]`; rank r writes its final parameters to
OUT_DIR/rank<r>.pt. test_distributed.py compares them with single-process training on the CPU."""
import argparse
import os

import torch
import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.distributed.hccl as hccl
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ddp_reference import BATCH, STEPS, make_batches, make_model, make_optimizer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--first-bucket-bytes", type=int, default=None)
    parser.add_argument("--gradient-as-bucket-view", action="store_true")
    args = parser.parse_args()

    world_size, rank, _ = hccl.initialize_distributed_hpu()
    dist.init_process_group(backend="hccl")
    assert dist.get_world_size() == world_size and dist.get_rank() == rank
    if args.first_bucket_bytes is not None:
        dist._DEFAULT_FIRST_BUCKET_BYTES = args.first_bucket_bytes

    model = make_model()
    with torch.no_grad():   # DDP starts every rank from rank 0's parameters
        for p in model.parameters():
            p.add_(float(rank))
    model = model.to("hpu")
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb,
                                  gradient_as_bucket_view=args.gradient_as_bucket_view)
    optimizer = make_optimizer(ddp.parameters())
    per_rank = BATCH // world_size
    for x, y in make_batches():
        shard = slice(rank * per_rank, (rank + 1) * per_rank)
        loss = torch.nn.functional.mse_loss(ddp(x[shard].to("hpu")), y[shard].to("hpu"))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        htcore.mark_step()
    torch.save({name: p.detach().cpu() for name, p in model.named_parameters()},
               os.path.join(args.out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
