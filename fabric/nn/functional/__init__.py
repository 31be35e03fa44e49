"""``fabric.nn.functional`` (PyTorch's ``torch.nn.functional``); each
family module appends its import line here."""
from __future__ import annotations

from ._activation import *  # noqa: F403
from ._attention import *  # noqa: F403
from ._conv import *  # noqa: F403
from ._distance import *  # noqa: F403
from ._dropout import *  # noqa: F403
from ._embedding import *  # noqa: F403
from ._linear import *  # noqa: F403
from ._loss import *  # noqa: F403
from ._norm import *  # noqa: F403
from ._pooling import *  # noqa: F403
from ._resample import *  # noqa: F403
from ._shuffle import *  # noqa: F403
