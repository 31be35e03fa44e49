"""``fabric.optim``: optimizers and learning-rate schedulers (PyTorch's ``torch.optim``).

Example::

    >>> import fabric
    >>> w = fabric.nn.Parameter(fabric.zeros(2))
    >>> opt = fabric.optim.Adam([w], lr=0.1)
    >>> sched = fabric.optim.lr_scheduler.StepLR(opt, step_size=10)
"""
from __future__ import annotations

from . import (
    lr_scheduler,  # noqa: F401
    swa_utils,  # noqa: F401
)
from .adam import Adam, Adamax, AdamW, NAdam, RAdam  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .rmsprop import ASGD, Adadelta, Adagrad, RMSprop, Rprop  # noqa: F401
from .sgd import SGD  # noqa: F401
