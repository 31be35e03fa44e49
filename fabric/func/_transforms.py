"""grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian and linearize.

Every transform runs the function on fresh differentiable aliases of the
inputs and differentiates with fabric's reverse-mode engine, keeping the
graph of the derivatives (``create_graph``), so transforms compose:
``jacrev(jacrev(f))``, ``vmap(grad(f))``, ``jacfwd(jacrev(f))``.  An alias of
an input that already requires grad (an outer transform, or user autograd)
is a view of it, so the outer level sees through the inner one; a result
whose graph reaches nothing but the transform's own aliases is detached, so
``grad(f)(x)`` of a plain ``x`` does not require grad, as in PyTorch.

Forward-mode products (``jvp``, ``jacfwd``, ``linearize``, ``hessian``) are
computed by the double-vjp construction: with ``u`` a dummy cotangent (ones:
any point would do, and ones avoid kinks some backwards have at zero),
``g(u) = vjp(u)`` is linear in ``u`` and its vjp at ``t`` is ``J t``.  This
needs every op's backward to be differentiable in the incoming gradient,
which fabric's backwards (written with Tensor ops) are.
"""
from __future__ import annotations

import functools

from ._batched import is_batched, physical
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]


def _tensor_cls():
    from .._tensor import Tensor

    return Tensor


def _alias(x):
    """A fresh differentiable stand-in for input ``x``."""
    if x.requires_grad:
        return x.view_as(x)
    return x.detach().requires_grad_(True)


def _check_float(x, api):
    if not x.is_floating_point() and not x.is_complex():
        raise RuntimeError(f"{api}: Expected inputs to be floating point or complex Tensors, got {x.dtype}. "
                           "Only floating point or complex tensors can be differentiated.")


class _Level:
    """One transform's fresh aliases; :meth:`lower` detaches results that do
    not depend on anything outside them."""

    def __init__(self):
        self.fresh: set[int] = set()
        self._outside: dict = {}

    def add(self, x, api):
        from ._batched import active_levels, add_level

        T = _tensor_cls()
        if not isinstance(x, T):
            raise ValueError(f"{api}: Expected inputs to be Tensors, got {type(x)}")
        _check_float(x, api)
        for lvl in active_levels():
            # inside vmap, the derivative with respect to an input is per example even where the input is
            # shared by the examples: it is differentiated as the batch of its copies
            x = add_level(x, lvl)
        a = _alias(x)
        self.fresh.add(id(physical(a)))
        self._keep = getattr(self, "_keep", []) + [a]
        return a

    def add_leaf(self, a):
        self.fresh.add(id(physical(a)))
        self._keep = getattr(self, "_keep", []) + [a]
        return a

    def _reaches_outside(self, node) -> bool:
        from ..autograd.function import AccumulateGrad

        memo = self._outside
        stack = [node]
        seen = []
        found = False
        while stack:
            n = stack.pop()
            if n in memo:
                if memo[n]:
                    found = True
                    break
                continue
            memo[n] = False
            seen.append(n)
            if n.__class__ is AccumulateGrad:
                var = n.variable
                if var is None or id(var) not in self.fresh:
                    found = True
                    break
                continue
            for e in n._edges:
                if e is not None:
                    stack.append(e[0])
        if found:
            for n in seen:
                memo[n] = True
            memo[node] = True
        return found

    def lower(self, t):
        T = _tensor_cls()
        if not isinstance(t, T) or not t.requires_grad:
            return t
        p = physical(t)
        if p.grad_fn is None:
            return t.detach() if id(p) in self.fresh else t
        return t if self._reaches_outside(p.grad_fn) else t.detach()

    def lower_tree(self, tree):
        leaves, spec = tree_flatten(tree)
        return tree_unflatten([self.lower(x) for x in leaves], spec)


def _autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=True):
    """``autograd.grad`` with the graph kept, zeros for unused inputs."""
    from .. import autograd, zeros_like

    pairs = [(o, None if grad_outputs is None else grad_outputs[i]) for i, o in enumerate(outputs)
             if o.requires_grad]
    if not pairs or not inputs:
        return [zeros_like(x) for x in inputs]
    if any(is_batched(t) for t in (*outputs, *inputs, *(grad_outputs or ()))):
        return _batched_grad(pairs, inputs, retain_graph)
    res = autograd.grad([o for o, _ in pairs], inputs,
                        None if grad_outputs is None else [g for _, g in pairs],
                        retain_graph=retain_graph, create_graph=True, allow_unused=True)
    return [zeros_like(x) if r is None else r for r, x in zip(res, inputs)]


