"""Elementwise fusion: chains of pointwise ops in a captured graph become one node.

:func:`fuse_pointwise` finds maximal groups of pointwise nodes (arithmetic,
``exp``/``log``/``tanh``/``sigmoid``/``relu``/``gelu``/``silu`` as functions,
methods or operators) whose intermediate values are used only inside the group,
and replaces each group of two or more by one ``call_function`` node whose
target is a :class:`FusedPointwise`.  The group is written once as Python
source (``t2 = t0 * t1`` ...) and its backward as the adjoint source (the
formulas of the ops' own backwards, in reverse); the same source runs in three
bindings:

* **numba** (the ``cpu`` extra, :func:`fabric.backends.cpu_kernels.enabled`):
  the forward is one ``numba.vectorize`` ufunc (one pass, no temporaries), each
  input's gradient another that recomputes the chain per element; kernels are
  cached per (source, dtype), so every layer with the same chain shares them;
  the forward writes into a buffer kept on the node and reused across steps
  whenever nothing else holds it (memory planning, checked by reference count);
* **NumPy** (no extra): the forward evaluates the chain on arrays and keeps the
  intermediates for the backward, which is then pure array arithmetic — no
  per-op ``Function`` records, so fewer Python calls than eager;
* **Tensors**: when a gradient graph is wanted (``create_graph=True``: double
  backward), on a non-CPU device, or for inputs the kernels do not cover
  (integer dtypes, mixed dtypes), the chain runs as fabric ops.

Numbers: the NumPy and Tensor bindings run eager's float operations in eager's
order, so results and gradients equal eager's bit for bit (gradients of an
input used twice may differ in the last bit: their sum is taken in another
order).  The numba binding agrees to float tolerance (compiled ``exp``/``erf``
and fused multiply-adds differ in the last bits).

Example::

    >>> import operator, fabric
    >>> from fabric import fx
    >>> from fabric._dynamo.fusion import fuse_pointwise
    >>> g = fx.Graph(); x = g.placeholder("x")
    >>> y = g.call_function(fabric.tanh, (g.call_function(operator.mul, (x, 2.0)),))
    >>> _ = g.output(y)
    >>> fuse_pointwise(g)
    1
    >>> [n.op for n in g.nodes]
    ['placeholder', 'call_function', 'output']
"""
from __future__ import annotations

import hashlib
import itertools
import math
import operator
import sys
import threading

import numpy as np

from .. import ops as _ops
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import state as _grad_state
from ..backends import backend_of
from ..fx.graph import Graph
from ..fx.node import Node
from ..nn import functional as F
from ..nn.functional._dropout import _bernoulli, _memory_order

__all__ = ["fuse_pointwise", "FusedPointwise", "POINTWISE"]

# name -> (forward template, one gradient template per operand); {0}, {1} are the operands, {y} the
# result, {g} its gradient.  The gradient formulas are eager's (fabric/ops/arith.py, pointwise.py).
POINTWISE: dict[str, tuple[str, tuple[str, ...]]] = {
    "add": ("{0} + {1}", ("{g}", "{g}")),
    "sub": ("{0} - {1}", ("{g}", "-{g}")),
    "mul": ("{0} * {1}", ("{g} * {1}", "{g} * {0}")),
    "div": ("{0} / {1}", ("{g} / {1}", "-{g} * {0} / ({1} * {1})")),
    "neg": ("-{0}", ("-{g}",)),
    "exp": ("exp({0})", ("{g} * {y}",)),
    "log": ("log({0})", ("{g} / {0}",)),
    "tanh": ("tanh({0})", ("{g} * (1 - {y} * {y})",)),
    "sigmoid": ("sigmoid({0})", ("{g} * {y} * (1 - {y})",)),
    "relu": ("relu({0})", ("relu_grad({g}, {y})",)),
    "gelu": ("gelu({0})", ("gelu_grad({g}, {0})",)),
    "silu": ("silu({0})", ("silu_grad({g}, {0})",)),
    # CPU dropout is ``x * noise`` with ``noise = bernoulli(1-p) / (1-p)`` drawn as eager draws it; {1} is the
    # noise (an extra kernel input, drawn by the fused node when it runs), {2} the probability
    "dropout": ("{0} * {1}", ("{g} * {1}",)),
}

