"""``fabric.jit.trace`` / ``trace_module``: record what a call does on example inputs.

Built on ``fabric.fx._concrete``: every fabric op the call performs becomes a
node of one ``fx.Graph`` (tracing goes through all submodules), and the
result is a ``ScriptModule`` / ``ScriptFunction`` like ``script``'s, so it
saves and loads the same way.

Python values read from tensors are hard-coded into the trace and reported
as :class:`TracerWarning` (PyTorch's messages); tensor sizes read in Python
(``x.shape``, ``x.size(0)``) are hard-coded too, reported once per trace.
``check_trace`` re-traces on ``check_inputs`` (a different graph raises
:class:`TracingCheckError`) and compares the traced outputs with Python's
(a mismatch warns, as in PyTorch).

Example::

    >>> import fabric
    >>> m = fabric.nn.Sequential(fabric.nn.Linear(3, 2), fabric.nn.ReLU())
    >>> t = fabric.jit.trace(m, fabric.ones(1, 3))
    >>> [n.target.__name__ for n in t.graph.nodes if n.op == "call_function"]
    ['linear', 'relu']
"""
from __future__ import annotations

import difflib
import re
import warnings

from .. import fx
from .._tensor import Tensor
from ..fx._concrete import ConcreteTracer
from ..nn.modules.module import Module
from . import _state
from ._errors import TracerWarning, TracingCheckError
from ._script import ScriptFunction, ScriptModule, _mirror

__all__ = ["trace", "trace_module"]

_CONVERSION = {"bool": "a Python boolean", "int": "a Python integer", "float": "a Python float",
               "item": "a Python number", "tolist": "a Python list", "numpy": "a NumPy array",
               "len": None}
_NONDETERMINISTIC = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
                     "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                     "bernoulli", "multinomial", "normal", "poisson", "uniform_", "normal_", "bernoulli_",
                     "exponential_", "random_", "rrelu"}


class _WarningTracer(ConcreteTracer):
    """Turns the values a trace hard-codes into TracerWarnings."""

    def __init__(self):
        super().__init__()
        self.shape_reads = 0

    def on_constant(self, kind, value, where):
        super().on_constant(kind, value, where)
        if kind == "shape":
            if not where.endswith((".ndim", ".dim()", ".ndimension()")):  # the rank alone is safe to fix
                self.shape_reads += 1
            return
        if kind == "len":
            msg = ("Using len to get tensor shape might cause the trace to be incorrect. Recommended usage would be "
                   "tensor.shape[0]. Passing a tensor of different shape might lead to errors or silently give "
                   "incorrect results.")
        else:
            what = _CONVERSION.get(kind) or "a Python value"
            msg = (f"Converting a tensor to {what} might cause the trace to be incorrect. We can't record the data "
                   "flow of Python values, so this value will be treated as a constant in the future. This means "
                   "that the trace might not generalize to other inputs!")
        warnings.warn(msg, TracerWarning, stacklevel=4)


def _as_tuple(example_inputs) -> tuple:
    if isinstance(example_inputs, tuple):
        return example_inputs
    return (example_inputs,)


def _type_name(v) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, tuple):
        return "Tuple[" + ", ".join(_type_name(e) for e in v) + "]"
    if isinstance(v, list):
        return "List[" + (_type_name(v[0]) if v else "Tensor") + "]"
    if isinstance(v, dict):
        return "Dict[str, " + (_type_name(next(iter(v.values()))) if v else "Tensor") + "]"
    return type(v).__name__


def _only_tensors(v) -> bool:
    if isinstance(v, Tensor):
        return True
    if isinstance(v, (tuple, list)):
        return all(_only_tensors(e) for e in v)
    if isinstance(v, dict):
        return all(_only_tensors(e) for e in v.values())
    return False


def _run_tracer(fn, inputs: tuple, kwarg_inputs):
    for v in (inputs, tuple((kwarg_inputs or {}).values())):
        if not _only_tensors(v):
            raise RuntimeError(f"Type '{_type_name(v)}' cannot be traced. Only Tensors and (possibly nested) Lists, "
                               "Dicts, and Tuples of Tensors can be traced")
    tracer = _WarningTracer()
    with _state.set_flag("tracing"):
        graph = tracer.trace(fn, inputs, kwarg_inputs)
    return tracer, graph


def _check_output(out, strict: bool):
    if not strict:
        return
    kinds = {list: "list", dict: "dict"}

    def walk(v):
        for t, name in kinds.items():
            if isinstance(v, t):
                warnings.warn(f"Encountering a {name} at the output of the tracer might cause the trace to be "
                              "incorrect, this is only valid if the container structure does not change based on "
                              "the module's inputs. Consider using a constant container instead (e.g. for `list`, "
                              "use a `tuple` instead. for `dict`, use a `NamedTuple` instead). If you absolutely "
                              "need this and know the side effects, pass strict=False to trace() to allow this "
                              "behavior.", TracerWarning, stacklevel=5)
                return
        if isinstance(v, tuple):
            for e in v:
                walk(e)

    walk(out)


