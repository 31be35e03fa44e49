"""Linear layers: ``Identity``, ``Linear``, ``Bilinear``, ``LazyLinear``
(and ``LazyModuleMixin``, the machinery of lazy modules).

Default initialisation is PyTorch's, drawn in the same order, so
``manual_seed(s); Linear(3, 4)`` gives the same weights as in PyTorch.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.Linear(20, 30)(fabric.randn(128, 20)).shape
    fabric.Size([128, 30])
"""
from __future__ import annotations

import itertools
import math
from typing import Any

from ... import _creation
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter, is_lazy
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear", "LazyModuleMixin", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """Returns its input; accepts (and ignores) any constructor arguments.

    Example::

        >>> import fabric
        >>> x = fabric.ones(2)
        >>> fabric.nn.Identity(54, unused="x")(x) is x
        True
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with weight ``(out_features, in_features)``
    initialised by ``kaiming_uniform_(a=sqrt(5))`` and bias by
    ``U(-1/sqrt(in_features), 1/sqrt(in_features))``.

    Example::

        >>> import fabric
        >>> fabric.nn.Linear(3, 4, bias=False)
        Linear(in_features=3, out_features=4, bias=False)
    """

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_creation.empty((out_features, in_features), **factory_kwargs))
        if bias:
            self.bias = Parameter(_creation.empty(out_features, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` (PyTorch uses the name for attention's out_proj)."""


class Bilinear(Module):
    """``y = x1 @ weight[k] @ x2 + bias[k]`` with weight
    ``(out_features, in1_features, in2_features)``, all initialised from
    ``U(-1/sqrt(in1_features), 1/sqrt(in1_features))``.

    Example::

        >>> import fabric
        >>> fabric.nn.Bilinear(3, 4, 5)(fabric.ones(2, 3), fabric.ones(2, 4)).shape
        fabric.Size([2, 5])
    """

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_creation.empty((out_features, in1_features, in2_features), **factory_kwargs))
        if bias:
            self.bias = Parameter(_creation.empty(out_features, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyModuleMixin:
    """Mixin for modules whose parameter shapes are inferred from the first
    input: ``initialize_parameters(*args)`` runs as a forward pre-hook once,
    then the module becomes ``cls_to_become``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if (is_lazy(param) or keep_vars) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if (is_lazy(buf) or keep_vars) else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                value = state_dict[key]
                if not is_lazy(value):
                    with no_grad():
                        param.materialize(tuple(value.shape))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(p) for p in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is taken from the first input.

    Example::

        >>> import fabric
        >>> m = fabric.nn.LazyLinear(4)
        >>> m(fabric.ones(2, 3)).shape, m
        (fabric.Size([2, 4]), Linear(in_features=3, out_features=4, bias=True))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(**factory_kwargs)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**factory_kwargs)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]