# the same ops writing into a planned buffer ``{o}`` (NumPy binding); eager's float operations, so bit-equal
_OUT_FORMS = {"add": "add({0}, {1}, out={o})", "sub": "subtract({0}, {1}, out={o})",
              "mul": "multiply({0}, {1}, out={o})", "div": "true_divide({0}, {1}, out={o})",
              "neg": "negative({0}, out={o})", "exp": "exp({0}, out={o})", "log": "log({0}, out={o})",
              "tanh": "tanh({0}, out={o})", "sigmoid": "sigmoid_out({0}, {o})", "relu": "maximum({0}, 0, out={o})",
              "gelu": "gelu({0})", "silu": "silu({0})", "dropout": "multiply({0}, {1}, out={o})"}

_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
              operator.neg: "neg"}
_FUNCTIONS = {_ops.add: "add", _ops.sub: "sub", _ops.mul: "mul", _ops.div: "div", _ops.neg: "neg",
              _ops.exp: "exp", _ops.log: "log", _ops.tanh: "tanh", _ops.sigmoid: "sigmoid", _ops.relu: "relu",
              F.relu: "relu", F.gelu: "gelu", F.silu: "silu", F.sigmoid: "sigmoid", F.tanh: "tanh"}
_METHODS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg", "exp": "exp", "log": "log",
            "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu", "__add__": "add", "__sub__": "sub",
            "__mul__": "mul", "__truediv__": "div", "__neg__": "neg"}
_DEFAULT_KWARGS = {"inplace": False, "approximate": "none"}


def _op_name(node: Node) -> str | None:
    """The POINTWISE name of ``node``, or None when it is not a fusable pointwise op."""
    if node.op == "call_function":
        name = _OPERATORS.get(node.target) if callable(node.target) else None
        if name is None:
            try:
                name = _FUNCTIONS.get(node.target)
            except TypeError:          # an unhashable target
                return None
    elif node.op == "call_method":
        name = _METHODS.get(node.target)
    else:
        return None
    if name is None:
        return "dropout" if node.op == "call_function" and node.target is F.dropout and _dropout_p(node) else None
    if any(_DEFAULT_KWARGS.get(k, object()) != v for k, v in node.kwargs.items()):
        return None                    # alpha=, out=, inplace=True, approximate='tanh' ...
    args = node.args
    if name in ("relu", "gelu", "silu") and len(args) == 2 and args[1] in (False, "none"):
        args = args[:1]
    if len(args) != len(POINTWISE[name][1]) or not any(isinstance(a, Node) for a in args):
        return None
    if not all(isinstance(a, Node) or type(a) in (int, float) for a in args):
        return None
    return name


def _dropout_p(node: Node):
    """``p`` of a training-mode, out-of-place ``F.dropout`` node with 0 < p < 1 (else None)."""
    bound = dict(zip(("input", "p", "training", "inplace"), node.args))
    bound.update(node.kwargs)
    p, training, inplace = bound.get("p", 0.5), bound.get("training", True), bound.get("inplace", False)
    if not isinstance(bound.get("input"), Node) or training is not True or inplace is not False:
        return None
    return p if type(p) in (int, float) and 0 < p < 1 else None


