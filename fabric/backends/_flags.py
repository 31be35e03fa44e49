"""Global switches behind ``torch.backends.*`` (``fabric.backends.cudnn`` ...).

A flag module's attributes that PyTorch reads and assigns as plain module
attributes (``torch.backends.cudnn.benchmark = True``) are properties of the
module's class: :class:`FlagModule` subclasses declare them with
:func:`flag`, and each flag module makes itself an instance of its class.

What the flags do in fabric (see docs/compat.md, "torch.backends"):

* TF32 for float32 matrix products on the GPU: ``backends.cuda.matmul.allow_tf32``
  and ``set_float32_matmul_precision`` are one setting, as in PyTorch, and
  it switches CuPy's float32 compute type to TF32;
* ``backends.cudnn.deterministic`` asks for deterministic kernels like
  ``use_deterministic_algorithms(True)``: :func:`deterministic_kernels` is
  what a kernel with an atomics-based and an ordered variant consults;
* the rest are recorded and read back, and change nothing: fabric has no
  cuDNN, oneDNN, MPS, opt_einsum or flash-attention kernels to steer.

Example::

    >>> from fabric.backends import _flags
    >>> _flags.set_float32_matmul_precision("high")
    >>> _flags.allow_tf32()
    True
    >>> _flags.set_float32_matmul_precision("highest")
"""
from __future__ import annotations

import contextlib
import sys
import types

__all__ = ["FlagModule", "flag", "set_float32_matmul_precision", "get_float32_matmul_precision", "allow_tf32",
           "deterministic_kernels", "swap_flags"]


class FlagModule(types.ModuleType):
    """A module whose flags are properties (``module.flag = value`` runs a setter)."""


def flag(name: str, default, doc: str = "", on_set=None):
    """A module-level flag stored in the module's ``_state`` dict; ``on_set(value)`` runs after a change."""

    def get(module):
        return module._state.get(name, default)

    def set_(module, value):
        module._state[name] = value
        if on_set is not None:
            on_set(value)

    return property(get, set_, doc=doc)


def make_flag_module(name: str, cls: type) -> None:
    """Turn the module ``name`` into an instance of ``cls`` (a :class:`FlagModule`)."""
    module = sys.modules[name]
    module.__dict__.setdefault("_state", {})
    module.__class__ = cls


@contextlib.contextmanager
def swap_flags(module, **values):
    """Set ``values`` (those not None) on ``module`` and restore the old ones on exit."""
    old = {k: getattr(module, k) for k, v in values.items() if v is not None}
    try:
        for k, v in values.items():
            if v is not None:
                setattr(module, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


# --- float32 matrix products: TF32 ---------------------------------------------------------------------------

_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """``'highest'`` (float32), ``'high'`` / ``'medium'`` (TF32 allowed on the GPU)."""
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}")
    changed = (precision == "highest") != (_matmul_precision == "highest")
    _matmul_precision = precision
    if changed:
        _apply_cupy_tf32(precision != "highest")


def get_float32_matmul_precision() -> str:
    return _matmul_precision


def allow_tf32() -> bool:
    return _matmul_precision != "highest"


def _apply_cupy_tf32(on: bool) -> None:
    """Set CuPy's compute type for float32 products, once fabric's CuPy backend
    exists (CuPy checks the device; :func:`fabric.backends.get_cupy_backend`
    applies the setting when it makes the backend). With TF32 off it goes
    back to CuPy's default (which ``CUPY_TF32=1`` also turns to TF32)."""
    from . import _cupy_instance

    if _cupy_instance is None:
        return
    import numpy as np
    from cupy._core import _routines_linalg as linalg

    linalg.set_compute_type(np.float32, linalg.COMPUTE_TYPE_TF32 if on else linalg.COMPUTE_TYPE_DEFAULT)


def apply_to_new_cupy_backend() -> None:
    if allow_tf32():
        _apply_cupy_tf32(True)


# --- deterministic algorithms ---------------------------------------------------------------------------------

_deterministic = False
_deterministic_warn_only = False


def use_deterministic_algorithms(mode, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (PyTorch's switch): fabric's CPU ops are deterministic; on CUDA,
    ``True`` switches embedding and max-pool backward from atomics to sort + segment sums (docs/cuda.md).
    ``backends.cudnn.deterministic`` is a separate flag, as in PyTorch."""
    global _deterministic, _deterministic_warn_only
    _deterministic, _deterministic_warn_only = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic


def deterministic_kernels() -> bool:
    """Whether deterministic kernels are asked for (``use_deterministic_algorithms(True)``
    or ``backends.cudnn.deterministic = True``)."""
    from . import cudnn

    return _deterministic or cudnn.deterministic
