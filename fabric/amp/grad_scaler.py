"""``GradScaler``: dynamic loss scaling for float16 training (PyTorch's ``torch.amp.grad_scaler``).

Works with CPU and CUDA tensors; the scale and growth tracker are 0-d tensors
on the device of the first scaled output, updated exactly as PyTorch's
``_amp_update_scale_`` (float32 scale, int32 tracker).

Example::

    >>> import fabric
    >>> model = fabric.nn.Linear(2, 1)
    >>> opt = fabric.optim.SGD(model.parameters(), lr=0.1)
    >>> scaler = fabric.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)
    >>> scaler.scale(model(fabric.ones(3, 2)).sum()).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
    >>> scaler.get_scale()
    8.0
"""
from __future__ import annotations

import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor

__all__ = ["GradScaler", "OptState"]


def _full(value, dtype, device):
    from .._creation import full

    return full((), value, dtype=dtype, device=device)


class _MultiDeviceReplicator:
    """Lazily serves copies of a tensor to requested devices (cached per device)."""

    def __init__(self, master_tensor: Tensor) -> None:
        self.master = master_tensor
        self._per_device_tensors: dict = {}

    def get(self, device) -> Tensor:
        retval = self._per_device_tensors.get(device, None)
        if retval is None:
            retval = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = retval
        return retval


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _non_finite_check_and_unscale_(grads, found_inf: Tensor, inv_scale: Tensor) -> None:
    """PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``: ``found_inf = 1`` if any gradient holds an inf
    or NaN; every gradient is multiplied by ``inv_scale`` in place (also when non-finite)."""
    from ..autograd.grad_mode import no_grad
    from ..backends import backend_of

    with no_grad():
        for g in grads:
            x = g._data
            if not bool(backend_of(x).xp.isfinite(x).all()):
                found_inf.fill_(1.0)
            g.mul_(inv_scale)


def _update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor, growth_factor: float,
                   backoff_factor: float, growth_interval: int) -> None:
    """PyTorch's ``_amp_update_scale_``, in place on the 0-d ``scale`` (float32) and ``growth_tracker``
    (int32)."""
    sc, gt = scale._data, growth_tracker._data
    if float(found_inf._data) != 0.0:
        sc[...] = sc * np.float32(backoff_factor)
        gt[...] = 0
        return
    successful = int(gt) + 1
    if successful == growth_interval:
        new_scale = np.float32(float(sc) * growth_factor)
        if np.isfinite(new_scale):
            sc[...] = new_scale
        gt[...] = 0
    else:
        gt[...] = successful


class GradScaler:
    """Scales the loss so float16 gradients do not underflow, unscales before the optimizer step, skips steps
    whose gradients hold inf/NaN and adapts the scale (``backoff_factor`` after a skipped step,
    ``growth_factor`` after ``growth_interval`` clean steps in a row).

    ``device`` is "cuda" (default; without a usable GPU the scaler warns and disables itself, as PyTorch
    does) or "cpu".  ``enabled=False`` makes every method a pass-through: ``scale`` returns its input,
    ``step`` calls ``optimizer.step``, ``get_scale`` is 1.0 and ``state_dict`` is empty.

    Example::

        >>> import fabric
        >>> scaler = fabric.amp.GradScaler("cpu")
        >>> scaler.scale(fabric.tensor(1.0))
        tensor(65536.)
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda":
            from .. import cuda

            if enabled and not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = _full(self._init_scale, D.float32, dev)
        self._growth_tracker = _full(self._init_growth_tracker, D.int32, dev)

    def scale(self, outputs):
        """Multiply a tensor (or an iterable of tensors, nested) by the scale factor; returned unchanged when
        the scaler is disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        stash: list[_MultiDeviceReplicator] = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if len(stash) == 0:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool):
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        per_device_and_dtype_grads: dict = defaultdict(lambda: defaultdict(list))
        for group in optimizer.param_groups:
            for param in group["params"]:
                if not isinstance(param, Tensor):
                    raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                if param.grad is None:
                    continue
                if (not allow_fp16) and param.grad.dtype == D.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                to_unscale = param.grad
                per_device_and_dtype_grads[to_unscale.device][to_unscale.dtype].append(to_unscale)
        for device, per_dtype_grads in per_device_and_dtype_grads.items():
            for grads in per_dtype_grads.values():
                _non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                               per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale (optional; ``step`` does it otherwise), e.g. before
        gradient clipping.  Once per optimizer between ``update`` calls, before ``step``."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in double, then rounded to float32 (as PyTorch)
        inv_scale = _full(float(np.float32(1.0 / float(self._scale._data))), D.float32, self._scale.device)
        found_inf = _full(0.0, D.float32, self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        retval = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer, *args, **kwargs):
        """Unscale the gradients (unless ``unscale_`` ran) and call ``optimizer.step(*args, **kwargs)`` unless
        they hold inf/NaN; returns what ``optimizer.step`` returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            # the optimizer unscales and skips by itself, reading grad_scale / found_inf
            kwargs_ = kwargs
            has_grad_scaler_kwarg = "grad_scaler" in inspect.signature(optimizer.step).parameters
            if has_grad_scaler_kwarg:
                warnings.warn("GradScaler is going to stop passing itself as a keyword argument to the passed "
                              "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                              "`found_inf: Tensor` to the passed optimizer and let the optimizer use them "
                              "directly.", FutureWarning, stacklevel=2)
                kwargs_.update({"grad_scaler": self})
            else:
                if optimizer_state["stage"] is OptState.READY:
                    self._check_inf_per_device(optimizer)
                scaler = self._scale
                found_inf = sum(t.to(scaler.device, non_blocking=True)
                                for t in optimizer_state["found_inf_per_device"].values())
                optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                        if optimizer_state["stage"] == OptState.UNSCALED
                                        else scaler * getattr(optimizer, "grad_scale", 1))
                optimizer.found_inf = found_inf
            retval = optimizer.step(*args, **kwargs_)
            optimizer_state["stage"] = OptState.STEPPED
            if not has_grad_scaler_kwarg:
                del optimizer.grad_scale
                del optimizer.found_inf
            return retval
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Update the scale: ``backoff_factor`` times it if any step this iteration was skipped, else count a
        clean step and multiply by ``growth_factor`` after ``growth_interval`` of them.  ``new_scale`` (a float
        or a 1-element float tensor) sets it instead."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for extra in found_infs[1:]:
                found_inf_combined = found_inf_combined + extra
            _update_scale_(_scale, _growth_tracker, found_inf_combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if (scale := self._get_scale_async()) is None else scale.item()
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``, ``_growth_tracker`` (empty
        when disabled); take it after ``update``."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer):
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = _full(1.0, D.float32, _scale.device)
        found_inf = _full(0.0, D.float32, _scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
