"""``Function`` and the graph node (``Node``) every op records.

An op is a ``Function`` subclass with a static ``forward(ctx, ...)`` and
``backward(ctx, *grads)``.  ``apply`` runs ``forward`` and, when grad mode is
on and an input requires grad, records a node (the ``ctx``) whose class is
named ``<Op>Backward0`` for built-ins and ``<Op>Backward`` for user Functions,
as in PyTorch.

Built-in ops (``_array_forward = True``) get NumPy/CuPy arrays in forward;
user ``Function`` subclasses get Tensors, as in PyTorch.  Every backward
receives and returns Tensors, so it is itself differentiable.

Example::

    >>> import fabric
    >>> class Square(fabric.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, gy):
    ...         x, = ctx.saved_tensors
    ...         return 2 * x * gy
    >>> x = fabric.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).sum().backward(); x.grad
    tensor([6.])
"""
from __future__ import annotations

import functools
import itertools
import threading
import traceback
import weakref
from typing import Any

import numpy as np

from .._errors import out_of_memory
from .grad_mode import any_thread as _any_thread
from .grad_mode import state as _state
from .observe import hook as _hook

__all__ = ["Function", "Node", "FunctionCtx", "once_differentiable", "InplaceFunction"]

_seq = itertools.count()
_ndarray = np.ndarray
_new_object = object.__new__
_FREED = object()
# Kinds of saved values.
_SAVED_INPUT, _SAVED_OUTPUT, _SAVED_CONST, _SAVED_RAW, _SAVED_HOOKED = 0, 1, 2, 3, 4
# ``autograd.graph.saved_tensors_hooks``: each thread's (pack, unpack) pairs, innermost last, and a
# process-wide list with one entry per active context in any thread (the cheap check the op paths make).
saved_hooks: list = []


class _SavedHooks(threading.local):
    stack: tuple = ()


saved_hooks_local = _SavedHooks()

Tensor: Any = None  # set by fabric._tensor (import cycle: Tensor calls ops, ops record nodes)


def _set_tensor_class(cls):
    global Tensor
    Tensor = cls


class RemovableHandle:
    """Returned by ``register_*hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks_ref", "_key")
    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks_ref = weakref.ref(hooks) if not isinstance(hooks, weakref.ref) else hooks
        self._key = next(self._ids)

    def remove(self) -> None:
        hooks = self._hooks_ref()
        if hooks is not None:
            hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    __slots__ = ("__weakref__",)


class Node:
    """A recorded op in the autograd graph; also the ``ctx`` of its Function.

    Only the attributes every node sets are slots; rarely used ones (hooks,
    dirty/non-differentiable marks, anomaly traces) are class-level defaults
    that an instance overrides in its ``__dict__`` when it needs them.
    """

    __slots__ = ("_edges", "_saved", "_to_save", "needs_input_grad", "_input_meta", "_seq", "_view_base_fn",
                 "__dict__", "__weakref__")
    _fn = None  # the Function class this node belongs to
    _conj_wrap = False  # see FunctionMeta
    _output_meta = None
    _pre_hooks = None
    _hooks = None
    _trace = None
    _dirty = None
    _non_differentiable = None
    materialize_grads = True

    def __init__(self):
        self._saved: Any = None
        self._to_save: Any = None
        self._seq = next(_seq)
        if _any_thread.anomaly and _state.anomaly:
            self._trace = traceback.format_stack()[:-2]

    # --- the ctx API ------------------------------------------------------
    def save_for_backward(self, *values) -> None:
        """Keep tensors (or, in built-in ops, arrays) for backward."""
        self._to_save = values

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        saved = self._saved
        if saved is None:
            return ()
        if saved is _FREED:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the graph "
                "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
                "you need to backward through the graph a second time or if you need to access saved "
                "tensors after calling backward.")
        out = []
        for s in saved:
            if s is not None and s[0] == _SAVED_INPUT:  # the common case, inlined
                obj = s[1]
                vc = obj._vc
                if vc is not None and vc[0] != s[3]:
                    self._raise_modified(_SAVED_INPUT, obj, vc[0], s[3])
                out.append(obj)
            else:
                out.append(self._unpack(s))
        return tuple(out)

    saved_variables = saved_tensors

    def _unpack(self, s):
        if s is None:
            return None
        kind, obj, vc, version = s
        if kind == _SAVED_RAW:
            return obj
        if kind == _SAVED_HOOKED:  # vc holds the unpack hook
            t = vc(obj)
            if not isinstance(t, Tensor):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                                f"type {type(t).__name__}")
            return t
        if kind == _SAVED_INPUT:
            vc = obj._vc
        if vc is not None and vc[0] != version:
            self._raise_modified(kind, obj, vc[0], version)
        if kind == _SAVED_INPUT:
            return obj
        if kind == _SAVED_OUTPUT:
            data, nr = obj
            return Tensor._make(data, True, self, nr, vc)
        return Tensor._make(obj, False)

    def _raise_modified(self, kind, obj, current, version):
        if kind == _SAVED_OUTPUT:
            arr, what = obj[0], f", which is output {obj[1]} of {_op_name(self)},"
        else:
            arr = obj._data
            what = f", which is output {obj._output_nr} of {_op_name(obj.grad_fn)}," if obj.grad_fn is not None else ""
        hint = ("the backtrace further above shows the operation that failed to compute its gradient. The variable "
                "in question was changed in there or anywhere later. Good luck!" if _state.anomaly else
                "enable anomaly detection to find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{_type_name(arr.dtype)} {list(arr.shape)}]{what} is at version {current}; "
            f"expected version {version} instead. Hint: {hint}")

    def save_for_forward(self, *tensors) -> None:
        """Keep tensors for a custom Function's ``jvp`` (it reads them as ``ctx.saved_tensors``)."""
        self.__dict__["_saved_for_forward"] = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place (user Functions)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *outputs) -> None:
        """Declare outputs that have no gradient (indices, masks, ...)."""
        self._non_differentiable = outputs

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    # --- the node API -----------------------------------------------------
    @property
    def next_functions(self):
        return tuple(e if e is not None else (None, 0) for e in self._edges)

    def name(self) -> str:
        return type(self).__name__

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward;
        it may return replacement grad_inputs."""
        if self._hooks is None:
            self._hooks = _HookDict()
        h = RemovableHandle(self._hooks)
        self._hooks[h._key] = fn
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node's backward; it may
        return replacement grad_outputs."""
        return self._add_pre_hook(None, fn)

    def _add_pre_hook(self, output_nr, fn):
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h._key] = (output_nr, fn)
        return h

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def __call__(self, *grads):
        return self.apply(*grads)

    def apply(self, *grads):
        """Run this node's backward on output grads; returns input grads."""
        return self._fn.backward(self, *grads)


