"""`hpusim bench modes`: the seeds' MNIST training step in each execution mode, host and device
time per step from one table; on the modeled clock the same run gives the same numbers, and the
modes that record fewer ops cost less host time (capture-replay < make_graphed_callables, and
capture-replay < lazy)."""
import json
import os
import subprocess

import pytest

CLI = os.environ.get("HPUSIM_CLI", "")


def bench(tmp_path, name, *args):
    out = tmp_path / f"{name}.json"
    done = subprocess.run([CLI, "bench", "modes", "--host-time", "modeled", "--steps", "2", "--warmup", "2",
                           "--json", str(out), *args], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout, json.loads(out.read_text())


@pytest.mark.skipif(not CLI, reason="HPUSIM_CLI names the hpusim binary (ctest sets it)")
def test_modes_table_and_json(tmp_path):
    stdout, result = bench(tmp_path, "a", "--modes", "lazy,make_graphed_callables,capture_replay,eager")
    assert "modeled host time" in stdout and "capture_replay" in stdout
    modes = result["results"]["modeled"]
    for row in modes.values():
        assert set(row) >= {"host_ms", "device_ms", "wait_ms", "idle_ms", "compiles", "bound", "ops", "replays"}
        assert row["compiles"] == 0   # steady steps compile nothing
    assert modes["capture_replay"]["ops"] == 0 and modes["capture_replay"]["replays"] == 1
    assert modes["make_graphed_callables"]["replays"] == 2
    assert modes["make_graphed_callables"]["ops"] < modes["lazy"]["ops"]
    assert modes["capture_replay"]["host_ms"] < modes["lazy"]["host_ms"]
    assert modes["eager"]["host_ms"] > modes["lazy"]["host_ms"] and modes["eager"]["bound"] == "host"
    # Deterministic on the modeled clock.
    _, again = bench(tmp_path, "b", "--modes", "lazy,capture_replay")
    for mode in ("lazy", "capture_replay"):
        assert again["results"]["modeled"][mode] == {k: v for k, v in modes[mode].items()}


def test_a_bad_mode_is_named():
    if not CLI:
        pytest.skip("HPUSIM_CLI names the hpusim binary (ctest sets it)")
    done = subprocess.run([CLI, "bench", "modes", "--modes", "lazy,warp"], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "--modes: unknown mode 'warp'" in done.stderr
