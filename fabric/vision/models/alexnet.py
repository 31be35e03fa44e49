"""AlexNet (the "one weird trick" variant torchvision ships).

Example::

    >>> from fabric.vision.models import AlexNet
    >>> AlexNet(num_classes=10).classifier[6].out_features
    10
"""
from __future__ import annotations

from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["AlexNet", "AlexNet_Weights", "alexnet"]


class AlexNet(nn.Module):
    """Five convolutions (``features``), pool to 6x6, three linear layers (``classifier``)."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(fabric.flatten(x, 1))


class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights("https://download.pytorch.org/models/alexnet-owt-7be5be79.pth", 61100840,
                                     min_size=(63, 63))
    DEFAULT = IMAGENET1K_V1


@register_model()
def alexnet(*, weights=None, progress: bool = True, **kwargs: Any) -> AlexNet:
    """AlexNet from torchvision (``weights``: :class:`AlexNet_Weights`)."""
    weights = handle_weights(AlexNet_Weights, weights, kwargs)
    model = AlexNet(**kwargs)
    return load_weights(model, weights, progress) if weights is not None else model


alexnet._weights_enum = AlexNet_Weights
