"""Host time per execution mode: the seeds' MNIST MLP training step (784-128-10, dropout, Adadelta,
batch 200; the two-layer network of hpu-graphs-training.txt), or a small CNN (--model cnn: two
conv + batch_norm + pool blocks and a linear layer on 16x16 images, bridge/examples/small_cnn.py, SGD
with momentum, batch 8), in lazy mode, eager mode,
torch.compile (eager mode, hpu_backend), make_graphed_callables, ModuleCacher and capture-replay,
each in a process of its own; and lazy mode again with torch.optim.AdamW and with hpex's FusedAdamW
in place of the model's optimizer (lazy_adamw, lazy_fused_adamw: what a fused optimizer saves). Per mode, the median over the steady steps of: host time per step
(the host's own work), device time, host waiting, device idle, graph compilations, the verdict.
With --host-time both (the default) every mode runs twice: on the modeled clock (the preset's
host cost table: deterministic) and on the measured one (this machine's thread CPU time), and the
ratios to lazy mode are printed next to the seeds' (lazy : make_graphed_callables :
capture-replay = 4.8 : 3.9 : 1.3 ms on first-gen Gaudi) with whether each is within 25%. The CNN
runs on the same cost table: its host times are the table's prediction for another model.

    PYTHONPATH=build/python build/venv/bin/python bridge/bench/bench_modes.py [--steps N] [--json FILE]
    build/hpusim bench modes [--steps N] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

MODES = ("lazy", "eager", "compile", "make_graphed_callables", "module_cacher", "capture_replay", "lazy_adamw",
         "lazy_fused_adamw")
SEEDS_MS = {"lazy": 4.8, "make_graphed_callables": 3.9, "capture_replay": 1.3}
MODELS = ("mnist", "cnn")


def build(model_name):
    """The model, its optimizer, the input shape and batch size, and the batches' generator."""
    import torch
    import torch.nn as nn
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    import mnist_training

    torch.manual_seed(0)
    if model_name == "mnist":
        model = mnist_training.Net().to("hpu")
        return (model, torch.optim.Adadelta(model.parameters(), lr=0.1), (200, 1, 28, 28),
                lambda steps: mnist_training.synthetic_batches(steps, 200))

    def batches(steps):
        generator = torch.Generator().manual_seed(1)
        for _ in range(steps):
            yield torch.randn(8, 3, 16, 16, generator=generator), torch.randint(0, 10, (8,), generator=generator)

    import small_cnn
    model = nn.Sequential(small_cnn.SmallCnn(), nn.LogSoftmax(dim=1)).to("hpu")
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), (8, 3, 16, 16), batches


def run_mode(model_name, mode, steps, warmup):
    """In the child process: `steps` training steps of `model_name` in `mode`; the report rows as JSON."""
    import torch
    import torch.nn.functional as F

    import habana_frameworks.torch.core as htcore
    import hpusim.torch

    model, optimizer, input_shape, make_batches = build(model_name)
    batch_size = input_shape[0]
    batches = list(make_batches(warmup + steps))
    report = hpusim.torch.StepReport()
    lazy = htcore.is_lazy()

    def mark_step():
        if lazy:
            htcore.mark_step()

    if mode == "lazy_adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-8)
    elif mode == "lazy_fused_adamw":
        from habana_frameworks.torch.hpex.optimizers import FusedAdamW
        optimizer = FusedAdamW(model.parameters(), lr=1e-3, eps=1e-8)

    if mode == "compile":
        forward = torch.compile(model, backend="hpu_backend")
    elif mode == "make_graphed_callables":
        forward = torch.hpu.make_graphed_callables(model, (torch.zeros(*input_shape, device="hpu"),))
    elif mode == "module_cacher":
        forward = torch.hpu.ModuleCacher(max_graphs=10)(model=model, inplace=True)
    else:
        forward = model

    if mode == "capture_replay":
        static_x = torch.zeros(*input_shape, device="hpu")
        static_target = torch.zeros(batch_size, dtype=torch.long, device="hpu")
        graph = None
        for data, target in batches:
            with report.step():
                static_x.copy_(data)
                static_target.copy_(target)
                if graph is None:   # the first step runs lazily (the optimizer's state), then the capture
                    optimizer.zero_grad()
                    loss = F.nll_loss(model(static_x), static_target)
                    loss.backward()
                    mark_step()
                    optimizer.step()
                    mark_step()
                    loss.item()
                    optimizer.zero_grad(set_to_none=True)
                    graph = torch.hpu.HPUGraph()
                    with torch.hpu.graph(graph):
                        static_loss = F.nll_loss(model(static_x), static_target)
                        static_loss.backward()
                        optimizer.step()
                else:
                    graph.replay()
                    static_loss.item()
    else:
        for data, target in batches:
            with report.step():
                data, target = data.to("hpu"), target.to("hpu")
                optimizer.zero_grad()
                loss = F.nll_loss(forward(data), target)
                loss.backward()
                mark_step()
                optimizer.step()
                mark_step()
                loss.item()
    return report.rows[warmup:]


