"""Every torch.distributed collective of the "hccl" backend on each rank, against the values the
ranks' inputs give on the CPU. Launched by `mpirun -np N python dist_collectives.py`; a wrong value
raises (the rank exits non-zero); each rank prints "rank r: ok" at the end."""
import torch
import habana_frameworks.torch.core as htcore  # noqa: F401
import habana_frameworks.torch.distributed.hccl as hccl
import torch.distributed as dist


def check(name, got, want):
    got = got.cpu() if isinstance(got, torch.Tensor) else got
    if isinstance(want, torch.Tensor):
        ok = got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    else:
        ok = got == want
    if not ok:
        raise AssertionError(f"{name}: got {got}, want {want}")


def main():
    world, rank, _ = hccl.initialize_distributed_hpu()
    dist.init_process_group(backend="hccl")
    hpu = torch.device("hpu")

    def of(r, n=10, dtype=torch.float32):   # rank r's input: exact in bf16 too
        return (torch.arange(n, dtype=torch.float32) * (r + 1) + r).to(dtype)

    n = 1003   # not a multiple of the world size
    for dtype in (torch.float32, torch.bfloat16):
        t = of(rank, n, dtype).to(hpu)
        dist.all_reduce(t)
        want = of(0, n, dtype)
        for r in range(1, world):   # rank order, rounded to the type at each step (hccl's order)
            want = (want.float() + of(r, n, dtype).float()).to(dtype)
        check(f"all_reduce sum {dtype}", t, want)
    for op, fold in ((dist.ReduceOp.MAX, torch.maximum), (dist.ReduceOp.MIN, torch.minimum)):
        t = (of(rank) * (-1) ** rank).to(hpu)
        dist.all_reduce(t, op=op)
        want = of(0)
        for r in range(1, world):
            want = fold(want, of(r) * (-1) ** r)
        check(f"all_reduce {op}", t, want)

    # In a lazy graph: the pending ops run before the collective, and after it on its result.
    t = torch.ones(64, device=hpu) * (rank + 1)
    t = t + 1
    dist.all_reduce(t)
    t = t * 2
    check("all_reduce between lazy ops", t, torch.full((64,), 2.0 * sum(r + 2 for r in range(world))))

    t = of(rank).to(hpu) if rank == 1 else torch.zeros(10, device=hpu)
    dist.broadcast(t, src=1)
    check("broadcast from rank 1", t, of(1))

    outs = [torch.empty(10, device=hpu) for _ in range(world)]
    dist.all_gather(outs, of(rank).to(hpu))
    for r in range(world):
        check(f"all_gather [{r}]", outs[r], of(r))
    flat = torch.empty(10 * world, device=hpu)
    dist.all_gather_into_tensor(flat, of(rank).to(hpu))
    check("all_gather_into_tensor", flat, torch.cat([of(r) for r in range(world)]))

    full = torch.cat([of(rank, 6) + 100 * c for c in range(world)]).to(hpu)
    part = torch.empty(6, device=hpu)
    dist.reduce_scatter_tensor(part, full)
    check("reduce_scatter_tensor", part, sum(of(r, 6) + 100 * rank for r in range(world)))

    t = of(rank).to(hpu)
    dist.reduce(t, dst=0)
    if rank == 0:
        check("reduce to rank 0", t, sum(of(r) for r in range(world)))

    src = torch.cat([torch.full((3,), float(10 * rank + c)) for c in range(world)]).to(hpu)
    dst = torch.empty_like(src)
    dist.all_to_all_single(dst, src)
    check("all_to_all_single", dst, torch.cat([torch.full((3,), float(10 * r + rank)) for r in range(world)]))

    if rank in (0, 1):
        if rank == 0:
            dist.send(of(7).to(hpu), dst=1)
        else:
            got = torch.empty(10, device=hpu)
            dist.recv(got, src=0)
            check("send / recv", got, of(7))

    # Uneven all_to_all: rank r sends rank p count(r, p) rows (some none), each on the card in one group.
    def count(r, p):
        return (r + 2 * p) % 3

    def rows(r, p):
        return torch.stack([torch.arange(4, dtype=torch.float32) + 100 * r + 10 * p + j for j in range(count(r, p))]
                           or [torch.empty(0)]).reshape(-1, 4)

    src = torch.cat([rows(rank, p) for p in range(world)]).to(hpu)
    dst = torch.empty(sum(count(r, rank) for r in range(world)), 4, device=hpu)
    dist.all_to_all_single(dst, src, output_split_sizes=[count(r, rank) for r in range(world)],
                           input_split_sizes=[count(rank, p) for p in range(world)])
    check("all_to_all_single, uneven splits", dst, torch.cat([rows(r, rank) for r in range(world)]))
    outs = [torch.empty(count(r, rank), 4, device=hpu) for r in range(world)]
    dist.all_to_all(outs, [rows(rank, p).to(hpu) for p in range(world)])
    for r in range(world):
        check(f"all_to_all, uneven [{r}]", outs[r], rows(r, rank))

    # A cycle of sends and receives in one batch (coalesced: neither waits behind the other).
    got = torch.empty(10, device=hpu)
    ops = [dist.P2POp(dist.isend, of(rank).to(hpu), (rank + 1) % world),
           dist.P2POp(dist.irecv, got, (rank - 1) % world)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    check("batch_isend_irecv ring", got, of((rank - 1) % world))
    # Coalesced all_reduces (one group on the card).
    ts = [of(rank, 5 + i).to(hpu) for i in range(3)]
    with dist._coalescing_manager(device=hpu):
        for t in ts:
            dist.all_reduce(t)
    for i, t in enumerate(ts):
        check(f"coalesced all_reduce [{i}]", t, sum(of(r, 5 + i) for r in range(world)))

    # Groups of some of the ranks, each on its members' cards.
    for members in ([[1]] if world == 2 else [[1, 3], [0, 2, 3]]):
        group = dist.new_group(members)
        if rank not in members:
            continue
        t = of(rank).to(hpu)
        dist.all_reduce(t, group=group)
        check(f"all_reduce in group {members}", t, sum(of(r) for r in members))
        outs = [torch.empty(10, device=hpu) for _ in members]
        dist.all_gather(outs, of(rank).to(hpu), group=group)
        for i, r in enumerate(members):
            check(f"all_gather in group {members} [{i}]", outs[i], of(r))
        t = of(rank).to(hpu)
        dist.broadcast(t, src=members[-1], group=group)
        check(f"broadcast from {members[-1]} in group {members}", t, of(members[-1]))

    # CPU tensors go through the card; objects too.
    c = torch.tensor([float(rank), 1.0])
    dist.all_reduce(c)
    check("all_reduce of a cpu tensor", c, torch.tensor([float(sum(range(world))), float(world)]))
    ints = [torch.zeros(3, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(ints, torch.tensor([rank, -rank, 5], dtype=torch.int64))
    for r in range(world):
        check(f"all_gather int64 [{r}]", ints[r], torch.tensor([r, -r, 5]))
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank, "name": "x" * (rank + 1)})
    check("all_gather_object", objects, [{"rank": r, "name": "x" * (r + 1)} for r in range(world)])
    dist.barrier()

    # What the backend refuses, by name.
    try:
        dist.all_reduce(torch.ones(4, dtype=torch.int32, device=hpu))
        raise AssertionError("an int32 all_reduce was accepted")
    except NotImplementedError as error:
        check("int32 all_reduce refused", "allreduce of Int tensors is not supported" in str(error), True)
    dist.destroy_process_group()
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__":
    main()
