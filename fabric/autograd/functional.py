"""Higher-level autograd: ``jacobian``, ``hessian``, ``vjp``, ``jvp``,
``hvp``, ``vhp`` (reverse mode; ``jvp`` uses the double-vjp trick).

Example::

    >>> import fabric
    >>> from fabric.autograd.functional import jacobian
    >>> jacobian(lambda x: x ** 2, fabric.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
"""
from __future__ import annotations

from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _tuple(x):
    from .._tensor import Tensor

    if isinstance(x, Tensor):
        return (x,), True
    return tuple(x), False


def _prep(inputs, create_graph):
    return tuple(t.detach().requires_grad_(True) if not create_graph or not t.requires_grad else t.view_as(t)
                 for t in inputs)


def _grad(outputs, inputs, grad_outputs, create_graph):
    from .._tensor import Tensor
    from . import grad

    outs = [o for o in outputs if o.requires_grad]
    gos = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outs:
        return tuple(Tensor._make(_zeros(i), False) for i in inputs)
    res = grad(outs, inputs, gos, create_graph=create_graph, retain_graph=True, allow_unused=True)
    return tuple(r if r is not None else Tensor._make(_zeros(i), False) for r, i in zip(res, inputs))


def _zeros(t):
    from ..backends import backend_of

    return backend_of(t._data).xp.zeros_like(t._data)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``."""
    from .._tensor import Tensor

    inputs, single_in = _tuple(inputs)
    with enable_grad():
        ins = _prep(inputs, create_graph)
        out = func(*ins)
        outs, single_out = _tuple(out)
        if v is None:
            if any(o.numel() != 1 for o in outs):
                raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                                   "Tensor with a single element.")
            vs = tuple(Tensor._make(_ones(o), False) for o in outs)
        else:
            vs, _ = _tuple(v)
        g = _grad(outs, ins, vs, create_graph)
    res_out = tuple(o if create_graph else o.detach() for o in outs)
    return (res_out[0] if single_out else res_out), (g[0] if single_in else g)


def _ones(t):
    from ..backends import backend_of

    return backend_of(t._data).xp.ones_like(t._data)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` computed as the vjp of a vjp."""
    from .._tensor import Tensor

    inputs, single_in = _tuple(inputs)
    with enable_grad():
        ins = _prep(inputs, create_graph)
        out = func(*ins)
        outs, single_out = _tuple(out)
        if v is None:
            if any(i.numel() != 1 for i in ins):
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element.")
            vs = tuple(Tensor._make(_ones(i), False) for i in ins)
        else:
            vs, _ = _tuple(v)
        dummies = tuple(Tensor._make(_zeros(o), False).requires_grad_(True) for o in outs)
        g = _grad(outs, ins, dummies, True)
        jv = _grad(g, dummies, vs, create_graph)
    res_out = tuple(o if create_graph else o.detach() for o in outs)
    return (res_out[0] if single_out else res_out), (jv[0] if single_out else jv)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (nested per output/input as in PyTorch)."""
    from .._tensor import Tensor
    from ..ops.join import stack

    inputs, single_in = _tuple(inputs)
    with enable_grad():
        ins = _prep(inputs, create_graph)
        outs, single_out = _tuple(func(*ins))
        result = []
        for o in outs:
            rows = [[] for _ in ins]
            flat = o.reshape(-1)
            for j in range(flat.numel()):
                g = _grad((flat[j],), ins, (Tensor._make(_ones(flat[j]), False),), create_graph) \
                    if o.requires_grad else tuple(Tensor._make(_zeros(i), False) for i in ins)
                for k, gk in enumerate(g):
                    rows[k].append(gk)
            per_in = []
            for k, i in enumerate(ins):
                if rows[k]:
                    per_in.append(stack(rows[k]).reshape(tuple(o.shape) + tuple(i.shape)))
                else:
                    from ..backends import backend_of

                    z = backend_of(i._data).xp.zeros(tuple(o.shape) + tuple(i.shape), i._data.dtype)
                    per_in.append(Tensor._make(z, False))
            result.append(per_in)
    if not create_graph:
        result = [[r.detach() for r in row] for row in result]
    if single_out and single_in:
        return result[0][0]
    if single_out:
        return tuple(result[0])
    if single_in:
        return tuple(r[0] for r in result)
    return tuple(tuple(r) for r in result)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs``."""
    inputs_t, single_in = _tuple(inputs)

    def grad_fn(*ins):
        from .._tensor import Tensor

        out = func(*ins)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        g = _grad((out,), ins, (Tensor._make(_ones(out), False),), True)
        return g[0] if single_in else g

    return jacobian(grad_fn, inputs_t[0] if single_in else inputs_t, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``."""
    from .._tensor import Tensor

    inputs, single_in = _tuple(inputs)
    with enable_grad():
        ins = _prep(inputs, True)
        out = func(*ins)
        if out.numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a single element")
        g = _grad((out,), ins, (Tensor._make(_ones(out), False),), True)
        vs, _ = _tuple(v) if v is not None else (tuple(Tensor._make(_ones(i), False) for i in ins), None)
        h = _grad(g, ins, vs, create_graph)
    o = out if create_graph else out.detach()
    return o, (h[0] if single_in else h)


hvp = vhp  # the Hessian is symmetric for twice-differentiable functions
