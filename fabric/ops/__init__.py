"""The op catalogue. Each module holds Functions (forward + backward in one
place) and the public functions that call them; everything public is
re-exported here and, where PyTorch has it, installed as a Tensor method.
"""
from __future__ import annotations

from . import (
    arith,
    attributes,
    complex_ops,
    convert,
    indexing,
    inplace,
    join,
    linalg,
    pointwise,
    reduce,
    shape,
    sorting,
    spectral,
)
from ._methods import install_tensor_methods
from ._registry import method_only_names
from .arith import *  # noqa: F403
from .attributes import *  # noqa: F403
from .complex_ops import *  # noqa: F403
from .convert import *  # noqa: F403
from .indexing import *  # noqa: F403
from .inplace import *  # noqa: F403
from .join import *  # noqa: F403
from .linalg import *  # noqa: F403
from .pointwise import *  # noqa: F403
from .reduce import *  # noqa: F403
from .shape import *  # noqa: F403
from .sorting import *  # noqa: F403
from .spectral import *  # noqa: F403

# The helpers behind Tensor's operators and ``Tensor.to`` (``x[k]``, ``x[k] = v``, ``2 / x``): fabric.ops has
# them, fabric does not (PyTorch has no torch.getitem).
_OPERATOR_HELPERS = frozenset({"getitem", "setitem", "rdiv", "to_copy"})

# ``from fabric.ops import *`` exports the ops only, not the submodules, the operator helpers, or the Tensor
# methods that PyTorch has no top-level function for (declared ``top_level=False``: ``Tensor.cumsum_``, no
# ``torch.cumsum_``).
__all__ = sorted({name for _m in (arith, attributes, complex_ops, reduce, shape, join, inplace, convert, sorting,
                                  indexing, linalg, pointwise, spectral)
                  for name in _m.__all__} - method_only_names() - _OPERATOR_HELPERS)

install_tensor_methods()
