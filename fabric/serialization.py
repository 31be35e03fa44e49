"""``fabric.save`` / ``fabric.load``: checkpoints in PyTorch's zip format.

Files written here load with ``torch.load(..., weights_only=True)``, and
PyTorch checkpoints (state dicts, optimizer states, plain containers of
tensors) load here without torch installed. Loading never executes code from
the file: the unpickler resolves only an allow-list of names (tensor and
parameter rebuilders, storage types, dtypes, ``OrderedDict`` ...), and every
other global is rejected before anything is built.

Writes are atomic when ``f`` is a path (a temporary file in the same folder
is renamed over the target), so a crash mid-save leaves the old file intact.
Tensors that view the same memory are stored once and come back as views of
one another. ZIP CRCs are verified on read, so a truncated or tampered file
raises a clear error.

Example::

    >>> import io, fabric
    >>> buf = io.BytesIO()
    >>> fabric.save({"w": fabric.ones(2)}, buf)
    >>> _ = buf.seek(0)
    >>> fabric.load(buf)["w"]
    tensor([1., 1.])
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import tempfile
import zipfile

import numpy as np

from . import _dtype as D
from ._device import device as _device_cls
from ._progress import progress
from ._tensor import Tensor

__all__ = ["save", "load", "UnpicklingError"]

UnpicklingError = pickle.UnpicklingError

_STORAGE_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                  "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
                  "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}
_STORAGE_DTYPES = {v: k for k, v in _STORAGE_NAMES.items()}
_ALIGN = 64
_PROGRESS_BYTES = 1 << 28  # a save writing this many bytes of tensors shows a progress bar


# --- writing ---------------------------------------------------------------------

class _Global:
    """A name the pickle refers to by module and attribute (``torch.float32``)."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name


class _Reduce:
    """``callable(*args)`` in the pickle, where callable is a :class:`_Global`."""

    __slots__ = ("func", "args")

    def __init__(self, func, args):
        self.func, self.args = func, args


class _StorageRef:
    __slots__ = ("key", "dtype_name", "numel")

    def __init__(self, key, dtype_name, numel):
        self.key, self.dtype_name, self.numel = key, dtype_name, numel