FunctionCtx = Node
BackwardCFunction = Node


def _op_name(node) -> str:
    """PyTorch's name of the forward op behind ``node`` (ExpBackward0 -> Exp)."""
    name = type(node).__name__
    stripped = name.rstrip("0123456789")
    return stripped[:-len("Backward")] if stripped.endswith("Backward") else name


def _type_name(np_dtype) -> str:
    return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
            "int64": "torch.LongTensor", "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
            "int8": "torch.CharTensor", "uint8": "torch.ByteTensor", "bool": "torch.BoolTensor",
            "complex64": "torch.ComplexFloatTensor", "complex128": "torch.ComplexDoubleTensor"}.get(
        str(np_dtype), str(np_dtype))


class AccumulateGrad(Node):
    """The sink node of a leaf tensor: adds incoming gradients into ``.grad``.

    The leaf holds its node strongly (one node per leaf, reused by every
    graph) and the node refers to its leaf weakly, so there is no reference
    cycle.  A graph therefore does not keep a leaf alive: when nothing else
    refers to the leaf, its gradient is unobservable and is dropped (PyTorch
    keeps the leaf alive; ``AccumulateGrad.variable`` is then ``None`` here).
    A leaf with hooks is held strongly so its hooks still run.
    """

    __slots__ = ("_var", "_strong")

    def __init__(self, variable):
        Node.__init__(self)
        self._var = weakref.ref(variable)
        self._strong = None
        self._edges = ()
        self._input_meta = None
        self.needs_input_grad = ()

    @property
    def variable(self):
        return self._var()

    @classmethod
    def _for(cls, variable):
        """Fast constructor (``__init__`` inlined)."""
        acc = _new_object(cls)
        acc._saved = acc._to_save = acc._strong = acc._input_meta = None
        acc._seq = next(_seq)
        acc._var = weakref.ref(variable)
        acc._edges = acc.needs_input_grad = ()
        return acc


def _edge(t):
    """The graph edge ``(node, output number)`` a Tensor that requires grad contributes to an op's node: its
    ``grad_fn`` (re-expressed when it is a stale view), or its leaf's ``AccumulateGrad`` node.  The fast
    paths ``_record1`` and ``_record_elementwise`` inline this (a call costs as much as the lookup there,
    counted by ``benchmarks/overhead.py --calls``); keep them in step."""
    fn = t.grad_fn
    if fn is None:
        m = t._meta
        return m.edge if m is not None and m.edge is not None else _leaf_edge(t)
    if t._base is not None:
        fn = _view_grad_fn(t, fn)
    return (fn, t._output_nr)


