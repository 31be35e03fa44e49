"""Batched tensors: how ``vmap`` runs ``func`` once for the whole batch.

A :class:`BatchedTensor` is what ``func`` sees inside ``vmap``: a Tensor whose
*logical* shape is one example's, holding the *physical* value with the batch
at dimension 0 (``_value``) and its vmap level (``_level``; nested vmaps nest
BatchedTensors, the outer level inside, so the physical layout is always
``[B_outer, B_inner, *example]``).

Where the batching is seen (nothing runs for ordinary tensors):

* Tensor methods and operators: :class:`BatchedTensor` overrides every one, so
  ``x.sum(1)``, ``x @ w`` and ``w @ x`` (Python tries the subclass's
  reflected operator first) reach :func:`dispatch`.
* fabric's public functions (``fabric.*``, ``fabric.nn.functional.*``,
  ``fabric.linalg.*``, ``fabric.special.*``): while a vmap runs, their
  namespaces hold wrappers that send a call with a BatchedTensor argument to
  :func:`dispatch` (the same patching fx's tracer uses; restored on exit).

:func:`dispatch` runs the op's batching rule (``OpDecl.vmap`` in the op
registry, or the func-side table in ``_rules.py`` for ops not declared yet) on
the physical values, or, for an op without a rule, the per-op fallback: the
op once per example on slices, results restacked.  Anything else that reaches
a BatchedTensor's array (a name bound before the vmap, ``.item()``, data
dependent control flow) raises :class:`Unbatchable`, and ``vmap`` reruns
``func`` once per example, so results never depend on which path ran.

Example::

    >>> import fabric
    >>> seen = []
    >>> fabric.func.vmap(lambda v: seen.append((type(v).__name__, v.shape)) or v.sum())(fabric.ones(5, 3))
    tensor([3., 3., 3., 3., 3.])
    >>> seen                                   # func ran once, on the whole batch
    [('BatchedTensor', fabric.Size([3]))]
"""
from __future__ import annotations

import functools
import itertools
import threading
import types

from .._tensor import Size, Tensor

__all__ = ["BatchedTensor", "Unbatchable", "dispatch", "active_levels", "RULES"]

RULES: dict = {}  # batching rules of ops not (yet) declared in the op registry, by public name


class Unbatchable(BaseException):
    """A BatchedTensor reached code that cannot batch it; vmap reruns ``func`` per example.

    A BaseException so that ``except Exception`` in user code does not swallow it.
    """


class Level:
    """One running (batched) vmap: its level number, batch size and randomness mode."""

    __slots__ = ("level", "size", "randomness")

    def __init__(self, level, size, randomness):
        self.level, self.size, self.randomness = level, size, randomness


_local = threading.local()     # .levels: this thread's batched vmaps now running, outermost first
_level_count = itertools.count(1)   # level numbers only grow, so a stale BatchedTensor never matches a new level


def active_levels() -> list[Level]:
    levels = getattr(_local, "levels", None)
    if levels is None:
        levels = _local.levels = []
    return levels


def _unbatchable(*_a, **_k):
    raise Unbatchable


def _raise_prop():
    return property(_unbatchable, _unbatchable)


class BatchedTensor(Tensor):
    """A tensor inside ``vmap``: one example's view of a batched value (see the module docstring)."""

    __slots__ = ("_value", "_level")
    _value: Tensor
    _level: Level

    # Tensor's own slots: reading one means an op is about to use the physical array as if it were one
    # example's, so the batched run stops there and vmap falls back to running func per example.
    _data = _raise_prop()
    _requires_grad = _raise_prop()
    _output_nr = _raise_prop()
    _grad = _raise_prop()
    _vc = _raise_prop()
    _base = _raise_prop()
    _meta = _raise_prop()

    def __new__(cls, *args, **kwargs):
        raise TypeError("BatchedTensor is created by vmap only")

    def __init__(self, *args, **kwargs):
        pass

    # --- what needs no batching: logical metadata ---------------------------------------------------
    @property
    def shape(self):
        return Size(self._value.shape[1:])

    def size(self, dim=None):
        s = self._value.shape[1:]
        if dim is None:
            return Size(s)
        return s[_wrap(dim, len(s))]

    def dim(self):
        return self._value.dim() - 1

    ndimension = dim

    @property
    def ndim(self):
        return self._value.dim() - 1

    def numel(self):
        n = 1
        for s in self._value.shape[1:]:
            n *= s
        return n

    nelement = numel

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[1]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([self[i] for i in range(self.size(0))])

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def device(self):
        return self._value.device

    @property
    def is_cuda(self):
        return self._value.is_cuda

    @property
    def is_cpu(self):
        return self._value.is_cpu

    @property
    def itemsize(self):
        return self._value.itemsize

    def element_size(self):
        return self._value.element_size()

    def is_floating_point(self):
        return self._value.is_floating_point()

    def is_complex(self):
        return self._value.is_complex()

    def get_device(self):
        return self._value.get_device()

    # --- autograd metadata: the physical tensor's (the one in the graph) ------------------------------
    @property
    def requires_grad(self):
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._value.requires_grad = value

    def requires_grad_(self, requires_grad=True):
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self):
        return self._value.is_leaf

    @property
    def data(self):
        return make(self._value.data, self._level)

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level.level}, bdim=0, value=\n{self._value!r}\n)"

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    def __deepcopy__(self, memo):
        raise Unbatchable

    def __reduce_ex__(self, protocol):
        raise Unbatchable


