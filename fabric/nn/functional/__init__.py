"""``fabric.nn.functional`` (PyTorch's ``torch.nn.functional``); each
family module appends its import line here."""
from __future__ import annotations
from ._linear import *  # noqa: F401,F403
from ._embedding import *  # noqa: F401,F403
from ._dropout import *  # noqa: F401,F403
from ._norm import *  # noqa: F401,F403
from ._activation import *  # noqa: F401,F403
from ._distance import *  # noqa: F401,F403
from ._loss import *  # noqa: F401,F403
from ._conv import *  # noqa: F401,F403
from ._pooling import *  # noqa: F401,F403
from ._resample import *  # noqa: F401,F403
from ._attention import *  # noqa: F401,F403
from ._shuffle import *  # noqa: F401,F403
