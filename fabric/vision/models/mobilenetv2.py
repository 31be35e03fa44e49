"""MobileNetV2 (inverted residuals, ReLU6), torchvision's layout.

Example::

    >>> from fabric.vision.models import mobilenet_v2
    >>> sum(p.numel() for p in mobilenet_v2().parameters())
    3504872
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ...nn import functional as F
from ..ops.misc import Conv2dNormActivation
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["MobileNetV2", "MobileNet_V2_Weights", "mobilenet_v2"]


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """``v`` rounded to a multiple of ``divisor``, never more than 10% below ``v``."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class InvertedResidual(nn.Module):
    """1x1 expand (ReLU6), 3x3 depthwise (ReLU6), 1x1 project; residual when shapes allow."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.stride = stride
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers.extend([
            Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer,
                                 activation_layer=nn.ReLU6),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            norm_layer(oup),
        ])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """``features`` (stem, 17 inverted residual blocks, 1x1 to 1280), ``classifier``."""

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0,
                 inverted_residual_setting: list[list[int]] | None = None, round_nearest: int = 8,
                 block: Callable[..., nn.Module] | None = None, norm_layer: Callable[..., nn.Module] | None = None,
                 dropout: float = 0.2) -> None:
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d
        input_channel, last_channel = 32, 1280
        if inverted_residual_setting is None:
            inverted_residual_setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
                                         [6, 160, 3, 2], [6, 320, 1, 1]]
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError(f"inverted_residual_setting should be non-empty or a 4-element list, got "
                             f"{inverted_residual_setting}")
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features: list[nn.Module] = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                                          activation_layer=nn.ReLU6)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(input_channel, output_channel, s if i == 0 else 1, expand_ratio=t,
                                      norm_layer=norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer,
                                             activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(fabric.flatten(x, 1))


class MobileNet_V2_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights("https://download.pytorch.org/models/mobilenet_v2-b0353104.pth", 3504872)
    IMAGENET1K_V2 = imagenet_weights("https://download.pytorch.org/models/mobilenet_v2-7ebf99e0.pth", 3504872,
                                     resize_size=232)
    DEFAULT = IMAGENET1K_V2


@register_model()
def mobilenet_v2(*, weights=None, progress: bool = True, **kwargs: Any) -> MobileNetV2:
    """MobileNetV2 from torchvision (``weights``: :class:`MobileNet_V2_Weights`)."""
    weights = handle_weights(MobileNet_V2_Weights, weights, kwargs)
    model = MobileNetV2(**kwargs)
    return load_weights(model, weights, progress) if weights is not None else model


mobilenet_v2._weights_enum = MobileNet_V2_Weights