def physical(t):
    """The plain tensor under any number of BatchedTensor levels."""
    while t.__class__ is BatchedTensor:
        t = t._value
    return t


def make(value, level: Level) -> BatchedTensor:
    b = object.__new__(BatchedTensor)
    b._value = value
    b._level = level
    return b


def _wrap(dim, n):
    if not -max(n, 1) <= dim < max(n, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], "
                         f"but got {dim})")
    return dim % max(n, 1)


# --- dispatch -----------------------------------------------------------------------------------------

def _top(args, kwargs):
    """The innermost (highest) level among the BatchedTensors in args/kwargs (one level into lists)."""
    best = None
    for a in (*args, *kwargs.values()):
        if a.__class__ is BatchedTensor:
            if best is None or a._level.level > best.level:
                best = a._level
        elif a.__class__ in (list, tuple):
            for e in a:
                if e.__class__ is BatchedTensor and (best is None or e._level.level > best.level):
                    best = e._level
    return best


def has_batched(args, kwargs) -> bool:
    for a in args:
        if a.__class__ is BatchedTensor:
            return True
        if a.__class__ in (list, tuple):
            for e in a:
                if e.__class__ is BatchedTensor:
                    return True
    for a in kwargs.values():
        if a.__class__ is BatchedTensor or (a.__class__ in (list, tuple) and any(
                e.__class__ is BatchedTensor for e in a)):
            return True
    return False


class BatchCtx:
    """What a batching rule is told: the batch size and which of its tensor arguments are batched.

    A rule ``rule(ctx, *args, **kwargs)`` receives the op's arguments with every tensor batched at this
    level replaced by its value (batch at dimension 0) and returns the op's result(s) with the batch at
    dimension 0 of every tensor, or ``NotImplemented`` to use the per-example fallback.
    """

    __slots__ = ("size", "_ids", "key")

    def __init__(self, size, ids, key):
        self.size = size
        self._ids = ids
        self.key = key      # the public name the op was called by ("view", "nn.functional.relu")

    def batched(self, t) -> bool:
        return id(t) in self._ids

    def ldim(self, t) -> int:
        """The logical (one example's) number of dimensions of ``t``."""
        return t.dim() - 1 if id(t) in self._ids else t.dim()

    def pad(self, t, rank):
        """Batched ``t`` with size-1 dimensions inserted after the batch up to logical rank ``rank``."""
        extra = rank - (t.dim() - 1)
        if extra <= 0:
            return t
        return t.reshape((t.shape[0],) + (1,) * extra + tuple(t.shape[1:]))

    def call(self, key, op, *args, **kwargs):
        """``op(*args, **kwargs)`` on physical values, which may still be batched at outer levels."""
        if has_batched(args, kwargs):
            return dispatch(key, op, args, kwargs)
        return op(*args, **kwargs)

    def expand(self, t):
        """``t`` with the batch dimension (a view for an unbatched ``t``)."""
        if id(t) in self._ids:
            return t
        return t.unsqueeze(0).expand((self.size,) + tuple(t.shape))


def _unwrap_at(a, level, ids):
    if a.__class__ is BatchedTensor and a._level is level:
        v = a._value
        ids.add(id(v))
        return v
    if a.__class__ in (list, tuple) and any(e.__class__ is BatchedTensor for e in a):
        return a.__class__(_unwrap_at(e, level, ids) for e in a)
    return a


def _wrap_out(out, level):
    if isinstance(out, Tensor):
        return make(out, level)
    if isinstance(out, tuple):
        vals = [_wrap_out(o, level) for o in out]
        return type(out)(*vals) if hasattr(out, "_fields") else tuple(vals)
    if isinstance(out, list):
        return [_wrap_out(o, level) for o in out]
    raise Unbatchable


