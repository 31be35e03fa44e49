"""Turning a checkpoint's storage records into arrays on the right device, and the full unpickler.

Each ``data/<key>`` record is read once (sizes checked, one copy), byte-swapped
when the file's byte order is not the machine's, and placed where
``map_location`` says: the work is one step per record, however many times the
pickle refers to it.

Example::

    >>> import io, fabric
    >>> from fabric.serialization._archive import Archive
    >>> from fabric.serialization._loader import StorageLoader
    >>> buf = io.BytesIO()
    >>> fabric.save({"w": fabric.ones(3)}, buf)
    >>> loader = StorageLoader(Archive(buf), "cpu", "little")
    >>> loader(("storage", fabric.serialization._rebuild.StorageType("float32"), "0", "cpu", 3)).array
    array([1., 1., 1.], dtype=float32)
"""
from __future__ import annotations

import importlib
import sys

from .. import _dtype as D
from .._device import device as _device_cls
from .._tensor import Tensor
from . import _allowlist
from . import _rebuild as R


def _cuda_target(location):
    from .. import cuda

    if not cuda.is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    dev = _device_cls(location)
    index = dev.index or 0
    if index >= cuda.device_count():
        raise RuntimeError(f"Attempting to deserialize object on CUDA device {index} but torch.cuda.device_count() "
                           f"is {cuda.device_count()}. Please use torch.load with map_location to map your storages "
                           "to an existing device.")
    return dev


def _to_location(arr, location):
    """The storage array on the device a location tag names (``"cpu"``, ``"cuda:1"``)."""
    if location == "cpu":
        if arr.__class__.__module__.startswith("numpy"):
            return arr
        from ..backends import backend_of

        return backend_of(arr).to_numpy(arr)
    if location.startswith("cuda"):
        dev = _cuda_target(location)
        from ..backends import backend_for

        return backend_for(dev).from_numpy(arr, dev.index or 0)
    raise RuntimeError(f"don't know how to restore data location of torch.storage.UntypedStorage (tagged with "
                       f"{location})")


class StorageLoader:
    """``persistent_load`` for both unpicklers: each storage record is read once, byte-swapped if the
    file's byte order differs, and placed where ``map_location`` says: the work is one step per record."""

    def __init__(self, archive, map_location, byteorder):
        self.archive, self.map_location, self.byteorder = archive, map_location, byteorder
        self.cache = {}

    def __call__(self, pid):
        if not isinstance(pid, tuple):
            raise AssertionError(f"saved_id must be a tuple, got {type(pid).__name__}")
        tag = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
        if tag != "storage":
            raise AssertionError(f"Unknown typename for persistent_load, expected 'storage' but got '{tag}'")
        storage_type, key, location, numel = pid[1:]
        if not isinstance(storage_type, R.StorageType):
            raise AttributeError(f"'{type(storage_type).__name__}' object has no attribute 'dtype'")
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        dtype = D._BY_NAME.get(storage_type.dtype_name)
        if dtype is None:
            raise NotImplementedError(f"fabric.load: storages of dtype torch.{storage_type.dtype_name} are not "
                                      "supported")
        if not isinstance(numel, int) or numel < 0:
            raise RuntimeError(f"storage data/{key} declares an invalid element count {numel!r}")
        raw = self.archive.storage(f"data/{key}", numel * dtype.itemsize)
        arr = raw.view(dtype.to_numpy())
        if self.byteorder != sys.byteorder and dtype.itemsize > 1:
            arr.byteswap(inplace=True)
        location = location.decode("ascii") if isinstance(location, bytes) else str(location)
        storage = self.cache[key] = R.LoadedStorage(self._restore(arr, location))
        return storage

    def _restore(self, arr, location):
        m = self.map_location
        if m is None:
            return _to_location(arr, location)
        if isinstance(m, dict):
            return _to_location(arr, str(m.get(location, location)))
        if isinstance(m, (str, bytes, _device_cls)):
            return _to_location(arr, m.decode() if isinstance(m, bytes) else str(m))
        result = m(Tensor._make(arr), location)  # the callable gets the storage as a flat 1-D tensor
        if result is None:
            return _to_location(arr, location)
        out = result._data if isinstance(result, Tensor) else result
        if getattr(out, "shape", None) != arr.shape or out.dtype != arr.dtype:
            raise RuntimeError("map_location callable must return the storage it was given (a flat tensor of the "
                               f"same size and dtype) or None; got {type(result).__name__}")
        return out


def full_unpickler(pickle_module):
    """A full (unsafe) unpickler: PyTorch's names resolve to fabric's objects, everything else is imported."""
    names = _allowlist.default_globals()

    class FullUnpickler(pickle_module.Unpickler):
        def find_class(self, module, name):
            obj = names.get(f"{module}.{name}")
            if obj is not None:
                return obj
            if module == "torch" or module.startswith("torch."):
                fabric_module = "fabric" + module[len("torch"):]
                try:
                    mod = importlib.import_module(fabric_module)
                    for part in name.split("."):
                        mod = getattr(mod, part)
                    return mod
                except (ImportError, AttributeError):
                    raise ImportError(f"fabric.load: the checkpoint refers to {module}.{name}, which fabric does "
                                      f"not provide ({fabric_module}.{name} is missing)") from None
            return super().find_class(module, name)

    return FullUnpickler
