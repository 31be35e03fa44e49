"""The names a ``weights_only`` load may resolve, and the user's additions.

The default list is PyTorch's (``torch._weights_only_unpickler``): tensor
rebuilders, storage types, dtypes, ``torch.Size``, ``torch.device``,
``OrderedDict``/``Counter``, ``set``, ``complex``, ``bytearray`` and
``_codecs.encode``.  Each PyTorch name maps to the fabric object that plays
its part; a name PyTorch allows but fabric cannot build (quantized dtypes,
sparse rebuilders) maps to a stand-in that raises ``NotImplementedError``
when used, so the accept/refuse decision stays PyTorch's.

Example::

    >>> from fabric import serialization
    >>> class Point:
    ...     pass
    >>> with serialization.safe_globals([Point]):
    ...     Point in serialization.get_safe_globals()
    True
"""
from __future__ import annotations

import codecs
import collections
import functools

from .. import _dtype as D
from .._device import device as _device_cls
from .._tensor import Size, Tensor
from . import _rebuild as R

# modules never allowed, even when a user allow-lists something from them (as PyTorch)
BLOCKED_MODULES = ("sys", "os", "posix", "nt")

# Python 2 names, renamed before the lookup (as PyTorch's weights-only unpickler does)
IMPORT_MAPPING = {"__builtin__": "builtins", "copy_reg": "copyreg", "Queue": "queue", "repr": "reprlib",
                  "_abcoll": "collections.abc", "UserDict": "collections", "UserList": "collections",
                  "UserString": "collections", "whichdb": "dbm", "StringIO": "io", "cStringIO": "io"}
NAME_MAPPING = {
    ("__builtin__", "xrange"): ("builtins", "range"), ("__builtin__", "reduce"): ("functools", "reduce"),
    ("__builtin__", "intern"): ("sys", "intern"), ("__builtin__", "unichr"): ("builtins", "chr"),
    ("__builtin__", "unicode"): ("builtins", "str"), ("__builtin__", "long"): ("builtins", "int"),
    ("itertools", "izip"): ("builtins", "zip"), ("itertools", "imap"): ("builtins", "map"),
    ("itertools", "ifilter"): ("builtins", "filter"), ("itertools", "ifilterfalse"): ("itertools", "filterfalse"),
    ("itertools", "izip_longest"): ("itertools", "zip_longest"),
    ("UserDict", "IterableUserDict"): ("collections", "UserDict"),
    ("UserList", "UserList"): ("collections", "UserList"), ("UserString", "UserString"): ("collections", "UserString"),
    ("__builtin__", "basestring"): ("builtins", "str"), ("exceptions", "StandardError"): ("builtins", "Exception"),
    ("UserDict", "UserDict"): ("collections", "UserDict"),
}

# dtype names PyTorch's loader accepts beyond those fabric has
_OTHER_DTYPES = ("complex32", "uint16", "uint32", "uint64", "bits1x8", "bits2x4",
                 "bits4x2", "bits8", "bits16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                 "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
                 *(f"uint{i}" for i in range(1, 8)), *(f"int{i}" for i in range(1, 8)))
_QSCHEMES = ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
             "per_channel_affine_float_qparams")
_UNSUPPORTED_REBUILDERS = ("_rebuild_qtensor", "_rebuild_meta_tensor_no_storage",
                           "_rebuild_nested_tensor", "_rebuild_wrapper_subclass",
                           "_rebuild_device_tensor_from_numpy")
_LEGACY_TENSOR_TYPES = ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")


class _Unsupported:
    """A value PyTorch's loader accepts (an exotic dtype, a qscheme) that fabric has no object for."""

    __slots__ = ("_name",)

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def __setattr__(self, name, value):
        raise AttributeError(f"'{self!r}' is read-only")

    def __repr__(self):
        return f"torch.{self._name}"


def _get_layout(name):
    import fabric

    layout = getattr(fabric, str(name).rpartition(".")[2], None) if str(name).startswith("torch.") else None
    if layout is None:
        raise KeyError(name)
    return layout


