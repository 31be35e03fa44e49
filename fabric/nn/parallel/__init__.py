"""``fabric.nn.parallel``: :class:`DistributedDataParallel` (PyTorch's
``torch.nn.parallel``), gradient averaging across the processes of a
``fabric.distributed`` process group.

Example (a world of one process)::

    >>> import fabric, fabric.distributed as dist
    >>> from fabric.nn.parallel import DistributedDataParallel as DDP
    >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    >>> model = DDP(fabric.nn.Linear(3, 1))
    >>> model(fabric.ones(2, 3)).sum().backward()
    >>> model.module.weight.grad
    tensor([[2., 2., 2.]])
    >>> dist.destroy_process_group()
"""
from __future__ import annotations

from . import (
    data_parallel,  # noqa: F401
    distributed,  # noqa: F401
)
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "DataParallel"]
