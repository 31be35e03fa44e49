"""Forward-mode AD, as in ``torch.autograd.forward_ad``: dual tensors.

``make_dual`` returns a differentiable alias of the primal (ops on it record
the usual reverse-mode graph) and remembers its tangent; ``unpack_dual(y)``
computes ``J t`` from that graph:

* **by the ops' JVP rules** (``Function.jvp(ctx, *tangents)``, declared
  beside each op's backward; ``ctx`` is the recorded node, so a rule reads
  what forward saved): the nodes between the duals and ``y`` are visited in
  dependency order, each turning its inputs' tangents into its outputs'.
  The pointwise tables derive their rule from their gradient formula (an
  elementwise Jacobian is diagonal, so ``J t = J^T t = df(t, x, y)``), and a
  custom ``autograd.Function``'s ``jvp`` is a rule like any other (with
  ``ctx.save_for_forward`` tensors as its ``ctx.saved_tensors``);
* **by double backward**, the fallback when an op on the way has no rule
  (or declines, e.g. for complex tangents): ``J t`` is the vjp, at ``t``, of
  ``u -> J^T u`` (itself a vjp with a dummy cotangent ``u``), exact for every
  op whose backward is differentiable in its incoming gradient.

``last_path[0]`` says which one the last ``unpack_dual`` took.  Differences
from PyTorch: dual tensors report ``requires_grad=True``, ops on them must
run with grad mode enabled (under ``no_grad`` no graph is recorded and the
tangent is ``None``), and tangents are computed when unpacked, not with the
forward pass.

Example::

    >>> import fabric
    >>> import fabric.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(fabric.tensor([1.0, 2.0]), fabric.tensor([1.0, 0.0]))
    ...     y = x * x.sum()
    ...     fwAD.unpack_dual(y).tangent
    tensor([4., 2.])
"""
from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_levels: list = []   # one dict per open level: id(dual) -> (dual, tangent)


def enter_dual_level() -> int:
    """Open a new forward AD level and return its index."""
    _levels.append({})
    return len(_levels) - 1


def exit_dual_level(*, level=None) -> None:
    """Close the innermost level (``level``, when given, must be it); its
    dual tensors lose their tangents."""
    if level is None:
        level = len(_levels) - 1
    if level != len(_levels) - 1 or level < 0:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _levels.pop().clear()