def _graph_text(graph: fx.Graph) -> str:
    return graph.python_code(root_module="self").src


_CONSTANT_NAME = re.compile(r"_tensor_constant\d+")


def _normalized_text(graph: fx.Graph) -> str:
    """The graph's code with the tracer's constant names numbered by first use (each trace stores its
    constants under fresh names on the root)."""
    names: dict = {}
    return _CONSTANT_NAME.sub(lambda m: names.setdefault(m.group(0), f"_tensor_constant{len(names)}"),
                              _graph_text(graph))


def _constants(graph: fx.Graph, root) -> list:
    return [getattr(root, n.target) for n in graph.nodes
            if n.op == "get_attr" and _CONSTANT_NAME.fullmatch(n.target)]


def _flatten(v) -> list:
    if isinstance(v, Tensor):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for e in v for t in _flatten(e)]
    if isinstance(v, dict):
        return [t for e in v.values() for t in _flatten(e)]
    return []


def _nondeterministic_nodes(graph: fx.Graph) -> list:
    out = []
    for node in graph.nodes:
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
        if name in _NONDETERMINISTIC:
            training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
            if "dropout" in name and training is False:
                continue
            out.append(node)
    return out


def _check(fn, traced, graph, inputs_list, kwarg_inputs, tolerance, name):
    import fabric

    bad = _nondeterministic_nodes(graph)
    if bad:
        warnings.warn("Trace had nondeterministic nodes. Did you forget call .eval() on your model? Nodes:\n"
                      + "\n".join(f"\t{n.format_node()}" for n in bad)
                      + "\nThis may cause errors in trace checking. To disable trace checking, pass "
                      "check_trace=False to torch.jit.trace()", TracerWarning, stacklevel=4)
    reference = _normalized_text(graph)
    ref_constants = _constants(graph, vars(traced).get("_gm", traced))
    for inputs in inputs_list:
        inputs = _as_tuple(inputs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TracerWarning)
            check_tracer, check_graph = _run_tracer(fn, inputs, kwarg_inputs)
        text = _normalized_text(check_graph)
        if text != reference:
            diff = "\n".join(difflib.ndiff(reference.strip().splitlines(), text.strip().splitlines()))
            raise TracingCheckError("\tGraph diff:\n" + "\n".join("\t\t" + line for line in diff.splitlines()),
                                    None)
        for i, (a, c) in enumerate(zip(ref_constants, _constants(check_graph, check_tracer.root))):
            if a.shape != c.shape or a.dtype != c.dtype or not bool((a == c).all()):
                raise TracingCheckError(None, f"\tTensor constant {i} of the trace differs between invocations "
                                        f"(shape {tuple(a.shape)} vs {tuple(c.shape)})")
        state = fabric.get_rng_state()
        got = traced(*inputs, **(kwarg_inputs or {}))
        fabric.set_rng_state(state)
        want = fn(*inputs, **(kwarg_inputs or {}))
        for i, (g, w) in enumerate(zip(_flatten(got), _flatten(want))):
            try:
                fabric.testing.assert_close(g, w, rtol=tolerance, atol=tolerance, equal_nan=True)
            except AssertionError as err:
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the corresponding output "
                              f"of the Python function. Detailed error:\n{err}", TracerWarning, stacklevel=4)


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True, check_inputs=None,
          check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs: bool = True):
    """Trace a function or a module's ``forward`` on ``example_inputs`` (a tensor or a tuple).

    Returns a ``ScriptModule`` for a module (same parameters and ``state_dict`` keys) and a
    ``ScriptFunction`` for a function.

    Example::

        >>> import fabric
        >>> t = fabric.jit.trace(lambda x: x * 2 + 1, fabric.ones(2))
        >>> t(fabric.zeros(2))
        tensor([1., 1.])
    """
    if isinstance(func, (ScriptModule, ScriptFunction)):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. Returning the object "
                      "as is.", stacklevel=2)
        return func
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided")
    if isinstance(func, Module):
        return trace_module(func, {"forward": example_inputs if example_inputs is not None else ()},
                            None, check_trace, [(c,) if not isinstance(c, tuple) else c for c in check_inputs]
                            if check_inputs else None, check_tolerance, strict,
                            example_inputs_is_kwarg=example_kwarg_inputs is not None,
                            _kwarg_inputs=example_kwarg_inputs)
    if not callable(func):
        raise RuntimeError(f"expected a function or a Module to trace, got {type(func).__name__}")
    inputs = _as_tuple(example_inputs) if example_inputs is not None else ()
    tracer, graph = _run_tracer(func, inputs, example_kwarg_inputs)
    _check_output(tracer.trace_result, strict)
    name = getattr(func, "__name__", "traced")
    if name == "<lambda>":
        name = "lambda"
    gm = fx.GraphModule(tracer.root, graph, class_name=name)
    _warn_shapes(tracer)
    traced = ScriptFunction(gm, _trace_signature(graph, name), original=None, name=name)
    if check_trace:
        _check(func, traced, graph, check_inputs or [inputs], example_kwarg_inputs, check_tolerance, name)
    return traced


