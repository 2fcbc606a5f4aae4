"""torch.distributed's "hccl" backend on a box split between the ranks' processes, one card per rank:
DDP training against single-process training on the CPU (2 and 4 ranks, default and small
gradient buckets, buckets as gradient views, lazy collectives), every collective against the CPU's
values (uneven all_to_all, coalesced calls and groups of some ranks too), the gradient all-reduce
on the NIC tracks of each rank's trace, an all_reduce captured in
an HPU graph (lazy collectives) or refused there (without), torchrun's ranks (meeting over TCP)
against mpirun's, slice for slice, a program calling MPI itself through mpi4py, and what ends a run."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ddp_reference import STEPS, train_on_cpu  # noqa: E402

MPIRUN = shutil.which("mpirun")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return str(s.getsockname()[1])


# One launch's limit, well under ctest's 600 s for the whole file (a launch takes 5-40 s, more on a
# loaded machine): a launch that hangs fails its own test with what it printed so far.
LAUNCH_TIMEOUT_S = 240


def run(command, env):
    try:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"{' '.join(command)} did not end in {LAUNCH_TIMEOUT_S} s; its output so far:\n"
                    f"{out[-3000:]}\n{err[-6000:]}")


def torchrun(ranks, script, *args, env=None):
    run_env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]), **(env or {}))
    result = run([sys.executable, "-W", "ignore", "-m", "torch.distributed.run", "--nproc_per_node", str(ranks),
                  "--master_port", free_port(), os.path.join(HERE, script), *args], run_env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return result


def launch(ranks, script, *args, env=None):
    assert MPIRUN, "mpirun is not installed (scripts/build.sh installs Open MPI)"
    run_env = dict(os.environ, **MPI_ENV, MASTER_PORT=free_port(),
                   PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]), **(env or {}))
    result = run([MPIRUN, "-np", str(ranks), "--oversubscribe", sys.executable, "-W", "ignore",
                  os.path.join(HERE, script), *args], run_env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return result


LAZY_COLLECTIVES = {"PT_HPU_ENABLE_LAZY_COLLECTIVES": "true"}


def ranks_ok(result):
    """The ranks that printed "rank r: ok" (mpirun may join two ranks' lines into one)."""
    return sorted(int(r) for r in re.findall(r"rank (\d+): ok", result.stdout))


@pytest.mark.parametrize("ranks,options,env", [
    (2, [], {}),
    (4, ["--bucket-cap-mb", "0.001", "--first-bucket-bytes", "512", "--gradient-as-bucket-view"], {}),
    (2, ["--bucket-cap-mb", "0.001", "--first-bucket-bytes", "512"], LAZY_COLLECTIVES),
])
def test_ddp_training_gives_the_parameters_of_single_process_training(tmp_path, ranks, options, env):
    launch(ranks, "ddp_train.py", str(tmp_path), *options, env=env)
    reference = train_on_cpu()
    for rank in range(ranks):
        trained = torch.load(tmp_path / f"rank{rank}.pt")
        assert trained.keys() == reference.keys()
        for name, value in reference.items():
            torch.testing.assert_close(trained[name], value, rtol=1e-5, atol=1e-6, msg=f"rank {rank} {name}")


def spans(events, name):
    begins = [e["ts"] for e in events if e.get("name") == name and e.get("ph") in ("B", "X")]
    return sorted(begins)


def intervals(events, name):
    """(start, end) of every slice `name` (B/E pairs on one thread, or X)."""
    open_slices, found = {}, []
    for e in events:
        key = (e.get("pid"), e.get("tid"))
        if e.get("ph") == "B":
            open_slices.setdefault(key, []).append(e)
        elif e.get("ph") == "E" and open_slices.get(key):
            begin = open_slices[key].pop()
            if begin.get("name") == name:
                found.append((begin["ts"], e["ts"]))
        elif e.get("ph") == "X" and e.get("name") == name:
            found.append((e["ts"], e["ts"] + e.get("dur", 0)))
    return found


@pytest.mark.parametrize("lazy_collectives", [False, True])
def test_the_gradient_all_reduce_runs_on_the_nic_ports_of_every_rank(tmp_path, lazy_collectives):
    trace = tmp_path / "ddp.json"
    launch(2, "ddp_train.py", str(tmp_path),
           env={"HPUSIM_TRACE": str(trace), **(LAZY_COLLECTIVES if lazy_collectives else {})})
    for rank in range(2):
        events = json.loads((tmp_path / f"ddp.rank{rank}.json").read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                   if e.get("ph") == "M" and e.get("name") == "thread_name"}
        nic_sends = sorted(e["ts"] for e in events if e.get("ph") in ("B", "X")
                           and threads.get((e.get("pid"), e.get("tid")), "").startswith("NIC")
                           and threads[(e["pid"], e["tid"])].endswith("send"))
        all_reduces = spans(events, "hccl allreduce")
        assert len(all_reduces) == STEPS, f"rank {rank}: one gradient bucket per step, {all_reduces}"
        last = all_reduces[-1]
        assert any(t >= last for t in nic_sends), f"rank {rank}: no NIC send after the last step's all-reduce"
        # Without lazy collectives each all-reduce launches the backward graph recorded before it;
        # with them it is recorded, and runs inside the step's mark_step.
        flushes = spans(events, "flush: hccl allreduce")
        assert len(flushes) == (0 if lazy_collectives else STEPS), flushes
        if lazy_collectives:
            steps = intervals(events, "mark_step")
            assert all(any(a <= t <= b for a, b in steps) for t in all_reduces), (all_reduces, steps)


def test_every_collective_gives_the_cpu_values():
    for ranks in (2, 4):
        result = launch(ranks, "dist_collectives.py")
        assert ranks_ok(result) == list(range(ranks))


def slices(trace):
    """Every slice of a timeline: (thread name, start, name), in order."""
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return sorted((threads.get((e.get("pid"), e.get("tid")), ""), e["ts"], e.get("name", ""))
                  for e in events if e.get("ph") in ("B", "X"))


def test_torchrun_ranks_train_as_mpirun_ranks_do_cycle_for_cycle(tmp_path):
    # torchrun's processes meet over TCP (no MPI run): the same parameters, and every slice of every
    # rank's timeline (host and device) at the same time as under mpirun.
    runs = {"torchrun": tmp_path / "torchrun", "mpirun": tmp_path / "mpirun"}
    for path in runs.values():
        path.mkdir()
    torchrun(2, "ddp_train.py", str(runs["torchrun"]), env={"HPUSIM_TRACE": str(runs["torchrun"] / "t.json")})
    launch(2, "ddp_train.py", str(runs["mpirun"]), env={"HPUSIM_TRACE": str(runs["mpirun"] / "t.json")})
    reference = train_on_cpu()
    for rank in range(2):
        trained = torch.load(runs["torchrun"] / f"rank{rank}.pt")
        for name, value in reference.items():
            torch.testing.assert_close(trained[name], value, rtol=1e-5, atol=1e-6, msg=f"rank {rank} {name}")
        over_tcp, over_mpi = slices(runs["torchrun"] / f"t.rank{rank}.json"), slices(runs["mpirun"] / f"t.rank{rank}.json")
        assert len(over_tcp) > 1000 and any(name.startswith("NIC") for name, _, _ in over_tcp)
        assert over_tcp == over_mpi


def test_every_collective_gives_the_cpu_values_under_torchrun():
    result = torchrun(4, "dist_collectives.py")
    assert ranks_ok(result) == list(range(4))


@pytest.mark.parametrize("lazy_collectives", ["true", "false"])
def test_an_all_reduce_in_an_hpu_graph_needs_lazy_collectives(lazy_collectives):
    result = launch(2, "dist_hpu_graph.py", env={"PT_HPU_ENABLE_LAZY_COLLECTIVES": lazy_collectives})
    assert ranks_ok(result) == [0, 1]


def run_python(code, **env):
    return run([sys.executable, "-c", code], dict(os.environ, **env))


INIT = ("import torch, torch.distributed as dist\n"
        "import habana_frameworks.torch.core\n"
        "dist.init_process_group('hccl', store=dist.HashStore(), rank=int({rank}), world_size=int({world}))\n")


def test_a_rank_whose_peers_never_come_ends_with_the_reason():
    result = run_python(INIT.format(rank=1, world=2), WORLD_SIZE="2", RANK="1", LOCAL_RANK="1",
                        MASTER_PORT=free_port(), HPUSIM_RENDEZVOUS_TIMEOUT="1")
    assert result.returncode != 0
    assert "TCP transport: no answer from rank 0 at the rendezvous localhost:" in result.stderr, result.stderr[-2000:]


def test_a_world_of_one_rank_runs_its_collectives_on_its_card():
    result = run_python(INIT.format(rank=0, world=1) +
                        "t = torch.arange(6.).to('hpu'); dist.all_reduce(t); dist.barrier()\n"
                        "print(t.cpu().tolist())\n")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]"


