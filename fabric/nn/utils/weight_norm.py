"""Legacy hook-based weight normalization (``torch.nn.utils.weight_norm``).

Deprecated in PyTorch in favour of
:func:`fabric.nn.utils.parametrizations.weight_norm`; kept for old code and
checkpoints (parameters ``<name>_g`` and ``<name>_v``, recomputed by a forward
pre-hook).

Example::

    >>> import warnings, fabric
    >>> from fabric import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     m = nn.utils.weight_norm(nn.Linear(3, 2))
    >>> sorted(m.state_dict())
    ['bias', 'weight_g', 'weight_v']
"""
from __future__ import annotations

import warnings
from typing import Any

from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from
    ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module) -> Any:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name: str, dim: int) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Replace ``module.<name>`` by ``g * v / ||v||`` (norm over every
    dimension but ``dim``; ``dim=None``: the whole tensor), with parameters
    ``<name>_g`` and ``<name>_v``, recomputed before every forward.  Emits
    PyTorch's FutureWarning (use ``parametrizations.weight_norm``).

    Example::

        >>> import warnings, fabric
        >>> from fabric import nn
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = nn.utils.weight_norm(nn.Linear(3, 2), dim=None)
        >>> m.weight_g.shape
        fabric.Size([])
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``module.<name>`` becomes a plain parameter
    holding the current normalized weight.

    Example::

        >>> import warnings, fabric
        >>> from fabric import nn
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = nn.utils.remove_weight_norm(nn.utils.weight_norm(nn.Linear(3, 2)))
        >>> sorted(m.state_dict())
        ['bias', 'weight']
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
