"""Anonymous shared memory: the primitive below ``Tensor.share_memory_``, tensors sent between
processes (``fabric.multiprocessing``) and the DataLoader's shared batches (``fabric.data._shm``).

A :class:`Segment` is an ``mmap`` of anonymous shared memory (``memfd``; a
POSIX segment unlinked at once where memfd is missing) that keeps its file
descriptor open, so the memory can be handed to another process as a
descriptor (``multiprocessing``'s ``DupFd``). Nothing has a name in
``/dev/shm``: the memory is freed with the last mapping and descriptor, in
every process, even when processes are killed.

Example::

    >>> import numpy as np
    >>> from fabric import _shared_memory
    >>> a = _shared_memory.empty((2, 3), np.float32)
    >>> seg, offset = _shared_memory.segment_of(a)
    >>> offset, seg.size
    (0, 24)
"""
from __future__ import annotations

import mmap
import os
import sys
import weakref

import numpy as np

try:
    import _posixshmem
except ImportError:  # Windows
    _posixshmem = None

__all__ = ["available", "new_shared_fd", "Segment", "new_segment", "attach", "empty", "segment_of",
           "in_shared_mapping"]

available = _posixshmem is not None and sys.platform != "win32"
NAME_PREFIX = "fdl"  # the /dev/shm names fabric creates (for an instant, where memfd_create is missing) start so


def new_shared_fd(size: int) -> int:
    """A descriptor of ``size`` bytes of anonymous shared memory."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("fabric-data", os.MFD_CLOEXEC)
    else:
        assert _posixshmem is not None
        name = f"/{NAME_PREFIX}{os.getpid():x}_{os.urandom(6).hex()}"
        fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
        _posixshmem.shm_unlink(name)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Segment(mmap.mmap):
    """A shared mapping that owns its descriptor (``fd``, closed with the segment)."""

    fd: int
    size: int
    address: int  # of the first byte, to find an array's offset in the segment

    def __new__(cls, fd: int, size: int):
        self = super().__new__(cls, fd, size)
        self.fd, self.size = fd, size
        self.address = np.frombuffer(self, np.uint8, count=1).ctypes.data
        weakref.finalize(self, os.close, fd)
        return self


def new_segment(nbytes: int) -> Segment:
    """A new segment of at least ``nbytes`` bytes (one byte for empty arrays)."""
    size = max(int(nbytes), 1)
    fd = new_shared_fd(size)
    try:
        return Segment(fd, size)
    except BaseException:
        os.close(fd)
        raise


def attach(fd: int, size: int) -> Segment:
    """Map a segment received from another process (the segment owns ``fd`` from now on)."""
    try:
        return Segment(fd, size)
    except BaseException:
        os.close(fd)
        raise


def empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array in a new segment."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for s in shape:
        n *= s
    return np.ndarray(shape, dtype, buffer=new_segment(n))


def segment_of(a):
    """``(segment, byte offset of a's first element)`` when ``a`` lies in a
    :class:`Segment`, else None."""
    base = a
    while base is not None:
        if isinstance(base, Segment):
            return base, a.ctypes.data - base.address
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return None


def in_shared_mapping(a) -> bool:
    """Whether NumPy array ``a`` lies in a shared mapping (a segment, or a DataLoader batch)."""
    while a is not None:
        if isinstance(a, mmap.mmap):
            return True
        a = a.obj if isinstance(a, memoryview) else getattr(a, "base", None)
    return False
