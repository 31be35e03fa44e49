"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``,
``get_total_norm``, ``clip_grads_with_norm_``.

Gradients are grouped by (device, dtype); each group's norms are computed
in one pass over the arrays and the scaling is applied in place.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> p = nn.Parameter(fabric.ones(4))
    >>> p.grad = fabric.full((4,), 3.0)
    >>> nn.utils.clip_grad_norm_([p], max_norm=1.0)
    tensor(6.)
    >>> round(float((p.grad * p.grad).sum()) ** 0.5, 4)
    1.0
"""
from __future__ import annotations

import math
import types
import warnings

import numpy as np

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...backends import backend_of
from ...backends.fused import acc_dtype
from ...ops._util import xp_of

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = list(parameters)
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    return parameters


def _norm_array(xp, a, p):
    """``||a||_p`` of a whole array, accumulated in float32 at least (a 0-d array of ``a``'s dtype)."""
    a = a.astype(acc_dtype(a.dtype), copy=False).reshape(-1)
    if p == 2.0:
        r = xp.sqrt(xp.dot(a, a)) if a.size else xp.zeros((), a.dtype)
    elif p == math.inf:
        r = xp.abs(a).max() if a.size else xp.zeros((), a.dtype)
    elif p == -math.inf:
        r = xp.abs(a).min() if a.size else xp.asarray(np.inf, a.dtype)
    elif p == 0.0:
        r = (a != 0).sum().astype(a.dtype)
    elif p == 1.0:
        r = xp.abs(a).sum()
    else:
        r = (xp.abs(a) ** p).sum() ** (1.0 / p)
    return xp.asarray(r, dtype=a.dtype)


def _like(arr, ref):
    """``arr`` on ``ref``'s device."""
    if arr.__class__ is ref.__class__ and getattr(arr, "device", None) == getattr(ref, "device", None):
        return arr
    host = backend_of(arr).to_numpy(arr)
    return backend_of(ref).from_numpy(np.asarray(host), getattr(getattr(ref, "device", None), "id", 0))


def _groups(tensors):
    groups = {}
    for t in tensors:
        d = t._data
        key = (d.__class__, getattr(getattr(d, "device", None), "id", -1), d.dtype)
        groups.setdefault(key, []).append(t)
    return groups


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """The ``norm_type``-norm of the norms of ``tensors`` (as if they were
    concatenated into one vector); a 0-d tensor."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        from ..._creation import tensor

        return tensor(0.0)
    first = tensors[0]
    norms = []
    for group in _groups(tensors).values():
        xp = xp_of(group[0]._data)
        for t in group:
            norms.append(_like(_norm_array(xp, t._data, norm_type), first._data))
    xp = xp_of(first._data)
    dt = np.result_type(*[n.dtype for n in norms])
    total = _norm_array(xp, xp.stack([n.astype(dt) for n in norms]), norm_type).astype(dt)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return Tensor._make(total, False)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    tn = total_norm._data
    coef = float(max_norm) / (tn + tn.dtype.type(1e-6))
    coef = xp_of(tn).minimum(coef, tn.dtype.type(1.0))
    with no_grad():
        for group in _groups(grads).values():
            c = _like(coef, group[0]._data).astype(group[0]._data.dtype)
            for g in group:
                g._data *= c
                g._bump_version()


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    """Rescale the gradients of ``parameters`` in place so that their total
    ``norm_type``-norm (``inf`` for the max-norm) is at most ``max_norm``;
    returns the total norm before clipping."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]``."""
    parameters = _as_list(parameters)
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    with no_grad():
        for group in _groups(grads).values():
            xp = xp_of(group[0]._data)
            for g in group:
                xp.clip(g._data, -clip_value, clip_value, out=g._data)
                g._bump_version()