def _batched_grad(pairs, inputs, retain_graph):
    """``_autograd_grad`` inside vmap: the engine runs on the physical tensors (each example's part of the
    graph is independent of the others'), gradients come back with their input's batching."""
    from .. import autograd, ones_like, zeros_like
    from ._batched import match_levels, rewrap

    outs, gos = [], []
    for o, g in pairs:
        g = ones_like(o) if g is None else match_levels(g, o)
        outs.append(physical(o))
        gos.append(physical(g))
    res = autograd.grad(outs, [physical(x) for x in inputs], gos, retain_graph=retain_graph, create_graph=True,
                        allow_unused=True)
    return [zeros_like(x) if r is None else rewrap(r, x) for r, x in zip(res, inputs)]


def _normalize_argnums(argnums, nargs, api):
    if isinstance(argnums, int):
        if not -nargs <= argnums < nargs:
            raise RuntimeError(f"Got argnums={argnums}, but only {nargs} positional inputs")
        return argnums % nargs
    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError(f"{api}: argnums must be non-empty")
        for a in argnums:
            if not isinstance(a, int):
                raise RuntimeError(f"{api}: argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        out = tuple(_normalize_argnums(a, nargs, api) for a in argnums)
        if len(set(out)) != len(out):
            raise RuntimeError(f"{api}: argnums elements must be unique, got {argnums}")
        return out
    raise RuntimeError(f"{api}: argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def _wrap_args(args, argnums, level, api):
    """args with the ``argnums`` subtrees replaced by fresh aliases; returns
    (new args, flat aliases, their spec)."""
    args = list(args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    diff = tuple(args[i] for i in nums)
    leaves, spec = tree_flatten(diff)
    if not leaves:
        raise RuntimeError(f"{api}: Expected at least one Tensor to differentiate with respect to")
    wrapped = [level.add(x, api) for x in leaves]
    diff_wrapped = tree_unflatten(wrapped, spec)
    for i, v in zip(nums, diff_wrapped):
        args[i] = v
    return args, wrapped, spec


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """Like :func:`grad`, returning ``(gradient, value)``; with ``has_aux``,
    ``(gradient, (value, aux))`` as in PyTorch.

    Example::

        >>> import fabric
        >>> g, v = fabric.func.grad_and_value(lambda x: (x ** 2).sum())(fabric.tensor([1.0, 3.0]))
        >>> g, v
        (tensor([2., 6.]), tensor(10.))
    """
    api = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from .. import autograd

        T = _tensor_cls()
        nums = _normalize_argnums(argnums, len(args), "grad_and_value")
        level = _Level()
        with autograd.enable_grad():
            new_args, wrapped, spec = _wrap_args(args, nums, level, api)
            out = func(*new_args, **kwargs)
            out, aux = _split_aux(out, has_aux, api)
            if not isinstance(out, T):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                                   f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            grads = _autograd_grad([out], wrapped)
        grads = [level.lower(g) for g in grads]
        g = tree_unflatten(grads, spec)
        if isinstance(nums, int):
            g = g[0]
        value = level.lower(out)
        if has_aux:
            return g, (value, level.lower_tree(aux))
        return g, value

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of scalar-valued ``func`` with respect to the argument(s)
    ``argnums`` (an int or a tuple; each argument may be a nested tuple,
    list or dict of tensors).  ``has_aux``: ``func`` returns ``(output,
    aux)`` and the result is ``(gradient, aux)``.

    Example::

        >>> import fabric
        >>> fabric.func.grad(lambda x: x.sin().sum())(fabric.tensor([0.0, 1.0]))
        tensor([1.0000, 0.5403])
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = grad_and_value(func, argnums, has_aux)(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns one
    gradient per primal (a tuple).

    Example::

        >>> import fabric
        >>> out, fn = fabric.func.vjp(lambda x: x * 3, fabric.tensor([1.0, 2.0]))
        >>> fn(fabric.tensor([1.0, 10.0]))
        (tensor([ 3., 30.]),)
    """
    from .. import autograd

    T = _tensor_cls()
    level = _Level()
    leaves, spec = tree_flatten(primals)
    with autograd.enable_grad():
        wrapped = [level.add(x, "vjp(f, *primals)") for x in leaves]
        out = func(*tree_unflatten(wrapped, spec))
        out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
    flat_out, out_spec = tree_flatten(out)
    for o in flat_out:
        if not isinstance(o, T):
            raise RuntimeError(f"vjp(f, *primals): Expected f(*primals) to return only tensors, got unsupported "
                               f"type {type(o)}")

    def vjp_fn(*cotangents, retain_graph=True, create_graph=None):
        cot = cotangents[0] if len(cotangents) == 1 and not isinstance(out, T) else cotangents
        if isinstance(out, T):
            if len(cotangents) != 1:
                raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                                   f"outputs to the function. cotangents: {len(cotangents)} values, primal output: "
                                   "1 tensor")
            cot = cotangents[0]
        flat_cot, _ = tree_flatten(cot)
        if len(flat_cot) != len(flat_out):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {len(flat_cot)} tensors, primal output: "
                               f"{len(flat_out)} tensors")
        for c, o in zip(flat_cot, flat_out):
            if c.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and output[0] has "
                                   f"a shape of {o.shape}.")
        with autograd.enable_grad():
            grads = _autograd_grad(flat_out, wrapped, flat_cot)
        return tuple(tree_unflatten([level.lower(g) for g in grads], spec))

    lowered = level.lower_tree(out)
    if has_aux:
        return lowered, vjp_fn, level.lower_tree(aux)
    return lowered, vjp_fn


class _Linearized:
    """The double-vjp state of ``func`` at ``primals``: outputs, dummy
    cotangents ``u`` and ``g(u) = J^T u`` (kept as a graph)."""

    def __init__(self, func, primals, api, has_aux=False):
        from .. import autograd, ones_like

        T = _tensor_cls()
        self.level = level = _Level()
        leaves, self.spec = tree_flatten(tuple(primals))
        with autograd.enable_grad():
            self.wrapped = [level.add(x, api) for x in leaves]
            out = func(*tree_unflatten(self.wrapped, self.spec))
            out, self.aux = _split_aux(out, has_aux, api)
            self.out = out
            self.flat_out, self.out_spec = tree_flatten(out)
            for o in self.flat_out:
                if not isinstance(o, T):
                    raise RuntimeError(f"{api}: Expected f(*primals) to return only tensors, got unsupported type "
                                       f"{type(o)}")
            self.u = [level.add_leaf(ones_like(o).requires_grad_(True)) if o.is_floating_point() else None
                      for o in self.flat_out]
            live = [(o, u) for o, u in zip(self.flat_out, self.u) if u is not None]
            self.g = _autograd_grad([o for o, _ in live], self.wrapped, [u for _, u in live])

    def push(self, flat_tangents):
        """``J t`` for flat tangents ``t`` (one per input leaf): flat output tangents."""
        from .. import autograd, zeros_like

        us = [u for u in self.u if u is not None]
        with autograd.enable_grad():
            res = _autograd_grad(self.g, us, flat_tangents) if us else []
        it = iter(res)
        return [self.level.lower(next(it)) if u is not None else zeros_like(o) for o, u in zip(self.flat_out, self.u)]


def _check_tangents(primals, tangents, api):
    T = _tensor_cls()
    if not isinstance(primals, (tuple, list)):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    p_leaves, p_spec = tree_flatten(tuple(primals))
    t_leaves, t_spec = tree_flatten(tuple(tangents))
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(t, T):
            raise RuntimeError(f"{api}: Expected tangents to be Tensors, got {type(t)}")
        if p.shape != t.shape:
            raise RuntimeError(f"{api}: Expected primals and tangents to have the same shape, got "
                               f"{tuple(p.shape)} and {tuple(t.shape)}")
    return t_leaves


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product
    (computed by double vjp, see the module docstring).

    Example::

        >>> import fabric
        >>> fabric.func.jvp(lambda x: x ** 2, (fabric.tensor([1.0, 2.0]),), (fabric.tensor([1.0, 1.0]),))
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    api = "jvp(f, primals, tangents)"
    if strict:
        raise RuntimeError(f"{api}: strict=True is not supported.")
    flat_t = _check_tangents(primals, tangents, api)
    lin = _Linearized(func, primals, api, has_aux)
    out_t = tree_unflatten(lin.push(flat_t), lin.out_spec)
    out = lin.level.lower_tree(lin.out)
    if has_aux:
        return out, out_t, lin.level.lower_tree(lin.aux)
    return out, out_t


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the JVP at
    ``primals``; the graph is built once and reused by every call.

    Example::

        >>> import fabric
        >>> out, jfn = fabric.func.linearize(lambda x: x.exp(), fabric.tensor([0.0, 1.0]))
        >>> jfn(fabric.tensor([1.0, 2.0]))
        tensor([1.0000, 5.4366])
    """
    api = "linearize"
    lin = _Linearized(func, primals, api)

    def jvp_fn(*tangents):
        flat_t = _check_tangents(primals, tangents, api)
        return tree_unflatten(lin.push(flat_t), lin.out_spec)

    return lin.level.lower_tree(lin.out), jvp_fn


def _jac_structure(per_out, nums, arg_specs):
    """per_out[k]: flat jacobian blocks of output k over all input leaves; regroup as argnums says."""
    result = []
    for blocks in per_out:
        it = iter(blocks)
        groups = [tree_unflatten([next(it) for _ in range(n)], spec) for n, spec in arg_specs]
        result.append(groups[0] if isinstance(nums, int) else tuple(groups))
    return result


def _arg_specs(args, nums):
    specs = []
    for i in ((nums,) if isinstance(nums, int) else nums):
        leaves, spec = tree_flatten(args[i])
        specs.append((len(leaves), spec))
    return specs


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy: bool = False):
    """The Jacobian of ``func`` with respect to argument(s) ``argnums`` by
    reverse mode: one vjp per output element.  Each block has shape
    ``output.shape + input.shape``.

    Example::

        >>> import fabric
        >>> fabric.func.jacrev(lambda x: x.sin())(fabric.tensor([0.0, 1.0]))
        tensor([[1.0000, 0.0000],
                [0.0000, 0.5403]])
    """
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from .. import autograd, stack, zeros

        api = "jacrev(f, argnums)(*args)"
        nums = _normalize_argnums(argnums, len(args), "jacrev")
        level = _Level()
        with autograd.enable_grad():
            new_args, wrapped, _ = _wrap_args(args, nums, level, api)
            out = func(*new_args, **kwargs)
            out, aux = _split_aux(out, has_aux, "jacrev(f, ...)(*args)")
            flat_out, out_spec = tree_flatten(out)
            per_out = []
            for o in flat_out:
                n = o.numel()
                rows = []
                flat = o.reshape(-1)
                for k in range(n):
                    rows.append(_autograd_grad([flat[k]], wrapped))
                blocks = []
                for j, w in enumerate(wrapped):
                    if n:
                        b = stack([r[j] for r in rows]).reshape(tuple(o.shape) + tuple(w.shape))
                    else:
                        b = zeros(tuple(o.shape) + tuple(w.shape), dtype=w.dtype, device=w.device)
                    blocks.append(level.lower(b))
                per_out.append(blocks)
        res = tree_unflatten(_jac_structure(per_out, nums, _arg_specs(args, nums)), out_spec)
        if has_aux:
            return res, level.lower_tree(aux)
        return res

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` with respect to argument(s) ``argnums`` by
    forward products: one JVP per input element (double vjp, see the module
    docstring).  Same layout as :func:`jacrev`.

    Example::

        >>> import fabric
        >>> fabric.func.jacfwd(lambda x: x ** 2)(fabric.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from .. import stack, zeros, zeros_like

        nums = _normalize_argnums(argnums, len(args), "jacfwd")
        idx = (nums,) if isinstance(nums, int) else nums
        diff_leaves, diff_spec = tree_flatten(tuple(args[i] for i in idx))

        def f_diff(*leaves):
            a = list(args)
            for i, v in zip(idx, tree_unflatten(list(leaves), diff_spec)):
                a[i] = v
            return func(*a, **kwargs)

        lin = _Linearized(f_diff, diff_leaves, "jacfwd(f, argnums)(*args)", has_aux)
        cols = []  # per input leaf: list over its elements of flat output tangents
        for j, x in enumerate(diff_leaves):
            per_elem = []
            for k in range(x.numel()):
                t = [zeros_like(y) for y in diff_leaves]
                t[j] = zeros(x.numel(), dtype=x.dtype, device=x.device)
                t[j][k] = 1
                t[j] = t[j].reshape(x.shape)
                per_elem.append(lin.push(t))
            cols.append(per_elem)
        per_out = []
        for i, o in enumerate(lin.flat_out):
            blocks = []
            for j, x in enumerate(diff_leaves):
                if x.numel():
                    b = stack([c[i] for c in cols[j]], dim=-1).reshape(tuple(o.shape) + tuple(x.shape))
                else:
                    b = zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype, device=o.device)
                blocks.append(b)
            per_out.append(blocks)
        res = tree_unflatten(_jac_structure(per_out, nums, _arg_specs(args, nums)), lin.out_spec)
        if has_aux:
            return res, lin.level.lower_tree(lin.aux)
        return res

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``.

    Example::

        >>> import fabric
        >>> fabric.func.hessian(lambda x: (x ** 3).sum())(fabric.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