def _view_grad_fn(view, fn):
    """The current ``grad_fn`` of a view: when its base's history changed
    since the view recorded ``fn`` (an in-place op on the base or on another
    view of it), the view is re-expressed as its elements of the base's new
    history (AsStridedBackward0), as PyTorch does; without this its gradient
    would ignore the in-place op."""
    base = view._base
    try:
        if fn._view_base_fn is base.grad_fn:
            return fn
    except AttributeError:  # a node that is not a view's (set by an op that is not a view op)
        return fn
    if not base._requires_grad:
        return fn
    multi = view.__dict__.get("_multi_view")
    if multi is not None:
        raise RuntimeError(
            f"Output {view._output_nr} of {multi.replace('Backward0', '')} is a view and its base or another view "
            "of its base has been modified inplace. This view is the output of a function that returns multiple "
            "views. Such functions do not allow the output views to be modified inplace. You should replace the "
            "inplace operation by an out-of-place one.")
    _view_of_base_node(view, _view_positions(view._data, base._data))
    return view.grad_fn


def _leaf_edge(t):
    """``(AccumulateGrad node, 0)`` of leaf ``t``, cached on the leaf."""
    m = t._meta
    if m is None or m.edge is None:
        t._grad_accumulator_node()
        m = t._meta
    return m.edge


class FunctionMeta(type):
    """Gives each Function subclass its own node class (``MulBackward0``)."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        if name in ("Function", "InplaceFunction"):
            return
        suffix = "Backward0" if attrs.get("_array_forward", getattr(cls, "_array_forward", False)) else "Backward"
        node_name = attrs.get("_node_name") or (name + suffix)
        slots = tuple(getattr(cls, "_ctx_slots", ()))  # ctx attributes a hot op always sets: no per-node dict
        # Built-in ops written for real numbers get PyTorch's complex gradient from the engine, which
        # conjugates around their backward (autograd/engine.py); user Functions handle complex themselves.
        conj_wrap = bool(getattr(cls, "_array_forward", False) and not getattr(cls, "_complex_native", False))
        cls._Node = type(node_name, (Node,), {"__slots__": slots, "_fn": cls, "__module__": cls.__module__,
                                               "_conj_wrap": conj_wrap})


class Function(metaclass=FunctionMeta):
    """Base class of every differentiable op (see module docstring)."""

    _array_forward = False   # built-ins: forward receives arrays
    _is_view = False         # output shares memory with input 0 (view ops)
    _is_inplace = False      # modifies input 0 in place and returns it
    _checks_overlap = True   # in-place: refuse to write repeated or partly overlapping memory
    _differentiable_outputs = True  # False: outputs never require grad (argmax, comparisons)
    _exact_grads = False     # backward returns each input's gradient in its shape and dtype (no fix-up)
    _complex_native = False  # built-in whose backward is written for complex gradients (engine.py: conj wrap)
    _Node = Node

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Function objects are not instantiated: call MyFunction.apply(...) instead")

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("Function subclasses must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("Function subclasses must define backward(ctx, *grads) to be differentiated")

    vjp = backward

    @staticmethod
    def jvp(ctx, *tangents):
        """Forward-mode derivative (``fabric.autograd.forward_ad``): output tangents from input tangents."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs) -> Any:
        if cls._array_forward:
            arrays = [a._data if isinstance(a, Tensor) else a for a in args]
            return _apply(cls, args, arrays)
        return _apply_user(cls, args, kwargs)


class InplaceFunction(Function):
    pass


def _normalize(out):
    """Turn NumPy scalars into 0-d arrays (once, here, for every op)."""
    if out.__class__ is np.ndarray:
        return out
    if isinstance(out, np.generic):
        return np.asarray(out)
    return out


_OVERLAP = ("unsupported operation: {} to a single memory location. Please clone() the tensor before "
            "performing the operation.")


def check_no_internal_overlap(x):
    """PyTorch's error for writing into an array whose elements repeat in
    memory (an expanded tensor): a zero stride over a size above one."""
    if 0 in x.strides and x.size > 1 and any(st == 0 and n > 1 for st, n in zip(x.strides, x.shape)):
        raise RuntimeError(_OVERLAP.format("more than one element of the written-to tensor refers"))


def _dense(a):
    return a.flags.c_contiguous or a.flags.f_contiguous


def _check_write_overlap(arrays):
    """The checks PyTorch makes before an in-place op writes ``arrays[0]``:
    no repeated elements in it, and no input that partly overlaps it
    (``x[1:].add_(x[:-1])`` raises; ``x.add_(x)`` is fine).  As in PyTorch,
    only dense layouts are compared; others are too hard to tell and pass."""
    x = arrays[0]
    check_no_internal_overlap(x)
    if x.__class__ is not _ndarray or not _dense(x):
        return
    for y in arrays[1:]:
        if y.__class__ is _ndarray and y is not x and y.size and np.may_share_memory(x, y) and _dense(y) \
                and not (y.__array_interface__["data"][0] == x.__array_interface__["data"][0]
                         and y.strides == x.strides and y.shape == x.shape):
            raise RuntimeError(_OVERLAP.format("some elements of the input tensor and the written-to tensor refer"))


