"""``fabric.nn``: modules, layers, losses, init and utilities (PyTorch's ``torch.nn``).

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.Linear(4, 2)(fabric.ones(3, 4)).shape
    fabric.Size([3, 2])
"""
from __future__ import annotations

from . import (  # noqa: F401
    functional,
    init,
    parallel,
    utils,
)
from .modules import *  # noqa: F403
from .parallel import DataParallel  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedParameter  # noqa: F401
