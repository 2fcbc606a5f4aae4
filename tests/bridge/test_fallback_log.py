"""The CPU fallback as the real stack reports it: LOG_LEVEL_PT_FALLBACK logs each call and the op
frequencies at exit in the seeds' format, PT_HPU_PLACE_ON_CPU=none turns a fallback into
"<op> is not yet supported on HPU.", and a bad log level is an error naming the variable. Each case
runs in a process of its own (the variables are read once per process)."""
import os
import subprocess
import sys

SCRIPT = """
import torch, hpusim.torch
x = torch.tensor([0.5, 1.5, 2.5], dtype=torch.bfloat16).to("hpu")
try:
    y = torch.digamma(x)
    print("values", y.cpu().float().tolist() == torch.digamma(x.cpu()).float().tolist())
except RuntimeError as e:
    print("error", e)
"""


def run(**env):
    full = dict(os.environ)
    full.update(env)
    return subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, timeout=300)


def test_each_fallback_is_logged_and_summed_up_at_exit():
    result = run(LOG_LEVEL_PT_FALLBACK="1")
    assert result.returncode == 0, result.stderr
    assert "values True" in result.stdout
    assert "CPU fallback digamma : self=HPUBFloat16Type\n" in result.stderr
    assert result.stderr.endswith("Frequency of op and op name that were executed on CPU:\n1\taten::digamma\n")


def test_nothing_is_logged_by_default():
    result = run()
    assert result.returncode == 0, result.stderr
    assert "values True" in result.stdout
    assert "CPU fallback" not in result.stderr and "Frequency" not in result.stderr


def test_place_on_cpu_none_makes_a_fallback_an_error():
    result = run(PT_HPU_PLACE_ON_CPU="none")
    assert result.returncode == 0, result.stderr
    assert "error digamma is not yet supported on HPU." in result.stdout
    allowed = run(PT_HPU_PLACE_ON_CPU="digamma")
    assert "values True" in allowed.stdout, allowed.stderr


def test_a_bad_log_level_names_the_variable():
    result = run(LOG_LEVEL_PT_FALLBACK="loud")
    assert result.returncode == 0, result.stderr
    assert "error LOG_LEVEL_PT_FALLBACK='loud'" in result.stdout
