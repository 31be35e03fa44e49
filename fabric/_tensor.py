"""``fabric.Tensor``: a thin handle on a NumPy/CuPy array plus autograd metadata.

Example::

    >>> import fabric
    >>> x = fabric.tensor([1.0, 2.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    tensor([2., 4.])
"""
from __future__ import annotations

import builtins
import numbers
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtype as D
from . import _layout
from ._device import as_device
from ._device import cpu as _CPU
from ._device import device as _device_cls
from ._display import tensor_html as _tensor_html
from .autograd import engine as _engine
from .autograd import function as _function
from .autograd.grad_mode import state as _state
from .backends import backend_for, backend_of

__all__ = ["Tensor", "Size"]

_new = object.__new__
_ndarray = np.ndarray


class Size(tuple):
    """Shape of a tensor: a tuple of ints with ``numel()``, printed like PyTorch's.

    Items must be integers (``bool``, NumPy integers and one-element integer
    tensors are taken as PyTorch takes them); anything else is PyTorch's TypeError.

    Example::

        >>> import fabric
        >>> fabric.Size([2, 3]).numel()
        6
    """

    __slots__ = ()

    def __new__(cls, sizes=()):
        t = tuple.__new__(cls, sizes)
        for s in t:
            if s.__class__ is not int:
                return tuple.__new__(cls, [_size_item(s, i) for i, s in enumerate(t)])
        return t

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"fabric.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return _size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


_tuple_new = tuple.__new__  # Size of trusted ints (an array's shape): no item checks, no Python frame


def _size(shape) -> Size:
    """A Size of trusted ints (an array's shape): no item checks."""
    return _tuple_new(Size, shape)


def _size_item(s, i):
    if isinstance(s, (int, np.integer)):  # bool becomes int; NumPy integers stay as they are (PyTorch)
        return int(s) if isinstance(s, bool) else s
    if isinstance(s, Tensor) and s.numel() == 1 and s.dtype.is_floating_point is False and not s.is_complex():
        return int(s.item())
    name = type(s).__name__ if type(s).__module__ == "builtins" else f"{type(s).__module__}.{type(s).__name__}"
    if isinstance(s, Tensor):
        name = "Tensor"
    raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is '{name}')")


class _Meta:
    """Rarely used per-tensor state, allocated on first use."""

    __slots__ = ("hooks", "post_hooks", "retains_grad", "acc", "edge", "name")
    hooks: Any
    post_hooks: Any
    acc: Any
    edge: Any

    def __init__(self):
        self.hooks = None
        self.post_hooks = None
        self.retains_grad = False
        self.acc = None    # the leaf's AccumulateGrad node (it refers back weakly)
        self.edge = None   # (acc, 0): the graph edge every op records to this leaf
        self.name = None