class _Chain:
    """A group's sources: ``forward`` (values), ``backward_saved`` (adjoints from saved values),
    ``backward_full`` (recompute, then adjoints) and per-input scalar kernels for numba."""

    def __init__(self, steps, n_inputs, constants, n_graph_inputs=None):
        self.steps = steps              # [(name, operands)]; an operand is ("x", i), ("t", j) or ("k", i)
        self.n_inputs = n_inputs        # graph inputs, then one dropout noise per dropout step
        self.n_graph = n_inputs if n_graph_inputs is None else n_graph_inputs
        self.constants = constants
        ref = self._ref
        xs = [f"x{i}" for i in range(n_inputs)]
        ts = [f"t{j}" for j in range(len(steps))]
        fwd = [f"t{j} = " + POINTWISE[name][0].format(*(ref(o) for o in ops)) for j, (name, ops) in enumerate(steps)]
        self.forward_lines = fwd
        self.out = ts[-1]
        adj: list[str] = [f"g{len(steps) - 1} = g"]
        have = {f"t{len(steps) - 1}"}
        for j in range(len(steps) - 1, -1, -1):
            name, ops = steps[j]
            for k, o in enumerate(ops):
                if o[0] == "k" or (o[0] == "x" and o[1] >= self.n_graph):   # constants, dropout noise
                    continue
                target = "gx" if o[0] == "x" else "g"
                var = f"{target}{o[1]}"
                term = POINTWISE[name][1][k].format(*(ref(p) for p in ops), y=f"t{j}", g=f"g{j}")
                key = f"{o[0]}{o[1]}"
                adj.append(f"{var} = {var} + {term}" if key in have else f"{var} = {term}")
                have.add(key)
        self.adjoint_lines = adj
        last = steps[-1][0]
        self.out_needed = any("{y}" in term for term in POINTWISE[last][1])
        self.used = [f"x{i}" in have for i in range(n_inputs)]
        self.xs, self.ts = xs, ts
        self.key = ("\n".join(fwd + adj), n_inputs)

    @staticmethod
    def _ref(o) -> str:
        return f"{o[0]}{o[1]}" if o[0] != "k" else f"k{o[1]}"

    def source(self, kind: str, wanted: int | None = None) -> str:
        xs, ts = ", ".join(self.xs), ", ".join(self.ts)
        grads = ", ".join(f"gx{i}" if self.used[i] else "None" for i in range(self.n_inputs))
        if kind == "forward":
            body = self.forward_lines + [f"return {self.out}"]
            params = xs
        elif kind == "forward_eager":   # the ops themselves (dropout draws its own mask)
            ref = self._ref
            body = [f"t{j} = dropout({ref(ops[0])}, {ref(ops[2])})" if name == "dropout" else self.forward_lines[j]
                    for j, (name, ops) in enumerate(self.steps)] + [f"return {self.out}"]
            params = ", ".join(self.xs[:self.n_graph])
        elif kind == "forward_saving":
            body = self.forward_lines + [f"return ({ts},)"]
            params = xs
        elif kind == "forward_out":     # into planned buffers b0, b1 ... (one per step)
            ref = self._ref
            body = [f"t{j} = " + _OUT_FORMS[name].format(*(ref(o) for o in ops), o=f"b{j}")
                    for j, (name, ops) in enumerate(self.steps)] + [f"return ({ts},)"]
            params = xs + ", " + ", ".join(f"b{j}" for j in range(len(self.steps)))
        elif kind == "backward_saved":
            body = self.adjoint_lines + [f"return ({grads},)"]
            params = f"{xs}, {ts}, g"
        elif kind == "backward_full":
            body = self.forward_lines + self.adjoint_lines + [f"return ({grads},)"]
            params = f"{xs}, g"
        else:                           # one input's gradient, per element (numba)
            body = self.forward_lines + self.adjoint_lines + [f"return gx{wanted}"]
            params = f"{xs}, g"
            kind = "grad"
        return f"def {kind}({params}):\n" + "".join(f"    {line}\n" for line in body)


# --- bindings ----------------------------------------------------------------------------------------