_by_name: dict = {}   # registry declarations by every public name (aliases too), rebuilt as ops are declared


def rule_for(name):
    from ..ops._registry import REGISTRY

    if len(_by_name) < len(REGISTRY):
        for k, d in REGISTRY.items():
            _by_name[k] = d
            for a in d.aliases:
                _by_name.setdefault(a if "." not in k else k.rsplit(".", 1)[0] + "." + a, d)
    d = _by_name.get(name)
    if d is not None and d.vmap is not None:
        return d.vmap
    r = RULES.get(name)
    if r is None:   # one function under two names: fabric.relu is fabric.nn.functional.relu
        alt = name[len("nn.functional."):] if name.startswith("nn.functional.") else "nn.functional." + name
        r = RULES.get(alt)
        if r is None and (d := _by_name.get(alt)) is not None:
            r = d.vmap
    return r


# Counted per dispatch (and per vmap call that had to run func per example), for the tests.
calls = {"rule": 0, "fallback": 0, "per_example": 0}


def dispatch(name, fn, args, kwargs):
    """Run op ``fn`` (public name ``name``) on arguments that include BatchedTensors."""
    level = _top(args, kwargs)
    assert level is not None, "dispatch needs a BatchedTensor argument"
    rule = rule_for(name)
    if rule is not None:
        ids: set = set()
        pargs = [_unwrap_at(a, level, ids) for a in args]
        pkw = {k: _unwrap_at(v, level, ids) for k, v in kwargs.items()}
        out = rule(BatchCtx(level.size, ids, name), *pargs, **pkw)
        if out is not NotImplemented:
            calls["rule"] += 1
            if pargs and out is pargs[0] and args[0].__class__ is BatchedTensor:
                return args[0]   # an in-place op returns its (batched) self
            return _wrap_out(out, level)
    calls["fallback"] += 1
    return fallback(name, fn, level, args, kwargs)


def _slice(a, level, i):
    if a.__class__ is BatchedTensor and a._level is level:
        return a._value.select(0, i)
    if a.__class__ in (list, tuple) and any(e.__class__ is BatchedTensor for e in a):
        return a.__class__(_slice(e, level, i) for e in a)
    return a


def _is_inplace(name):
    short = name.rsplit(".", 1)[-1]
    return (short.endswith("_") and not short.endswith("__")) or short in _INPLACE_DUNDERS


_INPLACE_DUNDERS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
                    "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__"}


def fallback(name, fn, level, args, kwargs):
    """The per-example fallback of one op inside the batched call: slice, run per example, restack."""
    from .. import random, stack

    inplace = _is_inplace(name)
    if inplace:
        self = args[0]
        if not (self.__class__ is BatchedTensor and self._level is level):
            raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor "
                               "`other` in extra_args that has more elements than `self`. This happened due to "
                               "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try "
                               f"to use out-of-place operators instead of {name}.")
    same = level.randomness == "same"
    start = random.get_rng_state() if same else None
    results = []
    for i in range(level.size):
        if same and i:
            random.set_rng_state(start)
        results.append(fn(*[_slice(a, level, i) for a in args],
                          **{k: _slice(v, level, i) for k, v in kwargs.items()}))
    if inplace:
        return args[0]
    return _restack(results, level, stack)


def _restack(results, level, stack):
    r0 = results[0]
    if isinstance(r0, Tensor):
        return make(stack(results), level)
    if isinstance(r0, (tuple, list)) and r0 and all(isinstance(r, (tuple, list)) and len(r) == len(r0)
                                                     for r in results):
        parts = [_restack([r[k] for r in results], level, stack) for k in range(len(r0))]
        if hasattr(r0, "_fields"):
            return type(r0)(*parts)
        return type(r0)(parts)
    if all(_same_value(r, r0) for r in results[1:]):
        return r0     # a value that does not depend on the example (a shape, a dtype, None)
    raise Unbatchable  # data-dependent Python values: vmap runs func per example


def _same_value(a, b):
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


# --- Tensor methods on BatchedTensor ------------------------------------------------------------------

# Reflected operators are called as ``(self, other)``: the commutative ones share the op's rule, the others
# have rules under their own name (``__rtruediv__`` ...) or run per example.
_REFLECTED = {"__radd__": "add", "__rsub__": "rsub", "__rmul__": "mul", "__rand__": "bitwise_and",
              "__ror__": "bitwise_or", "__rxor__": "bitwise_xor"}
