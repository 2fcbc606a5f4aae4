"""`hpusim analyze` on traces of PyTorch runs on the simulated card: the verdict of a tiny-op loop
(host-bound), a large-GEMM loop (device-bound) and an `.item()` loop (its synchronisations named),
a CPU fallback and a recompiling graph named; the HTML report rendered by headless Chromium; the
trace's default detail (engines and host, no packets) against --trace-detail packets."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

CLI = os.environ.get("HPUSIM_CLI", "")
pytestmark = pytest.mark.skipif(not CLI, reason="HPUSIM_CLI names the hpusim binary (ctest sets it)")

PRELUDE = """
import torch
import habana_frameworks.torch.core as htcore
import hpusim.torch
report = hpusim.torch.StepReport()
torch.manual_seed(0)
"""


def traced_run(tmp_path, name, body, **env):
    script = tmp_path / f"{name}.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    trace = tmp_path / f"{name}.json"
    run_env = dict(os.environ, HPUSIM_TRACE=str(trace), PT_HPU_LAZY_MODE="1")
    run_env.update(env)
    done = subprocess.run([sys.executable, str(script)], env=run_env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return trace


def analyze(trace, *args):
    out = trace.with_suffix(".report.json")
    done = subprocess.run([CLI, "analyze", str(trace), "--json", str(out), *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text())


def test_a_tiny_op_loop_is_host_bound(tmp_path):
    # Eager mode: every tiny op pays its own dispatch, graph and launch on the host.
    trace = traced_run(tmp_path, "tiny", """
        x = torch.ones(64, device="hpu")
        for step in range(4):
            with report.step():
                for i in range(20):
                    x = x * 0.5 + 0.25
    """, PT_HPU_LAZY_MODE="0")
    text, r = analyze(trace)
    assert r["verdict"] == "host-bound", text
    assert r["steady"]["ops"] == 40 and r["steady"]["compiles"] == 0
    assert any("HPU graphs" in g and "torch.compile" in g for g in r["guidance"])
    kinds = [c["kind"] for c in r["top_host_costs_ns_per_step"]]
    assert kinds[0] == "eager dispatch" and "op record" in kinds[:5], kinds
    assert "verdict: host-bound" in text


def test_a_large_gemm_loop_is_device_bound(tmp_path):
    trace = traced_run(tmp_path, "gemm", """
        a = torch.randn(1024, 1024, device="hpu") / 32
        for step in range(4):
            with report.step():
                c = a
                for i in range(4):
                    c = c @ a
                htcore.mark_step()
    """)
    text, r = analyze(trace)
    assert r["verdict"] == "device-bound", text
    assert r["steady"]["engine_utilisation"]["MME"] > 0.3
    assert {e["instance"] for e in r["engines"]} >= {"MME0", "TPC0", "DMA0"}


def test_an_item_every_step_is_named(tmp_path):
    trace = traced_run(tmp_path, "item", """
        x = torch.ones(64, device="hpu")
        for step in range(3):
            with report.step():
                for i in range(3):
                    x = x * 0.5 + 1.0
                    if x.sum().item() < 0:
                        print("never")
    """)
    text, r = analyze(trace)
    assert r["steady"]["syncs"] == 3, text
    assert any("3 host synchronisations per step" in g and ".item()" in g for g in r["guidance"]), text


def test_a_fallback_and_a_recompiling_graph_are_named(tmp_path):
    trace = traced_run(tmp_path, "named", """
        x = torch.full((8,), 1.5, device="hpu")
        for step in range(4):
            with report.step():
                y = torch.digamma(x) + 1.0
                z = (x * (1.0 + step)).sum()
                htcore.mark_step()
                z.item()
    """)
    text, r = analyze(trace)
    assert r["fallbacks"] == {"digamma": 4}, text
    assert any("CPU fallbacks: digamma (4x)" in g for g in r["guidance"])
    changes = [c["change"] for c in r["recompiles"]]
    assert r["recompiles"] and all(c["compiles"] >= 1 for c in r["recompiles"]), text
    # The step count enters the graph as a constant: the analyser names it, old and new.
    assert any(c.startswith("a constant of node #") and "(3)" in c and "(4)" in c for c in changes), changes
    assert any("compiled again in steady steps" in g and "as tensors" in g for g in r["guidance"])


def test_the_html_report_renders_in_headless_chromium(tmp_path):
    from PIL import Image, ImageStat

    trace = traced_run(tmp_path, "html", """
        x = torch.ones(64, device="hpu")
        for step in range(3):
            with report.step():
                for i in range(10):
                    x = x * 0.5 + 0.25
                htcore.mark_step()
    """)
    html = tmp_path / "report.html"
    text, _ = analyze(trace, "--html", str(html))
    assert f"HTML report: {html}" in text
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "Debian's chromium is needed (scripts/install-deps.sh installs it)"
    shot = tmp_path / "shot.png"
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", "--window-size=1000,1400",
                           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", html.as_uri()],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and shot.exists(), done.stderr[-3000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    image = Image.open(shot).convert("RGB")
    extrema = ImageStat.Stat(image).extrema
    assert any(hi - lo > 100 for lo, hi in extrema), "the screenshot is blank"
    # The charts' colours are on the page: the host bars' blue and the device bars' orange.
    colours = {c for _, c in image.getcolors(maxcolors=1 << 20)}
    assert (0x3b, 0x7d, 0xd8) in colours and (0xe8, 0x83, 0x3a) in colours


def test_the_default_trace_has_engines_and_no_packets(tmp_path):
    body = """
        x = torch.ones(256, device="hpu")
        with report.step():
            y = (x * 2).relu().sum()
            htcore.mark_step()
    """
    default = traced_run(tmp_path, "default", body).read_text()
    packets = traced_run(tmp_path, "packets", body, HPUSIM_TRACE_DETAIL="packets").read_text()
    assert '"WREG_32"' not in default and '"WREG_32"' in packets
    assert len(packets) > 2 * len(default)
    for name in ('"TPC0"', '"HBM read"', '"step 0"', '"mark_step"', '"wait: synchronize"', '"record mul"'):
        assert name in default, name
    # TPC slices carry the kernel the host loaded.
    assert '"mul_f32' in default or '"mult_f32' in default or "_f32" in default


def test_a_bad_trace_detail_is_named(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("import torch\nimport hpusim.torch\ntorch.ones(2, device='hpu')\n")
    done = subprocess.run([sys.executable, str(script)], env=dict(os.environ, HPUSIM_TRACE_DETAIL="everything"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "HPUSIM_TRACE_DETAIL='everything'" in done.stderr, done.stderr[-2000:]
