"""Convolution modules: ``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d`` and
their lazy variants.

Parameter shapes, default initialisation (``kaiming_uniform_(a=sqrt(5))``
for the weight, ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for the bias, drawn
in PyTorch's order), attributes, ``repr`` and state_dict keys are PyTorch's,
so ``manual_seed(s); Conv2d(...)`` holds the same weights in both.
``padding_mode`` other than 'zeros' pads with :func:`F.pad` first.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.Conv2d(3, 8, 3, padding=1)(fabric.randn(2, 3, 16, 16)).shape
    fabric.Size([2, 8, 16, 16])
    >>> nn.ConvTranspose2d(8, 3, 4, stride=2, padding=1)
    ConvTranspose2d(8, 3, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1))
"""
from __future__ import annotations

import math
from typing import Any

from ... import _creation
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .linear import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]


def _ntuple(n):
    def parse(x):
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return (x,) * n
    return parse


_single, _pair, _triple = _ntuple(1), _ntuple(2), _ntuple(3)


def _reverse_repeat_tuple(t, n):
    """(a, b) -> (b, b, a, a) for n = 2: the F.pad order of per-dim padding."""
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):
    """The shared state of convolution modules (PyTorch's ``_ConvNd``)."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]
    _conv_fn = None
    _num_dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(_creation.empty(shape, **factory_kwargs))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    def _conv_forward(self, input, weight, bias):
        conv = type(self)._conv_fn
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                        self.stride, (0,) * self._num_dims, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


def _conv_init(self, parse, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
               padding_mode, device, dtype):
    _ConvNd.__init__(self, in_channels, out_channels, parse(kernel_size), parse(stride),
                     padding if isinstance(padding, str) else parse(padding), parse(dilation), False, parse(0),
                     groups, bias, padding_mode, device, dtype)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) or (C_in, L) inputs; weight
    (out_channels, in_channels / groups, kernel_size).

    Example::

        >>> import fabric
        >>> fabric.nn.Conv1d(4, 6, 3, stride=2)(fabric.randn(2, 4, 9)).shape
        fabric.Size([2, 6, 4])
    """

    _conv_fn = staticmethod(F.conv1d)
    _num_dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        _conv_init(self, _single, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                   bias, padding_mode, device, dtype)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs; weight
    (out_channels, in_channels / groups, kH, kW).

    Example::

        >>> import fabric
        >>> fabric.nn.Conv2d(4, 8, (3, 5), padding='same', padding_mode='reflect')(fabric.randn(1, 4, 7, 7)).shape
        fabric.Size([1, 8, 7, 7])
    """

    _conv_fn = staticmethod(F.conv2d)
    _num_dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        _conv_init(self, _pair, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                   bias, padding_mode, device, dtype)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) inputs.

    Example::

        >>> import fabric
        >>> fabric.nn.Conv3d(2, 4, 3, padding=1)(fabric.randn(1, 2, 5, 5, 5)).shape
        fabric.Size([1, 4, 5, 5, 5])
    """

    _conv_fn = staticmethod(F.conv3d)
    _num_dims = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        _conv_init(self, _triple, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                   bias, padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    """The shared state of transposed convolutions."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        if output_size is None:
            return _single(self.output_padding)
        output_size = list(output_size)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < min_sizes[i] or size > max_sizes[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input, output_size=None):
        nd = self._num_dims
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for {self.__class__.__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, nd,
                                              self.dilation)
        return type(self)._conv_fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                   self.groups, self.dilation)


def _convt_init(self, parse, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                dilation, padding_mode, device, dtype):
    _ConvTransposeNd.__init__(self, in_channels, out_channels, parse(kernel_size), parse(stride), parse(padding),
                              parse(dilation), True, parse(output_padding), groups, bias, padding_mode, device,
                              dtype)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution; weight (in_channels, out_channels / groups, k).
    ``forward(input, output_size=None)`` picks ``output_padding`` to reach ``output_size``.

    Example::

        >>> import fabric
        >>> fabric.nn.ConvTranspose1d(4, 2, 3, stride=2)(fabric.randn(1, 4, 5)).shape
        fabric.Size([1, 2, 11])
    """

    _conv_fn = staticmethod(F.conv_transpose1d)
    _num_dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        _convt_init(self, _single, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups,
                    bias, dilation, padding_mode, device, dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution; weight (in_channels, out_channels / groups, kH, kW).

    Example::

        >>> import fabric
        >>> m = fabric.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
        >>> m(fabric.randn(1, 4, 5, 5), output_size=(10, 10)).shape
        fabric.Size([1, 2, 10, 10])
    """

    _conv_fn = staticmethod(F.conv_transpose2d)
    _num_dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        _convt_init(self, _pair, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups,
                    bias, dilation, padding_mode, device, dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution; weight (in_channels, out_channels / groups, kD, kH, kW).

    Example::

        >>> import fabric
        >>> fabric.nn.ConvTranspose3d(2, 1, 2, stride=2)(fabric.randn(1, 2, 3, 3, 3)).shape
        fabric.Size([1, 1, 6, 6, 6])
    """

    _conv_fn = staticmethod(F.conv_transpose3d)
    _num_dims = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        _convt_init(self, _triple, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups,
                    bias, dilation, padding_mode, device, dtype)


# --- lazy variants -------------------------------------------------------------------

class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` is taken from the first input (PyTorch's ``_LazyConvXdMixin``)."""

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_channels = self._get_in_channels(input)
                if self.in_channels % self.groups != 0:
                    raise ValueError("in_channels must be divisible by groups")
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input) -> int:
        nd = self._num_dims
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == nd + 2 else input.shape[0]


def _lazy_params(self, bias, device, dtype):
    factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
    self.weight = UninitializedParameter(**factory_kwargs)
    if bias:
        self.bias = UninitializedParameter(**factory_kwargs)


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A :class:`Conv1d` whose ``in_channels`` is inferred from the first input.

    Example::

        >>> import fabric
        >>> m = fabric.nn.LazyConv1d(4, 3)
        >>> m(fabric.randn(2, 5, 8)).shape, m.weight.shape
        (fabric.Size([2, 4, 6]), fabric.Size([4, 5, 3]))
    """

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        _lazy_params(self, bias, device, dtype)
        self.out_channels = out_channels


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A :class:`Conv2d` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        _lazy_params(self, bias, device, dtype)
        self.out_channels = out_channels


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A :class:`Conv3d` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv3d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        _lazy_params(self, bias, device, dtype)
        self.out_channels = out_channels


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """A :class:`ConvTranspose1d` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        _lazy_params(self, bias, device, dtype)
        self.out_channels = out_channels


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """A :class:`ConvTranspose2d` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        _lazy_params(self, bias, device, dtype)
        self.out_channels = out_channels


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """A :class:`ConvTranspose3d` whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        _lazy_params(self, bias, device, dtype)
        self.out_channels = out_channels
