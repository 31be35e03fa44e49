"""VGG 11/13/16/19, with and without batch norm (``features``, ``avgpool``,
``classifier`` as in torchvision).

Example::

    >>> from fabric.vision.models import VGG16_BN_Weights
    >>> VGG16_BN_Weights.DEFAULT.meta["num_params"]
    138365992
"""
from __future__ import annotations

from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["VGG", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
           "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights",
           "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights"]


class VGG(nn.Module):
    """``features`` (conv stack), ``avgpool`` to 7x7, ``classifier`` (3 linear layers)."""

    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
                                        nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
                                        nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(fabric.flatten(x, 1))


def make_layers(cfg: list, batch_norm: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)] if batch_norm else [conv2d,
                                                                                              nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}

_URL = "https://download.pytorch.org/models/"


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg11-8a719046.pth", 132863336, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg11_bn-6002323d.pth", 132868840, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg13-19584684.pth", 133047848, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg13_bn-abd245e5.pth", 133053736, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg16-397923af.pth", 138357544, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg16_bn-6c64b313.pth", 138365992, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg19-dcbb9e9d.pth", 143667240, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vgg19_bn-c79401a0.pth", 143678248, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


def _builder(name: str, cfg: str, batch_norm: bool, weights_enum):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> VGG:
        w = handle_weights(weights_enum, weights, kwargs)
        if w is not None:
            kwargs["init_weights"] = False
        model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
        return load_weights(model, w, progress) if w is not None else model

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{name} from torchvision (``weights``: :class:`{weights_enum.__name__}`)."
    build._weights_enum = weights_enum
    return register_model(name)(build)


vgg11 = _builder("vgg11", "A", False, VGG11_Weights)
vgg11_bn = _builder("vgg11_bn", "A", True, VGG11_BN_Weights)
vgg13 = _builder("vgg13", "B", False, VGG13_Weights)
vgg13_bn = _builder("vgg13_bn", "B", True, VGG13_BN_Weights)
vgg16 = _builder("vgg16", "D", False, VGG16_Weights)
vgg16_bn = _builder("vgg16_bn", "D", True, VGG16_BN_Weights)
vgg19 = _builder("vgg19", "E", False, VGG19_Weights)
vgg19_bn = _builder("vgg19_bn", "E", True, VGG19_BN_Weights)
