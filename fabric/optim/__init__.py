"""``fabric.optim``: optimizers and learning-rate schedulers (PyTorch's ``torch.optim``).

Example::

    >>> import fabric
    >>> w = fabric.nn.Parameter(fabric.zeros(2))
    >>> opt = fabric.optim.Adam([w], lr=0.1)
    >>> sched = fabric.optim.lr_scheduler.StepLR(opt, step_size=10)
"""
from __future__ import annotations

from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
from .adam import Adam, AdamW, Adamax, NAdam, RAdam  # noqa: F401
from .rmsprop import RMSprop, Adagrad, Adadelta, Rprop, ASGD  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401

from . import lr_scheduler  # noqa: F401
from . import swa_utils  # noqa: F401
