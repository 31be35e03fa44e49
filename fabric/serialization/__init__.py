"""``fabric.save`` / ``fabric.load``: checkpoints in PyTorch's zip format, with PyTorch 2.x semantics.

* ``save`` pickles any picklable object (a state dict, a whole ``nn.Module``,
  user classes); tensors are written exactly as ``torch.save`` writes them,
  so state dicts and containers of tensors load with
  ``torch.load(..., weights_only=True)``, and PyTorch's files load here
  without torch installed.
* ``load`` is weights-only by default: the file may hold tensors,
  parameters, numbers, strings, ``None``, dtypes, devices and containers of
  them (PyTorch's allow-list), plus whatever :func:`add_safe_globals` adds.
  Anything else is refused with PyTorch's ``UnpicklingError`` text before it
  is built.  A weights-only load can neither run code from the file nor
  change any object it did not create.
* ``load(..., weights_only=False)`` (or ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``
  when the argument is not passed) is a full unpickle: **it can run
  arbitrary code from the file; use it only for files you trust.**
* Path saves are atomic and keep the target's permissions; symlinks are
  written through; devices and FIFOs are written in place (see
  :mod:`._files`).  Everything read from a file is checked before memory is
  allocated for it (see :mod:`._archive`).

Example::

    >>> import io, fabric
    >>> buf = io.BytesIO()
    >>> fabric.save({"w": fabric.ones(2)}, buf)
    >>> _ = buf.seek(0)
    >>> fabric.load(buf)["w"]
    tensor([1., 1.])
"""
from __future__ import annotations

import contextlib
import io
import os
import pickle
import warnings

from . import _allowlist, _files, _options
from . import _pickler as P
from ._allowlist import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._archive import Archive
from ._loader import StorageLoader, full_unpickler
from ._options import (
    DEFAULT_PROTOCOL,
    LoadEndianness,
    SourceChangeWarning,
    get_default_load_endianness,
    get_default_mmap_options,
    set_default_load_endianness,
    set_default_mmap_options,
)
from ._unpickler import UNSAFE_MESSAGE, UnpicklingError, WeightsUnpickler, weights_only_message

__all__ = ["save", "load", "UnpicklingError", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals", "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL", "LoadEndianness",
           "SourceChangeWarning", "get_default_load_endianness", "set_default_load_endianness",
           "get_default_mmap_options", "set_default_mmap_options"]

_TRUE = ("1", "y", "yes", "true")


# --- save --------------------------------------------------------------------------

