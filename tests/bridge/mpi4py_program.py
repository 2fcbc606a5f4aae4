"""A program of mpirun's ranks that calls MPI itself through mpi4py while each rank drives its card of a
box split between them: `mpirun -np 2 python mpi4py_program.py`. Before each call rank 1 runs more
device work than rank 0, so rank 0 waits in the call for rank 1's card to move: every call must end
(not wait for ever), give MPI's values and return at the host time the simulation gives it: a
collective at the latest entry of the ranks, a receive at the later of its entry and the send.
Prints "rank r: ok" when all hold, else what failed."""
import sys

import numpy as np
import torch
import habana_frameworks.torch.core  # noqa: F401  (the 'hpu' device)
from habana_frameworks.torch.distributed.hccl import initialize_distributed_hpu
from hpusim import _C

world, rank, _ = initialize_distributed_hpu()
from mpi4py import MPI  # noqa: E402  (after the bridge, so its calls are kept in step)

comm = MPI.COMM_WORLD
x = torch.arange(1 << 20, dtype=torch.float32, device="hpu")
failures = []


def check(what, ok, *details):
    if not ok:
        failures.append(f"{what}: {details}")


def call_after_device_work(call):
    """(entry ns, exit ns, result) of `call` entered after rank 1 copied x back three times."""
    for _ in range(3 if rank == 1 else 0):
        (x * 2).cpu()
    entered = _C.host_time_ns()
    result = call()
    return entered, _C.host_time_ns(), result


# Collectives: every rank leaves at the latest entry (the ranks' entries gathered afterwards).
entered, left, _ = call_after_device_work(comm.Barrier)
entries = comm.allgather(entered)
check("Barrier", left == max(entries) and entries[1] > entries[0], entries, left)

entered, left, _ = call_after_device_work(lambda: comm.Ibarrier().Wait())
entries = comm.allgather(entered)
check("Ibarrier", left == max(entries), entries, left)

entered, left, total = call_after_device_work(lambda: comm.allreduce(rank + 1))
entries = comm.allgather(entered)
check("allreduce", total == world * (world + 1) // 2 and left == max(entries), total, entries, left)

mine, summed = np.full(1000, rank + 1.5), np.zeros(1000)
entered, left, _ = call_after_device_work(lambda: comm.Allreduce(mine, summed, op=MPI.SUM))
entries = comm.allgather(entered)
check("Allreduce", np.all(summed == sum(r + 1.5 for r in range(world))) and left == max(entries), entries, left)

entered, left, gathered = call_after_device_work(lambda: comm.gather({"rank": rank, "data": list(range(rank + 3))}))
entries = comm.allgather(entered)
expected = [{"rank": r, "data": list(range(r + 3))} for r in range(world)] if rank == 0 else None
check("gather", gathered == expected and left == max(entries), gathered, entries, left)

entered, left, value = call_after_device_work(lambda: comm.bcast({"from": 1} if rank == 1 else None, root=1))
entries = comm.allgather(entered)
check("bcast", value == {"from": 1} and left == max(entries), value, entries, left)

# Messages: rank 0 waits for what rank 1 sends after its device work; the receive returns at the
# send's host time (recv takes the message by a matched probe, irecv by a nonblocking receive into
# mpi4py's 32 KB buffer).
for how in ("recv", "irecv"):
    if rank == 1:
        (x * 2).cpu()
        comm.send({"sent_ns": _C.host_time_ns(), "payload": np.arange(3000)}, dest=0, tag=7)
    elif rank == 0:
        entered = _C.host_time_ns()
        message = comm.recv(source=1, tag=7) if how == "recv" else comm.irecv(source=1, tag=7).wait()
        left = _C.host_time_ns()
        check(how, np.array_equal(message["payload"], np.arange(3000)) and left == message["sent_ns"] > entered,
              entered, left, message["sent_ns"])

# waitany: the receive whose message was sent first, though listed second, at its send's time.
if rank == 1:
    for tag in (9, 8):
        (x * 2).cpu()
        comm.send(_C.host_time_ns(), dest=0, tag=tag)
elif rank == 0:
    requests = [comm.irecv(source=1, tag=8), comm.irecv(source=1, tag=9)]
    index, first_sent = MPI.Request.waitany(requests)
    left = _C.host_time_ns()
    later_sent = requests[0].wait()
    check("waitany", index == 1 and left == first_sent < later_sent, index, left, first_sent, later_sent)

# Persistent requests (Send_init / Recv_init), each started twice: every wait returns at its send's
# host time, and the request stays for the next start.
stamp = np.zeros(1, dtype=np.uint64)
persistent = (comm.Send_init if rank == 1 else comm.Recv_init)(stamp, 1 - rank, tag=10) if rank < 2 else None
for start in range(2):
    if rank == 1:
        (x * 2).cpu()
        stamp[0] = _C.host_time_ns()
        persistent.Start()
        persistent.Wait()
    elif rank == 0:
        entered = _C.host_time_ns()
        persistent.Start()
        persistent.Wait()
        left = _C.host_time_ns()
        check(f"Recv_init start {start}", left == int(stamp[0]) > entered, entered, left, int(stamp[0]))
if persistent is not None:
    persistent.Free()

# Post-start-complete-wait on a window of one number: rank 0 posts after device work of its own, so
# rank 1's Start leaves at the post's host time; rank 1 puts its host time after more device work and
# completes; rank 0's Wait leaves at that time, its window holding it.
slot = np.zeros(1, dtype=np.uint64)
window = MPI.Win.Create(slot, comm=comm)
peer = comm.Get_group().Incl([1 - rank]) if rank < 2 else MPI.Group.Incl(comm.Get_group(), [])
if rank == 0:
    (x * 2).cpu()
    posted = _C.host_time_ns()
    window.Post(peer)
    window.Wait()
    left = _C.host_time_ns()
    comm.send(posted, dest=1, tag=11)
    check("Win.Post/Wait", left == int(slot[0]) > posted, posted, left, int(slot[0]))
elif rank == 1:
    entered = _C.host_time_ns()
    window.Start(peer)
    started = _C.host_time_ns()
    (x * 2).cpu()
    put = np.array([_C.host_time_ns()], dtype=np.uint64)   # held until Complete
    window.Put(put, 0)
    window.Complete()
    posted = comm.recv(source=0, tag=11)
    check("Win.Start", started == posted > entered, entered, started, posted)
peer.Free()
window.Free()

comm.Barrier()
print(f"rank {rank}: ok" if not failures else f"rank {rank}: failed: {failures}", flush=True)
sys.exit(1 if failures else 0)
