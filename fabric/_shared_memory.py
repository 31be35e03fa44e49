"""Anonymous shared memory: the primitive below ``Tensor.share_memory_`` and the DataLoader's
shared batches (``fabric.data._shm``).  Imports only the standard library.

Example::

    >>> import os
    >>> from fabric import _shared_memory
    >>> if _shared_memory.available:
    ...     os.close(_shared_memory.new_shared_fd(4096))
"""
from __future__ import annotations

import os
import sys

try:
    import _posixshmem
except ImportError:  # Windows
    _posixshmem = None

__all__ = ["available", "new_shared_fd"]

available = _posixshmem is not None and sys.platform != "win32"


def new_shared_fd(size: int) -> int:
    """A descriptor of ``size`` bytes of anonymous shared memory."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("fabric-data", os.MFD_CLOEXEC)
    else:
        name = f"/fdl{os.getpid():x}_{os.urandom(6).hex()}"
        fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
        _posixshmem.shm_unlink(name)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd
