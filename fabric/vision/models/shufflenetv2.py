"""ShuffleNetV2 (x0.5, x1.0, x1.5, x2.0), torchvision's layout.

Example::

    >>> from fabric.vision.models import shufflenet_v2_x1_0
    >>> sum(p.numel() for p in shufflenet_v2_x1_0().parameters())
    2278604
"""
from __future__ import annotations

from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["ShuffleNetV2", "ShuffleNet_V2_X0_5_Weights", "ShuffleNet_V2_X1_0_Weights", "ShuffleNet_V2_X1_5_Weights",
           "ShuffleNet_V2_X2_0_Weights", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
           "shufflenet_v2_x2_0"]


def channel_shuffle(x: Tensor, groups: int) -> Tensor:
    b, c, h, w = x.shape
    x = x.view(b, groups, c // groups, h, w)
    return fabric.transpose(x, 1, 2).contiguous().view(b, -1, h, w)


class InvertedResidual(nn.Module):
    """Split (stride 1) or duplicate (stride 2) the channels, convolve one branch, concatenate, shuffle."""

    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()
        if not 1 <= stride <= 3:
            raise ValueError("illegal stride value")
        self.stride = stride
        branch_features = oup // 2
        if self.stride == 1 and inp != branch_features << 1:
            raise ValueError(f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. If stride == 1 "
                             "then inp should be equal to oup // 2 << 1.")
        if self.stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1), nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features), nn.ReLU(inplace=True))
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if self.stride > 1 else branch_features, branch_features, kernel_size=1, stride=1, padding=0,
                      bias=False),
            nn.BatchNorm2d(branch_features), nn.ReLU(inplace=True),
            self.depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(branch_features), nn.ReLU(inplace=True))

    @staticmethod
    def depthwise_conv(i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0,
                       bias: bool = False) -> nn.Conv2d:
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x: Tensor) -> Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = fabric.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = fabric.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """``conv1``, ``maxpool``, ``stage2``-``stage4``, ``conv5``, global mean, ``fc``."""

    def __init__(self, stages_repeats: list[int], stages_out_channels: list[int], num_classes: int = 1000,
                 inverted_residual=InvertedResidual) -> None:
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels
        input_channels, output_channels = 3, stages_out_channels[0]
        self.conv1 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 3, 2, 1, bias=False),
                                   nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
        input_channels = output_channels
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for name, repeats, output_channels in zip(("stage2", "stage3", "stage4"), stages_repeats,
                                                  stages_out_channels[1:]):
            seq = [inverted_residual(input_channels, output_channels, 2)]
            seq += [inverted_residual(output_channels, output_channels, 1) for _ in range(repeats - 1)]
            setattr(self, name, nn.Sequential(*seq))
            input_channels = output_channels
        output_channels = stages_out_channels[-1]
        self.conv5 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
                                   nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
        self.fc = nn.Linear(output_channels, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.conv1(x))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
        return self.fc(x.mean([2, 3]))


_URL = "https://download.pytorch.org/models/"


class ShuffleNet_V2_X0_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "shufflenetv2_x0.5-f707e7126e.pth", 1366792)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "shufflenetv2_x1-5666bf0f80.pth", 2278604)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "shufflenetv2_x1_5-3c479a10.pth", 3503624, resize_size=232)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X2_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "shufflenetv2_x2_0-8be3c8ee.pth", 7393996, resize_size=232)
    DEFAULT = IMAGENET1K_V1


def _builder(name: str, repeats, channels, weights_enum):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> ShuffleNetV2:
        w = handle_weights(weights_enum, weights, kwargs)
        model = ShuffleNetV2(repeats, channels, **kwargs)
        return load_weights(model, w, progress) if w is not None else model

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{name} from torchvision (``weights``: :class:`{weights_enum.__name__}`)."
    build._weights_enum = weights_enum
    return register_model(name)(build)


shufflenet_v2_x0_5 = _builder("shufflenet_v2_x0_5", [4, 8, 4], [24, 48, 96, 192, 1024], ShuffleNet_V2_X0_5_Weights)
shufflenet_v2_x1_0 = _builder("shufflenet_v2_x1_0", [4, 8, 4], [24, 116, 232, 464, 1024], ShuffleNet_V2_X1_0_Weights)
shufflenet_v2_x1_5 = _builder("shufflenet_v2_x1_5", [4, 8, 4], [24, 176, 352, 704, 1024], ShuffleNet_V2_X1_5_Weights)
shufflenet_v2_x2_0 = _builder("shufflenet_v2_x2_0", [4, 8, 4], [24, 244, 488, 976, 2048], ShuffleNet_V2_X2_0_Weights)
