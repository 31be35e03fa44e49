"""Teaching mode: ``fabric.explain`` shows how an op is built, and
``fabric.trace_ops`` shows each op as it runs.

``explain(op)`` takes a public function (``fabric.mul``,
``fabric.nn.functional.softmax``), a Tensor method name or op name
(``"matmul"``), a ``Function`` class, a graph node or a layer, and shows
the Function's ``forward`` (on arrays) and ``backward`` (with Tensor ops),
and which backend routine runs on each device when the op uses a fused
kernel.  ``explain(layer_or_fn, *example_inputs)`` runs it on the inputs
and shows every Function it dispatched.  ``explain(tensor)`` walks the
tensor's ``grad_fn`` graph with the input shapes its nodes recorded.

``trace_ops()`` is a context manager that prints every op of the block as it
runs — forward ops, backward nodes and the ops their formulas run — with
input shapes and dtypes, output shape and time: the eager analogue of
reading a graph.  It uses the same dispatch hook as the profiler.

Example::

    >>> import fabric
    >>> x = fabric.ones(2, 3, requires_grad=True)
    >>> with fabric.trace_ops(timing=False):
    ...     y = (x * 2.0).sum()
    aten::mul  (2, 3) float32, 2.0 -> (2, 3) float32
    aten::sum  (2, 3) float32, False, None -> () float32
    >>> print(fabric.explain(y))
    tensor(12., grad_fn=<SumBackward0>)  shape=() float32
    └─ SumBackward0  inputs: (2, 3) float32
       └─ MulBackward0  inputs: (2, 3) float32
          └─ AccumulateGrad  leaf (2, 3) float32 requires_grad
"""
from __future__ import annotations

import inspect
import re
import sys
import textwrap
import threading
import time

from .autograd import observe

__all__ = ["explain", "trace_ops", "Explanation"]


