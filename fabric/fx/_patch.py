"""Catching calls to fabric's public functions while tracing (fx's *autowrap*).

fabric has no ``__torch_function__``: a call like ``fabric.relu(proxy)`` would
reach the op with a non-tensor.  While a tracer runs, the public callables of
fabric's namespaces (and their bindings in the globals of the code being
traced) are replaced by wrappers that hand the call to the tracer when an
argument is a proxy and call the original otherwise.  Nothing is patched
outside tracing, so the op dispatch path carries no check.
"""
from __future__ import annotations

import functools
import math
import types

from .proxy import Proxy

_NAMESPACES = ("fabric", "fabric.nn.functional", "fabric.linalg", "fabric.special", "fabric.fft", "fabric.ops")
_public: dict[int, str] | None = None
_wrappable: dict[int, object] | None = None


def _scan():
    """id(fn) -> its public dotted name, for every wrappable callable of fabric's namespaces."""
    global _public, _wrappable
    if _public is not None:
        return
    import importlib
    public: dict[int, str] = {}
    wrappable: dict[int, object] = {}
    for modname in _NAMESPACES:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        for name, obj in list(vars(mod).items()):
            if name.startswith("_") or not _is_op(obj):
                continue
            public.setdefault(id(obj), f"{modname}.{name}")
            wrappable[id(obj)] = obj
    for name, obj in vars(math).items():
        if not name.startswith("_") and isinstance(obj, types.BuiltinFunctionType):
            public.setdefault(id(obj), f"math.{name}")
            wrappable[id(obj)] = obj
    _public, _wrappable = public, wrappable


def _is_op(obj) -> bool:
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, functools.partial)) and \
        not getattr(obj, "_fx_no_wrap", False)


def _is_leaf_function(obj) -> bool:
    """A function marked ``_fx_leaf_function = True`` is recorded as one node wherever traced code calls it
    (the ONNX operators of a model built by ``fabric.onnx.load_model``)."""
    return isinstance(obj, types.FunctionType) and bool(obj.__dict__.get("_fx_leaf_function"))


def public_name(fn) -> str | None:
    _scan()
    return _public.get(id(fn))


def find_proxy(args, kwargs):
    """The first Proxy among ``args``/``kwargs`` (searching one level into lists and tuples)."""
    for a in args:
        if isinstance(a, Proxy):
            return a
        if type(a) in (list, tuple):
            for e in a:
                if isinstance(e, Proxy):
                    return e
    for a in kwargs.values():
        if isinstance(a, Proxy):
            return a
        if type(a) in (list, tuple):
            for e in a:
                if isinstance(e, Proxy):
                    return e
    return None


def make_wrapper(orig):
    def wrapped(*args, **kwargs):
        proxy = find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", orig, args, kwargs)
        return orig(*args, **kwargs)
    wrapped.__wrapped__ = orig
    wrapped.__name__ = getattr(orig, "__name__", "wrapped")
    wrapped._fx_patch_wrapper = True
    return wrapped


class _MathView:
    """``math`` as traced code sees it: its functions wrapped (fx's autowrap of the math module)."""

    def __init__(self, patcher):
        self._patcher = patcher

    def __getattr__(self, name):
        value = getattr(math, name)
        if id(value) in _wrappable and _wrappable[id(value)] is value:
            return self._patcher.wrapper_for(value)
        return value


class Patcher:
    """Temporarily replaces attributes / dict entries; restores them all on exit (in reverse order)."""

    def __init__(self):
        self._undo: list = []
        self._wrappers: dict[int, object] = {}
        self._patched_dicts: set[int] = set()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for kind, obj, name, value in reversed(self._undo):
            if kind == "attr":
                setattr(obj, name, value)
            elif value is _MISSING:
                obj.pop(name, None)
            else:
                obj[name] = value
        self._undo.clear()

    def wrapper_for(self, fn):
        w = self._wrappers.get(id(fn))
        if w is None:
            w = self._wrappers[id(fn)] = make_wrapper(fn)
        return w

    def patch_attr(self, obj, name, value) -> None:
        self._undo.append(("attr", obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def patch_dict(self, d: dict, name, value) -> None:
        self._undo.append(("dict", d, name, d.get(name, _MISSING)))
        d[name] = value

    def patch_namespaces(self) -> None:
        """Wrap every public callable of fabric's namespaces (and ``math``)."""
        import importlib
        _scan()
        for modname in _NAMESPACES:
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
            self.patch_globals(vars(mod))

    def patch_globals(self, g: dict) -> None:
        """Wrap the bindings of ``g`` that name a wrappable function (once per dict)."""
        if id(g) in self._patched_dicts:
            return
        self._patched_dicts.add(id(g))
        _scan()
        for name, obj in list(g.items()):
            if name.startswith("__"):
                continue
            if obj is math:
                # ``math.sqrt(proxy)`` in traced code: its ``math`` reads wrappers, while the math module itself
                # stays untouched for the rest of the process (code compiled meanwhile, e.g. numba, reads it)
                self.patch_dict(g, name, _MathView(self))
            elif (id(obj) in _wrappable and _wrappable[id(obj)] is obj) or _is_leaf_function(obj):
                self.patch_dict(g, name, self.wrapper_for(obj))

    def patch_class(self, cls) -> None:
        """Wrap ops a class holds as ``staticmethod`` attributes (``Conv2d._conv_fn = staticmethod(F.conv2d)``),
        which globals patching cannot reach."""
        _scan()
        for klass in cls.__mro__:
            if id(klass) in self._patched_dicts or not klass.__module__.startswith("fabric."):
                continue
            self._patched_dicts.add(id(klass))
            for name, raw in list(vars(klass).items()):
                if isinstance(raw, staticmethod) and id(raw.__func__) in _wrappable:
                    self._undo.append(("attr", klass, name, raw))
                    setattr(klass, name, staticmethod(self.wrapper_for(raw.__func__)))

    def patch_wrapped(self, entries) -> None:
        """``fx.wrap`` registrations: (globals dict, name)."""
        for g, name in entries:
            obj = g.get(name)
            if obj is None:
                import builtins
                obj = getattr(builtins, name, None)
                if obj is None:
                    continue
            if getattr(obj, "_fx_patch_wrapper", False):
                continue
            self.patch_dict(g, name, self.wrapper_for(obj))

    def patch_module_functions(self, mod) -> None:
        """Wrap every public function of ``mod`` (``Tracer(autowrap_modules=(mod,))``)."""
        for name, obj in list(vars(mod).items()):
            if not name.startswith("_") and _is_op(obj):
                self.patch_dict(vars(mod), name, self.wrapper_for(obj))


_MISSING = object()
