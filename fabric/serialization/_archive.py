"""Reading a checkpoint's zip archive: record lookup as PyTorch does it,
sizes checked before allocating, one copy of each storage.

* Records are found the way PyTorch's reader (miniz) finds them: by a binary
  search over the central directory sorted by name, so when an archive holds
  two ``data.pkl`` entries fabric reads the same one PyTorch reads.
* A storage record's size must equal what the pickle declares
  (``numel * itemsize``) and must fit in the file, checked before any memory
  is allocated, so a small file cannot make the loader allocate gigabytes.
* Stored (uncompressed) records are read straight into the array that
  becomes the tensor's storage (``readinto``), and their CRC is checked on
  that array, so a checkpoint is held once in memory, not three times; with
  ``mmap=True`` the array maps the file instead (copy-on-write).

Example::

    >>> import io, fabric
    >>> from fabric.serialization._archive import Archive
    >>> buf = io.BytesIO()
    >>> fabric.save({"w": fabric.ones(2)}, buf)
    >>> sorted(Archive(buf).records())[:2]
    ['.format_version', '.storage_alignment']
"""
from __future__ import annotations

import mmap as _mmap
import os
import struct
import zipfile
import zlib

import numpy as np

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_MAGIC = 0x04034B50
_MAX_DEFLATE_RATIO = 1032  # deflate cannot expand data more than this


