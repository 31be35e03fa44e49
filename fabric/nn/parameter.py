"""``nn.Parameter``, ``nn.Buffer`` and ``nn.UninitializedParameter``.

A :class:`Parameter` is a Tensor that a :class:`~fabric.nn.Module` registers
as a learnable weight when assigned as an attribute.  It shares memory with
the tensor it wraps and requires grad by default.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> p = nn.Parameter(fabric.ones(2))
    >>> p
    Parameter containing:
    tensor([1., 1.], requires_grad=True)
"""
from __future__ import annotations

from collections import OrderedDict

from .._tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]

_new = object.__new__


def _alias(cls, data, requires_grad):
    """A ``cls`` instance sharing ``data``'s array and version counter."""
    t = _new(cls)
    t._data = data._data
    t._requires_grad = False
    t.grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = data._shared_vc()
    t._base = None
    t._meta = None
    if requires_grad:
        t.requires_grad = True  # the setter raises for non-floating dtypes, as PyTorch does
    return t


class Parameter(Tensor):
    """A Tensor registered as a module weight; ``requires_grad=True`` by default.

    ``Parameter(t)`` shares ``t``'s memory.  Results of operations on a
    Parameter are plain Tensors, as in PyTorch.

    Example::

        >>> import fabric
        >>> w = fabric.nn.Parameter(fabric.zeros(2, 3))
        >>> w.requires_grad, isinstance(w, fabric.Tensor)
        (True, True)
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be a Tensor, not {type(data).__name__}")
        if requires_grad.__class__ is not bool:
            raise TypeError(f"_make_subclass(): argument 'require_grad' (position 3) must be bool, not "
                            f"{type(requires_grad).__name__}")
        return _alias(cls, data, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        """All the work happens in ``__new__`` (Tensor's ``__init__`` must not run)."""

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        if self.__dict__:
            import copy

            result.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = result
        return result

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad, OrderedDict(), dict(self.__dict__)))


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    p = Parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


class _BufferMeta(type):
    # ``isinstance(t, Buffer)`` is true for tensors made by ``Buffer(...)``
    # (they are plain Tensors with a flag, as in PyTorch).
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor as a buffer when assigned to a Module attribute.

    ``Buffer(t, persistent=False)`` keeps it out of ``state_dict``.  The
    result is a plain Tensor sharing ``t``'s memory.

    Example::

        >>> import fabric
        >>> m = fabric.nn.Module()
        >>> m.stats = fabric.nn.Buffer(fabric.zeros(3))
        >>> list(m.state_dict())
        ['stats']
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .._creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): argument 'data' must be a Tensor, not {type(data).__name__}")
        t = data.detach()
        if data.requires_grad:
            t.requires_grad_(True)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """Shape-less placeholder materialised by lazy modules on first use."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Give the placeholder real (uninitialised) memory of ``shape`` and
        turn it into a ``cls_to_become`` instance."""
        from .._creation import empty

        if device is None:
            device = self.device
        if dtype is None:
            dtype = self.dtype
        if isinstance(shape, int):
            shape = (shape,)
        self._data = empty(tuple(shape), device=device, dtype=dtype)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (self.__class__, (self.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A :class:`Parameter` whose shape is set by a lazy module's first call."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from .._creation import empty

        return _alias(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        """All the work happens in ``__new__``."""

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is set by a lazy module's first call."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        from .._creation import empty

        t = _alias(cls, empty(0, device=device, dtype=dtype), requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        """All the work happens in ``__new__``."""


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialised placeholder of a lazy module."""
    return isinstance(param, UninitializedTensorMixin)
