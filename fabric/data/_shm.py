"""How a worker's batch reaches the main process: the array bytes of every
CPU Tensor and NumPy array in the batch go into shared memory; only the
structure (and whatever is not an array) is pickled and sent through the
worker's socket. The main process rebuilds the arrays as views of the shared
memory: it copies nothing.

Each worker keeps a small pool of reusable shared-memory *slots*
(:class:`SlotWriter`). A batch is copied into a free slot; the main process
(:class:`Receiver`) maps each slot once and builds the batch's arrays as views
of a per-batch lease; when the last array of the batch is garbage collected
the lease's finalizer sets the slot's flag in a shared control block back to
free, so the worker reuses it: no new pages, mappings or files per batch.
When every slot is still held (the user keeps many batches alive) the worker
uses a one-shot block instead.

The shared memory has no name anywhere: it is an anonymous file
(``memfd_create``; elsewhere a POSIX segment unlinked right after creation)
whose descriptor travels over the worker's Unix socket (``SCM_RIGHTS``), once
per slot. So nothing can be left behind in ``/dev/shm``, even when every
process involved is killed; the memory is freed with the last descriptor and
mapping. Where this is missing (Windows) batches are pickled whole.

Example::

    >>> import multiprocessing, numpy as np
    >>> from fabric.data import _shm
    >>> main_end, worker_end = multiprocessing.Pipe()
    >>> rx = _shm.Receiver(num_workers=1, max_slots=2)
    >>> rx.send_control(main_end, 0)
    >>> tx = _shm.SlotWriter(worker_end, 0, 2)
    >>> tx.send(7, {"x": np.arange(3)})
    >>> idx, message = main_end.recv()
    >>> rx.unpack(main_end, message)["x"]
    array([0, 1, 2])
    >>> tx.close(); rx.close()
"""
from __future__ import annotations

import io
import mmap
import os
import pickle
import weakref

import numpy as np

from .._shared_memory import available, new_shared_fd
from .._tensor import Tensor

try:
    import _posixshmem
    from multiprocessing.reduction import recv_handle, send_handle
except ImportError:  # Windows
    _posixshmem = None

__all__ = ["available", "SlotWriter", "Receiver"]

