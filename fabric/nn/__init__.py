"""``fabric.nn``: modules, layers, losses, init and utilities (PyTorch's ``torch.nn``).

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.Linear(4, 2)(fabric.ones(3, 4)).shape
    fabric.Size([3, 2])
"""
from __future__ import annotations

from .parameter import Parameter, Buffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402