def _array_helpers(xp) -> dict:
    from ..ops.pointwise import _sigmoid

    def gelu(x):
        return backend_of(x).gelu(x, "none")

    def gelu_grad(g, x):
        return backend_of(x).gelu_backward(x, g, "none")

    def silu(x):
        return backend_of(x).silu(x)

    def silu_grad(g, x):
        return backend_of(x).silu_backward(x, g)

    def sigmoid_out(x, out):            # _sigmoid's four passes, into ``out``
        xp.negative(x, out=out)
        xp.exp(out, out=out)
        out += 1
        return xp.reciprocal(out, out=out)

    return {"add": xp.add, "subtract": xp.subtract, "multiply": xp.multiply, "true_divide": xp.true_divide,
            "negative": xp.negative, "maximum": xp.maximum, "sigmoid_out": sigmoid_out,
            "exp": xp.exp, "log": xp.log, "tanh": xp.tanh, "sigmoid": lambda x: _sigmoid(xp, x),
            "relu": lambda x: xp.maximum(x, 0), "relu_grad": lambda g, y: g * (y > 0),
            "gelu": gelu, "gelu_grad": gelu_grad, "silu": silu, "silu_grad": silu_grad}


def _tensor_helpers() -> dict:
    from types import SimpleNamespace

    from ..nn.functional._activation import Gelu, Silu

    ctx = SimpleNamespace(params=("none",))
    return {"dropout": F.dropout,
            "exp": _ops.exp, "log": _ops.log, "tanh": _ops.tanh, "sigmoid": _ops.sigmoid, "relu": _ops.relu,
            "relu_grad": lambda g, y: g * (y > 0), "gelu": F.gelu, "silu": F.silu,
            "gelu_grad": lambda g, x: Gelu._grad(ctx, x, None, g),
            "silu_grad": lambda g, x: Silu._grad(ctx, x, None, g)}


_numba_scalar: dict = {}


def _numba_helpers() -> dict:
    if _numba_scalar:
        return _numba_scalar
    import numba

    njit = numba.njit(inline="always", cache=False)

    @njit
    def sigmoid(x):
        return 1 / (1 + math.exp(-x))

    @njit
    def relu(x):
        return x if x > 0 else x - x

    @njit
    def relu_grad(g, y):
        return g if y > 0 else g - g

    @njit
    def gelu(x):
        return x * 0.5 * (1 + math.erf(x * 0.7071067811865476))

    @njit
    def gelu_grad(g, x):
        cdf = (math.erf(x * 0.7071067811865476) + 1) * 0.5
        return g * (cdf + x * math.exp(x * x * -0.5) * 0.3989422804014327)

    @njit
    def silu(x):
        return x / (1 + math.exp(-x))

    @njit
    def silu_grad(g, x):
        s = 1 / (1 + math.exp(-x))
        return g * (s * (x * (1 - s) + 1))

    _numba_scalar.update(exp=math.exp, log=math.log, tanh=math.tanh, sigmoid=sigmoid, relu=relu,
                         relu_grad=relu_grad, gelu=gelu, gelu_grad=gelu_grad, silu=silu, silu_grad=silu_grad)
    return _numba_scalar


_compiled: dict = {}    # (chain key, binding, kind, dtype, constants) -> function (shared by equal chains)
_counter = itertools.count()


def _build(chain: _Chain, kind: str, helpers: dict, constants, wanted=None):
    ns = dict(helpers)
    ns.update({f"k{i}": c for i, c in enumerate(constants)})
    src = chain.source(kind, wanted)
    exec(compile(src, f"<fabric.compile fused {next(_counter)}>", "exec"), ns)
    return ns["grad" if wanted is not None else kind]


def _kernel(chain: _Chain, binding: str, kind: str, dtype=None, wanted=None):
    key = (chain.key, binding, kind, dtype, tuple(chain.constants), wanted)
    fn = _compiled.get(key)
    if fn is None:
        if binding == "numba":
            import numba
            sig = dtype.name
            consts = [dtype.type(c) for c in chain.constants]
            scalar = numba.njit(_build(chain, kind, _numba_helpers(), consts, wanted))
            n = chain.n_inputs + (kind != "forward")
            fn = numba.vectorize([f"{sig}({', '.join([sig] * n)})"], nopython=True)(scalar)
            fn = getattr(fn, "ufunc", fn)   # the NumPy ufunc itself: no Python-level DUFunc.__call__ per call
        elif binding == "numpy":
            fn = _build(chain, kind, _array_helpers(np), chain.constants)
        else:
            fn = _build(chain, kind, _tensor_helpers(), chain.constants)
        _compiled[key] = fn
    return fn