def _apply(cls, args, arrays) -> Any:
    """Run a built-in op: ``args`` are the original arguments (Tensors make
    graph edges), ``arrays`` what ``forward`` receives (already promoted)."""
    if _hook.observer is not None and _hook.observer.claim():  # the one observation point (autograd/observe.py)
        return _hook.observer.call("op", cls, args, _apply, cls, args, arrays)
    if cls._is_inplace and cls._checks_overlap:
        _check_write_overlap(arrays)
    if _state.enabled and cls._differentiable_outputs:
        for a in args:
            if isinstance(a, Tensor) and a._requires_grad:
                return _apply_recording(cls, args, arrays)
    if cls._is_inplace and args[0]._base is not None and _state.enabled and args[0]._base._requires_grad:
        raise RuntimeError(_NO_GRAD_VIEW)
    try:
        out = cls.forward(_NullCtx(), *arrays)
    except MemoryError as e:
        raise out_of_memory(e) from None
    except Exception:
        for a in args[:2]:  # a sparse operand: the op runs on its values (fabric/sparse)
            if isinstance(a, Tensor) and a._sparse:
                return a._pointwise(cls, args, arrays)
        raise
    if cls._is_inplace:
        t = args[0]
        t._bump_version()
        return t
    if out.__class__ is tuple:
        return tuple(Tensor._make(o if o.__class__ is _ndarray else _normalize(o), False) for o in out)
    if out.__class__ is not _ndarray:
        out = _normalize(out)
    if cls._is_view:
        return _make_view(args[0], out, False, None)
    return Tensor._make(out, False)


def _apply_recording(cls, args, arrays) -> Any:
    """``_apply`` when a graph node must be recorded."""
    node = _new_object(cls._Node)  # Node.__init__ inlined: this is the hottest path of training
    node._saved = node._to_save = None
    node._seq = next(_seq)
    if _any_thread.anomaly and _state.anomaly:
        node._trace = traceback.format_stack()[:-1]
    edges = []
    meta = []
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            edges.append(_edge(a))
            d = a._data
            meta.append((d.shape, d.dtype))
        else:
            edges.append(None)
            meta.append(None)
    node.needs_input_grad = tuple([e is not None for e in edges])
    if cls._is_inplace:
        _check_inplace(args[0])
    node._edges = edges
    node._input_meta = meta
    try:
        out = cls.forward(node, *arrays)
    except MemoryError as e:
        raise out_of_memory(e) from None
    if cls._is_inplace:
        t = args[0]
        t._bump_version()
        if t._base is not None:
            _rebase_view(t, node)
        else:
            t.grad_fn = node
            t._output_nr = 0
        t._requires_grad = True
        outs = (t,)
        result = t
        out_arrays = raw = (t._data,)
    elif out.__class__ is tuple:
        return _finish_tuple(cls, node, args, arrays, out)
    else:
        raw = (out,)
        if out.__class__ is not _ndarray:
            out = _normalize(out)
        out_arrays = (out,)
        if out.dtype.kind not in "fc":
            result = Tensor._make(out, False)
        elif cls._is_view:
            result = _make_view(args[0], out, True, node)
        else:
            result = Tensor._make(out, True, node, 0)
        outs = (result,)
    if node._to_save is not None:
        node._saved = _pack_arrays(node._to_save, args, arrays, out_arrays, outs, raw)
        if saved_hooks:
            _hook_saved(node)
        node._to_save = None
    return result


_NONES = tuple((None,) * k for k in range(9))
_NEEDS_FIRST_OF = tuple((True,) + (False,) * k for k in range(9))


def _apply1(cls, a, arrays, exact=False) -> Any:
    """``_apply`` for an op whose only Tensor argument is its first, ``a``
    (``arrays[0]`` is ``a``'s array, the rest plain parameters): reductions,
    views, indexing, unary ops with options."""
    if a._requires_grad and _state.enabled and cls._differentiable_outputs and not cls._is_inplace \
            and len(arrays) < 9:
        return _record1(cls, a, arrays, exact)
    if cls._is_inplace or _hook.observer is not None:
        return _apply(cls, (a,) + tuple(arrays[1:]), arrays)
    try:
        out = cls.forward(_NullCtx(), *arrays)
    except MemoryError as e:
        raise out_of_memory(e) from None
    if out.__class__ is not _ndarray:
        if out.__class__ is tuple:
            return tuple(Tensor._make(o if o.__class__ is _ndarray else _normalize(o), False) for o in out)
        out = _normalize(out)
    if cls._is_view:
        return _make_view(a, out, False, None)
    return Tensor._make(out, False)


