"""``fabric.distributed``: multi-process data parallelism with PyTorch's
``torch.distributed`` API — process groups, collectives, point-to-point,
stores — on MPI (the ``mpi`` extra: mpi4py) or, without it, a pure-Python
TCP transport (sockets, NumPy arrays).

Launch one process per rank with ``mpiexec -n N python script.py``,
``python -m fabric.distributed.run --nproc-per-node N script.py`` (uses
mpiexec when the extra is installed) or ``fabric.multiprocessing.spawn``,
then ``init_process_group("gloo")`` or ``("mpi")``.  See docs/distributed.md.

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
