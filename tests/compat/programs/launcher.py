"""Run by PyTorch's launcher (``-m torch.distributed.run --nproc-per-node 2``): every worker sees the same ``torch``."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: {torch.__name__} sum {t.item()}")
dist.destroy_process_group()
