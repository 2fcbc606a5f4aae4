"""What the bridge tells about time and the card: host work charged from the preset's host table
(a formula), the step report and its verdicts for the seeds' MNIST MLP in lazy and eager mode
(the main job), the timeline (HPUSIM_TRACE), the metrics file, and the card's name by preset."""
import json
import os
import subprocess
import sys

import torch

import habana_frameworks.torch.core as htcore
import hpusim.torch
from hpusim import _C

HERE = os.path.dirname(os.path.abspath(__file__))
OP_RECORD_NS = 13000           # hl205's host table: op_record_ns
GRAPH_BUILD_PER_NODE_NS = 300  # graph_build_per_node_ns


def run(script, **env):
    full = dict(os.environ)
    full.update(env)
    done = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_recording_an_op_costs_the_preset_op_record_time():
    x = torch.ones(64, device="hpu")
    htcore.mark_step()
    before = _C.host_time_ns()
    for _ in range(10):
        x = x + 1
    assert _C.host_time_ns() - before == 10 * OP_RECORD_NS
    before = _C.host_time_ns()
    htcore.mark_step()
    # At least the graph build of its 10 nodes (then hash, lookup or compile, launch).
    assert _C.host_time_ns() - before >= 10 * GRAPH_BUILD_PER_NODE_NS
    assert x.cpu().eq(11).all()


def test_the_step_report_of_the_mnist_mlp_in_lazy_mode():
    out = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "bridge", "examples", "mnist_training.py"),
                          "--steps", "5", "--json", "/dev/stdout"], env=dict(os.environ, PT_HPU_LAZY_MODE="1"),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "lazy mode, on GAUDI" in out.stdout
    rows = json.loads(out.stdout[out.stdout.index("[\n"):])
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    steady = rows[2:]
    for r in rows:
        assert abs(r["host_ms"] + r["wait_ms"] - r["step_ms"]) < 1e-9
        assert abs(r["device_ms"] + r["idle_ms"] - r["step_ms"]) < 1e-9
        assert r["graphs"] == 2 and r["fallbacks"] == 0
    assert rows[0]["compiles"] > 0
    for r in steady:
        assert r["compiles"] == 0 and r["cache_hits"] == 2
        # The verdict is the comparison it names (the lazy MNIST step is host-bound since the
        # kernels prefetch: 0.76 ms of host work against 0.67 ms of device time).
        assert r["bound"] == ("host" if r["host_ms"] > r["device_ms"] else "device"), r
    # The modeled clock: the same host work costs the same host time at every step (from step 3:
    # on hl205 step 2 still pays one wake-up by an interrupt, 3.0 + 0.8 us, that later steps do not).
    assert steady[1]["host_ms"] == steady[2]["host_ms"]


def test_eager_mode_makes_the_same_step_host_bound():
    out = run("import json, sys; sys.argv = ['x', '--steps', '3', '--json', '/dev/stdout']; "
              f"sys.path.insert(0, {os.path.join(HERE, '..', '..', 'bridge', 'examples')!r}); "
              "import mnist_training; mnist_training.main()", PT_HPU_LAZY_MODE="0")
    rows = json.loads(out[out.index("[\n"):])
    assert rows[-1]["graphs"] > 50 and rows[-1]["compiles"] == 0
    assert rows[-1]["bound"] == "host", rows[-1]


def test_the_timeline_has_the_bridge_host_work(tmp_path):
    trace = tmp_path / "bridge.json"
    run("import torch, hpusim.torch\n"
        "x = torch.ones(8, device='hpu')\n"
        "print((x * 2 + 1).cpu())\n", HPUSIM_TRACE=str(trace))
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    slices = [e for e in events if e.get("ph") in ("X", "B")]   # complete slices, or begin / end pairs
    framework = {e["name"] for e in slices if processes.get(e["pid"]) == "host: framework"}
    assert {"record mul", "record add", "graph build", "flush: copy to host", "wait: copy to host"} <= framework, framework
    assert any(processes.get(e["pid"]) == "host: synapse" for e in slices)