# numba's kernels call libm once per element for exp/log/tanh (scalar code, not vectorised), which measures
# slower than NumPy's SIMD loops: the hand-written LSTM cell of benchmarks/compile.py ran at 0.36x of eager with
# them, 1.0x on the NumPy binding.  So chains with such ops take the NumPy binding unless this is True (the
# tests set it to check the numba kernels on every chain).
numba_libm_chains = False
_LIBM = frozenset({"exp", "log", "tanh", "sigmoid", "gelu", "silu"})


def _use_numba() -> bool:
    from ..backends import cpu_kernels
    return cpu_kernels.enabled()


class FusedKernel(Function):
    """The fused group as one autograd node; ``args[0]`` is the :class:`FusedPointwise`."""

    _array_forward = True

    @staticmethod
    def forward(ctx, fused, *xs):
        ctx.fused = fused
        if fused.numba:                 # the backward kernels recompute the chain from the inputs
            ctx.save_for_backward(*xs)
            return fused.run_numba(xs)
        values = fused.run_numpy(xs)
        # when the last op's gradient reads the output, it is saved as eager saves it (changing it in place
        # before backward raises eager's error); the other values never leave the node
        ctx.save_for_backward(*xs, values[-1]) if fused.chain.out_needed else ctx.save_for_backward(*xs)
        ctx.values = values[:-1]
        return values[-1]

    @staticmethod
    def backward(ctx, gy):
        fused = ctx.fused
        xs = ctx.saved_tensors
        chain = fused.chain
        y = None
        if not fused.numba and chain.out_needed:
            xs, y = xs[:-1], xs[-1]
        need = ctx.needs_input_grad[1:]
        if _grad_state.enabled:          # create_graph: gradients as fabric ops (differentiable again)
            grads = _kernel(chain, "tensor", "backward_full")(*xs, gy)
            return (None,) + tuple(gx if n else None for gx, n in zip(grads, need))
        arrays = [x._data for x in xs]
        if fused.numba:
            dtype = arrays[0].dtype
            out = [None] * len(xs)
            for i, n in enumerate(need):
                if n and chain.used[i]:
                    gx = _kernel(chain, "numba", "grad", dtype, wanted=i)(*arrays, gy._data)
                    out[i] = Tensor._make(gx if gx.__class__ is np.ndarray else np.asarray(gx))
            return (None, *out)
        grads = _kernel(chain, "numpy", "backward_saved")(*arrays, *ctx.values, y._data if y is not None else None,
                                                           gy._data)
        ctx.values = None
        return (None,) + tuple(Tensor._make(np.asarray(gx)) if n and gx is not None else None
                               for gx, n in zip(grads, need))