def summary(rows):
    median = {k: statistics.median(r[k] for r in rows) for k in ("host_ms", "device_ms", "wait_ms", "idle_ms")}
    median["compiles"] = sum(r["compiles"] for r in rows)
    median["ops"] = statistics.median(r["ops"] for r in rows)
    median["replays"] = statistics.median(r["replays"] for r in rows)
    median["bound"] = "host" if median["host_ms"] > median["device_ms"] else "device"
    return median


def child(model_name, mode, steps, warmup, host_time):
    env = dict(os.environ, PT_HPU_LAZY_MODE="0" if mode in ("eager", "compile") else "1", HPUSIM_HOST_TIME=host_time)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, "--model", model_name,
                           "--steps", str(steps), "--warmup", str(warmup)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench modes: the {mode} run ({host_time} host time) failed:\n{done.stderr[-3000:]}")
    return summary(json.loads(done.stdout.strip().splitlines()[-1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="steady steps measured per mode (default 4)")
    parser.add_argument("--warmup", type=int, default=3, help="steps run first and not measured (default 3)")
    parser.add_argument("--host-time", choices=("modeled", "measured", "both"), default="both")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " + ", ".join(MODES))
    parser.add_argument("--model", choices=MODELS, default="mnist",
                        help="mnist: the seeds' two-layer network (default); cnn: a small CNN")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steps < 1 or args.warmup < 2:
        parser.error("--steps must be at least 1 and --warmup at least 2 (capture-replay captures at step 1)")
    if args.child:
        print(json.dumps(run_mode(args.model, args.child, args.steps, args.warmup)))
        return
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            parser.error(f"--modes: unknown mode '{m}' (of: {', '.join(MODES)})")
    clocks = ("modeled", "measured") if args.host_time == "both" else (args.host_time,)
    results = {}
    title = "MNIST MLP" if args.model == "mnist" else "small CNN"
    print(f"{title} training step per mode: median of {args.steps} steps after {args.warmup}", flush=True)
    for clock in clocks:
        results[clock] = {}
        for mode in modes:
            print(f"  running {mode} ({clock} host time)...", file=sys.stderr, flush=True)
            results[clock][mode] = child(args.model, mode, args.steps, args.warmup, clock)
        lazy = results[clock].get("lazy")
        print(f"\n{clock} host time")
        print(f"{'mode':24s} {'host ms':>9s} {'device ms':>10s} {'wait ms':>9s} {'idle ms':>9s} {'compiles':>9s} "
              f"{'bound':>7s} {'ops':>5s} {'replays':>7s} {'host/lazy':>10s} {'seeds':>7s} {'':8s}")
        for mode, r in results[clock].items():
            ratio = r["host_ms"] / lazy["host_ms"] if lazy and lazy["host_ms"] else float("nan")
            r["host_over_lazy"] = ratio
            seeds, verdict = "", ""
            if args.model == "mnist" and mode in SEEDS_MS and lazy:
                target = SEEDS_MS[mode] / SEEDS_MS["lazy"]
                r["within_25_percent_of_seeds"] = abs(ratio / target - 1) <= 0.25
                seeds = f"{target:.2f}"
                verdict = "ok" if r["within_25_percent_of_seeds"] else "off >25%"
            print(f"{mode:24s} {r['host_ms']:9.3f} {r['device_ms']:10.3f} {r['wait_ms']:9.3f} {r['idle_ms']:9.3f} "
                  f"{r['compiles']:9d} {r['bound']:>7s} {r['ops']:5.0f} {r['replays']:7.0f} {ratio:10.2f} {seeds:>7s} "
                  f"{verdict:8s}")
        order = sorted(results[clock], key=lambda m: -results[clock][m]["host_ms"])
        print("host time, longest first: " + " > ".join(order))
        fused, unfused = results[clock].get("lazy_fused_adamw"), results[clock].get("lazy_adamw")
        if fused and unfused and unfused["host_ms"]:
            print(f"hpex FusedAdamW vs torch.optim.AdamW (lazy): host {fused['host_ms']:.3f} vs {unfused['host_ms']:.3f} ms "
                  f"({fused['host_ms'] / unfused['host_ms']:.2f}x), ops {fused['ops']:.0f} vs {unfused['ops']:.0f}, "
                  f"compiles {fused['compiles']} vs {unfused['compiles']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "steps": args.steps, "warmup": args.warmup, "seeds_ms": SEEDS_MS,
                       "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
