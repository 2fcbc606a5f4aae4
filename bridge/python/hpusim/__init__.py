"""hpusim: a cycle-level simulator of a Gaudi-class accelerator. `hpusim.torch` is its PyTorch bridge."""
