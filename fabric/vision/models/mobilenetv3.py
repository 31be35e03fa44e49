"""MobileNetV3 large and small (hard-swish, squeeze-and-excitation), torchvision's layout.

Example::

    >>> from fabric.vision.models import mobilenet_v3_small
    >>> sum(p.numel() for p in mobilenet_v3_small().parameters())
    2542856
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model
from .mobilenetv2 import _make_divisible

__all__ = ["MobileNetV3", "MobileNet_V3_Large_Weights", "MobileNet_V3_Small_Weights", "mobilenet_v3_large",
           "mobilenet_v3_small"]


_SE_HARDSIGMOID = partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid)


class InvertedResidualConfig:
    """One block's channels (scaled by ``width_mult``), kernel, SE, activation ('RE'/'HS'), stride, dilation."""

    def __init__(self, input_channels: int, kernel: int, expanded_channels: int, out_channels: int, use_se: bool,
                 activation: str, stride: int, dilation: int, width_mult: float) -> None:
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float) -> int:
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """Expand (1x1), depthwise (kxk), optional SE, project (1x1); residual when shapes allow."""

    def __init__(self, cnf: InvertedResidualConfig, norm_layer: Callable[..., nn.Module],
                 se_layer: Callable[..., nn.Module] | None = None):
        super().__init__()
        se_layer = se_layer or _SE_HARDSIGMOID
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers: list[nn.Module] = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=activation_layer))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
                                           stride=stride, dilation=cnf.dilation, groups=cnf.expanded_channels,
                                           norm_layer=norm_layer, activation_layer=activation_layer))
        if cnf.use_se:
            layers.append(se_layer(cnf.expanded_channels, _make_divisible(cnf.expanded_channels // 4, 8)))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = result + input
        return result


class MobileNetV3(nn.Module):
    """``features`` (stem, blocks, 1x1 to 6x channels), ``avgpool``, ``classifier``."""

    def __init__(self, inverted_residual_setting: list[InvertedResidualConfig], last_channel: int,
                 num_classes: int = 1000, block: Callable[..., nn.Module] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None, dropout: float = 0.2, **kwargs: Any) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        block = block or InvertedResidual
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        first = inverted_residual_setting[0].input_channels
        layers: list[nn.Module] = [Conv2dNormActivation(3, first, kernel_size=3, stride=2, norm_layer=norm_layer,
                                                        activation_layer=nn.Hardswish)]
        layers += [block(cnf, norm_layer) for cnf in inverted_residual_setting]
        last_in = inverted_residual_setting[-1].out_channels
        last_out = 6 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(last_out, last_channel), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=dropout, inplace=True), nn.Linear(last_channel, num_classes))
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
        return self.classifier(fabric.flatten(self.avgpool(self.features(x)), 1))


def _mobilenet_v3_conf(arch: str, width_mult: float = 1.0, reduced_tail: bool = False, dilated: bool = False):
    rd = 2 if reduced_tail else 1
    dil = 2 if dilated else 1
    c = partial(InvertedResidualConfig, width_mult=width_mult)
    if arch == "mobilenet_v3_large":
        setting = [c(16, 3, 16, 16, False, "RE", 1, 1), c(16, 3, 64, 24, False, "RE", 2, 1),
                   c(24, 3, 72, 24, False, "RE", 1, 1), c(24, 5, 72, 40, True, "RE", 2, 1),
                   c(40, 5, 120, 40, True, "RE", 1, 1), c(40, 5, 120, 40, True, "RE", 1, 1),
                   c(40, 3, 240, 80, False, "HS", 2, 1), c(80, 3, 200, 80, False, "HS", 1, 1),
                   c(80, 3, 184, 80, False, "HS", 1, 1), c(80, 3, 184, 80, False, "HS", 1, 1),
                   c(80, 3, 480, 112, True, "HS", 1, 1), c(112, 3, 672, 112, True, "HS", 1, 1),
                   c(112, 5, 672, 160 // rd, True, "HS", 2, dil),
                   c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil),
                   c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil)]
        last_channel = InvertedResidualConfig.adjust_channels(1280 // rd, width_mult)
    elif arch == "mobilenet_v3_small":
        setting = [c(16, 3, 16, 16, True, "RE", 2, 1), c(16, 3, 72, 24, False, "RE", 2, 1),
                   c(24, 3, 88, 24, False, "RE", 1, 1), c(24, 5, 96, 40, True, "HS", 2, 1),
                   c(40, 5, 240, 40, True, "HS", 1, 1), c(40, 5, 240, 40, True, "HS", 1, 1),
                   c(40, 5, 120, 48, True, "HS", 1, 1), c(48, 5, 144, 48, True, "HS", 1, 1),
                   c(48, 5, 288, 96 // rd, True, "HS", 2, dil),
                   c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil),
                   c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil)]
        last_channel = InvertedResidualConfig.adjust_channels(1024 // rd, width_mult)
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return setting, last_channel


_URL = "https://download.pytorch.org/models/"


class MobileNet_V3_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "mobilenet_v3_large-8738ca79.pth", 5483032)
    IMAGENET1K_V2 = imagenet_weights(_URL + "mobilenet_v3_large-5c1a4163.pth", 5483032, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class MobileNet_V3_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "mobilenet_v3_small-047dcff4.pth", 2542856)
    DEFAULT = IMAGENET1K_V1


def _builder(arch: str, weights_enum):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> MobileNetV3:
        w = handle_weights(weights_enum, weights, kwargs)
        conf = {k: kwargs.pop(k) for k in ("width_mult", "reduced_tail", "dilated") if k in kwargs}
        setting, last_channel = _mobilenet_v3_conf(arch, **conf)
        model = MobileNetV3(setting, last_channel, **kwargs)
        return load_weights(model, w, progress) if w is not None else model

    build.__name__ = build.__qualname__ = arch
    build.__doc__ = f"{arch} from torchvision (``weights``: :class:`{weights_enum.__name__}`)."
    build._weights_enum = weights_enum
    return register_model(arch)(build)


mobilenet_v3_large = _builder("mobilenet_v3_large", MobileNet_V3_Large_Weights)
mobilenet_v3_small = _builder("mobilenet_v3_small", MobileNet_V3_Small_Weights)
