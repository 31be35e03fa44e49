"""The ``Optimizer`` base class (PyTorch's ``torch.optim.Optimizer``).

Subclasses implement ``_step_group(group)``: they gather the group's
parameters that have gradients and apply one vectorised update for the whole
group (see ``fabric/optim/_functional.py``), not a loop of small array ops
per parameter.

Example::

    >>> import fabric
    >>> w = fabric.nn.Parameter(fabric.ones(2))
    >>> opt = fabric.optim.SGD([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step(); w
    Parameter containing:
    tensor([0., 0.], requires_grad=True)
"""
from __future__ import annotations

import copy
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..autograd.function import RemovableHandle, _HookDict
from ..autograd.grad_mode import no_grad
from ..backends import backend_of

# What an optimizer takes: tensors, or dicts of parameter groups (torch.optim.optimizer.ParamsT).
ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]]

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks = _HookDict()
_global_post_hooks = _HookDict()


def register_optimizer_step_pre_hook(hook):
    h = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[h._key] = hook
    return h


def register_optimizer_step_post_hook(hook):
    h = RemovableHandle(_global_post_hooks)
    _global_post_hooks[h._key] = hook
    return h


class Optimizer:
    """Holds ``param_groups`` (dicts of parameters and hyperparameters) and
    per-parameter ``state``; ``step()`` updates the parameters in place."""

    def __init__(self, params: ParamsT, defaults: dict) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks = _HookDict()
        self._optimizer_step_post_hooks = _HookDict()
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._optimizer_step_pre_hooks = _HookDict()
        self._optimizer_step_post_hooks = _HookDict()

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        s += ")"
        return s

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own hyperparameters."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(map(id, params))):
            import warnings

            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(map(id, group["params"]))
        if not seen.isdisjoint(map(id, params)):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad`` (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None:
                    if set_to_none:
                        p._grad = None
                    else:
                        g = p._grad
                        if g.grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        g._data[...] = 0
                        g._bump_version()

    # --- hooks -------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return new (args, kwargs)."""
        h = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[h._key] = hook
        return h

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        h = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[h._key] = hook
        return h

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One optimisation step; ``closure`` re-evaluates the loss and returns it."""
        args, kwargs = (), {}
        for hook in itertools.chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                args, kwargs = res
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        for hook in itertools.chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return loss

    def _step_group(self, group):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not implement a parameter update")

    def _init_state(self, p, **zeros_like_param):
        """Fill an empty state dict: ``step`` (a float32 0-d tensor, as PyTorch)
        plus the named buffers, zeros shaped like ``p`` unless a value is given."""
        st = self.state[p]
        if not st:
            xp = backend_of(p._data).xp
            st["step"] = Tensor._make(xp.zeros((), np.float32), False)
            for name, fill in zeros_like_param.items():
                arr = xp.zeros_like(p._data) if fill is None else xp.full_like(p._data, fill)
                st[name] = Tensor._make(arr, False)
        return st

    def _steps(self, params):
        """Group parameter indices by their current step count (usually one
        group), so each bucket gets one vectorised update."""
        buckets = {}
        for i, p in enumerate(params):
            buckets.setdefault(float(self.state[p]["step"]._data), []).append(i)
        return buckets.items()

    # SGD and Adagrad take sparse gradients (nn.Embedding(sparse=True)); their update of a sparse
    # gradient equals the dense update of its dense form (untouched rows get a zero step), so it is
    # applied densely (see _grad_array)
    _sparse_grads = False

    def _params_with_grad(self, group):
        params = []
        for p in group["params"]:
            if p._grad is not None:
                if p._grad.is_sparse and not self._sparse_grads:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                params.append(p)
        return params

    # --- state dict --------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`` as PyTorch."""
        index = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                if id(p) not in index:
                    index[id(p)] = start
                    start += 1
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self.state.items() if isinstance(p, Tensor) and id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and state saved by :meth:`state_dict`."""
        state_dict = copy.copy(state_dict)
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, sg in zip(groups, saved_groups):
            if len(g["params"]) != len(sg["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        id_map = {}
        for g, sg in zip(groups, saved_groups):
            for old, p in zip(sg["params"], g["params"]):
                id_map[old] = p
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                state[p] = {key: self._cast_state(p, key, val) for key, val in v.items()}
            else:
                state[k] = v
        new_groups = []
        for g, sg in zip(groups, saved_groups):
            sg["params"] = g["params"]
            new_groups.append(sg)
        self.state = state
        self.param_groups = new_groups

    @staticmethod
    def _cast_state(param, key, value):
        """Move state tensors to the parameter's device; floating state takes
        the parameter's dtype, except ``step`` (as PyTorch)."""
        if isinstance(value, Tensor):
            if key == "step":
                return value.to(device=param.device).clone()
            if value.is_floating_point():
                return value.to(dtype=param.dtype, device=param.device).clone()
            return value.to(device=param.device).clone()
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, k, v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast_state(param, key, v) for v in value)
        return value



def real_views(arrays):
    """PyTorch's ``_view_as_real`` for the elementwise updates (Adam, RMSprop ...): complex
    arrays become (..., 2) real views, so each part has its own moment estimates."""
    if arrays is None:
        return None
    for a in arrays:
        if a.dtype.kind == "c":
            return [x[..., None].view(x.real.dtype) if x.dtype.kind == "c" else x for x in arrays]
    return arrays


def _grad_array(p):
    """The gradient of ``p`` as a dense array (a sparse gradient is densified)."""
    g = p._grad
    return g.coalesce().to_dense()._data if g.is_sparse else g._data