class FusedPointwise:
    """The callable a fused node runs: ``fused(*inputs)`` equals the chain of ops it replaced."""

    def __init__(self, chain: _Chain, names: list[str]):
        self.chain = chain
        self.names = names              # the replaced ops, for repr and docs
        self.numba = None               # decided at the first call (the cpu extra on or off)
        self._buffer = None             # the numba forward's output, reused while nobody else holds it
        self._plan = None               # NumPy: (input shapes and dtypes, one buffer per step)
        self._noise_cache = None        # dropout: (input shapes and strides, what to draw)
        self._shape = None              # numba: (input shapes, output shape)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FusedPointwise({' -> '.join(self.names)})"

    @property
    def __name__(self) -> str:          # fx prints call_function targets by name
        return "fused_" + "_".join(self.names)

    def _fast(self, xs) -> bool:
        """All inputs are dense CPU float Tensors of one dtype (what the kernels cover)."""
        dtype = None
        for x in xs:
            d = getattr(x, "_data", None)
            if d is None or d.__class__ is not np.ndarray or x._sparse or d.dtype.kind != "f" \
                    or d.dtype.itemsize < 4 or (dtype is not None and d.dtype != dtype):
                return False
            dtype = d.dtype
        return dtype is not None

    def run_numba(self, arrays):
        shapes = tuple([a.shape for a in arrays])
        known = self._shape
        if known is None or known[0] != shapes:
            known = self._shape = (shapes, np.broadcast_shapes(*shapes))
        shape = known[1]
        dtype = arrays[0].dtype
        with self._lock:                # two threads must not both find the buffer free
            buf = self._buffer
            # 3 references: self._buffer, the local ``buf`` and getrefcount's argument.  More: a Tensor, a
            # view or a saved value still uses it, so this step gets a fresh one.
            if buf is None or buf.shape != shape or buf.dtype != dtype or sys.getrefcount(buf) > 3:
                buf = self._buffer = np.empty(shape, dtype)
            return _kernel(self.chain, "numba", "forward", dtype)(*arrays, out=buf)

    def run_numpy(self, arrays):
        """Every step's value, each written into a buffer planned at the first call for these input
        shapes and reused on later calls unless something (a Tensor, a saved value) still holds it."""
        key = tuple((a.shape, a.dtype) for a in arrays)
        plan = self._plan
        if plan is None or plan[0] != key:
            values = _kernel(self.chain, "numpy", "forward_saving")(*arrays)
            values = tuple(v if v.__class__ is np.ndarray else np.asarray(v) for v in values)
            self._plan = (key, list(values))
            return values
        buffers = plan[1]
        with self._lock:                # two threads must not both find a buffer free
            for j in range(len(buffers)):
                # 2 references: the list and getrefcount's argument; more: someone still uses it
                if sys.getrefcount(buffers[j]) > 2:
                    buffers[j] = np.empty_like(buffers[j])
            values = _kernel(self.chain, "numpy", "forward_out")(*arrays, *buffers)
            for j, v in enumerate(values):
                if v is not buffers[j]:     # gelu/silu return a fresh array
                    buffers[j] = v if v.__class__ is np.ndarray else np.asarray(v)
            return tuple(buffers)

    def _noise_plan(self, arrays) -> list:
        """``(keep, drawn shape, axes back or None)`` per dropout step, for these inputs' shapes and strides."""
        shapes: list = []
        plan = []
        for name, ops in self.chain.steps:
            shape = np.broadcast_shapes(*(arrays[o[1]].shape if o[0] == "x" else shapes[o[1]]
                                          for o in ops[:1 if name == "dropout" else None] if o[0] != "k"))
            shapes.append(shape)
            if name == "dropout":
                keep = 1.0 - self.chain.constants[ops[2][1]]
                perm = _memory_order(arrays[ops[0][1]]) if ops[0][0] == "x" else None
                if perm is None:
                    plan.append((keep, shape, None))
                else:
                    plan.append((keep, tuple(shape[d] for d in perm), tuple(np.argsort(perm))))
        return plan

    def _noise(self, arrays) -> list:
        """One dropout noise per dropout step, drawn as eager's CPU dropout draws it (same generator, same
        order, the input's memory order), in the step's shape."""
        key = tuple((a.shape, a.strides) for a in arrays)
        cached = self._noise_cache
        if cached is None or cached[0] != key:
            cached = self._noise_cache = (key, self._noise_plan(arrays))
        noise = []
        for keep, shape, back in cached[1]:
            n = _bernoulli(arrays[0], shape, keep)
            if back is not None:
                n = n.transpose(back)
            n /= n.dtype.type(keep)
            noise.append(n)
        return noise

    def __call__(self, *xs):
        if not self._fast(xs):
            return _kernel(self.chain, "tensor", "forward_eager")(*xs)
        if self.numba is None:
            self.numba = _use_numba() and (numba_libm_chains or not any(n in _LIBM for n, _ in self.chain.steps))
        noise = self._noise([x._data for x in xs]) if self.chain.n_inputs > self.chain.n_graph else ()
        if _grad_state.enabled and any(x._requires_grad for x in xs):
            return FusedKernel.apply(self, *xs, *noise)
        arrays = [x._data for x in xs] + list(noise)
        if self.numba:
            return Tensor._make(self.run_numba(arrays))
        return Tensor._make(self.run_numpy(arrays)[-1])