class Tensor:
    """An n-dimensional array on a device, recording ops for autograd."""

    __slots__ = ("_data", "_requires_grad", "grad_fn", "_output_nr", "_grad", "_vc", "_base", "_meta",
                 "__dict__", "__weakref__")
    __array_priority__ = 1000  # NumPy defers binary operators to Tensor

    _data: Any  # the NumPy / CuPy array

    if TYPE_CHECKING:
        # Most methods and operators are installed from the op catalogue when fabric.ops is imported
        # (ops/_methods.py, the end of this file); tell the type checker they exist.
        def __getattr__(self, name: str) -> Any: ...
        def __getitem__(self, index: Any) -> Any: ...

    # --- construction ------------------------------------------------------
    def __new__(cls, *args, **kwargs):
        self = _new(cls)
        self._data = None
        self._requires_grad = False
        self.grad_fn = None
        self._output_nr = 0
        self._grad = None
        self._vc = None
        self._base = None
        self._meta = None
        return self

    def __init__(self, *args, device=None, dtype=None):
        """``Tensor(data)`` copies data as the default float dtype;
        ``Tensor(*sizes)`` makes an uninitialised float tensor."""
        if self._data is not None:  # already built by a subclass __new__
            return
        dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], numbers.Integral):
            arr = _to_array(args[0], dt.to_numpy())
        elif all(isinstance(a, numbers.Integral) for a in args):
            arr = np.empty(tuple(int(a) for a in args), dt.to_numpy())
        elif len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
            arr = np.empty(tuple(args[0]), dt.to_numpy())
        else:
            raise TypeError(f"Tensor(): invalid arguments {args!r}")
        dev = as_device(device)
        if dev.type != "cpu":
            arr = backend_for(dev).from_numpy(arr, dev.index or 0)
        self._data = arr

    @staticmethod
    def _make(data, requires_grad=False, grad_fn=None, output_nr=0, vc=None):
        """Wrap an array without copying (internal fast path)."""
        t = _new(Tensor)
        t._data = data
        t._requires_grad = requires_grad
        t.grad_fn = grad_fn
        t._output_nr = output_nr
        t._grad = None
        t._vc = vc
        t._base = None
        t._meta = None
        return t

    def _shared_vc(self):
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        return vc

    def _bump_version(self):
        vc = self._vc
        if vc is None:
            self._vc = [1]
        else:
            vc[0] += 1

    @property
    def _version(self) -> int:
        return 0 if self._vc is None else self._vc[0]

    def _meta_(self):
        m = self._meta
        if m is None:
            m = self._meta = _Meta()
        return m

    # --- basic attributes ----------------------------------------------------
    @property
    def shape(self) -> Size:
        return _tuple_new(Size, self._data.shape)

    def size(self, dim=None):
        """The shape, or its length along ``dim``."""
        if dim is None:
            return _tuple_new(Size, self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self):
        try:
            return D._BY_NP[self._data.dtype]
        except KeyError:
            return D.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        d = self._data
        if d.__class__ is _ndarray:
            return _CPU
        return _device_cls("cuda", d.device.id)

    @property
    def is_cuda(self) -> bool:
        return self._data.__class__ is not _ndarray

    is_cpu = property(lambda self: self._data.__class__ is _ndarray)
    is_sparse = False
    is_sparse_csr = False
    _sparse = False  # any sparse layout (COO or CSR: fabric/sparse), for the products' dispatch
    is_quantized = False
    is_meta = False
    is_mkldnn = False
    is_nested = False
    is_mps = False
    is_xpu = False
    is_ipu = False
    is_hpu = False
    is_maia = False
    is_mtia = False
    is_vulkan = False

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"
    layout = _layout.strided

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f" or self._data.dtype == D.bfloat16.np

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def stride(self, dim=None):
        """Strides in elements, like PyTorch (NumPy's are in bytes)."""
        d = self._data
        if d.ndim in (4, 5) and (cl := _layout.channels_last_strides(d)) is not None:
            st = cl  # a channels-last copy: NumPy made PyTorch's strides, size-1 dims too
        elif d.size <= 1 or 0 in d.shape:
            st = _contiguous_strides(d.shape)
        else:
            item = d.itemsize
            st = [s // item for s in d.strides]
            # size-1 dims: NumPy may report any stride (0 for inserted axes);
            # PyTorch reports the nominal one, stride[d+1] * size[d+1]
            for k in range(d.ndim - 1, -1, -1):
                if d.shape[k] == 1:
                    st[k] = st[k + 1] * d.shape[k + 1] if k + 1 < d.ndim else 1
            st = tuple(st)
        if dim is None:
            return st
        return st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        """Offset (in elements) of the first element from the start of the memory block."""
        d = self._data
        if d.__class__ is not _ndarray:
            return (d.data.ptr - d.data.mem.ptr) // d.itemsize
        root = d
        while isinstance(root.base, _ndarray):
            root = root.base
        if root is d:
            return 0
        return (d.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // d.itemsize

    def data_ptr(self) -> int:
        d = self._data
        if d.__class__ is _ndarray:
            return d.__array_interface__["data"][0]
        return d.data.ptr

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie in memory in ``memory_format``'s order
        (default: row-major) without gaps, as PyTorch decides it."""
        if memory_format is None or memory_format is _layout.contiguous_format:
            return bool(self._data.flags.c_contiguous)
        if memory_format is _layout.preserve_format:
            raise RuntimeError("is_contiguous() does not support memory_format=torch.preserve_format")
        return _layout.is_contiguous_in(self._data.shape, self.stride(), memory_format)

    def contiguous(self, memory_format=None) -> Tensor:
        """``self`` if it is contiguous in ``memory_format`` (default row-major),
        else a copy laid out so (``channels_last``: NHWC order of an NCHW tensor).

        Example::

            >>> import fabric
            >>> fabric.zeros(1, 2, 3, 3).contiguous(memory_format=fabric.channels_last).stride()
            (18, 1, 6, 2)
        """
        if memory_format is None or memory_format is _layout.contiguous_format:
            if self._data.flags.c_contiguous:
                return self
            return _ops.clone(self, memory_format=_layout.contiguous_format)
        fmt = _layout.check_format(memory_format, self._data.ndim)
        if fmt is _layout.preserve_format or self.is_contiguous(fmt):
            return self
        return _ops.clone(self, memory_format=fmt)

    # --- autograd attributes -------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if not value:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
            return
        if value and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        if self._grad is None and self.grad_fn is not None and not self.retains_grad:
            import warnings

            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size: {list(value.shape)} "
                                   f"vs {list(self.shape)}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: {value.dtype} vs {self.dtype}")
            if value.device != self.device:
                raise RuntimeError(f"assigned grad has data located on a different device: {value.device} "
                                   f"vs {self.device}")
        self._grad = value

    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's memory, detached from autograd."""
        t = Tensor._make(self._data, False)
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data

    @property
    def retains_grad(self) -> bool:
        return self._meta is not None and self._meta.retains_grad

    def retain_grad(self) -> None:
        """Populate ``.grad`` of this non-leaf tensor during backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self.retains_grad:
            return
        self._meta_().retains_grad = True
        ref = weakref.ref(self)

        def _retain(g):
            t = ref()
            if t is not None:
                if t._grad is None:
                    gd = g._data.copy() if not _state.enabled else g._data
                    t._grad = Tensor._make(gd, False) if not _state.enabled else g
                else:
                    t._grad = t._grad + g
        self.grad_fn._add_pre_hook(self._output_nr, _retain)

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed and may
        return a replacement. Returns a handle with ``remove()``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._add_pre_hook(self._output_nr, hook)
        m = self._meta_()
        if m.hooks is None:
            m.hooks = _function._HookDict()
        h = _function.RemovableHandle(m.hooks)
        m.hooks[h._key] = hook
        self._grad_accumulator_node()._strong = self  # a hooked leaf outlives its last reference, as in PyTorch
        return h

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after ``.grad`` of this leaf was accumulated."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        m = self._meta_()
        if m.post_hooks is None:
            m.post_hooks = _function._HookDict()
        h = _function.RemovableHandle(m.post_hooks)
        m.post_hooks[h._key] = hook
        if self._requires_grad:
            self._grad_accumulator_node()._strong = self
        return h

    def _hooks_dict(self):
        return self._meta.hooks if self._meta is not None else None

    def _post_accumulate_hooks(self):
        return self._meta.post_hooks if self._meta is not None else None

    def _grad_accumulator_node(self):
        m = self._meta
        if m is None:
            m = self._meta = _Meta()
        acc = m.acc
        if acc is None:
            acc = m.acc = _AccumulateGrad._for(self)
            m.edge = (acc, 0)
            if m.hooks or m.post_hooks:
                acc._strong = self
        return acc

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
        from .autograd import backward as _backward

        _backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A tensor sharing memory (and version counter) with no graph history."""
        return Tensor._make(self._data, False, None, 0, self._shared_vc())

    def detach_(self) -> Tensor:
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    # --- conversion ------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number."""
        d = self._data
        if d.size != 1:
            raise RuntimeError(f"a Tensor with {d.size} elements cannot be converted to Scalar")
        return d.reshape(()).item() if d.__class__ is _ndarray else d.reshape(()).item()

    def tolist(self):
        d = self._data
        return (d if d.__class__ is _ndarray else backend_of(d).to_numpy(d)).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The NumPy array sharing this tensor's memory (CPU, no grad)."""
        if force:
            return backend_of(self._data).to_numpy(self._data).copy() if self.is_cuda else self._data
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._data.__class__ is not _ndarray:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        d = self._data
        if d.__class__ is not _ndarray:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() first.")
        if dtype is not None and d.dtype != dtype:
            return d.astype(dtype)
        return d.copy() if copy else d

    def __dlpack__(self, stream=None, **kwargs):
        if self._requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        if stream is not None:
            kwargs["stream"] = stream
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self._data.reshape(()).item())

    def __float__(self) -> float:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return builtins.float(_real_item(self, "double"))

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return builtins.int(_real_item(self, "int64_t"))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from ._formatting import tensor_repr

        return tensor_repr(self)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """Notebook display: shape, dtype, device, grad_fn and the values."""
        return _tensor_html(self)

    def __format__(self, spec):
        if self._data.ndim == 0 and spec:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild_tensor, (self._to_host_numpy(), str(self.device), self._requires_grad))

    def _to_host_numpy(self):
        d = self._data
        return d if d.__class__ is _ndarray else backend_of(d).to_numpy(d)

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        t = _new(type(self))
        t._data = self._data.copy()
        t._requires_grad = self._requires_grad
        t.grad_fn = None
        t._output_nr = 0
        t._grad = None
        t._vc = None
        t._base = None
        t._meta = None
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        if hasattr(self, "__dict__") and self.__dict__:
            import copy

            t.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = t
        return t

    # --- device / dtype conversion -------------------------------------------
    def to(self, *args, **kwargs) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``;
        keywords ``non_blocking``, ``copy``. Differentiable."""
        fmt = kwargs.pop("memory_format", None)
        dev, dt, copy, non_blocking = _parse_to(args, kwargs)
        out = _ops.to_copy(self, dev, dt, copy, non_blocking)
        if fmt is not None and fmt is not _layout.preserve_format:
            out = out.contiguous(fmt)
        return out

    def cpu(self, memory_format=None) -> Tensor:
        return self if self._data.__class__ is _ndarray else self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        dev = as_device("cuda" if device is None else (device if not isinstance(device, int) else f"cuda:{device}"))
        return self.to(dev, non_blocking=non_blocking)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            return _legacy_type_name(self)
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            dtype = _LEGACY_TYPES[dtype.split(".")[-1]]
        dtype = getattr(dtype, "_legacy_dtype", dtype)  # fabric.LongTensor ...
        return self.to(D.to_dtype(dtype))

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def float(self, memory_format=None):
        return self.to(D.float32)

    def double(self, memory_format=None):
        return self.to(D.float64)

    def half(self, memory_format=None):
        return self.to(D.float16)

    def bfloat16(self, memory_format=None):
        return self.to(D.bfloat16)

    def long(self, memory_format=None):
        return self.to(D.int64)

    def int(self, memory_format=None):
        return self.to(D.int32)

    def short(self, memory_format=None):
        return self.to(D.int16)

    def char(self, memory_format=None):
        return self.to(D.int8)

    def byte(self, memory_format=None):
        return self.to(D.uint8)

    def bool(self, memory_format=None):
        return self.to(D.bool)

    def pin_memory(self, device=None) -> Tensor:
        """A copy in page-locked host memory (needs CUDA, as in PyTorch)."""
        from . import cuda

        if not cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        from .backends import get_cupy_backend

        return Tensor._make(get_cupy_backend().pin(self._to_host_numpy()), False)

    def record_stream(self, stream) -> None:
        """Mark this CUDA tensor's memory as in use by work queued on ``stream``
        (a ``fabric.cuda.Stream``): when the tensor is freed, its memory is not
        reused until that work has completed (for tensors made on one stream and
        used on another)."""
        from . import cuda

        if not isinstance(stream, cuda.Stream):
            raise RuntimeError("unknown parameter type")
        if self.device.type != "cuda":
            raise NotImplementedError(f"Could not run 'aten::record_stream' with arguments from the "
                                      f"'{self.device.type.upper()}' backend.")
        from .backends import get_cupy_backend

        get_cupy_backend().record_stream(self._data, stream._s)

    def is_pinned(self, device=None) -> bool:
        from . import cuda

        if not cuda.is_available() or self._data.__class__ is not _ndarray:
            return False
        from .backends import get_cupy_backend

        return get_cupy_backend().is_pinned(self._data)

    def clone(self, memory_format=None) -> Tensor:
        return _ops.clone(self, memory_format=memory_format)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from ._creation import tensor

        return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, **kw):
        from ._creation import zeros

        return zeros(*sizes, size=size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, **kw):
        from ._creation import ones

        return ones(*sizes, size=size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, **kw):
        from ._creation import empty

        return empty(*sizes, size=size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False, **kw):
        from ._creation import full

        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    # --- operators (the op catalogue lives in fabric.ops) ----------------------
    def __iadd__(self, other):
        return _ops.add_(self, other)

    def __rsub__(self, other):
        return _ops.rsub(self, other)

    def __isub__(self, other):
        return _ops.sub_(self, other)

    def __imul__(self, other):
        return _ops.mul_(self, other)

    def __rtruediv__(self, other):
        return _ops.rdiv(self, other)

    def __itruediv__(self, other):
        return _ops.div_(self, other)

    def __floordiv__(self, other):
        return _ops.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return _ops.floor_divide(other, self)

    def __ifloordiv__(self, other):
        return _ops.floor_divide_(self, other)

    def __mod__(self, other):
        return _ops.remainder(self, other)

    def __rmod__(self, other):
        return _ops.remainder(other, self)

    def __imod__(self, other):
        return _ops.remainder_(self, other)

    def __pow__(self, other):
        return _ops.pow(self, other)

    def __rpow__(self, other):
        return _ops.pow(other, self)

    def __ipow__(self, other):
        return _ops.pow_(self, other)

    def __rmatmul__(self, other):
        return _ops.matmul(other, self)

    def __neg__(self):
        return _ops.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops.abs(self)

    def __invert__(self):
        if self._data.dtype.kind in "fc":
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return _ops.bitwise_not(self)

    def __and__(self, other):
        return _ops.bitwise_and(self, other)

    __rand__ = __and__

    def __iand__(self, other):
        return _ops.bitwise_and_(self, other)

    def __or__(self, other):
        return _ops.bitwise_or(self, other)

    __ror__ = __or__

    def __ior__(self, other):
        return _ops.bitwise_or_(self, other)

    def __xor__(self, other):
        return _ops.bitwise_xor(self, other)

    __rxor__ = __xor__

    def __ixor__(self, other):
        return _ops.bitwise_xor_(self, other)

    def __lshift__(self, other):
        return _ops.bitwise_left_shift(self, other)

    def __rlshift__(self, other):
        return _ops.bitwise_left_shift(other, self)

    def __ilshift__(self, other):
        return _ops.bitwise_left_shift_(self, other)

    def __rshift__(self, other):
        return _ops.bitwise_right_shift(self, other)

    def __rrshift__(self, other):
        return _ops.bitwise_right_shift(other, self)

    def __irshift__(self, other):
        return _ops.bitwise_right_shift_(self, other)

    def __eq__(self, other):
        if other is None:
            return False
        return _ops.eq(self, other)

    def __ne__(self, other):
        if other is None:
            return True
        return _ops.ne(self, other)

    def __lt__(self, other):
        return _ops.lt(self, other)

    def __le__(self, other):
        return _ops.le(self, other)

    def __gt__(self, other):
        return _ops.gt(self, other)

    def __ge__(self, other):
        return _ops.ge(self, other)

    def __setitem__(self, key, value):
        _ops.setitem(self, key, value)

    @property
    def T(self):
        if self._data.ndim > 2:
            import warnings

            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                          "deprecated and it will throw an error in a future release.", UserWarning, stacklevel=2)
        return _ops.permute(self, tuple(range(self._data.ndim - 1, -1, -1)))

    @property
    def mT(self):
        if self._data.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self._data.ndim}-D tensor.")
        return _ops.transpose(self, -2, -1)

    @property
    def H(self):
        """The conjugate transpose of a matrix (or the conjugate of a 0-d tensor)."""
        if self._data.ndim not in (0, 2):
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self._data.ndim}-D tensor.")
        return self.T.conj() if self._data.ndim else self.conj()

    @property
    def mH(self):
        """The conjugate transpose of the last two dims."""
        if self._data.ndim < 2:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {self._data.ndim}-D tensor.")
        return _ops.transpose(self, -2, -1).conj()


def _rebuild_tensor(array, device, requires_grad):
    from ._creation import from_numpy

    t = from_numpy(np.array(array, copy=True))
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _real_item(t, c_name):
    """``t.item()`` for ``float()`` / ``int()``: a complex value converts only without imaginary part."""
    v = t.item()
    if v.__class__ is builtins.complex:
        if v.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {c_name} without overflow")
        return v.real
    return v


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not isinstance(dim, (builtins.int, np.integer)) or isinstance(dim, builtins.bool):
        if isinstance(dim, Tensor) and dim.numel() == 1:
            dim = builtins.int(dim.item())
        else:
            raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _contiguous_strides(shape):
    st = []
    acc = 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


_LEGACY = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "bfloat16": "BFloat16Tensor",
           "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor",
           "uint8": "ByteTensor", "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
           "complex128": "ComplexDoubleTensor"}
_LEGACY_TYPES = {v: k for k, v in _LEGACY.items()}


def _legacy_type_name(t):
    prefix = "torch.cuda." if t.is_cuda else "torch."
    return prefix + _LEGACY[t.dtype.name]


def _parse_to(args, kwargs):
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a.device, a.dtype
        elif isinstance(a, D.dtype):
            dt = a
        elif isinstance(a, (str, _device_cls, builtins.int)) and not isinstance(a, builtins.bool):
            if isinstance(a, str) and (a in D._BY_NAME or a.startswith("torch.")):
                dt = D.to_dtype(a)
            else:
                dev = a if not isinstance(a, builtins.int) else f"cuda:{a}"
        elif isinstance(a, builtins.bool):
            non_blocking = a
        elif a is None:
            continue
        else:
            dt = D.to_dtype(a)
    if dt is not None:
        dt = D.to_dtype(dt)
    if dev is not None:
        dev = as_device(dev)
    return dev, dt, copy, non_blocking


def _to_array(data, np_dtype=None):
    """Convert nested sequences / scalars / arrays to a NumPy array."""
    if isinstance(data, Tensor):
        arr = data._to_host_numpy()
    elif isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flatten_first(data)):
        arr = np.array(_tensors_to_lists(data))
    else:
        arr = np.asarray(data)
    if np_dtype is not None and arr.dtype != np_dtype:
        arr = arr.astype(np_dtype)
    return arr


def _flatten_first(data):
    while isinstance(data, (list, tuple)) and data:
        yield from (x for x in data if isinstance(x, Tensor))
        data = data[0]


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(x) for x in data]
    return data


_function._set_tensor_class(Tensor)
D._Tensor = Tensor
_AccumulateGrad = _function.AccumulateGrad
_engine._set_tensor_class(Tensor)

from . import ops as _ops  # noqa: E402  (ops import Tensor; bound after the class exists)
from .ops import arith as _arith  # noqa: E402

# The hottest operators run the inline fast path of ops.arith.operator.
Tensor.__add__ = Tensor.__radd__ = _arith.add_operator
Tensor.__sub__ = _arith.sub_operator
Tensor.__mul__ = Tensor.__rmul__ = _arith.mul_operator
Tensor.__truediv__ = _arith.div_operator
Tensor.__matmul__ = _arith.matmul
Tensor.__getitem__ = _ops.getitem