def _prefix_for(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem if stem and stem.isidentifier() else "archive"


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` (anything picklable) to a path or a binary file object, in PyTorch's zip format.

    Example::

        >>> import io, fabric
        >>> buf = io.BytesIO()
        >>> fabric.save(fabric.nn.Linear(2, 1), buf)   # a whole module: load it with weights_only=False
        >>> _ = buf.seek(0)
        >>> type(fabric.load(buf, weights_only=False)).__name__
        'Linear'
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("fabric.save writes with Python's pickle; other pickle_module values (dill ...) "
                                  "are not supported")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("fabric.save writes only the zip format (_use_new_zipfile_serialization=True); "
                                  "the legacy pre-1.6 format is not supported")
    is_path = isinstance(f, (str, os.PathLike))
    if not is_path and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    pickled, table = P.dump_pickle(obj, pickle_protocol)  # fails here, before any file is touched
    if is_path:
        with _files.open_for_save(f) as fh:
            _write_zip(fh, pickled, table, _prefix_for(os.fspath(f)), not _disable_byteorder_record)
    else:
        _write_zip(f, pickled, table, "archive", not _disable_byteorder_record)


def _write_zip(fh, pickled, table, prefix, byteorder=True):
    P.write_zip(fh, pickled, table, prefix, byteorder)


# --- load ---------------------------------------------------------------------------

def _resolve_weights_only(weights_only, pickle_module):
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force_on = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    force_off = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    if force_on and force_off:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force_on:
        weights_only = True
    elif force_off and not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        weights_only = False
    return weights_only


def _check_is_checkpoint(f):
    """Clear errors for empty, legacy and non-zip files (``f`` is positioned where it started)."""
    start = f.tell()
    head = f.read(4)
    f.seek(start)
    if not head:
        raise RuntimeError("fabric.load: the file is empty")
    if head != b"PK\x03\x04":
        if head[:1] == b"\x80":
            raise RuntimeError("fabric.load: this is a legacy (pre-1.6, non-zip) PyTorch checkpoint, which fabric "
                               "does not read; re-save it with a current PyTorch")
        raise RuntimeError("fabric.load: not a fabric/PyTorch checkpoint (expected a zip archive); the file may be "
                           "truncated or corrupted")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load a checkpoint written by :func:`save` or by ``torch.save``.

    ``weights_only`` (default True) restricts the file to tensors, numbers,
    strings, dtypes, devices and containers of them, plus the globals allowed
    with :func:`add_safe_globals`.  ``weights_only=False`` unpickles anything:
    it can run arbitrary code, so use it only for files you trust.
    ``map_location`` is a device string, a ``device``, a dict mapping saved
    locations to new ones, or ``callable(storage, location)`` receiving each
    storage as a flat 1-D tensor; ``mmap=True`` maps the file's storages
    instead of reading them (copy-on-write).

    .. warning::
        With ``weights_only=False`` this function uses the ``pickle`` module,
        which is known to be insecure: it is possible to construct malicious
        pickle data that executes arbitrary code while it is unpickled. Never
        load data that could have come from an untrusted source, or that could
        have been tampered with, with ``weights_only=False``. Only load data
        you trust.

    Example::

        >>> import io, fabric
        >>> buf = io.BytesIO()
        >>> fabric.save({"w": fabric.ones(2)}, buf)
        >>> _ = buf.seek(0)
        >>> fabric.load(buf, map_location="cpu")["w"].device
        device(type='cpu')
    """
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    elif pickle_module is None:
        pickle_module = pickle
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    pickle_load_args.setdefault("encoding", "utf-8")
    is_path = isinstance(f, (str, os.PathLike))
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    mode = "r+b" if mmap and _options.mmap_is_shared() else "rb"
    with open(f, mode) if is_path else contextlib.nullcontext(f) as fh:
        return _load_from(fh, map_location, pickle_module, weights_only, bool(mmap), pickle_load_args)


def _load_from(fh, map_location, pickle_module, weights_only, mmap, pickle_load_args):
    if not hasattr(fh, "seek") or (hasattr(fh, "seekable") and not fh.seekable()):
        fh = io.BytesIO(fh.read())
    _check_is_checkpoint(fh)
    archive = Archive(fh, mmap=mmap, shared=_options.mmap_is_shared())
    if archive.has("constants.pkl") and weights_only:
        raise RuntimeError("Cannot use ``weights_only=True`` with TorchScript archives passed to "
                           "``torch.load``. " + UNSAFE_MESSAGE)
    byteorder = _options.fallback_byteorder()
    if archive.has("byteorder"):
        raw = archive.read("byteorder")
        if raw not in (b"little", b"big"):
            raise ValueError("Unknown endianness type: " + raw.decode(errors="replace"))
        byteorder = raw.decode()
    pickled = io.BytesIO(archive.read("data.pkl"))
    loader = StorageLoader(archive, map_location, byteorder)
    if weights_only:
        try:
            return WeightsUnpickler(pickled, encoding=pickle_load_args["encoding"], persistent_load=loader,
                                    max_alloc=archive.length).load()
        except UnpicklingError as e:
            raise UnpicklingError(weights_only_message(str(e))) from None
    unpickler = full_unpickler(pickle_module)(pickled, **pickle_load_args)
    unpickler.persistent_load = loader
    return unpickler.load()


def get_unsafe_globals_in_checkpoint(f) -> list:
    """The globals in a checkpoint's pickle that a weights-only load would refuse (nothing is unpickled).

    Example::

        >>> import io, fabric
        >>> buf = io.BytesIO()
        >>> fabric.save({"w": fabric.ones(1)}, buf)
        >>> _ = buf.seek(0)
        >>> fabric.serialization.get_unsafe_globals_in_checkpoint(buf)
        []
    """
    with open(f, "rb") if isinstance(f, (str, os.PathLike)) else contextlib.nullcontext(f) as fh:
        data = io.BytesIO(Archive(fh).read("data.pkl"))
    allowed = set(_allowlist.default_globals()) | set(_allowlist.user_globals())
    found = set()
    import pickletools

    for op, arg, _pos in pickletools.genops(data):
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
            found.add(f"{module}.{name}")
    return sorted(found - allowed)