def _group_of(root: Node, names: dict, taken: set) -> list[Node]:
    """``root`` and the pointwise nodes feeding it whose only users are in the group."""
    group = {root}
    frontier = [root]
    while frontier:
        node = frontier.pop()
        for inp in node.all_input_nodes:
            if inp in group or inp in taken or inp not in names:
                continue
            if all(u in group for u in inp.users):
                group.add(inp)
                frontier.append(inp)
    return list(group)


def _reorders_random(group: list, names: dict, order: dict) -> bool:
    """A group with a dropout draws its masks when the fused node runs (at the group's last node): that
    keeps eager's random stream only if no other node between the group's first and last may draw."""
    if not any(names[n] == "dropout" for n in group):
        return False
    from .passes import is_pure
    members = set(group)
    first, last = order[group[0]], order[group[-1]]
    nodes = list(group[0].graph.nodes)
    return any(n not in members and n.op in ("call_function", "call_method", "call_module") and not is_pure(n)
               for n in nodes[first:last])


def fuse_pointwise(graph: Graph) -> int:
    """Replace each group of two or more fusable pointwise nodes by one fused node; returns how many groups."""
    names = {n: name for n in graph.nodes if (name := _op_name(n)) is not None}
    order = {n: i for i, n in enumerate(graph.nodes)}
    taken: set = set()
    groups = []
    for node in reversed(list(graph.nodes)):
        if node not in names or node in taken:
            continue
        group = _group_of(node, names, taken)
        group.sort(key=order.__getitem__)
        taken.update(group)
        if len(group) >= 2 and not _reorders_random(group, names, order):
            groups.append(group)
    for group in groups:
        _replace(graph, group, names)
    return len(groups)


def _replace(graph: Graph, group: list[Node], names: dict) -> None:
    inputs: list[Node] = []
    constants: list = []
    index = {n: j for j, n in enumerate(group)}
    steps = []
    dropouts = []                       # (step, p): each gets a noise input after the graph inputs
    for node in group:
        args = node.args
        if names[node] in ("relu", "gelu", "silu"):
            args = args[:1]
        elif names[node] == "dropout":
            dropouts.append((len(steps), _dropout_p(node)))
            args = (node.args[0] if node.args else node.kwargs["input"],)
        operands = []
        for a in args:
            if isinstance(a, Node) and a in index:
                operands.append(("t", index[a]))
            elif isinstance(a, Node):
                if a not in inputs:
                    inputs.append(a)
                operands.append(("x", inputs.index(a)))
            else:
                constants.append(a)
                operands.append(("k", len(constants) - 1))
        steps.append((names[node], tuple(operands)))
    for k, (j, p) in enumerate(dropouts):
        constants.append(p)
        steps[j] = ("dropout", steps[j][1] + (("x", len(inputs) + k), ("k", len(constants) - 1)))
    chain = _Chain(steps, len(inputs) + len(dropouts), constants, len(inputs))
    fused = FusedPointwise(chain, [names[n] for n in group])
    root = group[-1]
    with graph.inserting_before(root):
        new = graph.call_function(fused, tuple(inputs))
    root.replace_all_uses_with(new)
    for node in reversed(group):
        graph.erase_node(node)


# --- CUDA source (the GPU twin of the numba kernels) ----------------------------------------------------