def _record1(cls, a, arrays, exact=False) -> Any:
    """``_apply_recording`` for :func:`_apply1`.  ``exact``: backward returns
    the gradient in the input's shape and dtype (views, whole sums), so the
    node needs no input metadata."""
    if _hook.observer is not None:  # observed ops go through _apply
        return _apply(cls, (a,) + tuple(arrays[1:]), arrays)
    node = _new_object(cls._Node)
    node._saved = node._to_save = None
    node._seq = next(_seq)
    if _any_thread.anomaly and _state.anomaly:
        node._trace = traceback.format_stack()[:-2]
    fn = a.grad_fn  # _edge(a) inlined: a call would cost as much as the lookup
    if fn is None:
        m = a._meta
        ea = m.edge if m is not None and m.edge is not None else _leaf_edge(a)
    else:
        if a._base is not None:
            fn = _view_grad_fn(a, fn)
        ea = (fn, a._output_nr)
    n = len(arrays)
    if n == 2:
        node._edges = (ea, None)
        node.needs_input_grad = _NEEDS_FIRST
    else:
        node._edges = (ea,) + _NONES[n - 1]
        node.needs_input_grad = _NEEDS_FIRST_OF[n - 1]
    if exact or cls._exact_grads:
        node._input_meta = None
    else:
        x = a._data
        node._input_meta = ((x.shape, x.dtype),) + _NONES[n - 1]
    out = raw = cls.forward(node, *arrays)
    if out.__class__ is not _ndarray:
        if out.__class__ is tuple:
            return _finish_tuple(cls, node, (a,) + tuple(arrays[1:]), arrays, out)
        out = _normalize(out)
    if cls._is_view:
        if out.dtype.kind not in "fc":
            return _make_view(a, out, False, None)
        result = _new_object(Tensor)  # _make_view inlined
        result._data = out
        result._requires_grad = True
        result.grad_fn = node
        result._output_nr = 0
        result._grad = result._meta = None
        root = a._base
        if root is None:
            root = a
        result._base = root
        node._view_base_fn = root.grad_fn
        vc = root._vc
        if vc is None:
            vc = root._vc = [0]
        result._vc = vc
    else:
        result = _new_object(Tensor)  # Tensor._make inlined
        result._data = out
        if out.dtype.kind in "fc":
            result._requires_grad = True
            result.grad_fn = node
        else:
            result._requires_grad = False
            result.grad_fn = None
        result._output_nr = 0
        result._grad = result._vc = result._base = result._meta = None
    if node._to_save is not None:
        node._saved = _pack_arrays(node._to_save, (a,) + tuple(arrays[1:]), arrays, (out,), (result,), (raw,))
        if saved_hooks:
            _hook_saved(node)
        node._to_save = None
    return result


class _NoSaveCtx:
    """ctx of the no-grad fast paths, whose forwards only call save_for_backward."""

    __slots__ = ()

    def save_for_backward(self, *values):
        pass


NO_SAVE_CTX = _NoSaveCtx()


def _apply_elementwise(cls, a, x) -> Any:
    """Run unary elementwise op ``cls`` on Tensor ``a`` given its floating
    array ``x`` (forward only calls ``save_for_backward``; the gradient has
    the input's shape and dtype)."""
    if a._requires_grad and _state.enabled:
        return _record_elementwise(cls, a, None, x, None)
    if _hook.observer is not None:  # observed ops go through _apply
        return _apply(cls, (a,), (x,))
    try:
        out = cls.forward(NO_SAVE_CTX, x)
    except Exception:
        if a._sparse:  # a sparse operand: the op runs on its values (fabric/sparse)
            return a._pointwise(cls, (a,), (x,))
        raise
    return Tensor._make(out if out.__class__ is _ndarray else _normalize(out), False)


def _finish_tuple(cls, node, args, arrays, out):
    """Wrap the outputs of a recorded op returning several arrays."""
    out_arrays = tuple(_normalize(o) for o in out)
    nd = node._non_differentiable
    outs = tuple(
        Tensor._make(o, True, node, i) if (o.dtype.kind in "fc" and (nd is None or i not in nd))
        else Tensor._make(o, False)
        for i, o in enumerate(out_arrays))
    node._output_meta = [(o.shape, o.dtype) for o in out_arrays]
    if node._to_save is not None:
        node._saved = _pack_arrays(node._to_save, args, arrays, out_arrays, outs, out)
        if saved_hooks:
            _hook_saved(node)
        node._to_save = None
    return outs


_NEEDS_FIRST = (True, False)
_NEEDS_ONE = (True,)


