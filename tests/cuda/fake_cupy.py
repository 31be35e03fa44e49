"""A NumPy-backed stand-in for the part of CuPy that fabric uses — for tests only.

Without a GPU, ``import cupy`` works but no device exists, so fabric's CUDA
path (``backend_of`` choosing the CuPy backend, ``xp`` being ``cupy``,
host/device moves, ``CupyBackend``'s launch code, the CUDA generator, streams
and memory statistics) never runs.  :func:`installed` puts this module in
``sys.modules`` as ``cupy`` (with ``cupyx`` and the submodules fabric
imports) and resets fabric's CUDA caches, so that fabric's unchanged code runs
on "device" arrays that are really NumPy arrays::

    with fake_cupy.installed(kernels="harness"):
        x = fabric.ones(3, device="cuda")      # a fake_cupy.ndarray inside
        (x * 2).sum().item()                   # 6.0, computed by NumPy

What it enforces, as CuPy does (each one a class of bug that would otherwise
first show on a GPU):

* a device array is not a NumPy array: ``isinstance(a, numpy.ndarray)`` is
  False, ``numpy.asarray(a)`` raises TypeError ("Implicit conversion to a
  NumPy array is not allowed"), ``a.__index__`` does not exist;
* NumPy arrays (and lists) are refused as operands of ufuncs and routines,
  with CuPy's ``TypeError: Unsupported type <class 'numpy.ndarray'>``; only
  the converting functions (``asarray``, ``array``, ...), index keys, and
  ``take``/``put``-style index arguments accept them, as in CuPy;
* ``a[basic] = numpy_array`` raises ValueError, as CuPy's ``fill`` does;
* reductions return 0-d device arrays, not NumPy scalars;
* arrays live on a device: results of kernels are allocated on the *current*
  device, and an operand on another device raises CuPy's ValueError;
* names: only functions, ufunc methods and ndarray attributes that the
  installed real CuPy has are offered (when CuPy is importable), and calls to
  CuPy's Python-level functions are checked against their signatures;
* ``RawModule``/``RawKernel`` cannot compile (a clear RuntimeError) unless a
  kernel provider is plugged into the backend (``kernels="harness"`` runs the
  real ``.cu`` sources through the g++ CPU harness, see ``tests/cuda/harness``).

* host/device asynchrony, modelled as the latest legal schedule: an
  asynchronous copy (``ndarray.set(a, stream=...)``, ``get(stream=...,
  blocking=False)``) is queued on its stream and runs only when that stream
  is synchronized, an event recorded after it is synchronized, another stream
  that waits on such an event runs, or later work on the same stream runs
  (every operation on device arrays first runs what is queued on the current
  stream, then runs at once).  A pinned host buffer is read or written when
  the copy runs, not when it was queued;
* pinned memory comes from a pool that hands a freed block to the next
  allocation of its size, as CuPy's pinned pool does;
* work that depends on other processes (a collective of the NCCL test double,
  tests/distributed/fake_nccl.py) is a :class:`Blocking` item: it stays at
  the head of its stream, holding back what is queued after it, until it can
  run; a host wait on it retries for ``Blocking.host_wait_s`` seconds, then
  raises instead of hanging;
* opt-in checks (:class:`Config`, turned on by the NCCL double): queries of
  ``Stream.done``/``Event.done`` run what they can (a GPU progresses on its
  own), waiting on a never-recorded event raises, and a buffer that queued
  work on another stream will still read or write (:func:`guard_inflight`:
  a collective, an asynchronous host-to-device copy) raises when touched by
  the host or a stream that did not wait for that work.

What it cannot tell: anything about real kernels, timing, the true
concurrency of streams (queued work runs in the order the rules above give),
float rounding of CuPy's own kernels (NumPy computes every value), and
behaviour of CuPy functions whose results differ from NumPy's beyond the
checks above.
"""
from __future__ import annotations

import contextlib
import inspect
import itertools
import sys
import threading
import time
import types
import weakref

import numpy as np

__version__ = "0.0-fake"

# --------------------------------------------------------------------------
# what the real CuPy offers (names only), read once if CuPy is importable
# --------------------------------------------------------------------------


def _real_api():
    if getattr(sys.modules.get("cupy"), "__fake__", False):
        raise RuntimeError("import fake_cupy before installing it")
    try:
        import cupy as real
        import cupyx.scipy.special as real_special
    except Exception:
        return None
    return {"": real, "linalg": real.linalg, "fft": real.fft, "lib.stride_tricks": real.lib.stride_tricks,
            "special": real_special, "ndarray": set(dir(real.ndarray))}


_REAL = _real_api()


def _real(ns: str, name: str):
    """The real CuPy object ``name`` of namespace ``ns`` (None if unknown / no CuPy)."""
    if _REAL is None:
        return None
    return getattr(_REAL[ns], name, None)


def _offered(ns: str, name: str) -> bool:
    return _REAL is None or hasattr(_REAL[ns], name)


_SIGNATURES: dict = {}


_BOUND_OK: set = set()


def _check_signature(ns, name, args, kwargs):
    """Arguments CuPy's own (Python) function would refuse raise its TypeError;
    whether a call binds depends only on the argument count and keyword names."""
    shape = (ns, name, len(args), tuple(kwargs))
    if shape in _BOUND_OK:
        return
    key = (ns, name)
    sig = _SIGNATURES.get(key, 0)
    if sig == 0:
        real = _real(ns, name)
        try:
            sig = inspect.signature(real) if real is not None and inspect.isfunction(real) else None
        except (TypeError, ValueError):
            sig = None
        _SIGNATURES[key] = sig
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"cupy.{ns + '.' if ns else ''}{name}(): {e}") from None
    _BOUND_OK.add(shape)


# --------------------------------------------------------------------------
# devices, allocation accounting
# --------------------------------------------------------------------------


class CUDARuntimeError(RuntimeError):
    """CuPy's ``cupy_backends.cuda.api.runtime.CUDARuntimeError``."""


class _Config:
    n_devices = 1


class _Local(threading.local):
    def __init__(self):
        self.device = 0
        self.streams: dict[int, Stream] = {}
        self.hooks: dict[str, MemoryHook] = {}


_local = _Local()


def _current() -> int:
    return _local.device


def _check_ordinal(i: int) -> int:
    i = int(i)
    if not 0 <= i < _Config.n_devices:
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    return i


def _root_of(a: np.ndarray) -> np.ndarray:
    """The NumPy array that owns ``a``'s memory (through views and as_strided wrappers)."""
    root = a
    b = a.base
    while b is not None:
        if isinstance(b, np.ndarray):
            root = b
        b = getattr(b, "base", None)
    return root


