"""File helpers for the datasets: IDX files (MNIST's format), MD5 checks and
downloads from a list of mirrors with a clear error when none answers.

Example::

    >>> import io, gzip, numpy as np
    >>> from fabric.vision.datasets.utils import write_idx, read_idx
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x-idx1-ubyte.gz")
    >>> write_idx(path, np.arange(3, dtype=np.uint8))
    >>> read_idx(path)
    array([0, 1, 2], dtype=uint8)
"""
from __future__ import annotations

import gzip
import os
import shutil
from urllib.error import URLError

import numpy as np

from ..._progress import progress

__all__ = ["read_idx", "write_idx", "md5sum", "check_integrity", "download_url", "extract_zip_members", "extract_tar",
           "load_pickled_arrays"]

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


def _member_target(folder: str, name: str) -> str:
    """Where an archive member may be written: inside ``folder`` only (no
    absolute paths, no ``..``), else ValueError."""
    target = os.path.realpath(os.path.join(folder, name))
    root = os.path.realpath(folder)
    if os.path.isabs(name) or not target.startswith(root + os.sep):
        raise ValueError(f"archive member {name!r} would be written outside {folder}")
    return target


def extract_zip_members(archive: str, folder: str, keep) -> list[str]:
    """Extract the members of a zip file whose name satisfies ``keep`` into
    ``folder`` (flattened to their base names). Returns the paths written."""
    import zipfile

    written = []
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            if info.is_dir() or not keep(info.filename):
                continue
            target = _member_target(folder, os.path.basename(info.filename))
            with z.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            written.append(target)
    return written


def extract_tar(archive: str, folder: str) -> None:
    """Extract the regular files and folders of a tarball into ``folder``;
    links, devices and members outside ``folder`` are refused."""
    import tarfile

    with tarfile.open(archive, "r:*") as tar:
        for member in tar.getmembers():
            target = _member_target(folder, member.name)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
            elif member.isfile():
                os.makedirs(os.path.dirname(target), exist_ok=True)
                src = tar.extractfile(member)
                if src is None:
                    raise ValueError(f"{archive}: member {member.name!r} has no data")
                with src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            else:
                raise ValueError(f"{archive}: member {member.name!r} is not a regular file or folder")


# --- pickled NumPy arrays without running pickle code ---------------------------------------------
_SAFE_KINDS = set("biuf")  # bool, signed, unsigned, float: no objects, no structured dtypes


class _DtypeStub:
    """Stands in for ``numpy.dtype(...)`` while unpickling; becomes a real dtype once checked."""

    def __init__(self, descr, align=False, copy=False):
        self.descr = descr
        self.byteorder = "="

    def __setstate__(self, state):
        if not isinstance(state, tuple) or len(state) < 8 or state[2] is not None or state[3] is not None:
            raise pickle_error("only plain numeric dtypes are allowed")
        self.byteorder = state[1]

    def dtype(self) -> np.dtype:
        if not isinstance(self.descr, str):
            raise pickle_error(f"unexpected dtype description {self.descr!r}")
        dt = np.dtype(self.descr)
        if dt.kind not in _SAFE_KINDS or dt.fields is not None or dt.subdtype is not None:
            raise pickle_error(f"dtype {dt} is not allowed")
        return dt.newbyteorder(self.byteorder) if self.byteorder in "<>" else dt


class _ArrayStub:
    """Stands in for a pickled ``numpy.ndarray``: its state (shape, dtype, raw
    bytes) is checked and turned into an array with ``np.frombuffer``."""

    def __init__(self, cls, shape, typecode):
        if cls is not _ArrayStub:
            raise pickle_error("only numpy.ndarray may be reconstructed")
        self.array = None

    def __setstate__(self, state):
        if not isinstance(state, tuple) or len(state) != 5:
            raise pickle_error("unexpected ndarray state")
        _, shape, dtype, is_fortran, raw = state
        if not isinstance(dtype, _DtypeStub) or not isinstance(shape, tuple):
            raise pickle_error("unexpected ndarray state")
        if not all(isinstance(n, int) and n >= 0 for n in shape):
            raise pickle_error(f"bad array shape {shape}")
        if isinstance(raw, str):  # a Python 2 str read with encoding='latin1'
            raw = raw.encode("latin1")
        if not isinstance(raw, (bytes, bytearray)):
            raise pickle_error("array data must be raw bytes")
        dt = dtype.dtype()
        count = 1
        for n in shape:
            count *= n
        if count * dt.itemsize != len(raw):
            raise pickle_error(f"array of shape {shape} and dtype {dt} needs {count * dt.itemsize} bytes, "
                               f"the file holds {len(raw)}")
        arr = np.frombuffer(raw, dt, count).reshape(shape, order="F" if is_fortran else "C")
        self.array = arr.astype(dt.newbyteorder("="))


def pickle_error(msg: str):
    import pickle

    return pickle.UnpicklingError(f"refused by the restricted unpickler: {msg}")


def _reconstruct(cls, shape, typecode):
    return _ArrayStub(cls, shape, typecode)


def _codecs_encode(text, encoding="utf-8"):
    # how Python 3 pickles bytes at protocol 2
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle_error("only _codecs.encode(str, 'latin1') is allowed")
    return text.encode("latin1")


def _frombuffer(buf, dtype, shape, order):
    # how NumPy pickles arrays at protocol 5
    stub = _ArrayStub(_ArrayStub, (0,), b"b")
    stub.__setstate__((1, tuple(shape), dtype, order == "F", bytes(buf)))
    return stub


_ALLOWED_GLOBALS = {
    ("_codecs", "encode"): _codecs_encode,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): _ArrayStub,
    ("numpy", "dtype"): _DtypeStub,
}


def _unstub(obj):
    if isinstance(obj, _ArrayStub):
        if obj.array is None:
            raise pickle_error("array without data")
        return obj.array
    if isinstance(obj, dict):
        return {_unstub(k): _unstub(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unstub(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_unstub(v) for v in obj)
    if isinstance(obj, _DtypeStub):
        return obj.dtype()
    return obj


def load_pickled_arrays(path: str, encoding: str = "latin1"):
    """Read a pickle of dicts/lists/strings/numbers and plain NumPy arrays
    (CIFAR's batch files) without running any code from the file: only
    ``numpy.ndarray`` reconstruction is allowed, and each array is rebuilt
    from its raw bytes with ``np.frombuffer`` after its size is checked.
    Anything else raises ``pickle.UnpicklingError``."""
    import pickle

    class _Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            fn = _ALLOWED_GLOBALS.get((module, name))
            if fn is None:
                raise pickle_error(f"global '{module}.{name}' is not allowed")
            return fn

    with open(path, "rb") as f:
        return _unstub(_Restricted(f, encoding=encoding).load())
