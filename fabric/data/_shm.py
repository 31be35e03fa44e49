"""How a worker's batch reaches the main process: the array bytes of every
CPU Tensor and NumPy array in the batch go into POSIX shared memory; only the
structure (and whatever is not an array) is pickled and sent through a pipe.
The main process rebuilds the arrays as views of the shared memory: it copies
nothing.

Each worker keeps a small pool of reusable shared-memory *slots*
(:class:`SlotWriter`). A batch is copied into a free slot; the main process
(:class:`Receiver`) maps that slot for the batch alone, and when the last
array of the batch is garbage collected the mapping goes away and the slot's
flag in a shared control block is set back to free, so the worker reuses it:
no new pages, no file creation per batch. When every slot is still held (the
user keeps many batches alive) the worker writes a one-shot segment instead,
which the main process unlinks as soon as it has mapped it.

Segment names carry a per-iterator prefix. The main process unlinks each slot
name the first time it opens it, and at shutdown unlinks whatever is left
under the prefix (:func:`unlink_prefix`), so a killed worker or an abandoned
message leaks nothing. Where POSIX shared memory is missing (Windows) batches
are pickled whole.

Example::

    >>> import numpy as np
    >>> from fabric.data import _shm
    >>> prefix = _shm.new_prefix()
    >>> rx = _shm.Receiver(prefix, num_workers=1, max_slots=2)
    >>> tx = _shm.SlotWriter(prefix, 0, 2)
    >>> rx.unpack(tx.pack({"x": np.arange(3)}))["x"]
    array([0, 1, 2])
    >>> tx.close(); rx.close()
"""
from __future__ import annotations

import glob
import io
import mmap
import os
import pickle
import weakref

import numpy as np

from .._tensor import Tensor

try:
    import _posixshmem
except ImportError:  # Windows
    _posixshmem = None

__all__ = ["available", "new_prefix", "SlotWriter", "Receiver", "unlink", "unlink_prefix"]

_ALIGN = 64
_SLOT_ROUND = 1 << 16
_SHM_DIR = "/dev/shm"
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
available = _posixshmem is not None


def new_prefix() -> str:
    """A name prefix unique to this process and call."""
    return f"/fdl{os.getpid():x}_{os.urandom(4).hex()}_"


def _create(name: str, size: int) -> int:
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        _posixshmem.shm_unlink(name)
        raise
    return fd


def unlink(name) -> None:
    """Unlink a segment (one that is already gone is fine)."""
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


_DTYPE_KEYS = {}


def _dtype_key(dtype: np.dtype):
    """``dtype.str`` when it names the dtype exactly (pickling a dtype object
    costs more than the rest of a batch's metadata), else the dtype."""
    key = _DTYPE_KEYS.get(dtype)
    if key is None:
        key = _DTYPE_KEYS[dtype] = dtype.str if np.dtype(dtype.str) == dtype else dtype
    return key


class _Packer(pickle.Pickler):
    """Pickles ``obj`` with its arrays replaced by references (key, offset,
    shape, dtype) into one shared block; collects the arrays to copy there."""

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
            kind = "g" if obj._requires_grad else "t"
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
            pid = self._seen[id(obj)] = (kind, len(self.arrays), off, arr.shape, _dtype_key(arr.dtype))
            self.arrays.append((arr, off))
        return pid


class _Unpacker(pickle.Unpickler):
    def __init__(self, file, buffer):
        super().__init__(file)
        self.buffer = buffer
        self._made = {}

    def persistent_load(self, pid):
        kind, key, off, shape, dtype = pid
        obj = self._made.get(key)
        if obj is None:
            if self.buffer is None:  # every array is empty
                arr = np.empty(shape, dtype)
            else:
                arr = np.ndarray(shape, dtype, buffer=self.buffer, offset=off)
            obj = arr if kind == "a" else Tensor._make(arr, kind == "g")
            self._made[key] = obj
        return obj


def _copy_into(mm, packer) -> None:
    for arr, off in packer.arrays:
        if arr.nbytes:
            np.copyto(np.ndarray(arr.shape, arr.dtype, buffer=mm, offset=off), arr, casting="no")


