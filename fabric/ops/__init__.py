"""The op catalogue. Each module holds Functions (forward + backward in one
place) and the public functions that call them; everything public is
re-exported here and, where PyTorch has it, installed as a Tensor method.
"""
from __future__ import annotations

from . import (
    arith,
    complex_ops,
    convert,
    indexing,
    inplace,
    join,
    linalg,
    more,
    pointwise,
    reduce,
    shape,
    sorting,
    spectral,
)
from ._methods import install_tensor_methods
from .arith import *  # noqa: F403
from .complex_ops import *  # noqa: F403
from .convert import *  # noqa: F403
from .indexing import *  # noqa: F403
from .inplace import *  # noqa: F403
from .join import *  # noqa: F403
from .linalg import *  # noqa: F403
from .more import *  # noqa: F403
from .pointwise import *  # noqa: F403
from .reduce import *  # noqa: F403
from .shape import *  # noqa: F403

# catalogue modules: one line each
from .sorting import *  # noqa: F403
from .spectral import *  # noqa: F403

# ``from fabric.ops import *`` exports the ops only, not the submodules.
__all__ = sorted({name for _m in (arith, complex_ops, reduce, shape, join, inplace, convert, sorting, indexing, linalg,
                                  pointwise, spectral)
                  for name in _m.__all__})
__all__ = sorted(set(__all__) | set(more.TOP_LEVEL))  # more.py: only the names torch has at top level

install_tensor_methods()