_roots: dict[int, tuple] = {}   # id(root) -> (weakref, device, MemoryPointer)


def _device_of_new(a: np.ndarray, device: int | None = None) -> int:
    """The device of ``a``: its owner's if known, else (a new allocation) ``device``
    or the current device, accounted in the memory pool."""
    root = _root_of(a)
    entry = _roots.get(id(root))
    if entry is not None and entry[0]() is root:
        return entry[1]
    dev = _current() if device is None else device
    key = id(root)
    mp = _allocator[0](root.nbytes) if root.nbytes else None

    def release(_ref, key=key, mp=mp):
        if _roots.get(key, (None,))[0] is _ref:
            del _roots[key]
        if mp is not None:
            mp.mem._release()

    _roots[key] = (weakref.ref(root, release), dev, mp)
    return dev


# --------------------------------------------------------------------------
# the array
# --------------------------------------------------------------------------


def _wrap_new(a: np.ndarray, device: int | None = None) -> ndarray:
    out = object.__new__(ndarray)
    out._a = a
    out._dev = _device_of_new(a, device)
    return out


def _is_scalar(v) -> bool:
    return isinstance(v, (bool, int, float, complex, np.generic)) and not isinstance(v, np.ndarray)


def _unsupported(v):
    return TypeError(f"Unsupported type {type(v)}")


def _check_device(a: ndarray) -> None:
    if _pending[0]:
        _run_current_stream()   # an operation on the current stream runs after what is queued on it
    if _inflight:
        _check_inflight(a._a)
    cur = _current()
    if a._dev != cur:
        raise ValueError(f"The device where the array resides ({a._dev}) is different from the current device "
                         f"({cur}). Peer access is unavailable between these devices.")


def _unwrap(v, allow_numpy=False, check=True, seen=None):
    """Device arrays to their NumPy arrays (recording them in ``seen``); NumPy
    arrays refused unless ``allow_numpy``; containers walked."""
    if v.__class__ is ndarray:
        if check:
            _check_device(v)
        if seen is not None:
            seen[id(v._a)] = v
        return v._a
    if isinstance(v, np.ndarray):
        if not allow_numpy:
            raise _unsupported(v)
        return v
    if isinstance(v, (list, tuple)) and v.__class__ in (list, tuple):
        return v.__class__(_unwrap(x, allow_numpy, check, seen) for x in v)
    return v


def _wrap(r, seen=None):
    """NumPy results to device arrays (0-d for NumPy scalars); an input returned
    unchanged comes back as the same device array object."""
    if isinstance(r, np.ndarray):
        if seen is not None:
            hit = seen.get(id(r))
            if hit is not None and hit._a is r:
                return hit
        return _wrap_new(r)
    if isinstance(r, np.generic):
        return _wrap_new(np.asarray(r))
    if isinstance(r, tuple):
        items = [_wrap(x, seen) for x in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    if isinstance(r, list):
        return [_wrap(x, seen) for x in r]
    return r


# allocation functions that only read the prototype's shape and dtype (no kernel on its device)
_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "full_like"})
_VIEW_METHODS = frozenset({"reshape", "view", "transpose", "swapaxes", "squeeze", "ravel", "diagonal", "T"})
_NUMPY_OK_METHODS = frozenset({"take", "put", "fill", "repeat", "choose"})


