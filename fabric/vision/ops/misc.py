"""Building blocks torchvision's models share: ``Conv2dNormActivation``,
``SqueezeExcitation``, ``MLP``, ``Permute``, ``FrozenBatchNorm2d``. They are
``Sequential``/``Module`` subclasses with torchvision's layout, so their
``state_dict`` keys match.

Example::

    >>> from fabric.vision.ops import Conv2dNormActivation
    >>> list(Conv2dNormActivation(3, 8, 3).state_dict())[:2]
    ['0.weight', '1.weight']
"""
from __future__ import annotations

from collections.abc import Callable

import fabric

from ... import nn
from ..._tensor import Tensor

__all__ = ["Conv2dNormActivation", "SqueezeExcitation", "MLP", "Permute", "FrozenBatchNorm2d"]


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters (all buffers)."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", fabric.ones(num_features))
        self.register_buffer("bias", fabric.zeros(num_features))
        self.register_buffer("running_mean", fabric.zeros(num_features))
        self.register_buffer("running_var", fabric.ones(num_features))

    def forward(self, x: Tensor) -> Tensor:
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        return x * scale + (b - rm * scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


class Conv2dNormActivation(nn.Sequential):
    """Conv2d -> norm layer -> activation (keys ``0.*``, ``1.*``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None, groups: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU, dilation=1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                ks = kernel_size if isinstance(kernel_size, (tuple, list)) else (kernel_size, kernel_size)
                dl = dilation if isinstance(dilation, (tuple, list)) else (dilation,) * len(ks)
                padding = tuple((ks[i] - 1) // 2 * dl[i] for i in range(len(ks)))
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation, groups=groups,
                            bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer() if inplace is None else activation_layer(inplace=inplace))
        super().__init__(*layers)
        self.out_channels = out_channels


class SqueezeExcitation(nn.Module):
    """Channel attention: global average pool -> fc1 -> activation -> fc2 -> scale activation."""

    def __init__(self, input_channels: int, squeeze_channels: int,
                 activation: Callable[..., nn.Module] = nn.ReLU,
                 scale_activation: Callable[..., nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: Tensor) -> Tensor:
        return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))

    def forward(self, input: Tensor) -> Tensor:
        return self._scale(input) * input


class MLP(nn.Sequential):
    """Linear -> (norm) -> activation -> dropout blocks, the last without norm/activation."""

    def __init__(self, in_channels: int, hidden_channels: list[int], norm_layer=None, activation_layer=nn.ReLU,
                 inplace: bool | None = None, bias: bool = True, dropout: float = 0.0) -> None:
        params = {} if inplace is None else {"inplace": inplace}
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


class Permute(nn.Module):
    """``x.permute(*dims)`` as a module."""

    def __init__(self, dims: list[int]):
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return fabric.permute(x, self.dims)
