"""``fabric.utils.tensorboard``: ``SummaryWriter`` writing TensorBoard event
files (the optional ``tensorboard`` extra: ``pip install fabric[tensorboard]``).

Example::

    >>> import tempfile
    >>> from fabric.utils.tensorboard import SummaryWriter
    >>> with SummaryWriter(tempfile.mkdtemp()) as w:
    ...     for step in range(3):
    ...         w.add_scalar("loss", 1.0 / (step + 1), step)
"""
from __future__ import annotations

try:
    import tensorboard  # noqa: F401  # pyright: ignore[reportMissingImports] (optional)
except ImportError as e:  # the message PyTorch gives, with fabric's extra
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above: "
                      "pip install tensorboard (or fabric[tensorboard])") from e

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