class ndarray:
    """A device array: a NumPy array plus the device it lives on."""

    __slots__ = ("__weakref__", "_a", "_dev")
    __array_priority__ = 100.0
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is None:
            self._a = np.empty(shape, dtype, order=order)
            _poison(self._a)   # uninitialized device memory
            self._dev = _device_of_new(self._a)
            return
        mem = memptr.mem
        dtype = np.dtype(dtype)
        self._a = np.ndarray(shape, dtype, buffer=mem._flat, offset=memptr.ptr - mem.ptr, strides=strides)
        self._dev = _device_of_new(self._a, memptr.device_id)

    # --- attributes -----------------------------------------------------------
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):   # CuPy allows it when no copy is needed (AttributeError otherwise)
        self._a.shape = value
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: _wrap_new(self._a.T))
    mT = property(lambda self: _wrap_new(np.swapaxes(self._a, -1, -2)))
    # views on the device, as CuPy's (NumPy's attribute of the host array would leave the device)
    real = property(lambda self: _wrap_new(self._a.real))
    imag = property(lambda self: _wrap_new(self._a.imag))

    @property
    def base(self):
        b = self._a.base
        return _wrap_new(b) if isinstance(b, np.ndarray) else None

    @property
    def device(self) -> Device:
        return Device(self._dev)

    @property
    def data(self) -> MemoryPointer:
        root = _root_of(self._a)
        return MemoryPointer(Memory(root, self._dev), self._a.__array_interface__["data"][0] - _addr(root))

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (_addr(a), False),
                "strides": None if a.flags.c_contiguous else a.strides, "version": 3}

    # --- conversion -------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    def get(self, stream=None, order="C", out=None, blocking=True):
        """A device-to-host copy on ``stream`` (the current one by default); with
        ``blocking=False`` it is queued and ``out`` is filled when the stream runs."""
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
            if out.shape != self.shape or out.dtype != self.dtype:
                raise ValueError("Shape or dtype mismatch")
        else:
            out = np.empty(self.shape, self.dtype, order=order)
        src = self._a
        q = _queue_of(stream, self._dev)   # CuPy copies under the array's device
        dst = _raw_host(out)

        def copy():
            if _inflight:
                _check_inflight(src)
            np.copyto(dst(), src)
        q.enqueue(copy)
        if blocking:
            q.drain()
        return out

    def set(self, arr, stream=None):
        """A host-to-device copy.  Without ``stream`` it is synchronous (CuPy's
        ``copy_from_host``); with one it is queued on it and reads ``arr`` when it
        runs - from pinned memory, as on a GPU; pageable memory is staged at once."""
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        if self.dtype != arr.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if self.shape != arr.shape:
            raise ValueError("Shape mismatch")
        if not self._a.flags.c_contiguous:
            raise RuntimeError("Cannot set to non-contiguous array")
        dst = self._a
        if stream is None:
            _queue_of(None, self._dev).drain()
            if _inflight:
                _check_inflight(dst)
            np.copyto(dst, arr)
            return
        if _is_pinned(arr):
            src = _raw_host(arr)
        else:
            snap = arr.copy()

            def src():
                return snap
        if Config.guard_async_copies:
            token = types.SimpleNamespace(done=False)

            def copy():
                np.copyto(dst, src())
                token.done = True
            guard_inflight(_root_of(dst), lambda: token.done, "an asynchronous host-to-device copy", token)
            _queue_of(stream, self._dev).enqueue(copy)
            return
        _queue_of(stream, self._dev).enqueue(lambda: np.copyto(dst, src()))

    # reading device memory on the host: a blocking copy on the current stream
    def item(self, *args):
        _run_current_stream()
        if _inflight:
            _check_inflight(self._a)
        return self._a.item(*args)

    def tolist(self):
        _run_current_stream()
        if _inflight:
            _check_inflight(self._a)
        return self._a.tolist()

    def __bool__(self):
        _run_current_stream()
        if _inflight:
            _check_inflight(self._a)
        return bool(self._a)

    def __int__(self):
        _run_current_stream()
        if _inflight:
            _check_inflight(self._a)
        return int(self._a)

    def __float__(self):
        _run_current_stream()
        if _inflight:
            _check_inflight(self._a)
        return float(self._a)

    def __complex__(self):
        return complex(self._a)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return self._a.__format__(spec)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        return _rebuild, (self.get(), self._dev)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self._a.__dlpack__(max_version=max_version)

    def __dlpack_device__(self):
        return (2, self._dev)   # kDLCUDA

    toDlpack = __dlpack__

    # --- copies and views ----------------------------------------------------------
    def copy(self, order="C"):
        """A copy on the *current* device (CuPy copies across devices here), on its current stream."""
        _run_current_stream()
        return _wrap_new(np.array(self._a, order=order, copy=True))

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        r = self._a.astype(dtype, order=order, copy=copy)
        if r is self._a:
            return self
        _check_device(self)     # a cast or copy is a kernel on the current device
        return _wrap_new(r)

    def fill(self, value):
        _check_device(self)
        if isinstance(value, (ndarray, np.ndarray)):
            if value.shape != ():
                raise ValueError(f"non-scalar {'cupy' if isinstance(value, ndarray) else 'numpy'}.ndarray cannot "
                                 "be used for fill")
            value = value.item() if isinstance(value, np.ndarray) else value._a.item()
        self._a.fill(value)

    # --- indexing ---------------------------------------------------------------------
    def __getitem__(self, key):
        k, advanced = _index_key(key)
        if advanced:
            _check_device(self)
        r = self._a[k]
        return _wrap_new(r) if isinstance(r, np.ndarray) else _wrap_new(np.asarray(r))

    def __setitem__(self, key, value):
        _check_device(self)
        k, advanced = _index_key(key)
        if value.__class__ is ndarray:
            v = _unwrap(value)
        elif isinstance(value, np.ndarray):
            if not advanced and value.shape != ():
                raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
            v = value
        elif isinstance(value, (list, tuple)) and not advanced:
            raise _unsupported(value)
        else:
            v = value
        self._a[k] = v

    # --- NumPy protocols -----------------------------------------------------------------
    def __array_ufunc__(self, uf, method, *inputs, **kwargs):
        fake = _ufuncs.get(uf.__name__) or (_module_getattr(uf.__name__) if _offered("", uf.__name__) else None)
        if not isinstance(fake, ufunc):
            return NotImplemented
        return getattr(fake, method)(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        ns = {"numpy": "", "numpy.linalg": "linalg", "numpy.fft": "fft",
              "numpy.lib.stride_tricks": "lib.stride_tricks"}.get(func.__module__)
        if ns is None or not _offered(ns, func.__name__):
            return NotImplemented
        return _NAMESPACES[ns].__getattr__(func.__name__)(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") or (_REAL is not None and name not in _REAL["ndarray"]):
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
        meth = getattr(self._a, name)
        if not callable(meth):
            return meth
        allow = name in _NUMPY_OK_METHODS
        check = name not in _VIEW_METHODS

        def method(*args, **kwargs):
            if check:
                _check_device(self)
            if name in _SORTS:
                kwargs = _stable_kind(kwargs)
            seen = {id(self._a): self}
            r = meth(*_unwrap(args, allow, seen=seen), **_unwrap_kw(kwargs, allow, seen))
            return _wrap(r, seen)

        return method


def _rebuild(host, device):
    with Device(device):
        return _module_getattr("asarray")(host)


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _index_key(key):
    """(NumPy key, whether it uses advanced indexing)."""
    parts = key if isinstance(key, tuple) else (key,)
    advanced = False
    out = []
    for p in parts:
        if p is None or p is Ellipsis or isinstance(p, slice) or isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
            out.append(p)
        else:
            advanced = True
            out.append(_unwrap(p, allow_numpy=True) if not isinstance(p, list) else np.asarray(
                _unwrap(p, allow_numpy=True)))
    return (tuple(out) if isinstance(key, tuple) else out[0]), advanced


def _unwrap_kw(kwargs, allow, seen):
    return {k: _unwrap(v, allow, seen=seen) for k, v in kwargs.items()}


# --- operators: routed through the ufuncs (so NumPy operands are refused) -------------
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
           "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
           "rshift": "right_shift"}
_COMPARE = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
            "ne": "not_equal"}


def _make_binary(uname, reflected=False, inplace=False):
    def op(self, other):
        uf = _module_getattr(uname)
        if inplace:
            return uf(self, other, out=self)
        return uf(other, self) if reflected else uf(self, other)
    return op


for _short, _uname in _BINARY.items():
    setattr(ndarray, f"__{_short}__", _make_binary(_uname))
    setattr(ndarray, f"__r{_short}__", _make_binary(_uname, reflected=True))
    setattr(ndarray, f"__i{_short}__", _make_binary(_uname, inplace=True))
for _short, _uname in _COMPARE.items():
    setattr(ndarray, f"__{_short}__", _make_binary(_uname))
ndarray.__neg__ = lambda self: _module_getattr("negative")(self)
ndarray.__pos__ = lambda self: _module_getattr("positive")(self)
ndarray.__abs__ = lambda self: _module_getattr("absolute")(self)
ndarray.__invert__ = lambda self: _module_getattr("invert")(self)
ndarray.__divmod__ = lambda self, other: _module_getattr("divmod")(self, other)
ndarray.__module__ = "cupy"


# --------------------------------------------------------------------------
# ufuncs and functions
# --------------------------------------------------------------------------


def _ufunc_operand(v, seen):
    if v.__class__ is ndarray:
        _check_device(v)
        seen[id(v._a)] = v
        return v._a
    if _is_scalar(v) or v is None:
        return v
    raise _unsupported(v)


