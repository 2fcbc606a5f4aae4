"""torch.distributed's "hccl" backend for 'hpu' tensors, as `habana_frameworks.torch.distributed.hccl`.

Importing it reads the launcher's environment (`initialize_distributed_hpu()`) and registers the
backend, so that `torch.distributed.init_process_group(backend="hccl")` works in every rank of
`mpirun -np N python train.py` or `torchrun --nproc_per_node N train.py`. Each rank drives one
card: the ranks' processes share one box split between them (HPUSIM_DISTRIBUTED=mpi or tcp,
HPUSIM_CARDS=N, and the box of the preset's card, unless set), kept in step over MPI or TCP, so
every rank's card is card RANK of the same box and collectives run on its NIC ports
(bridge/README.md, "torch.distributed").
"""
import os

import torch
import torch.distributed as dist

from hpusim import _C

_BOX_OF_PRESET = {"hl205": "hls1", "hl225": "hls2"}
_TRUE, _FALSE = ("1", "true"), ("", "0", "false")


def _flag(name):
    value = os.environ.get(name, "").strip().lower()
    if value not in _TRUE + _FALSE:
        raise ValueError(f"{name}='{os.environ[name]}': true, 1, false or 0")
    return value in _TRUE


def initialize_distributed_hpu(world_size=None, rank=None, local_rank=None):
    """(world_size, rank, local_rank) from the arguments, the environment, or mpirun's OMPI_COMM_WORLD_*."""
    if world_size is not None and rank is not None and local_rank is not None:
        os.environ["WORLD_SIZE"], os.environ["RANK"], os.environ["LOCAL_RANK"] = (
            str(world_size), str(rank), str(local_rank))
    elif not all(k in os.environ for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK")):
        for ours, ompi in (("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"), ("RANK", "OMPI_COMM_WORLD_RANK"),
                           ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")):
            if ompi in os.environ:
                os.environ[ours] = os.environ[ompi]
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "12345")
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", -1))
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    if "HLS_MODULE_ID" not in os.environ and world_size > 1:
        os.environ["HLS_MODULE_ID"] = str(max(local_rank, 0))
    os.environ["ID"] = str(rank)
    _split_box_between_ranks(world_size, rank)
    return world_size, rank, local_rank


def _split_box_between_ranks(world_size, rank):
    # Each rank simulates its own card of one box; the box comes up at the first use of the card,
    # so this only sets what the program has not set. mpirun's ranks meet over MPI; any other
    # launcher's (torchrun's) over TCP, at MASTER_PORT + 1 of MASTER_ADDR (torch's store has
    # MASTER_PORT).
    if world_size <= 1 or _C.device_acquired():
        return
    mpi_size = os.environ.get("OMPI_COMM_WORLD_SIZE")
    if mpi_size is not None:
        if int(mpi_size) != world_size or int(os.environ.get("OMPI_COMM_WORLD_RANK", rank)) != rank:
            raise RuntimeError(f"hccl: WORLD_SIZE={world_size} RANK={rank}, but mpirun started this process as rank "
                               f"{os.environ.get('OMPI_COMM_WORLD_RANK')} of {mpi_size}: rank r drives card r of the "
                               "box split between mpirun's processes")
        os.environ.setdefault("HPUSIM_DISTRIBUTED", "mpi")
    else:
        os.environ.setdefault("HPUSIM_DISTRIBUTED", "tcp")
        os.environ.setdefault("HPUSIM_RENDEZVOUS",
                              f"{os.environ['MASTER_ADDR']}:{int(os.environ['MASTER_PORT']) + 1}")
    os.environ.setdefault("HPUSIM_CARDS", str(world_size))
    preset = os.environ.get("HPUSIM_PRESET", "hl205")
    if "HPUSIM_BOX" not in os.environ and preset in _BOX_OF_PRESET:
        os.environ["HPUSIM_BOX"] = _BOX_OF_PRESET[preset]


_backends = {}


def _create_backend(options, _pg_options=None):
    # torch asks once per device the backend serves ('hpu', then 'cpu'): one communicator per group.
    if options.group_id in _backends:
        return _backends[options.group_id]
    # Global rank g drives card g of the box: a group's rank i runs on the card of its i-th member.
    ranks = list(options.global_ranks_in_group or range(options.group_size))
    cards = [] if ranks == list(range(len(ranks))) else ranks
    if options.group_size > 1 and os.environ.get("HPUSIM_DISTRIBUTED") not in ("mpi", "tcp"):
        raise RuntimeError(
            f"hccl: rank {options.group_rank} of {options.group_size} needs its card in a box split between the "
            "ranks' processes: launch them with mpirun or torchrun (or set HPUSIM_DISTRIBUTED before the card is "
            "first used)")
    _C.init()  # every rank's card first: a split box's processes join when their cards come up
    # hpusim's ids name only the cards, so each rank makes the group's id itself. The real stack
    # hands rank 0's id to the others through the store; here a rank waiting in the store would
    # stop its card's simulation, which a rank still waiting for its card's collective needs.
    unique_id = _C.hccl_unique_id(cards)
    backend = _C.create_hccl_backend(unique_id, options.group_rank, options.group_size, lazy_collectives)
    _backends[options.group_id] = backend
    return backend


lazy_collectives = _flag("PT_HPU_ENABLE_LAZY_COLLECTIVES")   # read at import, as the real stack does
initialize_distributed_hpu()
if "hccl" not in dist.Backend.backend_list:
    dist.Backend.register_backend("hccl", _create_backend, extended_api=True, devices=["hpu", "cpu"])

__all__ = ["initialize_distributed_hpu"]
