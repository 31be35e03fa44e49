"""The op catalogue. Each module holds Functions (forward + backward in one
place) and the public functions that call them; everything public is
re-exported here and, where PyTorch has it, installed as a Tensor method.
"""
from __future__ import annotations

from .arith import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .join import *  # noqa: F401,F403
from .inplace import *  # noqa: F401,F403
from .convert import *  # noqa: F401,F403
from . import arith, reduce, shape, join, inplace, convert
# catalogue modules: one line each
from .sorting import *  # noqa: F401,F403
from . import sorting
from .indexing import *  # noqa: F401,F403
from . import indexing
from .linalg import *  # noqa: F401,F403
from . import linalg
from .pointwise import *  # noqa: F401,F403
from . import pointwise
from .more import *  # noqa: F401,F403
from . import more
from ._methods import install_tensor_methods

# ``from fabric.ops import *`` exports the ops only, not the submodules.
__all__ = sorted({name for _m in (arith, reduce, shape, join, inplace, convert, sorting, indexing, linalg, pointwise)
                  for name in _m.__all__})
__all__ = sorted(set(__all__) | set(more.TOP_LEVEL))  # more.py: only the names torch has at top level

install_tensor_methods()
