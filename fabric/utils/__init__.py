"""``fabric.utils``: ``fabric.utils.data`` is :mod:`fabric.data` under
PyTorch's name, so ``torch.utils.data`` code runs unchanged; ``benchmark``
(Timer, Compare), ``tensorboard`` (SummaryWriter, needs the ``tensorboard``
extra) and ``summary`` (a torchinfo-style model summary) load on first use.

Example::

    >>> import fabric.utils.data, fabric.data
    >>> fabric.utils.data.Dataset is fabric.data.Dataset
    True
"""
from __future__ import annotations

import importlib

from . import data

__all__ = ["data"]  # benchmark, tensorboard and summary load on first use (below)


def __getattr__(name):
    if name in ("benchmark", "tensorboard", "checkpoint"):
        return importlib.import_module(f".{name}", __name__)
    if name == "summary":
        from ._summary import summary

        return summary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
