"""``fabric._dynamo``: the machinery of ``fabric.compile`` (``torch.compile``'s API) on the
``fabric.fx`` graph IR, under PyTorch's module name so that ``torch._dynamo.config``,
``torch._dynamo.reset()`` and ``torch._dynamo.exc.Unsupported`` resolve under the alias.

``fabric.compile(model)`` returns an :class:`OptimizedModule` (the original is
``._orig_mod``; ``state_dict`` keys get the ``_orig_mod.`` prefix, as in
PyTorch); ``fabric.compile(fn)`` or ``@fabric.compile(...)`` wraps a function.
The first call with a new set of guards (input shapes, dtypes, devices,
requires_grad, non-tensor argument values, the modules' training flags, grad
mode) captures the call as an ``fx.Graph`` (see ``_capture``), runs the passes
(dead code, common subexpressions) and keeps the generated ``GraphModule``;
later calls that pass the same guards run it.  Past ``config.recompile_limit``
graphs the function runs eagerly with a warning.  Code that cannot be captured
(a graph break) runs eagerly; ``fullgraph=True`` raises
``fabric._dynamo.exc.Unsupported`` instead.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    >>> cm = fabric.compile(m)
    >>> x = fabric.ones(4, 3)
    >>> bool((cm(x) == m(x)).all()), list(cm.state_dict())[0]
    (True, '_orig_mod.0.weight')
"""
from __future__ import annotations

import functools
import warnings

from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..nn.modules.module import Module, _has_global_hooks
from . import config, exc
from ._capture import NOT_RUN, _state, capture, current_tracer, is_compiling
from .executor import build
from .fusion import fuse_pointwise
from .passes import eliminate_common_subexpressions, eliminate_dead_code

__all__ = ["compile", "OptimizedModule", "list_backends", "reset", "disable", "is_compiling", "config", "exc"]

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = ("inductor", "eager", "aot_eager")
_all_compiled: list = []   # weak enough: reset() clears caches of every compiled function


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The names accepted as ``backend=`` (``"inductor"`` runs the passes; ``"eager"`` / ``"aot_eager"`` replay
    the captured graph as is)."""
    return sorted(b for b in _BACKENDS if not (exclude_tags and "debug" in exclude_tags and b != "inductor"))


class _Uncacheable(Exception):
    pass


def _value_key(a):
    if isinstance(a, Tensor):
        return (Tensor, tuple(a.shape), a.dtype, a.device, a.requires_grad)
    if a is None or type(a) in (int, float, bool, str):
        return (type(a), a)
    if type(a) in (tuple, list):
        return (type(a),) + tuple(_value_key(e) for e in a)
    raise _Uncacheable(type(a).__name__)


def _attrs_of(gm) -> dict:
    out = {}
    for node in gm.graph.nodes:
        if node.op in ("get_attr", "call_module"):
            value = gm
            for atom in node.target.split("."):
                value = getattr(value, atom)
            out[node.target] = value
    return out


def _inductor(gm, example_inputs):
    """The default backend: passes over the captured graph (dead code, common subexpressions, pointwise
    fusion), then the lean executor."""
    g = gm.graph
    eliminate_common_subexpressions(g)
    eliminate_dead_code(g)
    if config.fuse_pointwise:
        fuse_pointwise(g)
    return build(g, _attrs_of(gm), "forward")


def _eager(gm, example_inputs):
    return gm


class _Entry:
    __slots__ = ("key", "fn", "reason", "bindings")

    def __init__(self, key, fn, reason, bindings=()):
        self.key, self.fn, self.reason, self.bindings = key, fn, reason, bindings

    def valid(self) -> bool:
        """The parameters and buffers the graph holds are still the module's."""
        return all(d.get(name) is value for d, name, value in self.bindings)