_CUDA_HELPERS = r"""
__device__ __forceinline__ float fz_exp(float x) { return expf(x); }
__device__ __forceinline__ double fz_exp(double x) { return exp(x); }
__device__ __forceinline__ float fz_log(float x) { return logf(x); }
__device__ __forceinline__ double fz_log(double x) { return log(x); }
__device__ __forceinline__ float fz_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double fz_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float fz_erf(float x) { return erff(x); }
__device__ __forceinline__ double fz_erf(double x) { return erf(x); }
template <typename T> __device__ __forceinline__ T fz_sigmoid(T x) { return T(1) / (T(1) + fz_exp(-x)); }
template <typename T> __device__ __forceinline__ T fz_relu(T x) { return x > T(0) ? x : x - x; }
template <typename T> __device__ __forceinline__ T fz_relu_grad(T g, T y) { return y > T(0) ? g : g - g; }
template <typename T> __device__ __forceinline__ T fz_gelu(T x) {
    return x * T(0.5) * (T(1) + fz_erf(x * T(0.7071067811865476)));
}
template <typename T> __device__ __forceinline__ T fz_gelu_grad(T g, T x) {
    T cdf = (fz_erf(x * T(0.7071067811865476)) + T(1)) * T(0.5);
    return g * (cdf + x * fz_exp(x * x * T(-0.5)) * T(0.3989422804014327));
}
template <typename T> __device__ __forceinline__ T fz_silu(T x) { return x / (T(1) + fz_exp(-x)); }
template <typename T> __device__ __forceinline__ T fz_silu_grad(T g, T x) {
    T s = T(1) / (T(1) + fz_exp(-x));
    return g * (s * (x * (T(1) - s) + T(1)));
}
"""
_HELPER_CALL = None


def cuda_source(chain: _Chain, dtype, wanted: int | None = None) -> tuple[str, str]:
    """``(source, kernel name)`` of a grid-stride CUDA kernel computing the chain's output (``wanted=None``)
    or input ``wanted``'s gradient, element by element over contiguous, equally shaped float32/float64
    arrays (the per-element program the numba kernels run).  Each source is checked by NVRTC and run on the
    CPU harness in tests/cuda/test_fused_chains.py; the runtime does not launch it yet (fused nodes on GPU
    run the ops themselves)."""
    import re
    global _HELPER_CALL
    if _HELPER_CALL is None:
        _HELPER_CALL = re.compile(r"\b(exp|log|tanh|sigmoid|relu_grad|relu|gelu_grad|gelu|silu_grad|silu)\(")
    ctype = {"float32": "float", "float64": "double"}[np.dtype(dtype).name]
    digest = hashlib.sha1(repr(chain.key).encode()).hexdigest()[:10]
    name = f"fused_{'fwd' if wanted is None else f'bwd{wanted}'}_{digest}_{ctype}"
    lines = chain.forward_lines + (chain.adjoint_lines if wanted is not None else [])
    params = [f"const {ctype}* __restrict__ x{i}_" for i in range(chain.n_inputs)]
    if wanted is not None:
        params.append(f"const {ctype}* __restrict__ g_")
    params += [f"{ctype}* __restrict__ out_", "long long n"]
    body = [f"    const {ctype} k{i} = ({ctype}){float(c)!r};" for i, c in enumerate(chain.constants)]
    body.append("    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; "
                "i += (long long)blockDim.x * gridDim.x) {")
    body += [f"        const {ctype} x{i} = x{i}_[i];" for i in range(chain.n_inputs)]
    if wanted is not None:
        body.append(f"        const {ctype} g = g_[i];")
    declared: set = set()
    for line in lines:
        var, expr = line.split(" = ", 1)
        expr = _HELPER_CALL.sub(lambda m: f"fz_{m.group(1)}(", expr)
        body.append(f"        {var} = {expr};" if var in declared else f"        {ctype} {var} = {expr};")
        declared.add(var)
    body.append(f"        out_[i] = {chain.out if wanted is None else f'gx{wanted}'};")
    body.append("    }")
    src = (_CUDA_HELPERS + f'extern "C" __global__ void {name}({", ".join(params)}) {{\n'
           + "\n".join(body) + "\n}\n")
    return src, name