def test_the_metrics_file_is_written_at_exit(tmp_path):
    path = tmp_path / "metrics.json"
    run("import torch, hpusim.torch\n"
        "import habana_frameworks.torch.core as htcore\n"
        "x = torch.ones(8, device='hpu'); y = torch.erf(x * 3); htcore.mark_step()\n",
        PT_HPU_METRICS_FILE=str(path))
    records = json.loads(path.read_text())
    by_name = {r["metric_name"]: r for r in records}
    assert by_name["graph_compilation"]["triggered_by"] == "process_exit"
    assert by_name["graph_compilation"]["statistics"]["TotalNumber"] >= 1
    assert by_name["cpu_fallback"]["statistics"]["FallbackOps"] == {"aten::erf": 1}


def test_metric_change_writes_a_record_per_compilation_and_per_fallback(tmp_path):
    path = tmp_path / "metrics.json"
    run("import torch, hpusim.torch\n"
        "import habana_frameworks.torch.core as htcore\n"
        "x = torch.ones(8, device='hpu')\n"
        "for n in range(3):\n"
        "    y = torch.erf(x * (n + 1)); z = torch.special.digamma(y); htcore.mark_step()\n"
        "    w = (x + n).sum() if n < 2 else x.sum(); htcore.mark_step()\n",
        PT_HPU_METRICS_FILE=str(path), PT_HPU_METRICS_DUMP_TRIGGERS="metric_change")
    records = json.loads(path.read_text())
    assert {r["triggered_by"] for r in records} == {"metric_change"}
    fallbacks = [r for r in records if r["metric_name"] == "cpu_fallback"]
    # erf and digamma at each of 3 iterations, each record counting up to it.
    assert [r["statistics"]["TotalNumber"] for r in fallbacks] == [1, 2, 3, 4, 5, 6]
    assert fallbacks[-1]["statistics"]["FallbackOps"] == {"aten::erf": 3, "aten::digamma": 3}
    assert fallbacks[1]["statistics"]["FallbackOps"] == {"aten::erf": 1, "aten::digamma": 1}
    compiles = [r for r in records if r["metric_name"] == "graph_compilation"]
    assert [r["statistics"]["TotalNumber"] for r in compiles] == list(range(1, len(compiles) + 1))
    assert len(compiles) >= 2
    assert all(isinstance(r["generated_on"], int) for r in records)
    assert [r["generated_on"] for r in records] == sorted(r["generated_on"] for r in records)


def test_a_bad_metrics_trigger_is_named(tmp_path):
    full = dict(os.environ, PT_HPU_METRICS_FILE=str(tmp_path / "m.json"), PT_HPU_METRICS_DUMP_TRIGGERS="sometimes")
    done = subprocess.run([sys.executable, "-c", "import hpusim.torch.metrics"], env=full, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0
    assert "PT_HPU_METRICS_DUMP_TRIGGERS: unknown trigger 'sometimes'" in done.stderr


def test_the_card_name_follows_the_preset():
    assert torch.hpu.get_device_name() == "GAUDI"
    out = run("import torch, hpusim.torch; print(torch.hpu.get_device_name())", HPUSIM_PRESET="hl225")
    assert out.strip() == "GAUDI2"


MEASURED_SCRIPT = """
import time, torch, hpusim.torch, habana_frameworks.torch.core as htcore
from hpusim import _C
x = torch.ones(64, device="hpu")
htcore.mark_step()
def spin(seconds):   # CPU work of the host thread, between two recorded ops
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
before = _C.host_time_ns()
x = x + 1
spin(0.05)
x = x + 1
print(_C.host_time_ns() - before)
"""


def test_measured_host_time_is_the_host_threads_cpu_time():
    # Modeled: two recorded ops cost two op_record_ns, whatever the thread did between them.
    assert int(run(MEASURED_SCRIPT).split()[-1]) == 2 * OP_RECORD_NS
    # Measured: the 50 ms the thread spent between them is host time (CPU time, a lower bound).
    assert int(run(MEASURED_SCRIPT, HPUSIM_HOST_TIME="measured").split()[-1]) >= 50_000_000


def test_a_bad_host_time_source_is_an_error_naming_the_variable():
    full = dict(os.environ, HPUSIM_HOST_TIME="wallclock")
    done = subprocess.run([sys.executable, "-c", "import torch, hpusim.torch; torch.ones(2, device='hpu')"], env=full,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "HPUSIM_HOST_TIME='wallclock': the host clock's source, modeled" in done.stderr
