"""``parameters_to_vector`` / ``vector_to_parameters``.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> lin = nn.Linear(2, 3)
    >>> v = nn.utils.parameters_to_vector(lin.parameters())
    >>> v.shape
    fabric.Size([9])
    >>> nn.utils.vector_to_parameters(fabric.zeros(9), lin.parameters())
    >>> float(lin.weight.sum())
    0.0
"""
from __future__ import annotations

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, old):
    dev = param.device
    if old is not None and dev != old:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return dev


def parameters_to_vector(parameters):
    """Flatten and concatenate ``parameters`` into one 1-D tensor (differentiable)."""
    from ...ops.join import cat

    dev = None
    vec = []
    for p in parameters:
        dev = _check_same_device(p, dev)
        vec.append(p.reshape(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of ``vec`` into ``parameters`` (the parameters
    then share ``vec``'s memory, as in PyTorch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    dev = None
    pointer = 0
    data = vec._data
    for p in parameters:
        dev = _check_same_device(p, dev)
        n = p.numel()
        p._data = data[pointer:pointer + n].reshape(p._data.shape)
        pointer += n