def test_a_bad_lazy_collectives_value_is_named_at_import():
    result = run_python("import habana_frameworks.torch.core", PT_HPU_ENABLE_LAZY_COLLECTIVES="maybe")
    assert result.returncode != 0
    assert "PT_HPU_ENABLE_LAZY_COLLECTIVES='maybe': true, 1, false or 0" in result.stderr


def test_a_program_calling_mpi_from_python_is_kept_in_step_with_the_split_box():
    # mpi4py_program.py: rank 0 waits in each call for rank 1's card to move (it hangs, and fails
    # here, unless the bridge's MPI functions come before libmpi's); every call returns MPI's values
    # at the host time of a process that ran the whole box.
    result = launch(2, "mpi4py_program.py")
    assert ranks_ok(result) == [0, 1], result.stdout[-3000:] + result.stderr[-3000:]


def test_mpi4py_imported_before_the_bridge_is_named():
    assert MPIRUN, "mpirun is not installed (scripts/build.sh installs Open MPI)"
    result = run([MPIRUN, "-np", "1", sys.executable, "-c", "import mpi4py.MPI; import habana_frameworks.torch.core"],
                 dict(os.environ, **MPI_ENV))
    assert result.returncode == 0, result.stderr[-3000:]
    assert ("hpusim: mpi4py was imported before hpusim (or habana_frameworks.torch): its MPI calls are not kept in "
            "step with the simulation") in result.stderr, result.stderr[-3000:]
