"""How a worker's batch reaches the main process: the array bytes of every
CPU Tensor and NumPy array in the batch go into one POSIX shared-memory
segment; only the structure (and anything that is not an array) is pickled
and sent through a pipe.

The worker writes the segment and closes it; the main process maps it, unlinks
the name at once (the memory lives on as long as the mapping) and rebuilds the
arrays as views of the mapping, so the main process copies nothing. Names
carry a per-iterator prefix, so whatever a dead worker or an abandoned message
leaves behind can be found and unlinked at shutdown (:func:`unlink_prefix`).

Where POSIX shared memory is missing (Windows) the whole batch is pickled.

Example::

    >>> import numpy as np
    >>> from fabric.data import _shm
    >>> msg = _shm.pack({"x": np.arange(3)}, _shm.new_prefix() + "doc")
    >>> _shm.unpack(*msg)["x"]
    array([0, 1, 2])
"""
from __future__ import annotations

import glob
import io
import mmap
import os
import pickle
import secrets

import numpy as np

from .._tensor import Tensor

try:
    import _posixshmem
except ImportError:  # Windows
    _posixshmem = None

__all__ = ["available", "new_prefix", "pack", "unpack", "unlink", "unlink_prefix"]

_ALIGN = 64
_SHM_DIR = "/dev/shm"
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
available = _posixshmem is not None


def new_prefix() -> str:
    """A name prefix unique to this process and call."""
    return f"/fdl{os.getpid():x}_{secrets.token_hex(4)}_"


class _Packer(pickle.Pickler):
    """Pickles ``obj`` with its arrays replaced by (offset, shape, dtype)
    references into the segment; collects the arrays to copy there."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays = []
        self.nbytes = 0
        self._seen = {}

    def persistent_id(self, obj):
        cls = obj.__class__
        if cls is Tensor:
            arr = obj._data
            if arr.__class__ is not np.ndarray:  # CUDA tensors take the ordinary (host copy) path
                return None
            kind = "t" if not obj._requires_grad else "g"
        elif cls is np.ndarray:
            arr, kind = obj, "a"
        else:
            return None
        if arr.dtype.hasobject:
            return None
        pid = self._seen.get(id(obj))
        if pid is None:
            off = -(-self.nbytes // _ALIGN) * _ALIGN
            self.nbytes = off + arr.nbytes
            pid = self._seen[id(obj)] = (kind, len(self.arrays), off, arr.shape, arr.dtype)
            self.arrays.append((arr, off))
        return pid


class _Unpacker(pickle.Unpickler):
    def __init__(self, file, mm):
        super().__init__(file)
        self.mm = mm
        self._made = {}

    def persistent_load(self, pid):
        kind, key, off, shape, dtype = pid
        obj = self._made.get(key)
        if obj is None:
            if self.mm is None:  # every array is empty
                arr = np.empty(shape, dtype)
            else:
                arr = np.ndarray(shape, dtype, buffer=self.mm, offset=off)
            obj = arr if kind == "a" else Tensor._make(arr, kind == "g")
            self._made[key] = obj
        return obj


def _write(fd: int, arr: np.ndarray, off: int) -> None:
    view = memoryview(np.ascontiguousarray(arr)).cast("B")
    while len(view):
        n = os.pwrite(fd, view, off)
        view, off = view[n:], off + n


def pack(obj, name: str):
    """``(name or None, size, payload)`` for :func:`unpack`: the arrays of
    ``obj`` are written to a new shared-memory segment called ``name``."""
    buf = io.BytesIO()
    if not available:
        pickle.dump(obj, buf, protocol=pickle.HIGHEST_PROTOCOL)
        return None, 0, buf.getvalue()
    packer = _Packer(buf)
    packer.dump(obj)
    payload = buf.getvalue()
    size = packer.nbytes
    if size == 0:
        return None, 0, payload
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    try:
        os.ftruncate(fd, size)
        for arr, off in packer.arrays:
            if arr.nbytes:
                _write(fd, arr, off)
    except BaseException:
        _posixshmem.shm_unlink(name)
        raise
    finally:
        os.close(fd)
    return name, size, payload


def unpack(name, size: int, payload: bytes):
    """Rebuild what :func:`pack` sent; the arrays are views of the segment,
    whose name is unlinked here (the memory is freed with the last view)."""
    if name is None:
        return _Unpacker(io.BytesIO(payload), None).load() if available else pickle.loads(payload)
    fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
    try:
        mm = mmap.mmap(fd, size, flags=_MAP_FLAGS)
    finally:
        os.close(fd)
        _posixshmem.shm_unlink(name)
    return _Unpacker(io.BytesIO(payload), mm).load()


def unlink(name) -> None:
    """Unlink a segment that will never be unpacked (missing ones are fine)."""
    if name is not None and available:
        try:
            _posixshmem.shm_unlink(name)
        except FileNotFoundError:
            pass


def unlink_prefix(prefix: str) -> int:
    """Unlink every segment whose name starts with ``prefix`` (Linux, where
    the segments are listed under /dev/shm); returns how many were found."""
    if not available or not os.path.isdir(_SHM_DIR):
        return 0
    found = glob.glob(os.path.join(_SHM_DIR, glob.escape(prefix.lstrip("/")) + "*"))
    for path in found:
        unlink("/" + os.path.basename(path))
    return len(found)