@functools.lru_cache(maxsize=1)
def default_globals() -> dict:
    """``"module.name"`` -> object for every name PyTorch's weights-only loader accepts."""
    from ..nn.parameter import Parameter

    rc = {"collections.OrderedDict": collections.OrderedDict, "collections.Counter": collections.Counter,
          "torch.nn.parameter.Parameter": Parameter, "torch.serialization._get_layout": _get_layout,
          "torch.Size": Size, "torch.Tensor": Tensor, "torch.device": _device_cls, "_codecs.encode": codecs.encode,
          "builtins.bytearray": bytearray, "builtins.set": set, "builtins.complex": complex}
    for name in _OTHER_DTYPES + _QSCHEMES:
        rc[f"torch.{name}"] = _Unsupported(name)
    for d in D.ALL_DTYPES:
        rc[f"torch.{d.name}"] = d
    for storage, dtype_name in R.STORAGE_DTYPES.items():
        rc[f"torch.{storage}"] = R.StorageType(dtype_name)
        if not storage.startswith("Q"):
            rc[f"torch.cuda.{storage}"] = R.StorageType(dtype_name)
    rc["torch.storage.UntypedStorage"] = R.StorageType("uint8")
    rc["torch.storage.TypedStorage"] = R.unsupported("storage.TypedStorage")
    for kind in _LEGACY_TENSOR_TYPES:
        for mod in ("torch", "torch.cuda", "torch.sparse", "torch.cuda.sparse"):
            if not (mod.endswith("sparse") and kind == "Bool"):
                rc[f"{mod}.{kind}Tensor"] = R.unsupported(f"{mod[6:] + '.' if mod != 'torch' else ''}{kind}Tensor")
    for f in (R._rebuild_tensor, R._rebuild_tensor_v2, R._rebuild_tensor_v3, R._rebuild_parameter,
              R._rebuild_parameter_with_state, R._rebuild_device_tensor_from_cpu_tensor):
        rc[f"torch._utils.{f.__name__}"] = f
    for name in _UNSUPPORTED_REBUILDERS:
        rc[f"torch._utils.{name}"] = R.unsupported(f"_utils.{name}")
    rc["torch._tensor._rebuild_from_type_v2"] = R._rebuild_from_type_v2
    from ..sparse._io import rebuild_sparse_tensor
    rc["torch._utils._rebuild_sparse_tensor"] = rebuild_sparse_tensor
    return rc


# --- the user's additions (torch.serialization.add_safe_globals & co.) ---------------

_user_globals: set = set()


def _full_names(entry):
    """The pickle names an allow-list entry answers to: its own, and the ``torch.`` spelling of a fabric one."""
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                             f"length: {len(entry)}")
        if type(entry[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                            f"{type(entry[1])}")
        return entry[0], [entry[1]]
    name = f"{entry.__module__}.{entry.__qualname__}"
    names = [name]
    if name.startswith("fabric."):
        names.append("torch." + name[len("fabric."):])
    return entry, names


def user_globals() -> dict:
    rc = {}
    for entry in _user_globals:
        obj, names = _full_names(entry)
        for n in names:
            rc[n] = obj
    return rc


def add_safe_globals(safe_globals: list) -> None:
    """Mark globals (classes, functions, or ``(obj, "module.name")`` pairs) as safe for ``weights_only`` load.

    Example::

        >>> from fabric import serialization
        >>> class Config:
        ...     pass
        >>> serialization.add_safe_globals([Config])
        >>> Config in serialization.get_safe_globals()
        True
        >>> serialization.clear_safe_globals()
    """
    global _user_globals
    _user_globals = _user_globals.union(set(safe_globals))


def get_safe_globals() -> list:
    """The globals added with :func:`add_safe_globals` (or an open :class:`safe_globals` context)."""
    return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    global _user_globals
    _user_globals = set()


class safe_globals:
    """Context manager: allow-list globals for ``weights_only`` load inside the ``with`` block only.

    Example::

        >>> from fabric import serialization
        >>> class Config:
        ...     pass
        >>> with serialization.safe_globals([Config]):
        ...     inside = Config in serialization.get_safe_globals()
        >>> inside, Config in serialization.get_safe_globals()
        (True, False)
    """

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, exc_type, exc, tb):
        global _user_globals
        _user_globals = _user_globals - set(self.safe_globals)
