"""Stochastic Weight Averaging and EMA (PyTorch's ``torch.optim.swa_utils``).

:class:`AveragedModel` keeps a copy of a model whose parameters are a running
average (SWA) or an exponential moving average (EMA) of the model's;
:class:`SWALR` anneals the learning rate to a constant SWA value;
:func:`update_bn` recomputes BatchNorm statistics for the averaged weights.
The update formulas are PyTorch's CPU ones, so the numbers agree bit for bit.

Example::

    >>> import fabric
    >>> from fabric.optim.swa_utils import AveragedModel, SWALR
    >>> model = fabric.nn.Linear(2, 1)
    >>> swa_model = AveragedModel(model)
    >>> opt = fabric.optim.SGD(model.parameters(), lr=1.0)
    >>> sched = SWALR(opt, swa_lr=0.5, anneal_epochs=2)
    >>> for _ in range(3):
    ...     opt.step(); swa_model.update_parameters(model); sched.step()
    >>> int(swa_model.n_averaged), sched.get_last_lr()
    (3, [0.5])
"""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

from .. import _creation
from .. import _dtype as D
from .._progress import progress
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def _is_float_or_complex(t):
    return t._data.dtype.kind in "fc"


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In-place EMA over lists of parameters: ``ema = lerp(ema, current, 1 - decay)``.

    Example::

        >>> import fabric
        >>> ema, cur = [fabric.zeros(2)], [fabric.ones(2)]
        >>> get_ema_multi_avg_fn(0.75)(ema, cur, 1)
        >>> ema[0]
        tensor([0.2500, 0.2500])
    """
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if _is_float_or_complex(ema_param_list[0]):
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In-place equal-weight average over lists of parameters:
    ``avg = lerp(avg, current, 1 / (num_averaged + 1))``.

    Example::

        >>> import fabric
        >>> avg, cur = [fabric.zeros(2)], [fabric.ones(2)]
        >>> get_swa_multi_avg_fn()(avg, cur, fabric.tensor(3))
        >>> avg[0]
        tensor([0.2500, 0.2500])
    """

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if _is_float_or_complex(averaged_param_list[0]):
            weight = 1 / (num_averaged + 1)
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, weight)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                diff = p_model - p_avg
                if isinstance(num_averaged, Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """EMA of one parameter: returns ``decay * ema + (1 - decay) * current``.

    Example::

        >>> import fabric
        >>> get_ema_avg_fn(0.5)(fabric.zeros(1), fabric.ones(1), 1)
        tensor([0.5000])
    """
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """Equal-weight average of one parameter: returns
    ``avg + (current - avg) / (num_averaged + 1)``.

    Example::

        >>> import fabric
        >>> get_swa_avg_fn()(fabric.zeros(1), fabric.ones(1), 1)
        tensor([0.5000])
    """

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(avg_list, model_list):
    groups = {}
    for a, m in zip(avg_list, model_list):
        lists = groups.setdefault((a.device, a.dtype), ([], []))
        lists[0].append(a)
        lists[1].append(m)
    return groups


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters (and, with ``use_buffers``,
    buffers) hold a running average of ``model``'s, updated by
    :meth:`update_parameters`; equal weights (SWA) unless ``avg_fn`` (one
    tensor at a time, returns the new value) or ``multi_avg_fn`` (lists,
    in place) says otherwise.  ``n_averaged`` (an int64 buffer) counts the
    updates; the first update copies the model's values.

    Example::

        >>> import fabric
        >>> model = fabric.nn.Linear(2, 1)
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
        >>> ema.update_parameters(model)
        >>> bool((ema.module.weight == model.weight).all())
        True
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _creation.tensor(0, dtype=D.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model) -> None:
        """Fold ``model``'s current parameters into the average."""
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param = self.parameters()
            model_param = model.parameters()
        self_detached, model_detached = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            self_detached.append(p_averaged.detach())
            model_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                for (device, _), (self_params, model_params) in _group_by_device_and_dtype(
                        self_detached, model_detached).items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn:
                        self.multi_avg_fn(self_params, model_params, n_averaged)
                    else:
                        # PyTorch uses the per-tensor formula where it has no foreach kernels (CPU)
                        avg_fn = get_swa_avg_fn()
                        for p_averaged, p_model in zip(self_params, model_params):
                            p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
            else:
                for p_averaged, p_model in zip(self_detached, model_detached):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, n_averaged))
        if not self.use_buffers:
            # buffers are not averaged: keep them in sync with the source model
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass
    over ``loader`` (cumulative averages, ``momentum=None``).  Each batch is
    a tensor or a list/tuple whose first element is the input.

    Example::

        >>> import fabric
        >>> model = fabric.nn.Sequential(fabric.nn.Linear(2, 2), fabric.nn.BatchNorm1d(2))
        >>> update_bn([fabric.ones(4, 2)], model)
        >>> int(model[1].num_batches_tracked)
        1
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in progress(loader, desc="update_bn"):
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module, momentum in momenta.items():
        bn_module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs``
    steps (``"cos"`` or ``"linear"``), then hold it there.

    Example::

        >>> import fabric
        >>> opt = fabric.optim.SGD([fabric.nn.Parameter(fabric.zeros(1))], lr=1.0)
        >>> sched = SWALR(opt, swa_lr=0.0, anneal_epochs=2, anneal_strategy="linear")
        >>> [round(g["lr"], 4) for g in opt.param_groups]
        [1.0]
        >>> opt.step(); sched.step(); sched.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = [v.clone() if isinstance(v, Tensor) else v for v in _per_group("swa_lr", optimizer, swa_lr)]
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._in_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