class dual_level:
    """Context manager for forward AD: ``with dual_level(): ...``."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _level(level):
    if level is None:
        level = len(_levels) - 1
    if level < 0 or level >= len(_levels):
        return None
    return _levels[level]


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor with value ``tensor`` and tangent ``tangent`` (same shape).

    Example::

        >>> import fabric
        >>> import fabric.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     y = fwAD.make_dual(fabric.tensor(0.5), fabric.tensor(2.0)).exp()
        ...     round(fwAD.unpack_dual(y).tangent.item(), 4)
        3.2974
    """
    from .grad_mode import enable_grad

    duals = _level(level)
    if duals is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tensor.shape != tangent.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    with enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else tensor.detach().requires_grad_(True)
    duals[id(dual)] = (dual, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """``(primal, tangent)`` from :func:`unpack_dual`."""

    primal: Any
    tangent: Any


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level``; the tangent is None
    when no dual tensor of the level influenced ``tensor``."""
    duals = _level(level)
    if duals is None or not tensor.requires_grad or not (tensor.is_floating_point() or tensor.is_complex()):
        return UnpackedDualTensor(tensor, None)
    own = duals.get(id(tensor))
    if own is not None and own[0] is tensor:
        return UnpackedDualTensor(tensor, own[1])
    entries = list(duals.values())
    if not entries:
        return UnpackedDualTensor(tensor, None)
    from .grad_mode import set_grad_enabled

    with set_grad_enabled(any(t.requires_grad for _, t in entries)):
        jv = _by_rules(tensor, entries)
    if jv is not _NO_RULE:
        last_path[0] = "rules"
        if jv is None:
            return UnpackedDualTensor(tensor, None)
        if jv.dtype != tensor.dtype:
            jv = jv.to(tensor.dtype)
        if tuple(jv.shape) != tuple(tensor.shape):
            jv = jv.expand(tensor.shape)
        return UnpackedDualTensor(tensor, jv)
    last_path[0] = "double backward"
    return UnpackedDualTensor(tensor, _by_double_backward(tensor, entries))


last_path = ["rules"]   # how the last unpack_dual computed its tangent ("rules" / "double backward"), for tests
_NO_RULE = object()


class _JvpCtx:
    """The ``ctx`` a rule sees: the node (its saved tensors and attributes); inside a custom Function's
    ``jvp``, ``saved_tensors`` are the ones its forward gave ``ctx.save_for_forward``, as in PyTorch."""

    __slots__ = ("_node",)

    def __init__(self, node):
        object.__setattr__(self, "_node", node)

    @property
    def saved_tensors(self):
        node = self._node
        fwd = node.__dict__.get("_saved_for_forward") if hasattr(node, "__dict__") else None
        return fwd if fwd is not None else node.saved_tensors

    def __getattr__(self, name):
        return getattr(self._node, name)


def _rule_of(fn_cls):
    """The Function's ``jvp`` (a built-in's rule or a custom Function's method), or None."""
    from .function import Function

    jvp = getattr(fn_cls, "jvp", None)
    if jvp is None or jvp is Function.jvp:
        return None
    return jvp


def _by_rules(tensor, entries):
    """The tangent of ``tensor`` by the jvp rules of the ops between the duals and it (the graph's nodes
    in dependency order); ``_NO_RULE`` when an op on the way has no rule."""
    from .function import AccumulateGrad

    sources = {}
    for dual, t in entries:
        if dual.grad_fn is not None:
            sources[(dual.grad_fn, dual._output_nr)] = t
        else:
            meta = dual._meta
            if meta is not None and meta.acc is not None:
                sources[(meta.acc, 0)] = t
    memo: dict = {}
    root = tensor.grad_fn
    if root is None:
        return None
    stack = [root]
    while stack:
        n = stack[-1]
        if n in memo:
            stack.pop()
            continue
        todo = [e[0] for e in n._edges if e is not None and (e[0], e[1]) not in sources
                and e[0].__class__ is not AccumulateGrad and e[0] not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        ins = []
        for e in n._edges:
            if e is None:
                ins.append(None)
            elif (e[0], e[1]) in sources:
                ins.append(sources[(e[0], e[1])])
            elif e[0].__class__ is AccumulateGrad:
                ins.append(None)
            else:
                outs = memo[e[0]]
                ins.append(None if outs is None else outs[e[1]])
        if all(t is None for t in ins):
            memo[n] = None
            continue
        rule = _rule_of(n._fn)
        if rule is None:
            return _NO_RULE
        out = rule(_JvpCtx(n), *_materialize(n, ins))
        if out is NotImplemented:
            return _NO_RULE
        memo[n] = out if isinstance(out, tuple) else (out,)
    key = (root, tensor._output_nr)
    if key in sources:
        return sources[key]
    outs = memo.get(root)
    return None if outs is None else outs[tensor._output_nr]


def _materialize(node, ins):
    """Custom Functions get zeros for inputs without a tangent (their input metadata has the shapes);
    built-in rules take None."""
    if getattr(node._fn, "_array_forward", False) or node._input_meta is None:
        return ins
    from .. import zeros
    from .._dtype import from_numpy_dtype

    out = []
    for t, m in zip(ins, node._input_meta):
        if t is None and m is not None:
            t = zeros(m[0], dtype=from_numpy_dtype(m[1]))
        out.append(t)
    return out


def _by_double_backward(tensor, entries):
    """The fallback: ``J t`` as the vjp at ``t`` of ``u -> J^T u`` (two backward passes)."""
    from . import grad as _grad
    from .grad_mode import enable_grad

    with enable_grad():
        u = tensor.detach().new_ones(tensor.shape).requires_grad_(True)  # any point: J^T u is linear in u; ones avoid
        # the kinks some backwards have at a zero gradient (a sign split, logcumsumexp)
        gs = _grad([tensor], [d for d, _ in entries], [u], retain_graph=True, create_graph=True, allow_unused=True)
        live = [(g, t) for g, (_, t) in zip(gs, entries) if g is not None and g.requires_grad]
        if not live:
            if any(g is not None for g in gs):  # connected, with a vjp that does not depend on u: a zero JVP
                return tensor.detach().new_zeros(tensor.shape)
            return None
        create = any(t.requires_grad for _, t in live)
        (jv,) = _grad([g for g, _ in live], [u], [t for _, t in live], retain_graph=True, create_graph=create,
                      allow_unused=True)
    if jv is None:
        jv = tensor.detach().new_zeros(tensor.shape)
    return jv
