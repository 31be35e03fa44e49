"""Helpers shared by the distributions (``torch.distributions.utils``).

Example::

    >>> import fabric
    >>> from fabric.distributions.utils import broadcast_all, probs_to_logits
    >>> [t.shape for t in broadcast_all(fabric.zeros(2, 1), 1.0)]
    [fabric.Size([2, 1]), fabric.Size([2, 1])]
    >>> probs_to_logits(fabric.tensor([0.5]), is_binary=True)
    tensor([0.])
"""
from __future__ import annotations

import numbers
from functools import update_wrapper
from typing import Any

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number) and not hasattr(v, "dim")


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers become tensors of the first
    tensor's dtype and device (or of the default dtype if all are numbers)."""
    from .. import Tensor, broadcast_tensors, get_default_dtype, tensor

    if not all(isinstance(v, Tensor) or _is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        options = {"dtype": get_default_dtype()}
        for v in values:
            if isinstance(v, Tensor):
                options = {"dtype": v.dtype, "device": v.device}
                break
        values = [v if isinstance(v, Tensor) else tensor(v, **options) for v in values]
    return broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    """``torch.empty(shape).normal_()``: the stream Normal/MultivariateNormal.rsample draw."""
    from .. import empty

    return empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim: int):
    """Sum out the ``dim`` rightmost dims of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Sigmoid of binary logits, or softmax over the last dim."""
    from .. import sigmoid, softmax

    if is_binary:
        return sigmoid(logits)
    return softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp into ``[eps, 1 - eps]`` for the dtype's machine epsilon."""
    from .. import finfo

    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Log-odds (binary) or log-probabilities of clamped ``probs``."""
    from .. import log, log1p

    ps_clamped = clamp_probs(probs)
    if is_binary:
        return log(ps_clamped) - log1p(-ps_clamped)
    return log(ps_clamped)


class lazy_property:
    """A property computed on first access (with grad enabled) and then cached as an
    instance attribute, as PyTorch's ``probs``/``logits`` are."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None) -> Any:
        if instance is None:
            return self
        from ..autograd import enable_grad

        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _host_rng(device=None):
    """A NumPy Generator seeded from fabric's default CPU stream, for the samplers
    PyTorch implements natively (gamma, binomial): ``manual_seed`` makes them
    reproducible, but their draws differ from PyTorch's."""
    import numpy as np

    from .. import randint

    seed = randint(0, 2 ** 62, (2,)).tolist()
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))


def _to_host(t):
    return t.detach()._to_host_numpy()


def _from_host(arr, like):
    """A no-grad tensor holding ``arr`` cast to ``like``'s dtype, on its device."""
    from .. import as_tensor

    return as_tensor(arr.astype(like._data.dtype, copy=False), device=like.device)