_DUNDER_OPS = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__matmul__": "matmul",
               "__pow__": "pow", "__neg__": "neg", "__pos__": "positive", "__abs__": "abs", "__eq__": "eq",
               "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
               "__getitem__": "getitem", "__floordiv__": "floor_divide", "__mod__": "remainder",
               "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor", "__invert__": "bitwise_not",
               "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_"}
# Tensor attributes BatchedTensor defines itself or must not batch.
_KEEP = set(vars(BatchedTensor)) | {"__new__", "__init__", "__class__", "__getattribute__", "__setattr__",
                                    "__delattr__", "__init_subclass__", "__subclasshook__", "__dict__", "__slots__",
                                    "__weakref__", "__module__", "__doc__", "__array_priority__", "_make",
                                    "__annotations__", "__dir__", "__sizeof__", "__getstate__", "__setstate__"}
# Methods that need the values of one example as Python data, or act on the autograd graph of the
# physical tensor: not batchable, the vmap runs func per example (as PyTorch raises for most of them).
_UNBATCHABLE = {"item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__", "__complex__",
                "__array__", "__dlpack__", "__dlpack_device__", "backward", "register_hook", "retain_grad",
                "register_post_accumulate_grad_hook", "data_ptr", "untyped_storage", "storage", "_shared_vc",
                "_bump_version", "_meta_", "_to_host_numpy", "_hooks_dict", "_post_accumulate_hooks",
                "_grad_accumulator_node", "grad", "retains_grad", "_version", "output_nr",
                "_repr_html_", "equal", "allclose", "is_nonzero", "nonzero", "argwhere", "masked_select", "unique",
                "unique_consecutive", "bincount", "apply_", "map_", "share_memory_", "pin_memory", "record_stream"}


def _method(name, fn):
    key = _REFLECTED.get(name) or _DUNDER_OPS.get(name, name)

    def m(self, *args, **kwargs):
        return dispatch(key, fn, (self, *args), kwargs)
    m.__name__ = name
    return m


def _property(name, prop):
    def get(self):
        return dispatch(name, prop.fget, (self,), {})
    return property(get)


_synced = [0]


def _install_methods():
    """Give BatchedTensor its version of every Tensor method (again when layers above have added some)."""
    if len(vars(Tensor)) == _synced[0]:
        return
    _synced[0] = len(vars(Tensor))
    for name, attr in list(vars(Tensor).items()):
        if name in _KEEP or (name in vars(BatchedTensor) and name not in _mine):
            continue
        _mine.add(name)
        if name in _UNBATCHABLE:
            setattr(BatchedTensor, name, property(_unbatchable) if isinstance(attr, property) else _unbatchable)
        elif isinstance(attr, property):
            setattr(BatchedTensor, name, _property(name, attr))
        elif isinstance(attr, (types.FunctionType, types.BuiltinFunctionType, functools.partial)):
            setattr(BatchedTensor, name, _method(name, attr))


_mine: set = set()


# --- the public functions while a vmap runs -----------------------------------------------------------

_NAMESPACES = (("fabric", ""), ("fabric.nn.functional", "nn.functional."), ("fabric.linalg", "linalg."),
               ("fabric.special", "special."), ("fabric.fft", "fft."))
_patched: list = []   # (module dict or class, name, original) while patched
_depth = [0]


def _wrapper(key, fn):
    def wrapped(*args, **kwargs):
        if has_batched(args, kwargs):
            return dispatch(key, fn, args, kwargs)
        return fn(*args, **kwargs)
    wrapped.__wrapped__ = fn
    wrapped.__name__ = getattr(fn, "__name__", key)
    wrapped.__doc__ = getattr(fn, "__doc__", None)
    return wrapped



def _is_op(obj):
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, functools.partial))


_plan: list = []        # (module, name, original, wrapper) for every public function of the namespaces
_plan_key: list = [None]  # the namespaces' sizes when the plan was made
_wrapper_of: dict = {}  # id(original) -> wrapper


def _make_plan():
    import importlib

    mods = [(importlib.import_module(m), prefix) for m, prefix in _NAMESPACES]
    key = tuple(len(vars(m)) for m, _ in mods)
    if key == _plan_key[0]:
        return
    _plan.clear()
    _wrapper_of.clear()
    for mod, prefix in mods:
        for name, obj in list(vars(mod).items()):
            if name.startswith("_") or not _is_op(obj):
                continue
            w = _wrapper(prefix + name, obj)
            _wrapper_of.setdefault(id(obj), w)
            _plan.append((mod, name, obj, w))
    # nn modules that keep their functional op as a class attribute (Conv2d._conv_fn = staticmethod(F.conv2d))
    _class_plan.clear()
    nn = importlib.import_module("fabric.nn")
    for cls in vars(nn).values():
        if isinstance(cls, type):
            for name, v in list(vars(cls).items()):
                if isinstance(v, staticmethod) and id(v.__func__) in _wrapper_of:
                    _class_plan.append((cls, name, v, staticmethod(_wrapper_of[id(v.__func__)])))
    _plan_key[0] = key


