"""``fabric.distributed``: multi-process data parallelism with PyTorch's
``torch.distributed`` API — process groups, collectives, point-to-point,
stores — over a pure-Python "gloo" backend (TCP sockets, NumPy arrays).

Launch one process per rank with ``fabric.multiprocessing.spawn`` or
``python -m fabric.distributed.run --nproc-per-node N script.py`` (sets
``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``),
then ``init_process_group("gloo")``.  See docs/distributed.md.

Example (a world of one process)::

    >>> import fabric, fabric.distributed as dist
    >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    >>> dist.get_rank(), dist.get_world_size(), dist.is_initialized()
    (0, 1, True)
    >>> dist.destroy_process_group()
"""
from __future__ import annotations

from .distributed_c10d import *
from .distributed_c10d import __all__ as _c10d_all
from .store import DistError, DistStoreError

__all__ = list(_c10d_all) + ["DistError", "DistStoreError"]