def _record_elementwise(cls, a, b, x, y, exact=False) -> Any:
    """``_apply_recording`` specialised for an elementwise op on ``a`` and
    ``b`` of one dtype (``b`` a Tensor or a Python number; ``b is None`` for
    a unary op) whose one float output is not a view.  Inputs of the
    output's shape need no broadcasting fix-up in backward, so the node then
    records no input metadata; ``exact`` says that backward always returns
    gradients of the inputs' shapes (``mm``)."""
    if _hook.observer is not None:  # observed ops go through _apply
        return _apply(cls, (a,), (x,)) if b is None else _apply(cls, (a, b), (x, y))
    node = _new_object(cls._Node)
    node._saved = node._to_save = None
    node._seq = next(_seq)
    if _any_thread.anomaly and _state.anomaly:
        node._trace = traceback.format_stack()[:-1]
    if a._requires_grad:  # _edge(a) inlined (here and for b): a call would cost as much
        fn = a.grad_fn
        if fn is None:
            m = a._meta
            ea = m.edge if m is not None and m.edge is not None else _leaf_edge(a)
        else:
            if a._base is not None:
                fn = _view_grad_fn(a, fn)
            ea = (fn, a._output_nr)
    else:
        ea = None
    if b is None:
        node._edges = (ea,)
        node.needs_input_grad = _NEEDS_ONE
        node._input_meta = None
        out = raw = cls.forward(node, x)
    elif y is b:
        node._edges = (ea, None)
        node.needs_input_grad = _NEEDS_FIRST
        node._input_meta = None
        out = raw = cls.forward(node, x, y)
    else:
        if b._requires_grad:
            fn = b.grad_fn
            if fn is None:
                m = b._meta
                eb = m.edge if m is not None and m.edge is not None else _leaf_edge(b)
            else:
                if b._base is not None:
                    fn = _view_grad_fn(b, fn)
                eb = (fn, b._output_nr)
        else:
            eb = None
        node._edges = (ea, eb)
        node.needs_input_grad = (ea is not None, eb is not None)
        sx = x.shape
        sy = y.shape
        node._input_meta = None if exact or sx == sy else ((sx, x.dtype) if ea is not None else None,
                                                  (sy, y.dtype) if eb is not None else None)
        out = raw = cls.forward(node, x, y)
    if out.__class__ is not _ndarray:
        out = _normalize(out)
    result = _new_object(Tensor)  # Tensor._make inlined
    result._data = out
    result._requires_grad = True
    result.grad_fn = node
    result._output_nr = 0
    result._grad = result._vc = result._base = result._meta = None
    ts = node._to_save
    if ts is not None:
        node._to_save = None
        packed = []  # _pack_arrays inlined for what these ops save: inputs, the output, numbers
        for v in ts:  # pyright: ignore[reportGeneralTypeIssues] (forward() set it after the reset above)
            if v is None:
                packed.append(None)
            elif v is x:
                vc = a._vc
                packed.append((_SAVED_INPUT, a, None, 0 if vc is None else vc[0]))
            elif v is y and y is not b:
                vc = b._vc
                packed.append((_SAVED_INPUT, b, None, 0 if vc is None else vc[0]))
            elif v is raw or v is out:
                vc = result._vc
                if vc is None:
                    vc = result._vc = [0]
                packed.append((_SAVED_OUTPUT, (out, 0), vc, vc[0]))
            elif v.__class__ is float or v.__class__ is int:
                packed.append((_SAVED_RAW, v, None, 0))
            else:
                packed = None
                break
        if packed is not None:
            node._saved = tuple(packed)
        else:
            node._saved = _pack_arrays(ts, (a, b), (x, y), (out,), (result,), (raw,))
        if saved_hooks:
            _hook_saved(node)
    return result


_PLAIN = (float, int, bool, str, type(None))


def _hook_saved(node):
    """Pass what ``node`` saved through the innermost saved-tensor pack hook
    (``autograd.graph.saved_tensors_hooks``); unpacking calls the unpack hook."""
    stack = saved_hooks_local.stack
    if not stack:  # the active contexts belong to other threads
        return
    pack, unpack = stack[-1]
    hooked = []
    for s in node._saved:
        if s is None or s[0] == _SAVED_RAW:
            hooked.append(s)
        else:
            hooked.append((_SAVED_HOOKED, pack(node._unpack(s)), unpack, 0))
    node._saved = tuple(hooked)


def _pack_arrays(values, args, arrays, out_arrays, outs, raw):
    """Map what a built-in forward saved back to graph objects: an input
    array becomes its input Tensor (with its version), an output array a
    reference to the output (rebuilt on unpack, no cycle), other arrays are
    constants and other values are kept as they are."""
    packed = []
    for v in values:
        if v.__class__ in _PLAIN:
            packed.append(None if v is None else (_SAVED_RAW, v, None, 0))
            continue
        i = 0
        for arr in arrays:
            if v is arr:
                a = args[i]
                if isinstance(a, Tensor):
                    vc = a._vc
                    packed.append((_SAVED_INPUT, a, None, 0 if vc is None else vc[0]))
                    break
            i += 1
        else:
            for i, o in enumerate(out_arrays):
                if (v is o or v is raw[i]) and outs[i].grad_fn is not None:
                    vc = outs[i]._shared_vc()
                    packed.append((_SAVED_OUTPUT, (o, i), vc, vc[0]))
                    break
            else:
                if isinstance(v, Tensor):
                    vc = v._vc
                    packed.append((_SAVED_INPUT, v, None, 0 if vc is None else vc[0]))
                elif hasattr(v, "__array_priority__") or isinstance(v, np.ndarray):
                    packed.append((_SAVED_CONST, v, None, 0))
                else:
                    packed.append((_SAVED_RAW, v, None, 0))
    return tuple(packed)


