"""``fabric.utils.benchmark``: ``Timer``, ``Measurement`` and ``Compare``
with PyTorch's API, loops and printed layout (``torch.utils.benchmark``).

Example::

    >>> import fabric
    >>> from fabric.utils.benchmark import Timer, Compare
    >>> x = fabric.ones(64, 64)
    >>> m = Timer("x @ x", globals={"x": x}, label="matmul", sub_label="64").blocked_autorange(min_run_time=0.01)
    >>> m.median > 0 and m.iqr >= 0
    True
"""
from __future__ import annotations

from .common import Measurement, TaskSpec, select_unit, trim_sigfig
from .compare import Colorize, Compare
from .timer import Language, Timer, timer

__all__ = ["Timer", "timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize", "select_unit",
           "trim_sigfig"]
