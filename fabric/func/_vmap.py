"""``vmap``: map a function over a batch dimension of its inputs.

``func`` runs once on :class:`~fabric.func._batched.BatchedTensor` inputs
(one example's shape, the whole batch underneath); each op dispatches to
its batching rule (``OpDecl.vmap`` in the op registry, or the table in
``_rules.py``), an op without one runs per example inside that call (the
per-op fallback), and when ``func`` reaches something that cannot see a
batch (``.item()``, data-dependent Python, a function bound before the
vmap started) the batched call is abandoned and ``func`` runs once per
example, its results stacked (the whole-function fallback, which also serves
``randomness="different"``).  ``fabric.func.vmap_fallback_ops()`` lists the
registered ops without a rule.
"""
from __future__ import annotations

import functools

from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap", "vmap_fallback_ops"]


def vmap_fallback_ops() -> list[str]:
    """The ops without a batching rule: the registered ones and the public functions of ``fabric.ops``,
    ``nn.functional``, ``linalg``, ``special`` and ``fft`` (vmap runs them once per example, inside the batched
    call).

    Example::

        >>> import fabric
        >>> ops = fabric.func.vmap_fallback_ops()
        >>> "linalg.det" in ops, "exp" in ops, "nn.functional.conv2d" in ops
        (True, False, False)
    """
    from ..ops._registry import REGISTRY
    from ._batched import public_ops, rule_for

    names = {k for k, d in REGISTRY.items() if d.vmap is None}
    names.update(k for k in public_ops() if rule_for(k) is None)
    return sorted(names)


def _rng_state():
    from .. import random

    return random.get_rng_state()


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Vectorize ``func`` over dimension ``in_dims`` of its inputs (an int, or
    None for an unmapped input, or a nested tuple/list/dict matching the
    arguments), returning outputs batched along ``out_dims``.

    ``randomness``: ``"error"`` (default) raises if ``func`` draws random
    numbers, ``"different"`` gives every example its own draws, ``"same"``
    gives every example the same draws.

    Example::

        >>> import fabric
        >>> x, w = fabric.ones(3, 2), fabric.tensor([1.0, 2.0])
        >>> fabric.func.vmap(lambda v, w: (v * w).sum(), in_dims=(0, None))(x, w)
        tensor([3., 3., 3.])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from .._tensor import Tensor

        if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
        if len(args) == 0:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                             "trying to vmap over a function with no inputs. The latter is unsupported.")
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has structure {len(in_dims)} but inputs has structure "
                             f"{len(args)}.")
        leaves, spec = tree_flatten(args)
        dims = broadcast_prefix(in_dims if isinstance(in_dims, tuple) else in_dims, args, "in_dims")
        sizes = []
        norm_dims = []
        for x, d in zip(leaves, dims):
            if d is None:
                norm_dims.append(None)
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims must be int or None, "
                                 f"got {d!r}")
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                                 f"but the input is of type {type(x)}. We cannot vmap over non-Tensor arguments, "
                                 "please use None as the respective in_dim")
            if not -x.dim() <= d < x.dim() or x.dim() == 0:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                                 f"but that input is a Tensor of dimensionality {x.dim()} so expected in_dim to "
                                 f"satisfy -{x.dim()} <= in_dim < {x.dim()}.")
            d %= x.dim()
            norm_dims.append(d)
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be mapped "
                             "(in_dim not None) and be a Tensor")
        if len(set(sizes)) != 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        batch = sizes[0]
        if batch == 0:
            raise NotImplementedError("fabric.func.vmap over a batch of size 0 is not supported (the per-example "
                                      "fallback has no example to run)")
        if randomness == "different":   # independent draws for random factories need one call per example
            return _per_example(func, leaves, norm_dims, spec, kwargs, batch, randomness, out_dims, name)
        if chunk_size is None or chunk_size >= batch:
            return _run_batched(func, leaves, norm_dims, spec, kwargs, batch, randomness, out_dims, name)
        from .. import cat

        parts = []
        for lo in range(0, batch, chunk_size):
            n = min(chunk_size, batch - lo)
            chunk = [x if d is None else x.narrow(d, lo, n) for x, d in zip(leaves, norm_dims)]
            parts.append(_run_batched(func, chunk, norm_dims, spec, kwargs, n, randomness, out_dims, name))
        flat0, ospec = tree_flatten(parts[0])
        odims = broadcast_prefix(out_dims, parts[0], "out_dims")
        merged = []
        for k, d in enumerate(odims):
            vals = [tree_flatten(p)[0][k] for p in parts]
            merged.append(vals[0] if d is None else cat(vals, dim=d))
        return tree_unflatten(merged, ospec)

    return wrapper