class ufunc:
    """A CuPy ufunc on device arrays and scalars only."""

    def __init__(self, np_ufunc):
        self._u = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs

    def __repr__(self):
        return f"<ufunc 'cupy_{self.__name__}'>"

    def _run(self, fn, inputs, kwargs):
        seen: dict = {}
        ins = [_ufunc_operand(v, seen) for v in inputs]
        out = kwargs.get("out")
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            for o in outs:
                if o.__class__ is not ndarray:
                    raise TypeError(f"Output arguments must be cupy.ndarray, got {type(o)}")
            kwargs = dict(kwargs, out=tuple(_ufunc_operand(o, seen) for o in outs) if isinstance(out, tuple)
                          else _ufunc_operand(out, seen))
        kwargs = {k: (_ufunc_operand(v, seen) if k == "where" else v) for k, v in kwargs.items()}
        return _wrap(fn(*ins, **kwargs), seen)

    def __call__(self, *inputs, **kwargs):
        return self._run(self._u, inputs, kwargs)

    def _method(name):
        def m(self, *args, **kwargs):
            if not _offered("", self.__name__) or not hasattr(_real("", self.__name__) or self._u, name):
                raise AttributeError(f"'cupy.ufunc' {self.__name__} has no method {name}")
            if name == "at":
                a, idx = args[0], args[1]
                rest = args[2:]
                seen: dict = {}
                target = _ufunc_operand(a, seen)
                key, _adv = _index_key(idx)
                vals = [_ufunc_operand(v, seen) for v in rest]
                self._u.at(target, key, *vals)
                return None
            return self._run(getattr(self._u, name), args, kwargs)
        m.__name__ = name
        return m

    reduce = _method("reduce")
    accumulate = _method("accumulate")
    reduceat = _method("reduceat")
    outer = _method("outer")
    at = _method("at")
    del _method


_ufuncs: dict[str, ufunc] = {}

# functions that copy host data to the device (NumPy arrays and lists welcome)
_CONVERTING = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray"})
# functions whose index-like arguments CuPy converts from NumPy
_NUMPY_OK = frozenset({"take", "put", "take_along_axis", "put_along_axis", "choose", "searchsorted", "pad"})


def _convert(name):
    """``asarray`` and friends: device arrays pass through (or are cast), host
    data (NumPy arrays, lists, scalars) is copied to the current device."""
    order_of = {"ascontiguousarray": "C", "asfortranarray": "F"}

    def fn(*args, **kwargs):
        _check_signature("", name, args, kwargs)
        obj = args[0]
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        order = order_of.get(name) or (args[2] if len(args) > 2 and name != "array" else kwargs.get("order")) or "K"
        copy = kwargs.get("copy", name == "array")
        ndmin = kwargs.get("ndmin", 0)
        if obj.__class__ is ndarray:
            a = obj._a
            same = (dtype is None or np.dtype(dtype) == a.dtype) and (
                order in ("K", "A") or (order == "C" and a.flags.c_contiguous)
                or (order == "F" and a.flags.f_contiguous)) and a.ndim >= ndmin
            if same and not copy:
                return obj
            _check_device(obj)
            return _wrap_new(np.array(a, dtype=dtype, order=order, copy=True, ndmin=ndmin))
        if hasattr(obj, "__cuda_array_interface__") and not isinstance(obj, np.ndarray):
            return _from_cai(obj)
        host = np.array(_unwrap(obj, allow_numpy=True, check=False), dtype=dtype, copy=True, order=order,
                        ndmin=ndmin)
        return _wrap_new(host)

    fn.__name__ = name
    return fn


def _from_cai(obj):
    inner = getattr(obj, "_data", None)
    if inner.__class__ is ndarray:
        return inner
    raise TypeError(f"fake_cupy cannot read __cuda_array_interface__ of {type(obj).__name__}")


def _stable_kind(kwargs):
    """CuPy sorts are stable (thrust); ``kind`` may only be None or 'stable'."""
    kind = kwargs.get("kind")
    if kind not in (None, "stable"):
        raise ValueError(f"kind={kind!r}: only 'stable' sorting is supported")
    return dict(kwargs, kind="stable")


_SORTS = frozenset({"sort", "argsort"})


def _function(ns: str, name: str, np_fn):
    allow = name in _NUMPY_OK

    def fn(*args, **kwargs):
        _check_signature(ns, name, args, kwargs)
        if ns == "" and name in _SORTS:
            kwargs = _stable_kind(kwargs)
        seen: dict = {}
        check = name not in _LIKE
        a = _unwrap(args, allow, check, seen)
        k = {key: _unwrap(v, allow, check, seen) for key, v in kwargs.items()}
        return _wrap(np_fn(*a, **k), seen)

    fn.__name__ = name
    fn.__qualname__ = name
    return fn


_PASS_THROUGH = (type, np.dtype)


def _poison(a: np.ndarray) -> None:
    if a.flags.c_contiguous:
        a.reshape(-1).view(np.uint8).fill(0xFF)
    elif a.flags.f_contiguous:
        a.T.reshape(-1).view(np.uint8).fill(0xFF)


def _poisoned(fn):
    """``empty``: device memory is uninitialized; 0xFF bytes (NaN, -1) make a read of it show."""
    def empty(*args, **kwargs):
        out = fn(*args, **kwargs)
        _poison(out._a)
        return out
    empty.__name__ = fn.__name__
    return empty


class _Namespace:
    """A CuPy namespace over a NumPy one: functions wrapped, types and constants as they are."""

    def __init__(self, ns: str, np_module):
        self._ns, self._np = ns, np_module
        self._cache: dict = {}

    def __getattr__(self, name):
        hit = self._cache.get(name)
        if hit is not None:
            return hit
        if name.startswith("__") or not _offered(self._ns, name):
            raise AttributeError(f"module 'cupy{'.' + self._ns if self._ns else ''}' has no attribute '{name}'")
        obj = getattr(self._np, name)
        if isinstance(obj, np.ufunc):
            w = _ufuncs.setdefault(name, ufunc(obj))
        elif isinstance(obj, _PASS_THROUGH) or not callable(obj):
            w = obj
        elif self._ns == "" and name in _CONVERTING:
            w = _convert(name)
        elif self._ns == "" and name in ("empty", "empty_like"):
            w = _poisoned(_function(self._ns, name, obj))
        elif name in ("result_type", "can_cast", "promote_types", "min_scalar_type", "isscalar", "ndim", "shape",
                      "iinfo", "finfo", "dtype", "issubdtype"):
            w = obj
        else:
            w = _function(self._ns, name, obj)
        self._cache[name] = w
        return w


def _special_module():
    try:
        import scipy.special as sp
        return sp
    except ImportError:
        from fabric import _special_functions as sf

        return types.SimpleNamespace(erf=lambda x: sf.evaluate(sf.erf, np, x),
                                     gammaln=lambda x: sf.lgamma(np, np.asarray(x, np.float64)).astype(x.dtype))


