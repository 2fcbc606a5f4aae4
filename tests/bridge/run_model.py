"""Trains one of the tests' models on 'hpu' and on the CPU with the same seeds and data, and prints
a JSON line: both loss curves, the CPU fallbacks during the 'hpu' run, and the graph compilations
counted after each step. Usage: run_model.py <mnist|block|cnn> <steps> <f32|bf16>; the mode comes from
PT_HPU_LAZY_MODE as for any script."""
import json
import os
import sys

import torch

import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu.metrics as metrics
import hpusim.torch  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnn  # noqa: E402
import models  # noqa: E402
import transformer  # noqa: E402

name, steps, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3]
train = {"mnist": models.train_mnist, "block": transformer.train_block, "cnn": cnn.train_cnn}[name]
compiles = []
gc = metrics.metric_global("graph_compilation")
with metrics.metric_localcontext("cpu_fallback") as fallbacks:
    hpu = train("hpu", steps, mark_step=htcore.mark_step, autocast=dtype == "bf16",
                on_step=lambda step: compiles.append(dict(gc.stats())["TotalNumber"]))
cpu = train("cpu", steps, autocast=dtype == "bf16")
print(json.dumps({"hpu": hpu, "cpu": cpu, "fallbacks": dict(fallbacks.stats()), "compiles": compiles}))