_ALIGN = 64
_SLOT_ROUND = 1 << 16
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)


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
    """The worker side: packs batches into this worker's slots and sends them
    through ``conn`` (its end of a duplex ``multiprocessing.Pipe``)."""

    def __init__(self, conn, worker_id: int, max_slots: int):
        self.conn, self.worker_id, self.max_slots = conn, worker_id, max_slots
        self.slots = []  # [capacity, fd, mmap]
        self._flags = None
        if available:
            fd = recv_handle(conn)  # the control block, from the main process
            try:
                self._control = mmap.mmap(fd, 0)
            finally:
                os.close(fd)
            self._flags = np.ndarray((max_slots,), np.uint8, buffer=self._control, offset=worker_id * max_slots)

    def _slot_for(self, size: int):
        """``(index, new)``: a free slot that holds ``size`` bytes, made or
        grown as needed (``new``: its descriptor must be sent), or
        ``(None, False)`` when every slot is busy."""
        flags = self._flags
        small = None
        for k, slot in enumerate(self.slots):
            if flags[k] == 0:
                if slot[0] >= size:
                    return k, False
                small = k
        if small is None and len(self.slots) >= self.max_slots:
            return None, False
        cap = -(-size // _SLOT_ROUND) * _SLOT_ROUND
        fd = new_shared_fd(cap)
        try:
            mm = mmap.mmap(fd, cap)
        except BaseException:
            os.close(fd)
            raise
        if small is None:
            self.slots.append([cap, fd, mm])
            return len(self.slots) - 1, True
        old = self.slots[small]
        old[2].close()
        os.close(old[1])  # the main process keeps its own descriptor until it gets the new one
        self.slots[small] = [cap, fd, mm]
        return small, True

    def send(self, idx, obj) -> None:
        """Send ``(idx, message)`` for :meth:`Receiver.unpack`; the message is
        ``(worker id, slot or None, descriptor follows, size, payload)``, and
        when a descriptor follows it is sent right after. Pickling errors are
        raised before anything is sent."""
        buf = io.BytesIO()
        if not available:
            pickle.dump(obj, buf, protocol=pickle.HIGHEST_PROTOCOL)
            self.conn.send((idx, (self.worker_id, None, False, 0, buf.getvalue())))
            return
        packer = _Packer(buf)
        packer.dump(obj)
        payload, size = buf.getvalue(), packer.nbytes
        if size == 0:
            self.conn.send((idx, (self.worker_id, None, False, 0, payload)))
            return
        k, new = self._slot_for(size)
        if k is not None:
            _, fd, mm = self.slots[k]
            _copy_into(mm, packer)
            self._flags[k] = 1
            self.conn.send((idx, (self.worker_id, k, new, size, payload)))
            if new:
                send_handle(self.conn, fd, os.getppid())
            return
        fd = new_shared_fd(size)  # every slot is held by the main process: a one-shot block
        try:
            mm = mmap.mmap(fd, size)
            try:
                _copy_into(mm, packer)
            finally:
                mm.close()
            self.conn.send((idx, (self.worker_id, None, True, size, payload)))
            send_handle(self.conn, fd, os.getppid())
        finally:
            os.close(fd)

    def close(self) -> None:
        for _, fd, mm in self.slots:
            mm.close()
            os.close(fd)
        self.slots = []
        if self._flags is not None:
            self._flags = None
            self._control.close()  # (a mapping holds a descriptor of its own)


def _free(flags, index, pid) -> None:
    if os.getpid() == pid:  # not in a forked copy that happened to collect the batch
        flags[index] = 0


class Receiver:
    """The main side: owns the control block (one free/busy byte per slot),
    maps each slot once, and rebuilds batches as views of the slots.

    A batch's arrays are views of a per-batch *lease*, a uint8 array over its
    bytes of the slot; NumPy keeps the lease as the base of every view derived
    from them, so the lease dies with the batch's last array, and its
    finalizer hands the slot back to the worker.
    """

    def __init__(self, num_workers: int, max_slots: int):
        self.max_slots = max_slots
        self._maps = {}  # (worker, slot) -> the whole slot, mapped once
        self.flags = None
        self._control_fd = None
        if available:
            size = max(1, num_workers * max_slots)
            self._control_fd = new_shared_fd(size)
            self._control = mmap.mmap(self._control_fd, size)
            self.flags = np.ndarray((size,), np.uint8, buffer=self._control)

    def send_control(self, conn, pid: int) -> None:
        """Hand the control block to a worker just started (its first read)."""
        if available:
            send_handle(conn, self._control_fd, pid)

    def _slot_map(self, conn, message):
        worker_id, slot, fd_follows, _, _ = message
        if fd_follows:  # a new (or grown) slot: the old mapping lives on in its batches' leases
            fd = recv_handle(conn)
            try:
                self._maps[(worker_id, slot)] = mmap.mmap(fd, os.fstat(fd).st_size, flags=_MAP_FLAGS)
            finally:
                os.close(fd)
        return self._maps[(worker_id, slot)]

    def unpack(self, conn, message):
        """Rebuild a batch from a message received on ``conn`` (reading the
        descriptor that follows it, if any)."""
        worker_id, slot, _, size, payload = message
        if not available:
            return pickle.loads(payload)
        if size == 0:
            return _Unpacker(io.BytesIO(payload), None).load()
        if slot is None:  # a one-shot block
            fd = recv_handle(conn)
            try:
                mm = mmap.mmap(fd, size, flags=_MAP_FLAGS)
            finally:
                os.close(fd)
            return _Unpacker(io.BytesIO(payload), mm).load()
        lease = np.frombuffer(self._slot_map(conn, message), np.uint8, size)
        weakref.finalize(lease, _free, self.flags, worker_id * self.max_slots + slot, os.getpid()).atexit = False
        return _Unpacker(io.BytesIO(payload), lease).load()

    def discard(self, conn, message) -> None:
        """Drop a message without building its batch."""
        worker_id, slot, fd_follows, size, _ = message
        if not available or size == 0:
            return
        if slot is None:
            os.close(recv_handle(conn))
        else:
            self._slot_map(conn, message)
            self.flags[worker_id * self.max_slots + slot] = 0

    def close(self) -> None:
        """Drop the slot mappings and the control block's descriptor. Batches
        still alive keep their memory (and the control block) until they are
        collected."""
        self._maps.clear()
        if self._control_fd is not None:
            os.close(self._control_fd)
            self._control_fd = None