class Explanation:
    """Text that shows itself: ``print(e)`` or just ``e`` at a prompt."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(self.text)}</pre>"


# --- explain ------------------------------------------------------------------------------------

def _function_classes(fn, depth: int = 3, all_levels: bool = False) -> list:
    """Function subclasses a public op function uses (``mul`` -> ``Mul``):
    those it names, else those of the fabric functions it calls (a few
    levels); ``all_levels`` collects every level's (a layer's forward)."""
    from .autograd.function import Function

    level, seen, found = [fn], set(), []
    for _ in range(depth):
        calls = []
        for f in level:
            code = getattr(f, "__code__", None)
            if code is None or id(code) in seen:
                continue
            seen.add(id(code))
            glb = getattr(f, "__globals__", {})
            codes = [code]
            while codes:
                c = codes.pop()
                codes.extend(k for k in c.co_consts if hasattr(k, "co_names"))
                modules = [glb[n] for n in c.co_names if inspect.ismodule(glb.get(n))]
                for name in c.co_names:
                    obj = glb.get(name)
                    if obj is None:  # an attribute: ``_ops.relu`` names ops.relu
                        obj = next((getattr(m, name) for m in modules if hasattr(m, name)), None)
                    if isinstance(obj, type) and issubclass(obj, Function) and obj is not Function:
                        if obj not in found:
                            found.append(obj)
                    elif inspect.isfunction(obj) and obj.__module__.startswith("fabric."):
                        calls.append(obj)
        if found and not all_levels:
            return found
        level = calls
    return found


class _Collect(observe.Observer):
    def __init__(self):
        self.depth, self.classes = 0, []

    def begin(self, kind, what, args):
        if kind == "op" and self.depth == 0 and what not in self.classes:
            self.classes.append(what)
        self.depth += 1

    def end(self, token, result):
        self.depth -= 1


def _dispatched_classes(fn, example_inputs=None) -> list:
    """The Functions ``fn`` dispatches when called on ``example_inputs`` or,
    without them, on small float tensors (one, then two arguments); [] when
    such a call fails."""
    import warnings

    from . import _random_ops

    if example_inputs:
        seen = _Collect()
        with observe.observing(seen):
            fn(*example_inputs)
        return seen.classes
    for n in (1, 2):
        args = [_random_ops.randn(3, 3, requires_grad=True) for _ in range(n)]
        seen = _Collect()
        try:
            with warnings.catch_warnings(), observe.observing(seen):
                warnings.simplefilter("ignore")
                fn(*args)
        except Exception:
            continue
        if seen.classes:
            return seen.classes
    return []


def _resolve(obj, example_inputs=()):
    """What ``obj`` names: ("tensor", t), ("node", n), ("function", cls list, title)."""
    from ._tensor import Tensor
    from .autograd.function import Function, Node

    if isinstance(obj, Tensor):
        return "tensor", obj, None
    if isinstance(obj, Node):
        if obj._fn is None:
            return "node", obj, None
        return "function", [obj._fn], f"{type(obj).__name__} (the node of {obj._fn.__name__})"
    if isinstance(obj, type) and issubclass(obj, Function):
        return "function", [obj], obj.__name__
    if isinstance(obj, str):
        import fabric

        target = getattr(fabric, obj, None) or getattr(Tensor, obj, None) or getattr(fabric.nn.functional, obj, None)
        if target is None:
            raise ValueError(f"fabric has no op named {obj!r}")
        kind, what, title = _resolve(target)
        return kind, what, title or obj
    from .nn import Module

    if example_inputs and callable(obj):  # run it: exactly the Functions this call dispatches
        name = type(obj).__name__ if isinstance(obj, Module) else getattr(obj, "__qualname__", repr(obj))
        return "function", _dispatched_classes(obj, example_inputs), f"{name} on the example inputs"
    if isinstance(obj, Module):  # a layer: the ops its forward (and the methods it calls) dispatch
        cls = type(obj)
        methods = [cls.forward] + [getattr(cls, n) for n in cls.forward.__code__.co_names
                                   if inspect.isfunction(getattr(cls, n, None))]
        classes = []
        for m in methods:
            classes += [c for c in _function_classes(m, depth=4, all_levels=True) if c not in classes]
        return "function", classes, f"{cls.__module__}.{cls.__name__}.forward"
    if callable(obj):
        classes = _function_classes(obj, depth=1) or _dispatched_classes(obj) or _function_classes(obj)
        name = getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))
        return "function", classes, f"{getattr(obj, '__module__', '')}.{name}".lstrip(".")
    raise TypeError(f"explain() takes a Tensor, an op (function, name or Function class) or a graph node, "
                    f"not {type(obj).__name__}")


def _source(fn) -> str:
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        return "    (source not available)\n"
    return textwrap.indent(textwrap.dedent(src), "    ")


def _where(obj) -> str:
    try:
        path = inspect.getsourcefile(obj)
        line = inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return "?"
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"{os.path.relpath(path, root)}:{line}"


_BACKEND_CALL = re.compile(r"backend_of\([^)]*\)\.(\w+)\(|\bbe\.(\w+)\(")
_KERNEL_NAME = re.compile(r"[\"'](\w+_(?:fwd|bwd))[\"']")


def _kernels(cls) -> list:
    """For each backend routine ``cls`` calls: what runs on CPU and on CUDA."""
    from .backends.base import Backend
    from .backends.cupy_backend import CupyBackend

    names = []
    for method in (cls.forward, cls.backward):
        try:
            src = inspect.getsource(method)
        except (OSError, TypeError):
            continue
        for m in _BACKEND_CALL.finditer(src):
            name = m.group(1) or m.group(2)
            if hasattr(Backend, name) and name not in names:
                names.append(name)
    lines = []
    for name in names:
        cpu = getattr(Backend, name)
        lines.append(f"  {name}: CPU runs {Backend.__name__}.{name} ({_where(cpu)}), the NumPy reference")
        owner = next(k for k in CupyBackend.__mro__ if name in k.__dict__)
        gpu = None if issubclass(Backend, owner) else owner.__dict__[name]
        if gpu is None:
            lines.append(f"  {name}: CUDA runs the same reference on CuPy arrays")
        else:
            kernels = sorted(set(_KERNEL_NAME.findall(inspect.getsource(gpu))))
            kernel_text = f"RawKernel {', '.join(kernels)}" if kernels else "CuPy code"
            lines.append(f"  {name}: CUDA runs CupyBackend.{name} ({_where(gpu)}): {kernel_text}, "
                         "falling back to the reference where the kernel does not apply")
    return lines


def _explain_function(classes, title) -> str:
    out = [f"{title}"]
    if not classes:
        out.append("  composed of other ops (no Function of its own): it records their nodes")
        return "\n".join(out)
    for cls in classes:
        node = cls._Node.__name__
        kind = ("built-in op: forward receives arrays" if cls._array_forward
                else "user Function: forward receives Tensors")
        out.append("")
        # ops made from a table row (ops.pointwise._unary) keep f(xp, x) and df(gy, x, y)
        row = getattr(cls, "f", None) if "f" in cls.__dict__ else None
        where = _where(cls) if row is None or _where(cls) != "?" else _where(row)
        out.append(f"Function {cls.__module__}.{cls.__name__}  ({kind}; records {node}; {where})")
        if row is not None:
            out.append("defined by its table row (forward f(xp, x), backward df(gy, x, y)):")
            out.append(_source(row).rstrip())
        flags = [f for f, on in (("view", cls._is_view), ("in-place", cls._is_inplace),
                                 ("no gradient", not cls._differentiable_outputs)) if on]
        if flags:
            out.append("  flags: " + ", ".join(flags))
        out.append("forward:")
        out.append(_source(cls.forward).rstrip())
        out.append("backward (Tensor ops, so it is differentiable itself):")
        out.append(_source(cls.backward).rstrip())
        ks = _kernels(cls)
        if ks:
            out.append("kernels:")
            out.extend(ks)
    return "\n".join(out)


def _describe_array(shape, dtype) -> str:
    return f"({', '.join(str(int(s)) for s in shape)}{',' if len(shape) == 1 else ''}) {dtype}"


def _explain_tensor(t) -> str:
    from .autograd.function import AccumulateGrad

    d = t._data
    lines = [f"{repr(t)}  shape={_describe_array(d.shape, d.dtype)}".replace("\n", " ")]
    if t.grad_fn is None:
        lines.append("└─ no grad_fn: " + ("a leaf that requires grad" if t.requires_grad else
                                         "not part of a graph (created by the user or under no_grad)"))
        return "\n".join(lines)
    seen = {}
    # iterative depth-first walk; a node reached again is named, not expanded
    stack = [(t.grad_fn, "", True)]
    while stack:
        node, indent, last = stack.pop()
        branch = "└─ " if last else "├─ "
        if id(node) in seen:
            lines.append(f"{indent}{branch}{type(node).__name__} (shown above)")
            continue
        seen[id(node)] = True
        text = type(node).__name__
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            text += ("  leaf " + _describe_array(leaf._data.shape, leaf._data.dtype) + " requires_grad"
                     if leaf is not None else "  (leaf gone)")
        else:
            meta = [m for m in (node._input_meta or ()) if m is not None]
            if meta:
                text += "  inputs: " + ", ".join(_describe_array(s, dt) for s, dt in meta)
        lines.append(indent + branch + text)
        children = [n for n, _ in node.next_functions if n is not None]
        child_indent = indent + ("   " if last else "│  ")
        for i, child in reversed(list(enumerate(children))):
            stack.append((child, child_indent, i == len(children) - 1))
    return "\n".join(lines)


def explain(obj, *example_inputs) -> Explanation:
    """How ``obj`` is computed (see the module docstring).  With example
    inputs, a callable (an op, a layer, a model) is run on them and every
    Function it dispatches is shown; without, a layer's forward is read."""
    kind, what, title = _resolve(obj, example_inputs)
    if kind == "tensor":
        return Explanation(_explain_tensor(what))
    if kind == "node":
        return Explanation(f"{type(what).__name__}: a graph node without a Function (engine bookkeeping)")
    return Explanation(_explain_function(what, title))


