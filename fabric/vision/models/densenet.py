"""DenseNet 121/161/169/201 (``features.denseblock1.denselayer1.norm1`` ...
as torchvision; old checkpoints' ``norm.1`` style keys are renamed on load).

Example::

    >>> from fabric.vision.models import densenet121
    >>> sum(p.numel() for p in densenet121().parameters())
    7978856
"""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ...nn import functional as F
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201", "DenseNet121_Weights",
           "DenseNet161_Weights", "DenseNet169_Weights", "DenseNet201_Weights"]


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient  # accepted; fabric always keeps the activations

    def forward(self, input) -> Tensor:
        prev_features = [input] if isinstance(input, Tensor) else input
        bottleneck = self.conv1(self.relu1(self.norm1(fabric.cat(prev_features, 1))))
        new_features = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(self, num_layers: int, num_input_features: int, bn_size: int, growth_rate: int, drop_rate: float,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(num_input_features + i * growth_rate, growth_rate,
                                                              bn_size, drop_rate, memory_efficient))

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return fabric.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """Stem, dense blocks joined by transitions, final norm, ``classifier``."""

    def __init__(self, growth_rate: int = 32, block_config: tuple[int, int, int, int] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(num_layers, num_features, bn_size, growth_rate,
                                                                       drop_rate, memory_efficient))
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(num_features, num_features // 2))
                num_features = num_features // 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.features(x), inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.classifier(fabric.flatten(out, 1))


_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _rename_old_keys(state_dict):
    """Checkpoints from before '.' was banned in module names say 'norm.1'; the modules are 'norm1'."""
    for key in list(state_dict.keys()):
        res = _OLD_KEY.match(key)
        if res:
            state_dict[res.group(1) + res.group(2)] = state_dict.pop(key)
    return state_dict


_URL = "https://download.pytorch.org/models/"


class DenseNet121_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "densenet121-a639ec97.pth", 7978856, min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


class DenseNet161_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "densenet161-8d451a50.pth", 28681000, min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


class DenseNet169_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "densenet169-b2777c0a.pth", 14149480, min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


class DenseNet201_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "densenet201-c1103571.pth", 20013928, min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


def _builder(name: str, growth_rate: int, block_config, num_init_features: int, weights_enum):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> DenseNet:
        w = handle_weights(weights_enum, weights, kwargs)
        model = DenseNet(growth_rate, block_config, num_init_features, **kwargs)
        return load_weights(model, w, progress, remap=_rename_old_keys) if w is not None else model

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{name} from torchvision (``weights``: :class:`{weights_enum.__name__}`)."
    build._weights_enum = weights_enum
    return register_model(name)(build)


densenet121 = _builder("densenet121", 32, (6, 12, 24, 16), 64, DenseNet121_Weights)
densenet161 = _builder("densenet161", 48, (6, 12, 36, 24), 96, DenseNet161_Weights)
densenet169 = _builder("densenet169", 32, (6, 12, 32, 32), 64, DenseNet169_Weights)
densenet201 = _builder("densenet201", 32, (6, 12, 48, 32), 64, DenseNet201_Weights)
