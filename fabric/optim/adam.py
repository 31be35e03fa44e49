"""The Adam family: Adam, AdamW, Adamax, NAdam, RAdam."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..backends import backend_of
from . import _functional as F
from .optimizer import Optimizer, ParamsT, real_views

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam"]


def _check(lr, eps, betas, weight_decay):
    if lr < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps < 0.0:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if weight_decay < 0.0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _bump(params, state):
    """Increment every parameter's float32 step counter; mark params changed."""
    for p in params:
        state[p]["step"]._data += np.float32(1)
        p._bump_version()


class Adam(Optimizer):
    """PyTorch's ``torch.optim.Adam`` (``decoupled_weight_decay=True`` is AdamW).

    Example::

        >>> import fabric
        >>> w = fabric.nn.Parameter(fabric.ones(3))
        >>> opt = fabric.optim.Adam([w], lr=1e-2)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        amsgrad = group["amsgrad"]
        for p in params:
            if amsgrad:
                self._init_state(p, exp_avg=None, exp_avg_sq=None, max_exp_avg_sq=None)
            else:
                self._init_state(p, exp_avg=None, exp_avg_sq=None)
        backend = backend_of(params[0]._data)
        beta1, beta2 = group["betas"]
        for step, idx in self._steps(params):
            ps = [params[i] for i in idx]
            st = [self.state[p] for p in ps]
            backend.adam_step(real_views([p._data for p in ps]), real_views([p._grad._data for p in ps]),
                              real_views([s["exp_avg"]._data for s in st]),
                              real_views([s["exp_avg_sq"]._data for s in st]),
                              real_views([s["max_exp_avg_sq"]._data for s in st]) if amsgrad else None,
                              step + 1, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                              weight_decay=group["weight_decay"], amsgrad=amsgrad, maximize=group["maximize"],
                              decoupled_weight_decay=group["decoupled_weight_decay"])
            _bump(ps, self.state)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2), PyTorch's ``torch.optim.AdamW``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)


class Adamax(Optimizer):
    """Adam with the infinity norm, PyTorch's ``torch.optim.Adamax``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        for p in params:
            self._init_state(p, exp_avg=None, exp_inf=None)
        xp = backend_of(params[0]._data).xp
        beta1, beta2 = group["betas"]
        for step, idx in self._steps(params):
            ps = [params[i] for i in idx]
            st = [self.state[p] for p in ps]
            F.adamax(xp, real_views([p._data for p in ps]), real_views([p._grad._data for p in ps]),
                     real_views([s["exp_avg"]._data for s in st]),
                     real_views([s["exp_inf"]._data for s in st]), step + 1, group["lr"], beta1, beta2, group["eps"],
                     group["weight_decay"], group["maximize"])
            _bump(ps, self.state)


class NAdam(Optimizer):
    """Adam with Nesterov momentum, PyTorch's ``torch.optim.NAdam``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check(lr, eps, betas, weight_decay)
        if momentum_decay < 0.0:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        for p in params:
            st = self.state[p]
            if not st:
                xp = backend_of(p._data).xp
                st["step"] = Tensor._make(xp.zeros((), np.float32), False)
                st["mu_product"] = Tensor._make(xp.ones((), np.float32), False)
                st["exp_avg"] = Tensor._make(xp.zeros_like(p._data), False)
                st["exp_avg_sq"] = Tensor._make(xp.zeros_like(p._data), False)
        xp = backend_of(params[0]._data).xp
        beta1, beta2 = group["betas"]
        for step, idx in self._steps(params):
            ps = [params[i] for i in idx]
            st = [self.state[p] for p in ps]
            step1 = step + 1
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step1 * group["momentum_decay"]))
            # mu_product is a float32 running product per parameter (all equal within a bucket)
            for s in st:
                s["mu_product"]._data *= np.float32(mu)
            mu_product = float(st[0]["mu_product"]._data)
            F.nadam(xp, real_views([p._data for p in ps]), real_views([p._grad._data for p in ps]),
                    real_views([s["exp_avg"]._data for s in st]),
                    real_views([s["exp_avg_sq"]._data for s in st]), mu_product, step1, group["lr"], beta1, beta2,
                    group["eps"], group["weight_decay"], group["momentum_decay"], group["decoupled_weight_decay"],
                    group["maximize"])
            _bump(ps, self.state)


class RAdam(Optimizer):
    """Rectified Adam, PyTorch's ``torch.optim.RAdam``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        for p in params:
            self._init_state(p, exp_avg=None, exp_avg_sq=None)
        xp = backend_of(params[0]._data).xp
        beta1, beta2 = group["betas"]
        for step, idx in self._steps(params):
            ps = [params[i] for i in idx]
            st = [self.state[p] for p in ps]
            F.radam(xp, real_views([p._data for p in ps]), real_views([p._grad._data for p in ps]),
                    real_views([s["exp_avg"]._data for s in st]),
                    real_views([s["exp_avg_sq"]._data for s in st]), step + 1, group["lr"], beta1, beta2, group["eps"],
                    group["weight_decay"], group["decoupled_weight_decay"], group["maximize"])
            _bump(ps, self.state)