class _NullCtx:
    """ctx used when no graph is recorded: saving is a no-op."""

    __slots__ = ("__dict__",)
    needs_input_grad = ()
    materialize_grads = True
    _non_differentiable = None

    def save_for_backward(self, *values):
        pass

    def mark_dirty(self, *tensors):
        pass

    def mark_non_differentiable(self, *outputs):
        pass

    def set_materialize_grads(self, value):
        pass


def _make_view(base, out, requires_grad, node):
    """A Tensor on ``out``, a view of ``base``'s memory: it shares the
    version counter of the root base."""
    t = _new_object(Tensor)
    t._data = out
    t._requires_grad = requires_grad
    t.grad_fn = node
    t._output_nr = 0
    t._grad = t._meta = None
    root = base._base
    if root is None:
        root = base
    t._base = root
    if node is not None:
        node._view_base_fn = root.grad_fn  # the history this view was taken from (see _view_grad_fn)
    vc = root._vc
    if vc is None:
        vc = root._vc = [0]
    t._vc = vc
    return t


_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use "
    "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if "
    "you want the inplace to be tracked).")


def _check_inplace(t, rebase=True):
    if t.grad_fn is None and t._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    b = t._base
    if b is None:
        return
    if b._requires_grad and not t._requires_grad:
        raise RuntimeError(_NO_GRAD_VIEW)
    if b._requires_grad and b.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    multi = getattr(t, "_multi_view", None)
    if multi is not None:
        raise RuntimeError(
            f"Output {t._output_nr} of {multi} is a view and is being modified inplace. This view is the output "
            "of a function that returns multiple views. Such functions do not allow the output views to be "
            "modified inplace. You should replace the inplace operation by an out-of-place one.")
    if not rebase and b._requires_grad:
        raise NotImplementedError(
            "fabric does not support a custom Function marking a view of a tensor that requires grad dirty "
            "(mark_dirty); modify the base tensor instead.")


# --- CopySlices: in-place ops on views -------------------------------------------
# An in-place op ``fn`` on a view rewrites the history of the view's base, as in
# PyTorch: the base's grad_fn becomes CopySlices(base's old history, fn), whose
# backward hands ``fn`` the gradient of the view's region and puts ``fn``'s
# gradient for the view's old values back into that region; the view becomes
# a strided view (AsStridedBackward0) of the new base.  Other views of the base
# created before the in-place op are regenerated the same way when next used
# (_view_grad_fn), as PyTorch does.