_NAMESPACES = {
    "": _Namespace("", np),
    "linalg": _Namespace("linalg", np.linalg),
    "fft": _Namespace("fft", np.fft),
    "lib.stride_tricks": _Namespace("lib.stride_tricks", np.lib.stride_tricks),
}


def _module_getattr(name):
    return _NAMESPACES[""].__getattr__(name)


def __getattr__(name):  # module-level: cupy.<numpy function>
    return _module_getattr(name)


# explicit module attributes ---------------------------------------------------------

__fake__ = True


def is_available() -> bool:
    return _Config.n_devices > 0


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if a.__class__ is ndarray:
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    return np.asarray(a, order=order)


def get_array_module(*args):
    return sys.modules[__name__] if any(a.__class__ is ndarray for a in args) else np


def from_dlpack(obj, *, device=None, copy=None):
    if obj.__class__ is ndarray:
        return obj
    dev_type, dev_id = obj.__dlpack_device__()
    if dev_type != 2:
        raise BufferError("fake_cupy.from_dlpack: the producer is not on a CUDA device")
    capsule = obj.__dlpack__(max_version=(1, 0))   # versioned: carries the writeable flag

    class _Host:
        def __dlpack__(self, **_kw):
            return capsule

        def __dlpack_device__(self):
            return (1, 0)

    return _wrap_new(np.from_dlpack(_Host()), dev_id)


fromDlpack = from_dlpack


class RawModule:
    """Constructing is lazy as in CuPy; compiling is impossible here."""

    def __init__(self, code=None, *, path=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=False):
        self.code, self.name_expressions = code, name_expressions

    def get_function(self, name):
        raise RuntimeError(f"fake_cupy cannot compile or run CUDA kernels (asked for {name!r}); plug a kernel "
                           "provider into the backend (fake_cupy.installed(kernels='harness'))")


class RawKernel:
    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=False):
        self.code, self.name = code, name

    def __call__(self, grid, block, args, *, shared_mem=0):
        raise RuntimeError(f"fake_cupy cannot compile or run CUDA kernel {self.name!r}")


def _no_kernels(*_a, **_k):
    raise RuntimeError("fake_cupy cannot compile CUDA kernels")


ElementwiseKernel = ReductionKernel = fuse = _no_kernels

lib = types.ModuleType("cupy.lib")
lib.stride_tricks = _NAMESPACES["lib.stride_tricks"]
linalg = _NAMESPACES["linalg"]
fft = _NAMESPACES["fft"]


# --------------------------------------------------------------------------
# cupy.cuda: devices, memory, streams, events
# --------------------------------------------------------------------------


class Device:
    def __init__(self, device=None):
        self._id = _current() if device is None else _check_ordinal(device)
        self._prev: list[int] = []

    id = property(lambda self: self._id)
    compute_capability = property(lambda self: "90")

    @property
    def attributes(self) -> dict:
        return {"MultiProcessorCount": 4, "MaxThreadsPerBlock": 1024, "WarpSize": 32,
                "MaxSharedMemoryPerBlock": 48 * 1024, "ComputeCapabilityMajor": 9, "ComputeCapabilityMinor": 0}

    @property
    def mem_info(self):
        return runtime.memGetInfo()

    def use(self):
        _local.device = self._id

    def synchronize(self):
        _run_device(self._id)

    def __enter__(self):
        self._prev.append(_local.device)
        _local.device = self._id
        return self

    def __exit__(self, *exc):
        _local.device = self._prev.pop()

    def __int__(self):
        return self._id

    def __eq__(self, other):
        return isinstance(other, Device) and other._id == self._id

    def __hash__(self):
        return hash(self._id)

    def __repr__(self):
        return f"<CUDA Device {self._id}>"


class Memory:
    """The memory block behind a device array: a NumPy owner array."""

    def __init__(self, root: np.ndarray, device_id: int):
        self._root = root
        self.device_id = device_id
        self.size = root.nbytes
        self.ptr = _addr(root)

    @property
    def _flat(self):
        return self._root.reshape(-1, order="A").view(np.uint8)


class MemoryPointer:
    def __init__(self, mem, offset: int):
        self.mem = mem
        self.device_id = mem.device_id
        self.ptr = mem.ptr + int(offset)

    def __int__(self):
        return self.ptr


class _PooledMemory:
    def __init__(self, pool, device_id, size):
        self.pool, self.device_id, self.size = pool, device_id, size
        self.ptr = 0

    def _release(self):
        self.pool._release(self.device_id, self.size)


class MemoryHook:
    """CuPy's ``cupy.cuda.MemoryHook``: callbacks around the pool's allocations,
    registered per thread by entering the hook."""

    name = "MemoryHook"

    def __enter__(self):
        hooks = _local.hooks
        if self.name in hooks:
            raise RuntimeError(f"memory hook {self.name} already exists")
        hooks[self.name] = self
        return self

    def __exit__(self, *exc):
        del _local.hooks[self.name]

    def alloc_preprocess(self, **kwargs):
        pass

    def alloc_postprocess(self, **kwargs):
        pass

    def malloc_preprocess(self, **kwargs):
        pass

    def malloc_postprocess(self, **kwargs):
        pass

    def free_preprocess(self, **kwargs):
        pass

    def free_postprocess(self, **kwargs):
        pass


def _hooks(point: str, **kwargs):
    for hook in list(_local.hooks.values()):
        getattr(hook, point)(**kwargs)


class MemoryPool:
    """Byte counts of the fake allocations, per device, with a free-block cache
    like CuPy's pool (freed bytes stay reserved until ``free_all_blocks``), and
    CuPy's memory-hook calls (``alloc`` when the pool grows, ``malloc``, ``free``)."""

    def __init__(self):
        self._used: dict[int, int] = {}
        self._free: dict[int, int] = {}

    def malloc(self, size: int) -> MemoryPointer:
        dev = _current()
        cached = self._free.get(dev, 0)
        mem = _PooledMemory(self, dev, size)
        self._used[dev] = self._used.get(dev, 0) + size
        self._free[dev] = max(0, cached - size)
        if size > cached:
            _hooks("alloc_postprocess", device_id=dev, mem_size=size, mem_ptr=0)
        _hooks("malloc_postprocess", device_id=dev, size=size, mem_size=size, mem_ptr=0, pmem_id=hex(id(mem)))
        mp = MemoryPointer.__new__(MemoryPointer)
        mp.mem, mp.device_id, mp.ptr = mem, dev, 0
        return mp

    def _release(self, dev, size):
        self._used[dev] = self._used.get(dev, 0) - size
        self._free[dev] = self._free.get(dev, 0) + size
        _hooks("free_postprocess", device_id=dev, mem_size=size, mem_ptr=0, pmem_id="0x0")

    def used_bytes(self) -> int:
        return self._used.get(_current(), 0)

    def free_bytes(self) -> int:
        return self._free.get(_current(), 0)

    def total_bytes(self) -> int:
        return self.used_bytes() + self.free_bytes()

    def free_all_blocks(self, stream=None) -> None:
        self._free[_current()] = 0

    def n_free_blocks(self) -> int:
        return 1 if self.free_bytes() else 0

    def set_limit(self, size=None, fraction=None):
        return None

    def get_limit(self):
        return 0


