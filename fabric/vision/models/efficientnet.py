"""EfficientNet B0-B7 (MBConv blocks with squeeze-and-excitation and
stochastic depth), torchvision's layout.

Example::

    >>> from fabric.vision.models import efficientnet_b0
    >>> sum(p.numel() for p in efficientnet_b0().parameters())
    5288548
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable
from functools import partial
from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth
from ..transforms.functional import InterpolationMode
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model
from .mobilenetv2 import _make_divisible

__all__ = ["EfficientNet", "EfficientNet_B0_Weights", "efficientnet_b0", "efficientnet_b1", "efficientnet_b2",
           "efficientnet_b3", "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7"]


class MBConvConfig:
    """A stage: expansion, kernel, stride, channels (scaled by width), layers (scaled by depth)."""

    def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                 num_layers: int, width_mult: float = 1.0, depth_mult: float = 1.0) -> None:
        self.expand_ratio = expand_ratio
        self.kernel = kernel
        self.stride = stride
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.num_layers = int(math.ceil(num_layers * depth_mult))
        self.block = MBConv

    @staticmethod
    def adjust_channels(channels: int, width_mult: float, min_value: int | None = None) -> int:
        return _make_divisible(channels * width_mult, 8, min_value)


class MBConv(nn.Module):
    """Expand (1x1, SiLU), depthwise (kxk, SiLU), SE, project (1x1); residual with stochastic depth."""

    def __init__(self, cnf: MBConvConfig, stochastic_depth_prob: float, norm_layer: Callable[..., nn.Module],
                 se_layer: Callable[..., nn.Module] = SqueezeExcitation) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers: list[nn.Module] = []
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded, expanded, kernel_size=cnf.kernel, stride=cnf.stride,
                                           groups=expanded, norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(se_layer(expanded, max(1, cnf.input_channels // 4), activation=partial(nn.SiLU, inplace=True)))
        layers.append(Conv2dNormActivation(expanded, cnf.out_channels, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class EfficientNet(nn.Module):
    """``features`` (stem, one Sequential per stage, 1x1 head conv), ``avgpool``, ``classifier``."""

    def __init__(self, inverted_residual_setting: list[MBConvConfig], dropout: float,
                 stochastic_depth_prob: float = 0.2, num_classes: int = 1000,
                 norm_layer: Callable[..., nn.Module] | None = None, last_channel: int | None = None) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        norm_layer = norm_layer or nn.BatchNorm2d
        layers: list[nn.Module] = [Conv2dNormActivation(3, inverted_residual_setting[0].input_channels, kernel_size=3,
                                                        stride=2, norm_layer=norm_layer, activation_layer=nn.SiLU)]
        total = sum(cnf.num_layers for cnf in inverted_residual_setting)
        block_id = 0
        for cnf in inverted_residual_setting:
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                if stage:
                    block_cnf.input_channels = block_cnf.out_channels
                    block_cnf.stride = 1
                stage.append(block_cnf.block(block_cnf, stochastic_depth_prob * float(block_id) / total, norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init_range = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -init_range, init_range)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(fabric.flatten(self.avgpool(self.features(x)), 1))


def _b_setting(width_mult: float, depth_mult: float) -> list[MBConvConfig]:
    c = partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
    return [c(1, 3, 1, 32, 16, 1), c(6, 3, 2, 16, 24, 2), c(6, 5, 2, 24, 40, 2), c(6, 3, 2, 40, 80, 3),
            c(6, 5, 1, 80, 112, 3), c(6, 5, 2, 112, 192, 4), c(6, 3, 1, 192, 320, 1)]


class EfficientNet_B0_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights("https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth",
                                     5288548, interpolation=InterpolationMode.BICUBIC)
    DEFAULT = IMAGENET1K_V1


def _builder(name: str, width: float, depth: float, dropout: float, weights_enum=None, small_norm: bool = False):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> EfficientNet:
        if weights_enum is None:
            if weights is not None:
                raise NotImplementedError(f"{name}: fabric.vision has no weights enum for this model yet; build it "
                                          "with weights=None and load a state_dict")
            w = None
        else:
            w = handle_weights(weights_enum, weights, kwargs)
        if small_norm:
            kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=0.001, momentum=0.01))
        model = EfficientNet(_b_setting(width, depth), kwargs.pop("dropout", dropout), **kwargs)
        return load_weights(model, w, progress) if w is not None else model

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{name} from torchvision" + (f" (``weights``: :class:`{weights_enum.__name__}`)."
                                                  if weights_enum else " (no pretrained weights entry yet).")
    if weights_enum is not None:
        build._weights_enum = weights_enum
    return register_model(name)(build)


efficientnet_b0 = _builder("efficientnet_b0", 1.0, 1.0, 0.2, EfficientNet_B0_Weights)
efficientnet_b1 = _builder("efficientnet_b1", 1.0, 1.1, 0.2)
efficientnet_b2 = _builder("efficientnet_b2", 1.1, 1.2, 0.3)
efficientnet_b3 = _builder("efficientnet_b3", 1.2, 1.4, 0.3)
efficientnet_b4 = _builder("efficientnet_b4", 1.4, 1.8, 0.4)
efficientnet_b5 = _builder("efficientnet_b5", 1.6, 2.2, 0.4, small_norm=True)
efficientnet_b6 = _builder("efficientnet_b6", 1.8, 2.6, 0.5, small_norm=True)
efficientnet_b7 = _builder("efficientnet_b7", 2.0, 3.1, 0.5, small_norm=True)
