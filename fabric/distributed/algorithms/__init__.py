"""``torch.distributed.algorithms``: DDP communication hooks."""
from . import ddp_comm_hooks

__all__ = ["ddp_comm_hooks"]
