"""Process-wide loading options, as ``torch.serialization`` has them.

* :func:`set_default_load_endianness`: the byte order assumed for files
  without a ``byteorder`` record (default: little, as PyTorch).
* :class:`set_default_mmap_options`: ``mmap.MAP_PRIVATE`` (default,
  copy-on-write) or ``mmap.MAP_SHARED`` (writes to a tensor loaded with
  ``mmap=True`` go to the file).

Example::

    >>> from fabric import serialization
    >>> serialization.get_default_load_endianness() is None
    True
    >>> serialization.set_default_load_endianness(serialization.LoadEndianness.BIG)
    >>> serialization.get_default_load_endianness()
    <LoadEndianness.BIG: 3>
    >>> serialization.set_default_load_endianness(None)
"""
from __future__ import annotations

import mmap
import sys
from enum import Enum

DEFAULT_PROTOCOL = 2


class SourceChangeWarning(Warning):
    """Warned by PyTorch's legacy loader when a saved module's source changed (fabric reads no legacy files)."""


class LoadEndianness(Enum):
    NATIVE = 1
    LITTLE = 2
    BIG = 3


_state = {"endianness": None, "mmap_flags": getattr(mmap, "MAP_PRIVATE", None)}


def get_default_load_endianness() -> LoadEndianness | None:
    """The byte order assumed for checkpoints without a ``byteorder`` record (None: little)."""
    return _state["endianness"]


def set_default_load_endianness(endianness) -> None:
    """Set the byte order assumed for checkpoints without a ``byteorder`` record."""
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _state["endianness"] = endianness


def fallback_byteorder() -> str:
    e = _state["endianness"]
    if e is LoadEndianness.BIG:
        return "big"
    if e is LoadEndianness.NATIVE:
        return sys.byteorder
    return "little"


def get_default_mmap_options() -> int | None:
    """The mmap flags ``load(..., mmap=True)`` uses (``mmap.MAP_PRIVATE`` unless changed)."""
    return _state["mmap_flags"]


def mmap_is_shared() -> bool:
    return _state["mmap_flags"] == getattr(mmap, "MAP_SHARED", object())


class set_default_mmap_options:
    """Set the mmap flags for ``load(..., mmap=True)``; also a context manager that restores the old ones.

    Example::

        >>> import mmap
        >>> from fabric import serialization
        >>> with serialization.set_default_mmap_options(mmap.MAP_SHARED):
        ...     serialization.get_default_mmap_options() == mmap.MAP_SHARED
        True
        >>> serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
        True
    """

    def __init__(self, flags: int) -> None:
        if sys.platform == "win32":
            raise RuntimeError("Changing the default mmap options is currently not supported for Windows")
        if flags != mmap.MAP_PRIVATE and flags != mmap.MAP_SHARED:
            raise ValueError("Invalid argument in function set_default_mmap_options, "
                             f"expected mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _state["mmap_flags"]
        _state["mmap_flags"] = flags

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc, tb) -> None:
        _state["mmap_flags"] = self.prev