def _run_batched(func, leaves, dims, spec, kwargs, batch, randomness, out_dims, name):
    """One call of ``func`` on BatchedTensors; per example if it reaches something unbatchable."""
    from . import _batched as B

    start = _rng_state()
    level = B.new_level(batch, randomness)
    B.patch(func)
    try:
        inputs = [x if d is None else B.make(x.movedim(d, 0) if d else x, level) for x, d in zip(leaves, dims)]
        out = func(*tree_unflatten(inputs, spec), **kwargs)
        result = _unbatch_outputs(out, level, out_dims, name)
    except B.Unbatchable:
        result = None
    finally:
        B.pop_level(level)
        B.unpatch()
    if result is None:
        B.calls["per_example"] += 1
        _set_rng_state(start)
        return _per_example(func, leaves, dims, spec, kwargs, batch, randomness, out_dims, name)
    if randomness == "error" and not _rng_state().equal(start):
        raise RuntimeError(_RANDOM_ERROR)
    return result


_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _unbatch_outputs(out, level, out_dims, name):
    """``func``'s outputs with this level's batch moved to ``out_dims`` (unbatched outputs are expanded)."""
    from .._tensor import Tensor
    from ._batched import BatchedTensor

    flat, spec = tree_flatten(out)
    try:
        odims = broadcast_prefix(out_dims, out, "out_dims")
    except ValueError:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         "structure of `outputs`.") from None
    res = []
    for v, d in zip(flat, odims):
        if not isinstance(v, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(v)}. Did you "
                             "mean to set out_dims= to None for output?")
        mine = v.__class__ is BatchedTensor and v._level is level
        if d is None:
            if mine:
                raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): can not return a "
                                 "BatchedTensor when out_dim is None")
            res.append(v)
            continue
        nd = v.dim() + 1
        if not -nd <= d < nd:
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): Dimension out of range (expected "
                             f"to be in range of [{-nd}, {nd - 1}], but got {d})")
        d %= nd
        if mine:
            res.append(v._value.movedim(0, d) if d else v._value)
        else:
            res.append(v.unsqueeze(d).expand(tuple(v.shape[:d]) + (level.size,) + tuple(v.shape[d:])))
    return tree_unflatten(res, spec)


def _per_example(func, leaves, dims, spec, kwargs, batch, randomness, out_dims, name):
    """The whole-function fallback: ``func`` once per example, results stacked."""
    start = _rng_state() if randomness != "different" else None
    results = []
    for i in range(batch):
        if randomness == "same":
            _set_rng_state(start)
        sliced = [x if d is None else x.select(d, i) for x, d in zip(leaves, dims)]
        out = func(*tree_unflatten(sliced, spec), **kwargs)
        if randomness == "error" and not _rng_state().equal(start):
            raise RuntimeError(_RANDOM_ERROR)
        results.append(out)
    return _stack_outputs(results, out_dims, name)


def _set_rng_state(state):
    from .. import random

    random.set_rng_state(state)


def _stack_outputs(results, out_dims, name):
    from .. import stack
    from .._tensor import Tensor

    flat0, spec = tree_flatten(results[0])
    per_leaf = [[] for _ in flat0]
    for r in results:
        flat, s = tree_flatten(r)
        if len(flat) != len(flat0):
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structure for different "
                             "examples")
        for k, v in enumerate(flat):
            per_leaf[k].append(v)
    try:
        odims = broadcast_prefix(out_dims, results[0], "out_dims")
    except ValueError:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         "structure of `outputs`.") from None
    out = []
    for vals, d in zip(per_leaf, odims):
        v0 = vals[0]
        if not isinstance(v0, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(v0)}. Did you "
                             "mean to set out_dims= to None for output?")
        if d is None:
            out.append(v0)
            continue
        nd = v0.dim() + 1
        if not -nd <= d < nd:
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): Dimension out of range (expected "
                             f"to be in range of [{-nd}, {nd - 1}], but got {d})")
        out.append(stack(vals, dim=d))
    return tree_unflatten(out, spec)
