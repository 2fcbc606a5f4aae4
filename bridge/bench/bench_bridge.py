"""The bridge's host cost, measured side by side in one run (wall time on this machine):

1. op recording: the wall time of one lazily recorded small op (`y = x + 1` on 64 elements on
   'hpu', no launch) against the same op dispatched natively on CPU tensors; target <= 2x;
2. a training step: the seeds' MNIST MLP (784-128-10, batch 200, dropout, Adadelta) through the
   bridge in lazy mode against `hpusim run mlp` (the same step built directly on the Synapse C
   API), wall time per steady step; target <= 1.5x. The simulated device time of the two steps is
   printed too: the wall time of a step is mostly the simulation of its device work, and the two
   do not give the card the same work (the zoo's step uses the fused Adadelta kernel, torch's
   Adadelta is elementwise ops).

Rounds are interleaved and the medians compared. Usage (from the repository, after the build):

    PYTHONPATH=build/python build/venv/bin/python bridge/bench/bench_bridge.py [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import habana_frameworks.torch.core as htcore
import hpusim.torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import mnist_training  # noqa: E402


def recorded_op_ns(ops):
    x = torch.ones(64, device="hpu")
    htcore.mark_step()
    start = time.perf_counter_ns()
    for _ in range(ops):
        y = x + 1
    elapsed = time.perf_counter_ns() - start
    htcore.mark_step()   # launched, not timed
    del y
    return elapsed / ops


def cpu_op_ns(ops):
    x = torch.ones(64)
    start = time.perf_counter_ns()
    for _ in range(ops):
        y = x + 1
    elapsed = time.perf_counter_ns() - start
    del y
    return elapsed / ops


class BridgeMnist:
    def __init__(self):
        torch.manual_seed(0)
        self.model = mnist_training.Net().to("hpu")
        self.optimizer = torch.optim.Adadelta(self.model.parameters(), lr=0.1)
        self.batches = mnist_training.synthetic_batches(10**9, 200)

    def step(self):
        data, target = next(self.batches)
        data, target = data.to("hpu"), target.to("hpu")
        loss = F.nll_loss(self.model(data), target)
        self.optimizer.zero_grad()
        loss.backward()
        htcore.mark_step()
        self.optimizer.step()
        htcore.mark_step()
        return loss.item()


def zoo_run_ns(hpusim, steps, json_path=None):
    start = time.perf_counter_ns()
    command = [hpusim, "run", "mlp", "--steps", str(steps)] + (["--json", json_path] if json_path else [])
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter_ns() - start


def main():
    parser = argparse.ArgumentParser(description="the bridge's host cost against native CPU ops and hpusim run")
    parser.add_argument("--json", help="also write the results as a JSON array to this file")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hpusim", default=os.path.join(HERE, "..", "..", "build", "hpusim"),
                        help="the hpusim program (default: build/hpusim)")
    args = parser.parse_args()
    if not os.path.exists(args.hpusim):
        parser.error(f"--hpusim: {args.hpusim} does not exist (build first)")

    ops = 200
    recorded_op_ns(ops), cpu_op_ns(ops)   # warm-up: the recipe, torch's dispatch caches
    hpu_ops, cpu_ops = [], []
    for _ in range(args.rounds):
        hpu_ops.append(recorded_op_ns(ops))
        cpu_ops.append(cpu_op_ns(ops))

    mnist = BridgeMnist()
    for _ in range(3):
        mnist.step()   # compiles the step's graphs
    extra = 5
    bridge_steps, zoo_steps, bridge_device = [], [], []
    for _ in range(args.rounds):
        torch.hpu.synchronize()
        busy = hpusim._C.device_busy_ns()
        start = time.perf_counter_ns()
        for _ in range(extra):
            mnist.step()
        bridge_steps.append((time.perf_counter_ns() - start) / extra)
        torch.hpu.synchronize()
        bridge_device.append((hpusim._C.device_busy_ns() - busy) / extra)
        # The zoo's per-step wall time: a run with `extra` more steps, less a run without them.
        zoo_steps.append((zoo_run_ns(args.hpusim, 2 + extra) - zoo_run_ns(args.hpusim, 2)) / extra)
    zoo_json = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench-bridge-zoo-{os.getpid()}.json")
    zoo_run_ns(args.hpusim, 4, zoo_json)
    with open(zoo_json) as f:
        zoo_device = [row["device_ns"] for row in json.load(f)[2:]]
    os.remove(zoo_json)

    results = [
        {"benchmark": "recorded op vs CPU op", "bridge_ns": statistics.median(hpu_ops),
         "reference_ns": statistics.median(cpu_ops), "target_ratio": 2.0},
        {"benchmark": "MNIST MLP step vs hpusim run mlp", "bridge_ns": statistics.median(bridge_steps),
         "reference_ns": statistics.median(zoo_steps), "target_ratio": 1.5},
        {"benchmark": "  their simulated device time", "bridge_ns": statistics.median(bridge_device),
         "reference_ns": statistics.median(zoo_device), "target_ratio": None},
    ]
    print(f"{'benchmark':<36} {'bridge us':>10} {'reference us':>13} {'ratio':>7} {'target':>7}")
    for r in results:
        r["ratio"] = r["bridge_ns"] / r["reference_ns"] if r["reference_ns"] > 0 else float("inf")
        target = r["target_ratio"]
        r["meets_target"] = None if target is None else r["ratio"] <= target
        mark = "" if target is None else f"{'<= ' + str(target):>7}{'' if r['meets_target'] else '  (missed)'}"
        print(f"{r['benchmark']:<36} {r['bridge_ns'] / 1e3:>10.2f} {r['reference_ns'] / 1e3:>13.2f} "
              f"{r['ratio']:>7.2f} {mark}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