class _Pickler(pickle._Pickler):
    """Writes PyTorch's pickle layout with the pure-Python pickler, whose
    dispatch table lets us emit ``torch.*`` globals without importing torch."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self.storages = storages

    def save_global_ref(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def save_reduce_obj(self, obj):
        self.save(obj.func)
        self.save(tuple(obj.args))
        self.write(pickle.REDUCE)

    dispatch[_Global] = save_global_ref
    dispatch[_Reduce] = save_reduce_obj

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", _Global("torch", _STORAGE_NAMES[obj.dtype_name]), obj.key, "cpu", obj.numel)
        return None

    def reducer_override(self, obj):  # not used by the pure-Python pickler; kept for clarity
        return NotImplemented


def _host(t):
    d = t._data
    return d if isinstance(d, np.ndarray) else t._to_host_numpy()


class _StorageTable:
    """Assigns storage keys; views of one NumPy buffer share a key."""

    def __init__(self):
        self.by_root = {}
        self.blobs = []

    def add(self, arr):
        """(storage ref, offset, size, stride) for a host array."""
        itemsize = arr.itemsize
        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        usable = (root is not arr or arr.flags.c_contiguous) and root.flags.c_contiguous and root.dtype == arr.dtype \
            and all(s >= 0 for s in arr.strides) and all(s % itemsize == 0 for s in arr.strides)
        if usable:
            start = root.__array_interface__["data"][0]
            offset_bytes = arr.__array_interface__["data"][0] - start
            usable = offset_bytes % itemsize == 0
        if not usable:
            root = np.ascontiguousarray(arr)
            offset_bytes = 0
            strides = tuple(s // itemsize for s in root.strides)
        else:
            strides = tuple(s // itemsize for s in arr.strides)
        key = self.by_root.get(id(root))
        if key is None or self.blobs[int(key)][0] is not root:
            key = str(len(self.blobs))
            self.by_root[id(root)] = key
            self.blobs.append((root, key))
        numel = root.size
        dt = D.from_numpy_dtype(arr.dtype).name
        return _StorageRef(key, dt, numel), offset_bytes // itemsize, tuple(arr.shape), strides


def _convert(obj, table, memo):
    """Turn fabric objects into the placeholder objects the pickler writes."""
    oid = id(obj)
    if oid in memo:
        return memo[oid]
    if isinstance(obj, Tensor):
        arr = _host(obj)
        ref, offset, size, stride = table.add(arr)
        rebuild = _Reduce(_Global("torch._utils", "_rebuild_tensor_v2"),
                          (ref, offset, size, stride, False, _Reduce(_Global("collections", "OrderedDict"), ())))
        if type(obj).__name__ == "Parameter":
            out = _Reduce(_Global("torch._utils", "_rebuild_parameter"),
                          (rebuild, obj.requires_grad, _Reduce(_Global("collections", "OrderedDict"), ())))
        else:
            out = rebuild if not obj.requires_grad else _Reduce(
                _Global("torch._utils", "_rebuild_tensor_v2"),
                (ref, offset, size, stride, True, _Reduce(_Global("collections", "OrderedDict"), ())))
    elif isinstance(obj, D.dtype):
        out = _Global("torch", obj.name)
    elif isinstance(obj, _device_cls):
        out = _Reduce(_Global("torch", "device"), (str(obj),))
    elif isinstance(obj, collections.OrderedDict):
        out = collections.OrderedDict((_convert(k, table, memo), _convert(v, table, memo)) for k, v in obj.items())
    elif isinstance(obj, dict):
        out = {_convert(k, table, memo): _convert(v, table, memo) for k, v in obj.items()}
    elif isinstance(obj, list):
        out = [_convert(v, table, memo) for v in obj]
    elif isinstance(obj, tuple):
        items = [_convert(v, table, memo) for v in obj]
        out = type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    elif obj is None or isinstance(obj, (bool, int, float, str, bytes, complex)):
        out = obj
    elif isinstance(obj, (set, frozenset)):
        out = type(obj)(_convert(v, table, memo) for v in obj)
    elif isinstance(obj, np.generic):
        out = obj.item()
    elif isinstance(obj, np.ndarray):
        raise TypeError("fabric.save stores tensors, not NumPy arrays: wrap it with fabric.from_numpy first")
    else:
        raise TypeError(f"fabric.save cannot store objects of type {type(obj).__name__}: only tensors, "
                        "numbers, strings, None and (ordered) dicts/lists/tuples of them")
    memo[oid] = out
    return out


def _write_zip(fileobj, pickled, table, prefix="archive"):
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED) as z:
        def add(name, data, align=False):
            info = zipfile.ZipInfo(f"{prefix}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            if align:
                # pad the local header's extra field so that the data starts on a 64-byte boundary
                header = 30 + len(info.filename.encode())
                pos = z.fp.tell() + header + 4
                pad = (-pos) % _ALIGN
                info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # "FB" padding field, as PyTorch
            z.writestr(info, data)

        add("data.pkl", pickled)
        add(".format_version", b"1")
        add(".storage_alignment", str(_ALIGN).encode())
        add("byteorder", b"little")
        size = sum(root.nbytes for root, _ in table.blobs)
        with progress(total=size, desc="fabric.save", unit="B", min_total=_PROGRESS_BYTES) as bar:
            for root, key in table.blobs:
                add(f"data/{key}", np.ascontiguousarray(root).tobytes(), align=True)
                bar.update(root.nbytes)
        add("version", b"3\n")


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save tensors / state dicts / containers of them to a path or file object.

    The file is PyTorch's zip checkpoint format (``torch.load`` reads it).
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("fabric.save writes its own safe pickle layout; pickle_module is not supported")
    table = _StorageTable()
    converted = _convert(obj, table, {})
    buf = io.BytesIO()
    _Pickler(buf, table).dump(converted)
    pickled = buf.getvalue()
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".fabric-save-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                _write_zip(fh, pickled, table, _prefix_for(path))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    else:
        _write_zip(f, pickled, table)


def _prefix_for(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem if stem and stem.isidentifier() else "archive"


# --- reading ---------------------------------------------------------------------

def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    arr, dt = storage
    itemsize = arr.itemsize
    size, stride = tuple(size), tuple(stride)
    if arr.size == 0 or 0 in size:
        view = np.zeros(size, arr.dtype)
    else:
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        if offset < 0 or last >= arr.size or any(st < 0 for st in stride):
            raise UnpicklingError(f"tensor of size {list(size)} with strides {list(stride)} at offset {offset} "
                                  f"does not fit in its storage of {arr.size} elements: the file is corrupted")
        view = np.lib.stride_tricks.as_strided(arr[offset:], size, tuple(s * itemsize for s in stride))
    t = Tensor._make(view, False)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad=requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


class _StorageType:
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


def _dtype_global(name):
    return D._BY_NAME[name]


_SAFE_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch", "Size"): tuple,
    ("torch", "device"): _device_cls,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "slice"): slice,
    ("builtins", "complex"): complex,
}
for _n in _STORAGE_DTYPES:
    _SAFE_GLOBALS[("torch", _n)] = _StorageType(_STORAGE_DTYPES[_n])
for _d in D.ALL_DTYPES:
    _SAFE_GLOBALS[("torch", _d.name)] = _d


class _Unpickler(pickle.Unpickler):
    """Resolves only allow-listed names; storages come from the zip records."""

    def __init__(self, file, zf, prefix, location):
        super().__init__(file)
        self.zf, self.prefix, self.location = zf, prefix, location
        self.cache = {}

    def find_class(self, module, name):
        obj = _SAFE_GLOBALS.get((module, name))
        if obj is None:
            if module == "torch" and name == "UntypedStorage":
                return _StorageType("uint8")
            raise UnpicklingError(
                f"fabric.load refuses to load the global '{module}.{name}': checkpoints may hold only tensors, "
                "numbers, strings and containers of them (weights_only loading never runs code from the file)")
        return obj

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise UnpicklingError(f"unsupported persistent id {pid!r}")
        _, stype, key, location, numel = pid[:5]
        if not isinstance(stype, _StorageType):
            raise UnpicklingError(f"unsupported storage type {stype!r}")
        hit = self.cache.get(key)
        if hit is None:
            try:
                raw = self.zf.read(f"{self.prefix}/data/{key}")
            except KeyError:
                raise UnpicklingError(f"storage record data/{key} is missing: the file is truncated or corrupted") \
                    from None
            dt = D._BY_NAME[stype.dtype].to_numpy()
            if len(raw) % dt.itemsize:
                raise UnpicklingError(f"storage data/{key} has {len(raw)} bytes, not a multiple of {dt.itemsize}")
            arr = np.frombuffer(raw, dtype=dt).copy()
            hit = self.cache[key] = (arr, stype.dtype)
        return hit


def _move(obj, map_location):
    """Apply ``map_location`` to every tensor in a loaded object."""
    if map_location is None:
        return obj
    if isinstance(obj, Tensor):
        if callable(map_location) and not isinstance(map_location, (str, _device_cls)):
            res = map_location(obj, "cpu")
            return obj if res is None else res
        target = map_location
        if isinstance(map_location, dict):
            target = map_location.get("cpu", None)
            if target is None:
                return obj
        out = obj.to(target)
        if type(obj) is not Tensor and type(out) is Tensor:
            out = type(obj)(out, requires_grad=obj.requires_grad)
        return out
    if isinstance(obj, collections.OrderedDict):
        return collections.OrderedDict((k, _move(v, map_location)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: _move(v, map_location) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_move(v, map_location) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_move(v, map_location) for v in obj)
    return obj


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load a checkpoint written by :func:`save` or by ``torch.save``.

    Only tensors, parameters, numbers, strings, None and containers of them
    are accepted, whatever ``weights_only`` says: fabric never unpickles
    arbitrary objects.
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    else:
        data = f.read()
    if not data:
        raise RuntimeError("fabric.load: the file is empty")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        if data[:2] == b"\x80\x02" or data[:1] == b"\x80":
            raise RuntimeError("fabric.load: this is a legacy (pre-1.6, non-zip) PyTorch checkpoint, which fabric "
                               "does not read; re-save it with a current PyTorch")
        raise RuntimeError("fabric.load: not a fabric/PyTorch checkpoint (expected a zip archive); the file may be "
                           "truncated or corrupted")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = zf.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkl:
            raise RuntimeError("fabric.load: the archive has no data.pkl record")
        prefix = pkl[0].split("/")[0]
        pickled = zf.read(pkl[0])
        obj = _Unpickler(io.BytesIO(pickled), zf, prefix, map_location).load()
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"fabric.load: the checkpoint is corrupted ({e})") from None
    except (EOFError, struct.error) as e:
        raise RuntimeError(f"fabric.load: the checkpoint is truncated or corrupted ({e})") from None
    return _move(obj, map_location)
