"""torch.profiler with ProfilerActivity.HPU: the simulated card's events (the bridge's host work,
launches, TPC kernels, MME jobs) are merged into the profiler's Chrome trace as
tensorboard_trace_handler writes it, with a step span per profiler step, and `hpusim analyze`
reads the file; without the HPU activity the profiler's trace has none of them."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

CLI = os.environ.get("HPUSIM_CLI", "")

SCRIPT = """
import sys
import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
import habana_frameworks.torch.core as htcore
import hpusim.torch

activities = [ProfilerActivity.CPU] + ([ProfilerActivity.HPU] if sys.argv[2] == "hpu" else [])
a = torch.randn(64, 64, device="hpu")
with profile(activities=activities, schedule=schedule(wait=0, warmup=1, active=3),
             on_trace_ready=tensorboard_trace_handler(sys.argv[1])) as prof:
    for step in range(4):
        y = torch.relu(a @ a + 1.0).sum()
        htcore.mark_step()
        prof.step()
print("loss", y.item())
# Without HPUSIM_TRACE the timeline keeps nothing once the profiled window is taken.
import json, os
from hpusim import _C
left = os.path.join(sys.argv[1], "left.json")
_C.trace_write_chrome_json(left)
print("events left", sum(e["ph"] != "M" for e in json.load(open(left))["traceEvents"]))
"""


def profiled(tmp_path, activity):
    script = tmp_path / "profiled.py"
    script.write_text(textwrap.dedent(SCRIPT))
    logs = tmp_path / f"logs_{activity}"
    env = dict(os.environ, PT_HPU_LAZY_MODE="1")
    env.pop("HPUSIM_TRACE", None)
    done = subprocess.run([sys.executable, str(script), str(logs), activity], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "events left 0" in done.stdout, done.stdout
    files = sorted(logs.glob("*.pt.trace.json"))
    assert len(files) == 1, list(logs.iterdir())
    return files[0]


def names(trace):
    events = json.loads(trace.read_text())["traceEvents"]
    processes = {e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    return processes, {e.get("name") for e in events}


def test_the_hpu_activity_merges_the_cards_events(tmp_path):
    from torch.profiler import ProfilerActivity
    assert ProfilerActivity.HPU in ProfilerActivity.__members__.values()
    trace = profiled(tmp_path, "hpu")
    processes, events = names(trace)
    assert {"host: framework", "host: synapse", "device: recipes"} <= processes, processes
    assert any(p.startswith("device (hl205)") for p in processes)
    assert {"step 0", "step 1", "step 2", "mark_step", "record mm", "gemm 64x64x64"} <= events, sorted(events)[:80]
    assert any(n and n.startswith("ProfilerStep#") for n in events)   # the profiler's own rows stay
    assert any(n and n.startswith("launch ") for n in events)
    if CLI:
        done = subprocess.run([CLI, "analyze", str(trace), "--json", str(tmp_path / "r.json")], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / "r.json").read_text())
        assert [s["name"] for s in report["steps"]] == ["step 0", "step 1", "step 2"]
        assert report["steady"]["device_busy_ns"] > 0 and report["verdict"] in ("host-bound", "device-bound", "balanced")
        assert {e["instance"] for e in report["engines"]} >= {"MME0", "TPC0"}


def test_without_the_hpu_activity_the_trace_is_the_profilers_own(tmp_path):
    processes, events = names(profiled(tmp_path, "cpu"))
    assert not any(p.startswith(("host:", "device")) for p in processes), processes
    assert "mark_step" not in events