class SlotWriter:
    """The worker side: packs batches into this worker's slots."""

    def __init__(self, prefix: str, worker_id: int, max_slots: int):
        self.prefix, self.worker_id, self.max_slots = prefix, worker_id, max_slots
        self.slots = []  # [name, capacity, fd, mmap]
        self.created = []  # slot and one-shot names, unlinked if the parent dies before opening them
        self._seq = 0
        self._flags = None
        if available:
            fd = _posixshmem.shm_open(prefix + "ctl", os.O_RDWR, mode=0o600)
            try:
                self._control = mmap.mmap(fd, 0)
            finally:
                os.close(fd)
            base = worker_id * max_slots
            self._flags = np.ndarray((max_slots,), np.uint8, buffer=self._control, offset=base)

    def _name(self, tag: str) -> str:
        self._seq += 1
        name = f"{self.prefix}{self.worker_id}{tag}{self._seq}"
        self.created.append(name)
        del self.created[:-4 * self.max_slots]
        return name

    def _slot_for(self, size: int):
        """Index of a free slot that can hold ``size`` bytes (made or grown
        as needed), or None when every slot is busy."""
        flags = self._flags
        small = None
        for k, slot in enumerate(self.slots):
            if flags[k] == 0:
                if slot[1] >= size:
                    return k
                small = k
        if small is None and len(self.slots) >= self.max_slots:
            return None
        cap = -(-size // _SLOT_ROUND) * _SLOT_ROUND
        name = self._name("s")
        fd = _create(name, cap)
        try:
            mm = mmap.mmap(fd, cap)
        except BaseException:
            os.close(fd)
            unlink(name)
            raise
        if small is None:
            self.slots.append([name, cap, fd, mm])
            return len(self.slots) - 1
        old = self.slots[small]
        old[3].close()
        os.close(old[2])
        unlink(old[0])  # the main process may still map it; the memory lives until it lets go
        self.slots[small] = [name, cap, fd, mm]
        return small

    def pack(self, obj):
        """A message for :meth:`Receiver.unpack`: ``(worker id, slot index or
        None, segment name or None, size, payload)``."""
        buf = io.BytesIO()
        if not available:
            pickle.dump(obj, buf, protocol=pickle.HIGHEST_PROTOCOL)
            return self.worker_id, None, None, 0, buf.getvalue()
        packer = _Packer(buf)
        packer.dump(obj)
        payload, size = buf.getvalue(), packer.nbytes
        if size == 0:
            return self.worker_id, None, None, 0, payload
        k = self._slot_for(size)
        if k is not None:
            self._flags[k] = 1
            name, _, _, mm = self.slots[k]
            _copy_into(mm, packer)
            return self.worker_id, k, name, size, payload
        name = self._name("_")  # every slot is held by the main process: a one-shot segment
        fd = _create(name, size)
        try:
            mm = mmap.mmap(fd, size)
            try:
                _copy_into(mm, packer)
            finally:
                mm.close()
        except BaseException:
            unlink(name)
            raise
        finally:
            os.close(fd)
        return self.worker_id, None, name, size, payload

    def close(self, unlink_created: bool = False) -> None:
        for _, _, fd, mm in self.slots:
            mm.close()
            os.close(fd)
        self.slots = []
        if unlink_created:  # the main process is gone: nobody else will clean up
            for name in self.created + [self.prefix + "ctl"]:
                unlink(name)
            unlink_prefix(self.prefix)


def _free(flags, index, pid) -> None:
    if os.getpid() == pid:  # not in a forked copy that happened to collect the batch
        flags[index] = 0


class Receiver:
    """The main side: owns the control block (one free/busy byte per slot)
    and rebuilds batches as views of the slots."""

    def __init__(self, prefix: str, num_workers: int, max_slots: int):
        self.prefix, self.max_slots = prefix, max_slots
        self._fds = {}  # slot name -> fd (the name is unlinked once opened)
        self._slot_name = {}  # (worker, slot) -> current name
        self.flags = None
        if available:
            size = max(1, num_workers * max_slots)
            fd = _create(prefix + "ctl", size)
            try:
                self._control = mmap.mmap(fd, size)
            finally:
                os.close(fd)
            self.flags = np.ndarray((size,), np.uint8, buffer=self._control)

    def _slot_fd(self, worker_id: int, slot: int, name: str) -> int:
        fd = self._fds.get(name)
        if fd is None:
            fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
            unlink(name)
            old = self._slot_name.get((worker_id, slot))
            if old is not None:  # the worker grew this slot: its old memory goes with its last mapping
                os.close(self._fds.pop(old))
            self._slot_name[(worker_id, slot)] = name
            self._fds[name] = fd
        return fd

    def unpack(self, message):
        """Rebuild a batch from a :meth:`SlotWriter.pack` message."""
        worker_id, slot, name, size, payload = message
        if not available:
            return pickle.loads(payload)
        if name is None:
            return _Unpacker(io.BytesIO(payload), None).load()
        if slot is None:
            fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
            try:
                mm = mmap.mmap(fd, size, flags=_MAP_FLAGS)
            finally:
                os.close(fd)
                unlink(name)
            return _Unpacker(io.BytesIO(payload), mm).load()
        mm = mmap.mmap(self._slot_fd(worker_id, slot, name), size, flags=_MAP_FLAGS)
        # the slot goes back to the worker when the batch's last array (so this mapping) is gone
        weakref.finalize(mm, _free, self.flags, worker_id * self.max_slots + slot, os.getpid()).atexit = False
        return _Unpacker(io.BytesIO(payload), mm).load()

    def discard(self, message) -> None:
        """Drop a message without building its batch."""
        worker_id, slot, name, _, _ = message
        if name is None:
            return
        if slot is None:
            unlink(name)
        else:
            self._slot_fd(worker_id, slot, name)
            self.flags[worker_id * self.max_slots + slot] = 0

    def close(self) -> None:
        """Close the slot files and unlink every name under the prefix
        (batches still alive keep their memory until they are collected)."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        unlink_prefix(self.prefix)