def _name_key(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape").lower()


def _less(a: bytes, b: bytes) -> bool:
    """miniz's filename order: case-insensitive, a shorter prefix first."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return len(a) < len(b)
    return a[:n] < b[:n]


def _sorted_indices(keys):
    """miniz's in-place heap sort of the central directory (not stable: duplicates land where miniz puts them)."""
    idx = list(range(len(keys)))
    size = len(idx)
    if size <= 1:
        return idx

    def sift(root, end):
        while True:
            child = 2 * root + 1
            if child >= end:
                return
            if child + 1 < end and _less(keys[idx[child]], keys[idx[child + 1]]):
                child += 1
            if not _less(keys[idx[root]], keys[idx[child]]):
                return
            idx[root], idx[child] = idx[child], idx[root]
            root = child

    for start in range((size - 2) // 2, -1, -1):
        sift(start, size)
    for end in range(size - 1, 0, -1):
        idx[0], idx[end] = idx[end], idx[0]
        sift(0, end)
    return idx


def _compare(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for x, y in zip(a[:n], b[:n]):
        if x != y:
            return x - y
    return len(a) - len(b)


class Archive:
    """A checkpoint zip opened for reading (``f``: a binary file object; the caller closes it)."""

    def __init__(self, f, mmap: bool = False, shared: bool = False):
        if not (hasattr(f, "seek") and (not hasattr(f, "seekable") or f.seekable())):
            import io

            f = io.BytesIO(f.read())
        self.file = f
        self.start = f.tell()
        f.seek(0, os.SEEK_END)
        self.length = f.tell()
        f.seek(self.start)
        try:
            self.zip = zipfile.ZipFile(f)
        except zipfile.BadZipFile as e:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e} (the checkpoint is truncated "
                               "or corrupted)") from None
        infos = self.zip.infolist()
        if not infos:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: the archive has no records")
        self._infos = infos
        self._keys = [_name_key(i.filename) for i in infos]
        self._order = _sorted_indices(self._keys)
        first = infos[0].filename
        if "/" not in first:
            raise RuntimeError(f"file in archive is not in a subdirectory: {first}")
        self.prefix = first.split("/", 1)[0]
        self._map = None
        if mmap:
            fileno = getattr(f, "fileno", None)
            self._map = _mmap.mmap(fileno(), 0, access=_mmap.ACCESS_WRITE if shared else _mmap.ACCESS_COPY)

    # --- lookup --------------------------------------------------------------------
    def records(self):
        """Record names (without the archive prefix), once each."""
        pre = self.prefix + "/"
        return sorted({i.filename[len(pre):] for i in self._infos if i.filename.startswith(pre)})

    def info(self, name: str):
        """The ZipInfo PyTorch's reader would pick for ``prefix/name``, or None."""
        target = _name_key(f"{self.prefix}/{name}")
        lo, hi = 0, len(self._order) - 1
        while lo <= hi:
            mid = lo + ((hi - lo) >> 1)
            i = self._order[mid]
            c = _compare(self._keys[i], target)
            if c == 0:
                return self._infos[i]
            if c < 0:
                lo = mid + 1
            else:
                hi = mid - 1
        return None

    def has(self, name: str) -> bool:
        return self.info(name) is not None

    # --- reading ----------------------------------------------------------------------
    def _data_offset(self, info):
        self.file.seek(info.header_offset)
        raw = self.file.read(_LOCAL_HEADER.size)
        if len(raw) < _LOCAL_HEADER.size:
            raise RuntimeError(f"PytorchStreamReader failed reading record {info.filename}: the file is truncated")
        fields = _LOCAL_HEADER.unpack(raw)
        if fields[0] != _LOCAL_MAGIC:
            raise RuntimeError(f"PytorchStreamReader failed reading record {info.filename}: bad local header "
                               "(the checkpoint is corrupted)")
        return info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]

    def _check_fits(self, info):
        """The record's declared size must be possible given the bytes really in the file."""
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                raise RuntimeError(f"record {info.filename} declares {info.file_size} bytes but stores "
                                   f"{info.compress_size}: the checkpoint is corrupted")
            start = self._data_offset(info)
            if start + info.file_size > self.length:
                raise RuntimeError(f"record {info.filename} declares {info.file_size} bytes but the file ends "
                                   f"{max(self.length - start, 0)} bytes after its start: the checkpoint is truncated "
                                   "or corrupted")
            return start
        if info.file_size > info.compress_size * _MAX_DEFLATE_RATIO + 1024 or \
                info.header_offset + info.compress_size > self.length:
            raise RuntimeError(f"record {info.filename} declares {info.file_size} bytes from {info.compress_size} "
                               "compressed bytes, which is impossible: the checkpoint is corrupted")
        return None

    def read(self, name: str) -> bytes:
        """A small record (``data.pkl``, ``byteorder`` ...) as bytes."""
        info = self.info(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        self._check_fits(info)  # before allocating
        return self.read_into(info, np.empty(info.file_size, np.uint8)).tobytes()

    def storage(self, name: str, nbytes: int):
        """Record ``name`` as a writable uint8 array of exactly ``nbytes`` bytes (checked before allocating)."""
        info = self.info(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        if info.file_size != nbytes:
            raise RuntimeError(f"record size ({info.file_size} bytes) does not match expected size ({nbytes} bytes = "
                               f"{nbytes} elements * 1 bytes/element) for dtype Byte")
        start = self._check_fits(info)  # before allocating: the declared size must really be in the file
        if self._map is not None and start is not None:
            return np.frombuffer(self._map, np.uint8, count=nbytes, offset=start)
        return self.read_into(info, np.empty(nbytes, np.uint8))

    def read_into(self, info, out):
        """Fill ``out`` (uint8, ``info.file_size`` long) with the record's bytes and check its CRC."""
        start = self._check_fits(info)
        view = memoryview(out).cast("B")
        if start is not None:
            self.file.seek(start)
            got = _readinto(self.file, view)
            crc = zlib.crc32(view[:got])
        else:
            try:
                with self.zip.open(info) as stream:  # checks the CRC itself
                    got = _readinto(stream, view)
                    extra = stream.read(1)
            except zipfile.BadZipFile as e:
                raise RuntimeError(f"record {info.filename} is corrupted ({e})") from None
            except (EOFError, zlib.error) as e:
                raise RuntimeError(f"record {info.filename} is truncated or corrupted ({e})") from None
            if extra:
                raise RuntimeError(f"record {info.filename} holds more than the {info.file_size} bytes it declares: "
                                   "the checkpoint is corrupted")
            crc = info.CRC
        if got != info.file_size:
            raise RuntimeError(f"record {info.filename} is truncated ({got} of {info.file_size} bytes)")
        if crc != info.CRC:
            raise RuntimeError(f"record {info.filename} is corrupted (CRC mismatch)")
        return out


def _readinto(stream, view) -> int:
    got = 0
    n = len(view)
    readinto = getattr(stream, "readinto", None)
    while got < n:
        if readinto is not None:
            k = readinto(view[got:])
        else:
            chunk = stream.read(n - got)
            k = len(chunk)
            view[got:got + k] = chunk
        if not k:
            break
        got += k
    return got
