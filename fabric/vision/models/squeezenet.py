"""SqueezeNet 1.0 and 1.1 (Fire modules; the classifier is a 1x1 convolution).

Example::

    >>> from fabric.vision.models import squeezenet1_1
    >>> sum(p.numel() for p in squeezenet1_1().parameters())
    1235496
"""
from __future__ import annotations

from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["SqueezeNet", "SqueezeNet1_0_Weights", "SqueezeNet1_1_Weights", "squeezenet1_0", "squeezenet1_1"]


class Fire(nn.Module):
    """1x1 squeeze, then 1x1 and 3x3 expansions concatenated."""

    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return fabric.cat([self.expand1x1_activation(self.expand1x1(x)),
                           self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    """``version`` '1_0' or '1_1'."""

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(512, 64, 256, 256),
            )
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256),
            )
        else:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        return fabric.flatten(self.classifier(self.features(x)), 1)


_URL = "https://download.pytorch.org/models/"


class SqueezeNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "squeezenet1_0-b66bff10.pth", 1248424, min_size=(21, 21))
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "squeezenet1_1-b8a52dc0.pth", 1235496, min_size=(17, 17))
    DEFAULT = IMAGENET1K_V1


def _squeezenet(version: str, weights, weights_enum, progress: bool, **kwargs: Any) -> SqueezeNet:
    weights = handle_weights(weights_enum, weights, kwargs)
    model = SqueezeNet(version, **kwargs)
    return load_weights(model, weights, progress) if weights is not None else model


@register_model()
def squeezenet1_0(*, weights=None, progress: bool = True, **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.0 from torchvision (``weights``: :class:`SqueezeNet1_0_Weights`)."""
    return _squeezenet("1_0", weights, SqueezeNet1_0_Weights, progress, **kwargs)


@register_model()
def squeezenet1_1(*, weights=None, progress: bool = True, **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.1 from torchvision (``weights``: :class:`SqueezeNet1_1_Weights`)."""
    return _squeezenet("1_1", weights, SqueezeNet1_1_Weights, progress, **kwargs)


squeezenet1_0._weights_enum = SqueezeNet1_0_Weights
squeezenet1_1._weights_enum = SqueezeNet1_1_Weights