def _view_positions(v, b):
    """For every element of array ``v`` (a view into ``b``'s memory), its
    flat C-order index in ``b``."""
    from ..backends import backend_of

    xp = backend_of(b).xp
    it = b.itemsize

    def ptr(a):
        return a.__array_interface__["data"][0] if a.__class__ is np.ndarray else a.data.ptr

    def positions(a, offset):
        pos = xp.asarray(offset, dtype=np.int64)
        nd = a.ndim
        for k, (n, st) in enumerate(zip(a.shape, a.strides)):
            pos = pos + (xp.arange(n, dtype=np.int64) * (st // it)).reshape((n,) + (1,) * (nd - k - 1))
        return xp.broadcast_to(pos, a.shape)

    pos = positions(v, (ptr(v) - ptr(b)) // it)
    if b.flags.c_contiguous:
        return pos
    bpos = positions(b, 0).reshape(-1)
    lo = min(int(bpos.min()), int(pos.min())) if pos.size else int(bpos.min())
    hi = max(int(bpos.max()), int(pos.max())) if pos.size else int(bpos.max())
    inv = xp.zeros(hi - lo + 1, np.int64)
    inv[bpos - lo] = xp.arange(b.size, dtype=np.int64)
    return inv[pos - lo]


class CopySlices(Function):
    """The new history of a base after an in-place op on one of its views."""

    _node_name = "CopySlices"

    @staticmethod
    def backward(ctx, gb):
        from .engine import _call_node

        idx = Tensor._make(ctx.idx, False)
        region = gb.take(idx)
        grads = _call_node(ctx.fn, [region])
        g0 = grads[0] if grads[0] is not None else region * 0
        return (gb.put(idx, g0), *grads[1:])


class _ViewOfBase(Function):
    """A view re-expressed as its elements of the (rebased) base."""

    _node_name = "AsStridedBackward0"

    @staticmethod
    def backward(ctx, gv):
        idx = Tensor._make(ctx.idx, False)
        return gv.new_zeros(ctx.base_shape).put(idx, gv, accumulate=True)


def _rebase_view(view, fn):
    base = view._base
    bd = base._data
    idx = _view_positions(view._data, bd)
    cs = CopySlices._Node()
    cs._edges = [_edge(base) if base._requires_grad else None] + list(fn._edges[1:])
    cs._input_meta = [(bd.shape, bd.dtype)] + list(fn._input_meta[1:])
    cs.needs_input_grad = (base._requires_grad,) + tuple(fn.needs_input_grad[1:])
    cs.fn, cs.idx = fn, idx
    base.grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    _view_of_base_node(view, idx)


def _view_of_base_node(view, idx):
    """Make ``view``'s grad_fn an AsStridedBackward0 node over its base's
    current history (``idx``: the view's flat positions in the base)."""
    base = view._base
    bd = base._data
    vn = _ViewOfBase._Node()
    vn._edges = [_edge(base)]
    vn._input_meta = [(bd.shape, bd.dtype)]
    vn.needs_input_grad = (True,)
    vn.idx, vn.base_shape = idx, bd.shape
    vn._view_base_fn = base.grad_fn
    view.grad_fn = vn
    view._output_nr = 0


def _apply_user(cls, args, kwargs) -> Any:
    """Run a user-defined Function: forward sees Tensors, under no_grad."""
    if _hook.observer is not None and _hook.observer.claim():
        return _hook.observer.call("op", cls, args, _apply_user, cls, args, kwargs)
    tensor_args = [a for a in args if isinstance(a, Tensor)]
    needs = _state.enabled and any(a._requires_grad for a in tensor_args)
    node = cls._Node()
    node.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad and needs for a in args)
    prev = _state.enabled
    _state.enabled = False
    try:
        if hasattr(cls, "setup_context") and cls.setup_context is not Function.__dict__.get("setup_context") \
                and "setup_context" in _own_attrs(cls):
            out = cls.forward(*args, **kwargs)
            cls.setup_context(node, args, out)
        else:
            out = cls.forward(node, *args, **kwargs)
    finally:
        _state.enabled = prev
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    if not needs:
        return out
    node._edges = [(_edge(a) if isinstance(a, Tensor) and a._requires_grad else None) for a in args]
    node._input_meta = [((a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a._requires_grad else None)
                        for a in args]
    dirty = node._dirty or ()
    nd = node._non_differentiable or ()
    new_outs = []
    meta = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            new_outs.append(o)
            meta.append(None)
            continue
        meta.append((o._data.shape, o._data.dtype))
        if any(o is d for d in dirty):
            _check_inplace(o, rebase=False)
            o._bump_version()
            t = o
        elif any(o is a for a in tensor_args) or o.grad_fn is not None or o._base is not None:
            # returned an input (or a view): PyTorch returns a new tensor sharing storage
            t = Tensor._make(o._data, False)
            t._vc = o._shared_vc()
        else:
            t = o
        if any(o is n for n in nd) or o._data.dtype.kind not in "fc":
            t._requires_grad = False
            t.grad_fn = None
        else:
            t.grad_fn = node
            t._output_nr = i
            t._requires_grad = True
        new_outs.append(t)
    node._output_meta = meta
    if node._to_save is not None:
        saved = []
        for v in node._to_save:
            if v is None or not isinstance(v, Tensor):
                saved.append(None if v is None else (_SAVED_RAW, v, None, 0))
                continue
            for i, t in enumerate(new_outs):
                if (v is t or v is outs[i]) and isinstance(t, Tensor) and t.grad_fn is node:
                    vc = t._shared_vc()
                    saved.append((_SAVED_OUTPUT, (t._data, i), vc, vc[0]))
                    break
            else:
                vc = v._vc
                saved.append((_SAVED_INPUT, v, None, 0 if vc is None else vc[0]))
        node._saved = tuple(saved)
        if saved_hooks:
            _hook_saved(node)
        node._to_save = None
    return new_outs[0] if single else tuple(new_outs)


@functools.cache
def _own_attrs(cls):
    names = set()
    for k in cls.__mro__:
        if k is Function:
            break
        names.update(k.__dict__)
    return frozenset(names)


def once_differentiable(backward):
    """Decorator for a backward that is not itself differentiable: with
    ``create_graph=True`` the results do not require grad, and using them
    for double backward raises a clear error."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        from .grad_mode import no_grad

        with no_grad():
            out = backward(ctx, *grads)
        if not _state.enabled:
            return out
        requires = any(isinstance(g, Tensor) and g._requires_grad for g in grads)
        if not requires:
            return out
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        wrapped = []
        for o in outs:
            if isinstance(o, Tensor):
                o = _DelayedError.apply(o, f"trying to differentiate twice a function ({type(ctx).__name__}) "
                                           "that was marked with @once_differentiable", *grads)
            wrapped.append(o)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper


class _DelayedError(Function):
    """Identity whose backward raises: marks results of once_differentiable."""

    _array_forward = True
    _node_name = "DelayedError"

    @staticmethod
    def forward(ctx, x, msg, *grads):
        ctx.msg = msg
        return x.copy()

    @staticmethod
    def backward(ctx, gy):
        raise RuntimeError(ctx.msg)


_state_ref = _state