def _warn_shapes(tracer):
    if tracer.shape_reads:
        warnings.warn(f"The trace hard-codes {tracer.shape_reads} tensor size(s) read in Python (x.shape, "
                      "x.size(), x.dim()); it is only valid for inputs of the example's shapes. Use fabric.jit.script "
                      "for code whose ops depend on input sizes.", TracerWarning, stacklevel=4)


def _trace_signature(graph, name):
    import inspect

    from ._script import _Signature
    from .frontend import AnyType

    items = [(n.target, AnyType, inspect.Parameter.empty) for n in graph.nodes if n.op == "placeholder"]
    return _Signature(name, items)


def trace_module(mod, inputs, optimize=None, check_trace: bool = True, check_inputs=None,
                 check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg: bool = False,
                 _store_inputs: bool = True, _kwarg_inputs=None):
    """Trace the methods of ``mod`` named by ``inputs`` (``{"forward": example_inputs, ...}``).

    ``forward`` (if present) becomes the ScriptModule's graph; other methods are callable
    attributes with their own ``.graph``.

    Example::

        >>> import fabric
        >>> lin = fabric.nn.Linear(2, 2)
        >>> t = fabric.jit.trace_module(lin, {"forward": fabric.ones(1, 2)})
        >>> list(t.state_dict())
        ['weight', 'bias']
    """
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    from ._script import _ScriptMethod

    results = {}
    for method_name, example in inputs.items():
        fn = getattr(mod, method_name)
        if example_inputs_is_kwarg:
            args, kwargs = (), (_kwarg_inputs if _kwarg_inputs is not None else example)
        else:
            args, kwargs = _as_tuple(example), None
        if method_name == "forward":
            tracer, graph = _run_tracer(mod, args, kwargs)
        else:
            tracer, graph = _run_tracer(_MethodRoot(mod, method_name), args, kwargs)
        _check_output(tracer.trace_result, strict)
        _warn_shapes(tracer)
        results[method_name] = (fn, graph, args, kwargs, tracer.root)
    fwd = results.get("forward")
    graph = fwd[1] if fwd is not None else _identity_graph()
    tree = _mirror(mod, {})
    for _, g, _, _, source in results.values():
        _attach_constants(tree, g, source)
    sm = ScriptModule(tree, graph, type(mod).__name__,
                      None if fwd is None else _trace_signature(graph, "forward"))
    methods = {}
    for method_name, (_fn, g, _args, _kwargs, _) in results.items():
        if method_name == "forward":
            continue
        gm = fx.GraphModule(tree, g, class_name=f"{type(mod).__name__}_{method_name}")
        methods[method_name] = _ScriptMethod(sm, gm, _trace_signature(g, method_name), method_name)
    object.__setattr__(sm, "_methods", methods)
    if check_trace:
        for method_name, (_fn, g, args, kwargs, _) in results.items():
            target = sm if method_name == "forward" else methods[method_name]
            root = mod if method_name == "forward" else _MethodRoot(mod, method_name)
            checks = check_inputs if check_inputs else [args]
            _check(root, target, g, checks, kwargs, check_tolerance, method_name)
    return sm


def _attach_constants(tree: Module, graph, source: Module) -> None:
    """Tensor constants the tracer stored on its root (``_tensor_constant0`` ...) join the module tree as
    non-persistent buffers (they are not part of the state_dict)."""
    for node in graph.nodes:
        if node.op != "get_attr" or "." in node.target or hasattr(tree, node.target):
            continue
        value = getattr(source, node.target, None)
        if isinstance(value, Tensor):
            tree.register_buffer(node.target, value, persistent=False)


class _MethodRoot(Module):
    """Makes ``mod.<method>`` traceable as a module's forward (same parameters, same paths)."""

    def __init__(self, mod, name):
        super().__init__()
        object.__setattr__(self, "_target", mod)
        object.__setattr__(self, "_method", name)
        self._modules.update(mod._modules)
        self._parameters.update(mod._parameters)
        self._buffers.update(mod._buffers)

    def forward(self, *args, **kwargs):
        return getattr(self._target, self._method)(*args, **kwargs)


def _identity_graph():
    g = fx.Graph()
    g.output(None)
    return g
