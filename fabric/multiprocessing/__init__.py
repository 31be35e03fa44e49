"""``fabric.multiprocessing`` (PyTorch's ``torch.multiprocessing``): Python's
:mod:`multiprocessing`, with tensors that travel as handles to shared memory,
plus ``spawn``/``start_processes``.

A CPU tensor sent to another process (``Process`` arguments under spawn and
forkserver, ``Queue``, ``SimpleQueue``, ``Pipe``) is moved into shared
memory first, as PyTorch does (``share_memory_()`` on the sender's tensor),
and the receiver maps the same memory: writes on either side are seen by the
other. Under fork, a tensor already in shared memory stays shared with the
children. See :mod:`fabric.multiprocessing.reductions`.

Example::

    >>> import fabric, fabric.multiprocessing as mp
    >>> t = fabric.zeros(3).share_memory_()
    >>> t.is_shared(), mp.get_sharing_strategy()
    (True, 'file_descriptor')
"""
from __future__ import annotations

import multiprocessing
from multiprocessing import *

from . import reductions  # noqa: F401  (torch.multiprocessing.reductions)
from .reductions import get_all_sharing_strategies, get_sharing_strategy, init_reductions, set_sharing_strategy
from .spawn import (
                    ProcessContext,
                    ProcessException,
                    ProcessExitedException,
                    ProcessRaisedException,
                    SpawnContext,
                    spawn,
                    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "init_reductions",
           "spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException",
           *getattr(multiprocessing, "__all__", [])]

init_reductions()
