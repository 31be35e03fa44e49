"""File helpers for the datasets: IDX files (MNIST's format), MD5 checks and
downloads from a list of mirrors with a clear error when none answers.

Example::

    >>> import io, gzip, numpy as np
    >>> from fabric.data.datasets._utils import write_idx, read_idx
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x-idx1-ubyte.gz")
    >>> write_idx(path, np.arange(3, dtype=np.uint8))
    >>> read_idx(path)
    array([0, 1, 2], dtype=uint8)
"""
from __future__ import annotations

import gzip
import os
from urllib.error import URLError

import numpy as np

from ..._progress import progress

__all__ = ["read_idx", "write_idx", "md5sum", "check_integrity", "download_url"]

# IDX type codes -> big-endian dtypes
_IDX_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_CODES = {dt.newbyteorder("="): code for code, dt in _IDX_TYPES.items()}


def _open(path: str):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def read_idx(path: str) -> np.ndarray:
    """The array stored in an IDX file (``.gz`` compressed or not), in native
    byte order. Raises RuntimeError naming the file when it is malformed."""
    with _open(path) as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise RuntimeError(f"{path} is not an IDX file (bad magic number)")
    dtype, ndim = _IDX_TYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise RuntimeError(f"{path} is truncated (header)")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">i4", ndim, 4))
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) - header < count * dtype.itemsize:
        raise RuntimeError(f"{path} is truncated: expected {count} values of shape {shape}")
    return np.frombuffer(raw, dtype, count, header).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path: str, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file (gzip-compressed when ``path`` ends in .gz)."""
    array = np.asarray(array)
    code = _IDX_CODES.get(array.dtype.newbyteorder("="))
    if code is None:
        raise TypeError(f"IDX files cannot hold dtype {array.dtype}")
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">i4").tobytes()
    body = np.ascontiguousarray(array, _IDX_TYPES[code]).tobytes()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(header + body)


def urlopen(url: str, timeout: float):
    """``urllib.request.urlopen`` (imported on first use: it is slow to import)."""
    from urllib.request import Request
    from urllib.request import urlopen as _urlopen

    return _urlopen(Request(url, headers={"User-Agent": "fabric"}), timeout=timeout)


def md5sum(path: str, chunk_size: int = 1 << 20) -> str:
    import hashlib

    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest()


def check_integrity(path: str, md5: str | None = None) -> bool:
    """The file exists and, when ``md5`` is given, has that checksum."""
    if not os.path.isfile(path):
        return False
    return md5 is None or md5sum(path) == md5


def download_url(urls: list[str], path: str, md5: str | None = None, timeout: float = 30.0) -> None:
    """Fetch the first of ``urls`` that answers into ``path`` (atomically:
    a temporary file renamed into place once its MD5 matches).

    Raises RuntimeError listing every URL tried and why it failed; a file
    whose checksum does not match is never kept.
    """
    import tempfile

    errors = []
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    for url in urls:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".download-")
        try:
            with os.fdopen(fd, "wb") as out, urlopen(url, timeout) as response:
                size = int(response.headers.get("Content-Length") or 0) or None
                with progress(total=size, desc=os.path.basename(path), unit="B") as bar:
                    while chunk := response.read(1 << 16):
                        out.write(chunk)
                        bar.update(len(chunk))
            if md5 is not None and (got := md5sum(tmp)) != md5:
                errors.append(f"{url}: checksum mismatch (MD5 {got}, expected {md5})")
                continue
            os.replace(tmp, path)
            return
        except (URLError, OSError, ValueError) as e:  # ValueError: a malformed URL
            errors.append(f"{url}: {getattr(e, 'reason', e)}")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    raise RuntimeError(f"Error downloading {os.path.basename(path)}: no mirror could provide it "
                       f"(offline, or the mirrors are down?).\n  " + "\n  ".join(errors)
                       + f"\nPlace the file at {path} by hand and try again without download=True.")