_class_plan: list = []  # (class, name, original staticmethod, dispatching staticmethod)


def public_ops() -> list[str]:
    """The public names of the op catalogue's functions, as dispatch knows them (``"exp"``,
    ``"nn.functional.relu"``, ``"linalg.det"``)."""
    import importlib

    out = []
    for modname, prefix in (("fabric.ops", ""),) + _NAMESPACES[1:]:
        mod = importlib.import_module(modname)
        for name, obj in vars(mod).items():
            if not name.startswith("_") and isinstance(obj, types.FunctionType) and \
                    getattr(obj, "__module__", "").startswith("fabric."):
                out.append(prefix + name)
    return out


def _globals_of(func) -> list:
    """The module globals of ``func`` and of what it wraps (``functools.wraps`` chains, partials, a Module's
    ``forward``): names bound there to fabric's functions (``from fabric import exp``) are patched too."""
    out, seen = [], set()
    todo = [func]
    while todo and len(seen) < 16:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        if isinstance(f, functools.partial):
            todo.append(f.func)
            continue
        g = getattr(f, "__globals__", None)
        if isinstance(g, dict) and not g.get("__name__", "").startswith("fabric."):
            out.append(g)
        for attr in ("__wrapped__", "forward", "__func__"):
            nxt = getattr(f, attr, None)
            if nxt is not None and callable(nxt):
                todo.append(nxt)
    return out


def patch(func=None):
    """Install the dispatching wrappers (the namespaces at the first vmap level; ``func``'s globals at
    every level)."""
    _depth[0] += 1
    if _depth[0] == 1:
        _install_methods()
        _make_plan()
        for mod, name, obj, w in _plan:
            d = vars(mod)
            if d.get(name) is obj:
                d[name] = w
                _patched.append((d, name, obj))
        for cls, name, obj, w in _class_plan:
            if vars(cls).get(name) is obj:
                setattr(cls, name, w)
                _patched.append((cls, name, obj))
    if func is not None:
        for g in _globals_of(func):
            for name, obj in list(g.items()):
                w = _wrapper_of.get(id(obj))
                if w is not None and w.__wrapped__ is obj:
                    g[name] = w
                    _patched.append((g, name, obj))


def unpatch():
    _depth[0] -= 1
    if _depth[0] > 0:
        return
    while _patched:
        target, name, obj = _patched.pop()
        if isinstance(target, dict):
            target[name] = obj
        else:
            setattr(target, name, obj)


def new_level(size, randomness) -> Level:
    lvl = Level(next(_level_count), size, randomness)
    active_levels().append(lvl)
    return lvl


def pop_level(lvl) -> None:
    active_levels().remove(lvl)


# --- autograd through batched tensors (used by the func transforms) ---------------------------------

def is_batched(t) -> bool:
    return t.__class__ is BatchedTensor


def _levels_of(t) -> list:
    out = []
    while t.__class__ is BatchedTensor:
        out.append(t._level)
        t = t._value
    return out


def add_level(t, lvl: Level):
    """``t`` batched at ``lvl`` too: as many copies (an expanded view) as the level has examples."""
    if t.__class__ is BatchedTensor and t._level.level >= lvl.level:
        if t._level is lvl:
            return t
        return make(add_level(t._value, lvl), t._level)
    return make(t.unsqueeze(0).expand((lvl.size,) + tuple(t.shape)), lvl)


def match_levels(g, template):
    """``g`` batched at exactly ``template``'s levels, so that both have the same physical layout."""
    want = _levels_of(template)
    have = _levels_of(g)
    if any(lvl not in want for lvl in have):
        raise Unbatchable   # a batched cotangent of an unbatched output: the backward pass itself must batch
    for lvl in want:
        if lvl not in have:
            g = add_level(g, lvl)
    if physical(g).shape != physical(template).shape:
        raise Unbatchable
    return g


def rewrap(phys, template):
    """The physical ``phys`` given ``template``'s levels."""
    for lvl in reversed(_levels_of(template)):
        phys = make(phys, lvl)
    return phys