_pool = MemoryPool()
_allocator = [_pool.malloc]


def get_default_memory_pool() -> MemoryPool:
    return _pool


class PinnedMemoryPointer(np.ndarray):
    """Page-locked host memory: a block of the pinned pool (uint8), returned to the
    pool when the last array over it is gone; ``numpy.ndarray(buffer=...)`` over it."""

    def __new__(cls, block: np.ndarray):
        self = block.view(cls)
        self._block = block
        return self

    def __array_finalize__(self, obj):
        self._block = None   # views of a pointer are not allocations

    @property
    def ptr(self) -> int:
        return _addr(self) if self.size else 0

    def __del__(self):
        if self._block is not None:
            _pinned_pool._free(self._block)


class PinnedMemoryPool:
    """CuPy's pinned pool: a freed block goes to the next allocation of its size."""

    def __init__(self):
        self._free_blocks: dict[int, list] = {}

    def malloc(self, size: int) -> PinnedMemoryPointer:
        size = max(512, -(-int(size) // 512) * 512)
        free = self._free_blocks.get(size)
        block = free.pop() if free else np.empty(size, np.uint8)
        return PinnedMemoryPointer(block)

    def _free(self, block):
        self._free_blocks.setdefault(block.size, []).append(block)

    def n_free_blocks(self):
        return sum(len(v) for v in self._free_blocks.values())

    def free_all_blocks(self):
        self._free_blocks.clear()


_pinned_pool = PinnedMemoryPool()


def get_default_pinned_memory_pool() -> PinnedMemoryPool:
    return _pinned_pool


def _raw_host(a: np.ndarray):
    """What a queued copy sees of host array ``a`` when it runs: for pinned memory the
    bytes of its pool block *then* (a copy holds no reference to the array, so the
    block may have been freed and handed out again); pageable memory is ``a``."""
    b = a.base
    while b is not None and not (isinstance(b, PinnedMemoryPointer) and b._block is not None):
        b = getattr(b, "base", None)
    if b is None or not a.flags.c_contiguous:
        return lambda: a
    block = b._block
    offset = _addr(a) - _addr(block)
    shape, dtype, n = a.shape, a.dtype, a.nbytes
    return lambda: block[offset:offset + n].view(dtype).reshape(shape)


def _is_pinned(a: np.ndarray) -> bool:
    b = a.base
    while b is not None:
        if isinstance(b, PinnedMemoryPointer):
            return True
        b = getattr(b, "base", None)
    return False


# --------------------------------------------------------------------------
# streams: queues of pending work (see the module docstring)
# --------------------------------------------------------------------------

_pending = [0]   # work queued on any stream and not yet run


class _Queue:
    """The pending work of one stream of one device."""

    def __init__(self, device: int):
        self.device = device
        self.items: list = []       # callables, or ("wait", queue, seq)
        self.enqueued = 0           # items ever queued
        self.executed = 0           # items run
        self.running = False

    def enqueue(self, item) -> None:
        self.items.append(item)
        self.enqueued += 1
        _pending[0] += 1

    def run(self, upto: int | None = None) -> None:
        """Run queued work, in order, until ``upto`` items have run (all by default)
        or the head item is blocked (a :class:`Blocking` item that is not ready,
        or a wait on another stream that is blocked)."""
        if self.running:
            return
        upto = self.enqueued if upto is None else upto
        self.running = True
        try:
            while self.executed < upto and self.items:
                item = self.items[0]
                try:
                    if isinstance(item, tuple):
                        _, other, seq = item
                        other.run(seq)
                        if other.executed < seq:
                            return
                    elif isinstance(item, Blocking):
                        if not item.try_run():
                            return
                    else:
                        item()
                finally:   # an item that ran, or failed, leaves the stream (a failed one raises)
                    if self.items and self.items[0] is item and (not isinstance(item, (tuple, Blocking))
                                                                 or _ran(item)):
                        self.items.pop(0)
                        self.executed += 1
                        _pending[0] -= 1
        finally:
            self.running = False

    def drain(self, upto: int | None = None) -> None:
        """Run queued work up to ``upto`` on behalf of a host thread that waits for it:
        a blocked item (a collective whose peers have not arrived) is retried until it
        can run, for at most ``Blocking.host_wait_s`` seconds."""
        upto = self.enqueued if upto is None else upto
        self.run(upto)
        if self.executed >= upto or self.running:
            return
        deadline = time.monotonic() + Blocking.host_wait_s
        while self.executed < upto and self.items:
            time.sleep(5e-4)
            self.run(upto)
            if time.monotonic() > deadline:
                raise RuntimeError(f"fake CUDA: the host waited {Blocking.host_wait_s:g} s for a stream blocked on "
                                   f"{self.items[0]!r} (a collective that some rank never reached)")


def _ran(item) -> bool:
    if isinstance(item, tuple):
        return item[1].executed >= item[2]
    return item.finished_or_failed


class Blocking:
    """A queued item that can run only once something outside this process's
    streams has happened (a collective's peers arrived).  ``try_run()`` runs it
    and returns True, or returns False and leaves it at the head of its stream:
    later work on that stream waits, as it waits behind a GPU kernel that has
    not finished.  Host waits give up after ``host_wait_s`` seconds."""

    host_wait_s = 60.0
    finished_or_failed = False   # set by try_run when it returns True or raises

    def try_run(self) -> bool:
        raise NotImplementedError


class Config:
    """Opt-in strictness used by the collective test doubles."""

    # Stream.done / Event.done run what they can (the GPU progresses on its own): host code that
    # polls a collective's event sees it complete once its peers arrive
    progress_on_query = False
    # waiting on an event that was never recorded is a no-op in CUDA, and always a bug in fabric
    strict_event_waits = False
    # a device array that a queued host-to-device copy will write is guarded until the copy has run
    guard_async_copies = False


# device arrays that queued operations on some stream will still read or write: id(root) ->
# [(weakref to the root, predicate "that operation has run", description, owner)]
_inflight: dict = {}


def guard_inflight(root: np.ndarray, done, what: str, owner=None) -> None:
    """Until ``done()`` is true, any access to ``root``'s memory on the host or from
    another stream raises: the accessing stream did not wait for ``what``'s event.
    Accesses by ``owner`` itself (see :func:`check_inflight`) are allowed."""
    _inflight.setdefault(id(root), []).append((weakref.ref(root), done, what, owner))


def check_inflight(a: np.ndarray, owner=None) -> None:
    """Raise if queued work other than ``owner``'s (one owner or a tuple of them) will still touch
    ``a``'s memory."""
    if _inflight:
        _check_inflight(a, owner)


def _check_inflight(a: np.ndarray, owner=None) -> None:
    root = _root_of(a)
    entries = _inflight.get(id(root))
    if not entries:
        return
    live = [e for e in entries if e[0]() is root and not e[1]()]
    if live:
        _inflight[id(root)] = live
    else:
        del _inflight[id(root)]
    owners = owner if isinstance(owner, tuple) else (owner,)
    for _ref, _done, what, who in live:
        if who is None or not any(who is o for o in owners):
            raise RuntimeError(f"fake CUDA: a device buffer was accessed while {what} (queued on another stream) "
                               "has not run: the accessing stream never waited for its event")


def resolve_pointer(ptr: int, nbytes: int):
    """(root array, device) of the live device allocation holding ``[ptr, ptr + nbytes)``,
    or None: what a driver would call an invalid device pointer."""
    for ref, dev, _mp in list(_roots.values()):
        root = ref()
        if root is None or isinstance(root, PinnedMemoryPointer):
            continue
        start = _addr(root)
        if start <= ptr and ptr + nbytes <= start + root.nbytes:
            return root, dev
    return None


_queues: dict = {}


def _queue_of(stream=None, device: int | None = None) -> _Queue:
    """The queue of ``stream`` (default: the current stream of ``device`` or of the current device)."""
    stream = get_current_stream(device) if stream is None else stream
    dev = stream.device_id if stream.device_id >= 0 else (_current() if device is None else device)
    key = (dev, stream.ptr)
    q = _queues.get(key)
    if q is None:
        q = _queues[key] = _Queue(dev)
    return q


def _run_current_stream() -> None:
    if _pending[0]:
        _queue_of().drain()


def _run_device(device: int) -> None:
    for q in list(_queues.values()):
        if q.device == device:
            q.drain()


_handles = itertools.count(1)


class Stream:
    null: Stream

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        if null:
            self.ptr = 0
        else:
            self.ptr = 0x1000 + next(_handles)
        self.device_id = -1 if null else _current()
        self.priority = 0 if priority is None else int(priority)
        self.is_non_blocking = bool(non_blocking)
        self._prev: list = []

    @property
    def done(self) -> bool:
        q = _queue_of(self)
        if Config.progress_on_query:
            q.run()
        return q.executed == q.enqueued

    def synchronize(self):
        _queue_of(self).drain()

    def use(self):
        _local.streams[_current()] = self
        return self

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        """Work queued on this stream from now on runs after the event's work."""
        if event._q is not None:
            _queue_of(self).enqueue(("wait", event._q, event._seq))
        elif Config.strict_event_waits:
            raise RuntimeError("fake CUDA: wait_event on an event that was never recorded (CUDA makes it a no-op, "
                               "so the stream would not wait for anything)")

    def __enter__(self):
        self._prev.append(_local.streams.get(_current(), Stream.null))
        self.use()
        return self

    def __exit__(self, *exc):
        _local.streams[_current()] = self._prev.pop()

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr and other.device_id == self.device_id

    def __hash__(self):
        return hash((self.ptr, self.device_id))

    def __repr__(self):
        return f"<Stream {self.ptr:#x} (device {self.device_id})>"


Stream.null = Stream(null=True)


class ExternalStream(Stream):
    def __init__(self, ptr, device_id=-1):
        super().__init__()
        self.ptr, self.device_id = int(ptr), device_id


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.block, self.disable_timing = block, disable_timing
        self.ptr = 0x2000 + next(_handles)
        self._t: float | None = None
        self._q: _Queue | None = None
        self._seq = 0

    def record(self, stream=None):
        """Marks the work queued on ``stream`` (the current one) so far."""
        self._t = time.perf_counter()
        self._q = _queue_of(stream)
        self._seq = self._q.enqueued

    def synchronize(self):
        if self._q is not None:
            self._q.drain(self._seq)

    @property
    def done(self) -> bool:
        if self._q is not None and Config.progress_on_query and self._q.executed < self._seq:
            self._q.run(self._seq)
        return self._q is None or self._q.executed >= self._seq


def get_elapsed_time(start_event, end_event) -> float:
    for e in (start_event, end_event):
        if e.disable_timing:
            raise CUDARuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
        if e._t is None:
            raise CUDARuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    return (end_event._t - start_event._t) * 1000.0


def get_current_stream(device_id=None) -> Stream:
    return _local.streams.get(_current() if device_id is None else device_id, Stream.null)


def alloc_pinned_memory(size: int) -> PinnedMemoryPointer:
    return _pinned_pool.malloc(size)


def _set_allocator(allocator=None):
    _allocator[0] = _pool.malloc if allocator is None else allocator


def _get_allocator():
    return _allocator[0]


def _synchronize():
    _run_device(_current())


runtime = types.ModuleType("cupy.cuda.runtime")
runtime.CUDARuntimeError = CUDARuntimeError
runtime.getDeviceCount = lambda: _Config.n_devices
runtime.getDevice = _current
runtime.setDevice = lambda i: setattr(_local, "device", _check_ordinal(i))
runtime.deviceSynchronize = _synchronize
runtime.runtimeGetVersion = lambda: 12090
runtime.driverGetVersion = lambda: 12090
runtime.deviceCanAccessPeer = lambda a, b: 0
runtime.memGetInfo = lambda: (16 * 2 ** 30 - _pool.total_bytes(), 16 * 2 ** 30)
runtime.getDeviceProperties = lambda i: {
    "name": f"Fake CUDA device {_check_ordinal(i)} (NumPy)".encode(), "totalGlobalMem": 16 * 2 ** 30,
    "major": 9, "minor": 0, "multiProcessorCount": 4, "warpSize": 32, "maxThreadsPerBlock": 1024,
    "sharedMemPerBlock": 48 * 1024, "clockRate": 1_000_000, "pciBusID": i, "uuid": bytes(16),
    "l2CacheSize": 4 * 2 ** 20, "maxThreadsPerMultiProcessor": 2048, "isMultiGpuBoard": 0,
    "integrated": 0, "memoryClockRate": 1_000_000}
runtime.memoryTypeHost, runtime.memoryTypeDevice = 1, 2

cuda = types.ModuleType("cupy.cuda")
for _name, _obj in {"Device": Device, "Memory": Memory, "MemoryPointer": MemoryPointer, "MemoryPool": MemoryPool,
                    "PinnedMemoryPointer": PinnedMemoryPointer, "PinnedMemoryPool": PinnedMemoryPool,
                    "Stream": Stream, "ExternalStream": ExternalStream, "Event": Event,
                    "get_elapsed_time": get_elapsed_time, "get_current_stream": get_current_stream,
                    "alloc_pinned_memory": alloc_pinned_memory, "set_allocator": _set_allocator,
                    "get_allocator": _get_allocator, "runtime": runtime, "MemoryHook": MemoryHook, "is_available": is_available,
                    "get_device_id": _current}.items():
    setattr(cuda, _name, _obj)
cuda.__fake__ = True


# --------------------------------------------------------------------------
# cupyx
# --------------------------------------------------------------------------


def _scatter(np_ufunc_name):
    def scatter(a, slices, value):
        if a.__class__ is not ndarray:
            raise TypeError("cupyx.scatter_* needs a cupy.ndarray")
        _check_device(a)
        key, _adv = _index_key(slices)
        v = _unwrap(value) if value.__class__ is ndarray else value
        if isinstance(v, np.ndarray) and value.__class__ is not ndarray:
            raise _unsupported(value)
        getattr(np, np_ufunc_name).at(a._a, key, v)
    return scatter


def _empty_pinned(shape, dtype=float, order="C"):
    dtype = np.dtype(dtype)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    mem = _pinned_pool.malloc(max(n, 1))
    # a plain-ndarray view whose base chain holds the pointer (as numpy.ndarray(buffer=mem) in CuPy)
    flat = mem[:n].view(np.ndarray).view(dtype)
    return flat.reshape(shape, order=order) if shape else flat.reshape(())


def _zeros_pinned(shape, dtype=float, order="C"):
    out = _empty_pinned(shape, dtype, order)
    out[...] = 0
    return out


cupyx = types.ModuleType("cupyx")
cupyx.__fake__ = True
cupyx.scatter_add = _scatter("add")
cupyx.scatter_max = _scatter("maximum")
cupyx.scatter_min = _scatter("minimum")
cupyx.empty_pinned = _empty_pinned
cupyx.zeros_pinned = _zeros_pinned
cupyx.empty_like_pinned = lambda a, dtype=None: _empty_pinned(a.shape, dtype or a.dtype)
cupyx.scipy = types.ModuleType("cupyx.scipy")


class _Special(_Namespace):
    def __getattr__(self, name):
        hit = self._cache.get(name)
        if hit is not None:
            return hit
        if name.startswith("__") or not _offered("special", name):
            raise AttributeError(f"module 'cupyx.scipy.special' has no attribute '{name}'")
        fn = getattr(_special_module(), name)
        w = self._cache[name] = _function("special", name, fn) if not isinstance(fn, np.ufunc) else ufunc(fn)
        return w


cupyx.scipy.special = _Special("special", None)


# --------------------------------------------------------------------------
# installing: fabric's CUDA path on the fake
# --------------------------------------------------------------------------

_MODULES = {"cupy": None, "cupy.cuda": cuda, "cupy.cuda.runtime": runtime, "cupy.lib": lib,
            "cupy.lib.stride_tricks": lib.stride_tricks, "cupy.linalg": linalg, "cupy.fft": fft,
            "cupyx": cupyx, "cupyx.scipy": cupyx.scipy, "cupyx.scipy.special": cupyx.scipy.special}


def reset(n_devices: int = 1) -> None:
    """Forget streams, restore the default allocator, set the device count."""
    _Config.n_devices = n_devices
    _local.device = 0
    _local.streams.clear()
    _local.hooks.clear()
    for q in list(_queues.values()):   # nothing queued survives a reset
        q.items = [i for i in q.items if not isinstance(i, (tuple, Blocking))]
        q.run()
    _queues.clear()
    _inflight.clear()
    _pending[0] = 0
    _set_allocator(None)


def _reset_fabric():
    import fabric.cuda
    from fabric import backends

    fabric.cuda._reset_state()
    backends._cupy_instance = None


class HarnessOnFake:
    """Kernel provider for the fake backend: the real ``.cu`` sources run by the
    g++ CPU harness on the NumPy arrays inside the device arrays (which must be
    on the current device, as a kernel launch requires)."""

    def __init__(self, limits=None):
        import harness

        from fabric.backends.cuda import launch

        self._harness = harness
        # small launches (few blocks of few threads: grid-stride loops cover the rest) keep the
        # CPU execution cheap; test_kernels_cpu.py covers the launch configurations themselves
        self._inner = harness.HarnessKernels(limits=limits or launch.Limits(
            max_block=128, max_grid=4, elementwise_block=64, chunk_size=4096))
        self.limits = self._inner.limits
        self.launched = self._inner.launched

    def get(self, kernel, dtype):
        k = self._inner.get(kernel, dtype)

        def launch_(grid, block, args, shared_mem=0):
            return k(grid, block, tuple(_unwrap(a) if a.__class__ is ndarray else a for a in args),
                     shared_mem=shared_mem)
        return launch_

    def pointer_tables(self, *lists):
        return [self._harness.PointerTable([_unwrap(a) for a in lst]) for lst in lists]


@contextlib.contextmanager
def installed(n_devices: int = 1, kernels: str | None = None):
    """Run fabric's CUDA path on this fake: ``cupy`` and friends in
    ``sys.modules``, fabric's CUDA caches reset (before and after).

    ``kernels="harness"`` plugs :class:`HarnessOnFake` into the backend so fused
    ops run the real kernel sources on the CPU; ``None`` leaves CuPy's
    ``RawModule``, which cannot compile here (fused ops raise RuntimeError).
    Yields the backend.
    """
    this = sys.modules[__name__]
    saved = {name: sys.modules.get(name) for name in _MODULES}
    reset(n_devices)
    try:
        for name, mod in _MODULES.items():
            sys.modules[name] = this if mod is None else mod
        _reset_fabric()
        from fabric.backends import get_cupy_backend

        be = get_cupy_backend()
        if kernels == "harness":
            be.kernels = HarnessOnFake()
        yield be
    finally:
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod
        _reset_fabric()
        reset(1)
