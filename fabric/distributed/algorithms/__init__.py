"""``torch.distributed.algorithms``: DDP communication hooks and the ``Join`` context for uneven inputs."""
from . import ddp_comm_hooks
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks"]