# --- trace_ops ----------------------------------------------------------------------------------

def _arg_text(a) -> str:
    from ._tensor import Tensor

    if isinstance(a, Tensor):
        return _describe_array(a._data.shape, a._data.dtype)
    if isinstance(a, (list, tuple)) and a and all(isinstance(v, Tensor) for v in a):
        return "[" + ", ".join(_arg_text(v) for v in a) + "]"
    text = repr(a)
    return text if len(text) <= 30 else text[:27] + "..."


def _result_text(r) -> str:
    from ._tensor import Tensor

    if isinstance(r, Tensor):
        return _arg_text(r)
    if isinstance(r, (tuple, list)):
        return "(" + ", ".join(_arg_text(v) if v is not None else "None" for v in r) + ")"
    return "" if r is None else _arg_text(r)


class _Record:
    __slots__ = ("name", "depth", "args", "result", "t0", "seconds")


class trace_ops(observe.Observer):
    """Print every op of the block as it runs (see the module docstring).

    ``file``: where to print (default ``sys.stdout``); ``timing``: show each
    op's time; ``backward``: include backward nodes and their ops.  The
    records stay in ``.records`` (name, depth, args, result text, seconds).
    """

    def __init__(self, file=None, timing: bool = True, backward: bool = True):
        self.file = file
        self.timing = timing
        self.backward = backward
        self.records: list = []
        self._open: list = []
        self._pending: list = []

    def __enter__(self):
        self._thread = threading.get_ident()  # ops of other threads are not this block's
        observe.add_observer(self)
        return self

    def __exit__(self, *exc):
        observe.remove_observer(self)
        self._flush()
        return False

    def begin(self, kind, what, args):
        if (kind == "backward" and not self.backward) or threading.get_ident() != self._thread:
            return None
        r = _Record()
        r.name = observe.event_name(kind, what)
        r.depth = len(self._open)
        if kind == "backward":
            r.args = "grads " + ", ".join(_arg_text(g) for g in args if g is not None)
        else:
            r.args = ", ".join(_arg_text(a) for a in args)
        r.result = ""
        r.seconds = 0.0
        self._open.append(r)
        self._pending.append(r)
        r.t0 = time.perf_counter()
        return r

    def end(self, token, result):
        if token is None:
            return
        token.seconds = time.perf_counter() - token.t0
        token.result = _result_text(result)
        if self._open and self._open[-1] is token:
            self._open.pop()
        if not self._open:
            self._flush()

    def _flush(self) -> None:
        out = self.file if self.file is not None else sys.stdout
        width = max((len(r.name) + 2 * r.depth for r in self._pending), default=0)
        for r in self._pending:
            line = f"{'  ' * r.depth}{r.name}".ljust(width) + f"  {r.args}"
            if r.result:
                line += f" -> {r.result}"
            if self.timing:
                line += f"  {r.seconds * 1e6:.1f} us"
            print(line, file=out)
        self.records.extend(self._pending)
        self._pending = []
