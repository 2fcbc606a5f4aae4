"""torch.distributed on simulated cards: the "hccl" backend (`hpusim.torch.distributed.hccl`)."""