class _CompiledFunction:
    """The compiled callable: guard cache → captured graph, or eager."""

    def __init__(self, fn, module, *, fullgraph, dynamic, backend, mode, options):
        self.fn = fn                  # the eager callable (a bound forward, or the function)
        self.module = module          # the module whose training flags are guarded (or None)
        self.fullgraph, self.dynamic, self.backend, self.mode, self.options = \
            fullgraph, dynamic, backend, mode, options
        self.cache: dict = {}
        self._mods = None             # the modules whose training flags are guarded (listed on first call)
        self.over_limit = False
        self.disabled = False
        _all_compiled.append(self)

    def reset(self):
        self.cache.clear()
        self._mods = None
        self.over_limit = False

    def _key(self, args, kwargs):
        mods = self._mods
        if mods is None:
            mods = self._mods = list(self.module.modules()) if self.module is not None else []
        train = tuple(m.training for m in mods)
        return (tuple(_value_key(a) for a in args), tuple((k, _value_key(v)) for k, v in kwargs.items()),
                train, is_grad_enabled())

    def _hooked(self) -> bool:
        """Module hooks run eagerly: a replayed graph does not call ``Module.__call__``."""
        if _has_global_hooks():
            return True
        for m in self._mods or ():
            if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks:
                return True
        return False

    def __call__(self, *args, **kwargs):
        if self.disabled or _state["disabled"] or _state["depth"]:
            return self.fn(*args, **kwargs)
        try:
            key = self._key(args, kwargs)
        except _Uncacheable as e:
            if self.fullgraph:
                raise exc.Unsupported(f"fabric.compile cannot guard on an argument of type {e}") from None
            return self.fn(*args, **kwargs)
        if self._mods and self._hooked():
            return self.fn(*args, **kwargs)
        entry = self.cache.get(key)
        if entry is not None and not entry.valid():
            del self.cache[key]             # a parameter or buffer was replaced: capture again
            entry = None
        if entry is not None:
            if entry.fn is None:
                return self.fn(*args, **kwargs)
            return entry.fn(*args, **kwargs)
        if self.over_limit:
            return self.fn(*args, **kwargs)
        limit = min(config.recompile_limit, config.cache_size_limit)
        if len(self.cache) >= limit:
            self.over_limit = True
            name = getattr(self.fn, "__qualname__", getattr(self.fn, "__name__", "fn"))
            warnings.warn(f"torch._dynamo hit config.recompile_limit ({limit})\n   function: {name!r}\n"
                          f"   last reason: guards failed on the inputs, the training flags or the grad mode\n"
                          f"To log all recompilation reasons, use TORCH_LOGS=\"recompiles\".", stacklevel=2)
            return self.fn(*args, **kwargs)
        return self._compile_and_run(key, args, kwargs)

    def _compile_and_run(self, key, args, kwargs):
        root = self.module if self.module is not None else self.fn
        gm, result, breaks, bindings = capture(root, args, kwargs)
        if result is NOT_RUN:
            if self.fullgraph:
                raise exc.Unsupported("fabric.compile(fullgraph=True): " + breaks[0])
            self.cache[key] = _Entry(key, None, breaks)
            return self.fn(*args, **kwargs)
        if breaks:
            if self.fullgraph:
                raise exc.Unsupported("fabric.compile(fullgraph=True): graph break: " + breaks[0])
            self.cache[key] = _Entry(key, None, breaks)
            return result
        backend = self.backend
        if isinstance(backend, str):
            backend = _inductor if backend == "inductor" else _eager
        example = [a for a in args if isinstance(a, Tensor)]
        try:
            compiled = backend(gm, example)
        except Exception as e:
            raise exc.BackendCompilerFailed(backend, e) from e
        self.cache[key] = _Entry(key, compiled, None, bindings)
        return result


class OptimizedModule(Module):
    """What ``fabric.compile(module)`` returns: calls go through the compiled forward; everything else (attributes,
    ``parameters()``, ``train()``) reaches ``_orig_mod``; ``state_dict`` keys start with ``_orig_mod.``."""

    _fabric_compiled = True

    def __init__(self, mod: Module, compiled: _CompiledFunction):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)
        self.training = mod.training

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        if self._forward_hooks or self._forward_pre_hooks:
            return super().__call__(*args, **kwargs)
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def train(self, mode: bool = True):
        self._orig_mod.train(mode)
        self.training = mode
        return self

    def __repr__(self) -> str:
        return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)".replace("\n)\n)", "\n  )\n)")

    def _reset(self):
        self._compiled.reset()


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None, backend="inductor",
            mode: str | None = None, options: dict | None = None, disable: bool = False):
    """``torch.compile``: capture ``model`` (an ``nn.Module`` or a function) into ``fx`` graphs and run those.

    Used as ``fabric.compile(m)``, ``fabric.compile(fn)``, ``@fabric.compile`` or
    ``@fabric.compile(fullgraph=True)``.  ``dynamic`` is accepted; shapes are
    always specialised (one graph per input shape, up to ``config.recompile_limit``).
    ``mode`` and ``options`` are validated and recorded; every mode runs the same passes.
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise exc.InvalidBackend(backend)
    if not isinstance(backend, str) and not callable(backend):
        raise exc.InvalidBackend(backend)
    if model is None:
        def decorator(m):
            return compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return decorator
    if not callable(model):
        raise RuntimeError("Invalid model type")   # torch asserts callable(model)
    if disable:
        return model
    kw = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options)
    if isinstance(model, Module):
        return OptimizedModule(model, _CompiledFunction(model, model, **kw))
    cf = _CompiledFunction(model, None, **kw)

    @functools.wraps(model)
    def compiled_function(*args, **kwargs):
        return cf(*args, **kwargs)
    compiled_function._torchdynamo_orig_callable = model
    compiled_function._fabric_compiled = cf
    return compiled_function


def reset() -> None:
    """Forget every captured graph (``torch.compiler.reset``)."""
    for cf in _all_compiled:
        cf.reset()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """``torch.compiler.disable``: ``fn`` always runs eagerly; called inside a compiled call it is a graph break."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if isinstance(fn, OptimizedModule):
        fn._compiled.disabled = True
        return fn
    cf = getattr(fn, "_fabric_compiled", None)
    if isinstance(cf, _CompiledFunction):
        cf.disabled = True
        return fn

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        from ..fx._concrete import _unwrap
        tracer = current_tracer()
        if tracer is not None:
            tracer.graph_break(f"{getattr(fn, '__name__', fn)} is marked compiler.disable")
            args, kwargs = _unwrap(args), _unwrap(kwargs)
        _state["disabled"] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _state["disabled"] -= 1
    disabled._torchdynamo_disable = True
    return disabled
