"""RMSprop, Adagrad, Adadelta, Rprop and ASGD."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..backends import backend_of
from . import _functional as F
from .adam import _bump
from .optimizer import Optimizer, ParamsT, _grad_array, real_views

__all__ = ["RMSprop", "Adagrad", "Adadelta", "Rprop", "ASGD"]


def _check_lr(lr, **others):
    if lr < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    for name, v in others.items():
        if v < 0.0:
            raise ValueError(f"Invalid {name} value: {v}")


class RMSprop(Optimizer):
    """PyTorch's ``torch.optim.RMSprop`` (centered, momentum)."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr, epsilon=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        extra = {}
        if group["momentum"] > 0:
            extra["momentum_buffer"] = None
        if group["centered"]:
            extra["grad_avg"] = None
        for p in params:
            self._init_state(p, square_avg=None, **extra)
        xp = backend_of(params[0]._data).xp
        st = [self.state[p] for p in params]
        F.rmsprop(xp, real_views([p._data for p in params]), real_views([p._grad._data for p in params]),
                  real_views([s["square_avg"]._data for s in st]),
                  real_views([s["grad_avg"]._data for s in st]) if group["centered"] else None,
                  real_views([s["momentum_buffer"]._data for s in st]) if group["momentum"] > 0 else None,
                  group["lr"], group["alpha"], group["eps"], group["weight_decay"], group["momentum"],
                  group["centered"], group["maximize"])
        _bump(params, self.state)


class Adagrad(Optimizer):
    """PyTorch's ``torch.optim.Adagrad``; state is created at construction."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr, lr_decay=lr_decay, weight_decay=weight_decay,
                  initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, sum=group["initial_accumulator_value"])

    _sparse_grads = True

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if group["weight_decay"] != 0 and any(p._grad.is_sparse for p in params):
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        if not params:
            return
        for p in params:
            self._init_state(p, sum=group["initial_accumulator_value"])
        xp = backend_of(params[0]._data).xp
        for step, idx in self._steps(params):
            ps = [params[i] for i in idx]
            F.adagrad(xp, real_views([p._data for p in ps]),
                      real_views([_grad_array(p) for p in ps]), real_views([self.state[p]["sum"]._data for p in ps]),
                      step + 1, group["lr"], group["lr_decay"], group["weight_decay"], group["eps"],
                      group["maximize"])
            _bump(ps, self.state)


class Adadelta(Optimizer):
    """PyTorch's ``torch.optim.Adadelta``."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr, epsilon=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        for p in params:
            self._init_state(p, square_avg=None, acc_delta=None)
        xp = backend_of(params[0]._data).xp
        st = [self.state[p] for p in params]
        F.adadelta(xp, real_views([p._data for p in params]), real_views([p._grad._data for p in params]),
                   real_views([s["square_avg"]._data for s in st]),
                              real_views([s["acc_delta"]._data for s in st]), group["lr"],
                   group["rho"], group["eps"], group["weight_decay"], group["maximize"])
        _bump(params, self.state)


class Rprop(Optimizer):
    """PyTorch's ``torch.optim.Rprop`` (sign-based steps with adaptive sizes)."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        for p in params:  # complex: both parts start at lr (two independent real numbers, as PyTorch)
            lr = group["lr"]
            self._init_state(p, prev=None, step_size=complex(lr, lr) if p._data.dtype.kind == "c" else lr)
        xp = backend_of(params[0]._data).xp
        st = [self.state[p] for p in params]
        etaminus, etaplus = group["etas"]
        smin, smax = group["step_sizes"]
        F.rprop(xp, real_views([p._data for p in params]), real_views([p._grad._data for p in params]),
                real_views([s["prev"]._data for s in st]),
                real_views([s["step_size"]._data for s in st]), etaminus, etaplus, smin, smax, group["maximize"])
        _bump(params, self.state)


class ASGD(Optimizer):
    """Averaged SGD, PyTorch's ``torch.optim.ASGD`` (state: eta, mu, ax)."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        params = self._params_with_grad(group)
        if not params:
            return
        from .._tensor import Tensor

        for p in params:
            st = self.state[p]
            if not st:
                self._init_state(p)
                xp = backend_of(p._data).xp
                st["eta"] = Tensor._make(xp.asarray(group["lr"], dtype=np.float32), False)
                st["mu"] = Tensor._make(xp.ones((), np.float32), False)
                st["ax"] = Tensor._make(xp.zeros_like(p._data), False)
        xp = backend_of(params[0]._data).xp
        buckets = {}
        for i, p in enumerate(params):
            st = self.state[p]
            key = (float(st["step"]._data), float(st["eta"]._data), float(st["mu"]._data))
            buckets.setdefault(key, []).append(i)
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        for (step, eta, mu), idx in buckets.items():
            ps = [params[i] for i in idx]
            F.asgd(xp, real_views([p._data for p in ps]),
                   real_views([p._grad._data for p in ps]), real_views([self.state[p]["ax"]._data for p in ps]),
                   eta, mu, lr, lambd, alpha, group["weight_decay"], group["maximize"])
            _bump(ps, self.state)
            step += 1
            new_eta = lr / ((1 + lambd * lr * step) ** alpha)
            new_mu = 1 / max(1, step - t0)
            for p in ps:
                self.state[p]["eta"]._data[...] = new_eta
                self.state[p]["mu"]._data[...] = new_mu
