"""Writing a checkpoint: PyTorch's pickle layout and zip records.

The pickler is Python's, with three additions: tensors are written as
PyTorch writes them (``torch._utils._rebuild_tensor_v2`` over a storage
record), dtypes as ``torch.<name>`` and devices as ``torch.device(...)``;
storages go to separate ``data/<key>`` records through ``persistent_id``.
Everything else (a whole ``nn.Module``, user classes) is pickled by
reference to its class, exactly as ``pickle`` would, so a weights-only load
refuses it unless its class is allow-listed, as in PyTorch.

Tensors that view one memory block share one record and come back as views
of one another.  Names under ``torch.`` are written without importing torch.

Example::

    >>> import io, fabric
    >>> from fabric.serialization._pickler import dump_pickle
    >>> data, table = dump_pickle({"w": fabric.ones(2)})
    >>> len(table.blobs), data[:2]
    (1, b'\\x80\\x02')
"""
from __future__ import annotations

import collections
import io
import pickle
import struct
import sys
import zipfile

import numpy as np

from .. import _dtype as D
from .._device import device as _device_cls
from .._progress import progress
from .._tensor import Size, Tensor
from ._rebuild import STORAGE_NAMES

ALIGN = 64


class TorchName:
    """A global written as ``GLOBAL module name`` without importing ``module``."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):  # the pickler wants reduce callables to be callable
        raise TypeError(f"{self.module}.{self.name} is a name written into a checkpoint, not a function")


class StorageRef:
    __slots__ = ("key", "dtype_name", "numel", "location")

    def __init__(self, key, dtype_name, numel, location):
        self.key, self.dtype_name, self.numel, self.location = key, dtype_name, numel, location


def _ptr(a):
    return a.__array_interface__["data"][0] if a.__class__ is np.ndarray else a.data.ptr


class StorageTable:
    """Assigns storage keys in order of first use; views of one memory block share a key."""

    def __init__(self):
        self.by_root = {}
        self.blobs = []  # (host array holding the record's bytes, key)

    @staticmethod
    def _host_storage(arr):
        """(1-D array over the whole block ``arr`` views, the block's owner, byte offset of ``arr``) or None.

        The same walk serves NumPy and CuPy: both record a view's owner in ``.base``."""
        array_type = type(arr)
        root, b = arr, arr.base
        while b is not None:  # through views (and NumPy's as_strided wrappers) to the owner
            if isinstance(b, array_type):
                root = b
            b = getattr(b, "base", None)
        if not (root.flags.c_contiguous or root.flags.f_contiguous):
            return None
        # a view in both libraries (ravel may copy in CuPy): memory order, C or Fortran
        flat = root.reshape(-1, order="C" if root.flags.c_contiguous else "F")
        if flat.dtype != arr.dtype:  # e.g. a loaded storage: float32 tensors over a uint8 record
            if flat.nbytes % arr.itemsize:
                return None
            flat = flat.view(np.uint8).view(arr.dtype)
        offset = _ptr(arr) - _ptr(flat)
        return (flat, root, offset) if 0 <= offset < flat.nbytes else None

    def add(self, arr, location):
        """(storage ref, offset, size, stride) for an array (NumPy or CuPy)."""
        itemsize = arr.itemsize
        found = self._host_storage(arr) if arr.size else None
        if found is not None:
            flat, owner, offset_bytes = found
            ok = offset_bytes >= 0 and offset_bytes % itemsize == 0 and \
                all(s >= 0 and s % itemsize == 0 for s in arr.strides)
            if not ok:
                found = None
        if found is None:  # not expressible as a view of one block: store a compact copy
            xp = np if arr.__class__ is np.ndarray else __import__("cupy")
            owner = xp.ascontiguousarray(arr)
            flat, offset_bytes = owner.reshape(-1), 0
            strides = tuple(s // itemsize for s in owner.strides)
        else:
            strides = tuple(s // itemsize for s in arr.strides)
        ident = (id(owner), arr.dtype.str)  # one record per memory block and dtype
        hit = self.by_root.get(ident)
        if hit is None or hit[0] is not owner:
            key = str(len(self.blobs))
            host = flat if flat.__class__ is np.ndarray else flat.get()
            self.blobs.append((host, key))
            hit = self.by_root[ident] = (owner, key, flat.size)
        _, key, numel = hit
        ref = StorageRef(key, D.from_numpy_dtype(arr.dtype).name, numel, location)
        return ref, offset_bytes // itemsize, tuple(arr.shape), strides


class _Reduced:
    """``func(*args)`` written as GLOBAL/args/REDUCE (for nested rebuild calls)."""

    __slots__ = ("func", "args")

    def __init__(self, func, args):
        self.func, self.args = func, args


_REBUILD_V2 = TorchName("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAM = TorchName("torch._utils", "_rebuild_parameter")
_REBUILD_PARAM_STATE = TorchName("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE = TorchName("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_SPARSE = TorchName("torch._utils", "_rebuild_sparse_tensor")
_GET_LAYOUT = TorchName("torch.serialization", "_get_layout")


class CheckpointPickler(pickle._Pickler):
    """Python's pickler plus PyTorch's spelling of tensors, dtypes, devices and storages."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, table, protocol=2):
        super().__init__(file, protocol=protocol)
        self.table = table

    def _save_name(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def _save_reduced(self, obj):
        self.save(obj.func)
        self.save(tuple(obj.args))
        self.write(pickle.REDUCE)

    def _save_dtype(self, obj):
        self.write(pickle.GLOBAL + f"torch\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[TorchName] = _save_name
    dispatch[_Reduced] = _save_reduced
    dispatch[D.dtype] = _save_dtype

    def persistent_id(self, obj):
        if type(obj) is StorageRef:
            return ("storage", TorchName("torch", STORAGE_NAMES[obj.dtype_name]), obj.key, obj.location, obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        t = type(obj)
        if t is _device_cls:
            return (TorchName("torch", "device"), (str(obj),))
        if t is Size:
            return (TorchName("torch", "Size"), (tuple(obj),))
        return NotImplemented

    def _reduce_tensor(self, t):
        from ..nn.parameter import Parameter

        if t._sparse:  # COO / CSR: PyTorch's _rebuild_sparse_tensor(layout, data), the parts as tensors
            from ..sparse._io import reduce_parts
            layout, data = reduce_parts(t)
            return (_REBUILD_SPARSE, (_Reduced(_GET_LAYOUT, (layout,)), data))

        if t.dtype.name not in STORAGE_NAMES:
            raise RuntimeError(f"fabric.save: tensors of dtype {t.dtype} cannot be written in PyTorch's format")
        ref, offset, size, stride = self.table.add(t._data, str(t.device))
        hooks = collections.OrderedDict()
        state = dict(t.__dict__) if getattr(t, "__dict__", None) else None
        if type(t) is Parameter:
            inner = _Reduced(_REBUILD_V2, (ref, offset, size, stride, False, hooks))
            if state:
                return (_REBUILD_PARAM_STATE, (inner, t.requires_grad, hooks, state))
            return (_REBUILD_PARAM, (inner, t.requires_grad, hooks))
        args = (ref, offset, size, stride, t.requires_grad, hooks)
        if type(t) is Tensor and not state:
            return (_REBUILD_V2, args)
        return (_REBUILD_FROM_TYPE, (_REBUILD_V2, type(t), args, state or {}))


def dump_pickle(obj, protocol=2):
    """``(pickled bytes, StorageTable)`` for ``obj``; raises before anything is written anywhere."""
    table = StorageTable()
    buf = io.BytesIO()
    CheckpointPickler(buf, table, protocol).dump(obj)
    return buf.getvalue(), table


def write_zip(fileobj, pickled, table, prefix="archive", byteorder=True):
    """PyTorch's record layout; storage records start on 64-byte boundaries (for ``mmap=True`` loads)."""
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED) as z:
        def info(name, size):
            zi = zipfile.ZipInfo(f"{prefix}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_STORED
            zi.file_size = size
            return zi

        z.writestr(info("data.pkl", len(pickled)), pickled)
        z.writestr(info(".format_version", 1), b"1")
        z.writestr(info(".storage_alignment", 2), str(ALIGN).encode())
        if byteorder:
            z.writestr(info("byteorder", len(sys.byteorder)), sys.byteorder.encode())
        total = sum(host.nbytes for host, _ in table.blobs)
        with progress(total=total, desc="fabric.save", unit="B", min_total=PROGRESS_BYTES) as bar:
            for host, key in table.blobs:
                _write_record(z, info, host, key)
                bar.update(host.nbytes)
        z.writestr(info("version", 2), b"3\n")


PROGRESS_BYTES = 1 << 28  # a save writing this many bytes of tensors shows a progress bar (tqdm, when installed)


def _write_record(z, info, host, key):
    """One storage record, its data starting on a 64-byte boundary."""
    data = memoryview(np.ascontiguousarray(host)).cast("B")
    zi = info(f"data/{key}", data.nbytes)
    zip64 = data.nbytes * 1.05 > zipfile.ZIP64_LIMIT
    # pad the local header's extra field so that the data starts on a 64-byte boundary
    header = 30 + len(zi.filename.encode()) + (20 if zip64 else 0) + 4
    pad = (-(z.fp.tell() + header)) % ALIGN
    zi.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # "FB" padding field, as PyTorch
    with z.open(zi, "w", force_zip64=zip64) as out:
        out.write(data)
