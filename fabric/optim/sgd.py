"""Stochastic gradient descent (with momentum, dampening, Nesterov)."""
from __future__ import annotations

from .._tensor import Tensor
from ..backends import backend_of
from .optimizer import Optimizer, ParamsT, _grad_array

__all__ = ["SGD"]


class SGD(Optimizer):
    """PyTorch's ``torch.optim.SGD``; one fused update per parameter group.

    Example::

        >>> import fabric
        >>> w = fabric.nn.Parameter(fabric.ones(1))
        >>> opt = fabric.optim.SGD([w], lr=0.1, momentum=0.9)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    _sparse_grads = True

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        momentum = group["momentum"]
        backend = backend_of(params[0]._data)
        fresh, old = [], []
        for p in params:
            (old if self.state[p].get("momentum_buffer") is not None else fresh).append(p)
        for batch, first in ((fresh, True), (old, False)):
            if not batch:
                continue
            bufs = None
            if momentum != 0:
                bufs = []
                for p in batch:
                    st = self.state[p]
                    if first:
                        st["momentum_buffer"] = Tensor._make(backend.xp.empty_like(p._data), False)
                    bufs.append(st["momentum_buffer"]._data)
            backend.sgd_step([p._data for p in batch], [_grad_array(p) for p in batch], bufs, lr=group["lr"],
                             momentum=momentum, dampening=group["dampening"], weight_decay=group["weight_decay"],
                             nesterov=group["nesterov"], maximize=group["maximize"], first_step=first)
            for p in batch:
                p._bump_version()
