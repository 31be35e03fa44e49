"""ResNet, ResNeXt and Wide ResNet with torchvision's layout (``conv1``,
``bn1``, ``layer1`` ... ``layer4``, ``fc``), so torchvision checkpoints load.

Example::

    >>> from fabric.vision.models import resnet18
    >>> sum(p.numel() for p in resnet18().parameters())
    11689512
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
           "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d", "wide_resnet50_2", "wide_resnet101_2",
           "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights", "ResNet101_Weights", "ResNet152_Weights",
           "ResNeXt50_32X4D_Weights", "ResNeXt101_32X8D_Weights", "ResNeXt101_64X4D_Weights",
           "Wide_ResNet50_2_Weights", "Wide_ResNet101_2_Weights"]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups, bias=False,
                     dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and a shortcut."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped, strided), 1x1 expand (x4), and a shortcut."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """Stem (7x7 conv, max pool), four stages of ``block``, average pool, ``fc``."""

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int], num_classes: int = 1000,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation: list[bool] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, got "
                             f"{replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1, dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(fabric.flatten(self.avgpool(x), 1))


_URL = "https://download.pytorch.org/models/"


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnet18-f37072fd.pth", 11689512)
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnet34-b627a593.pth", 21797672)
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnet50-0676ba61.pth", 25557032)
    IMAGENET1K_V2 = imagenet_weights(_URL + "resnet50-11ad3fa6.pth", 25557032, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnet101-63fe2227.pth", 44549160)
    IMAGENET1K_V2 = imagenet_weights(_URL + "resnet101-cd907fc2.pth", 44549160, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnet152-394f9c45.pth", 60192808)
    IMAGENET1K_V2 = imagenet_weights(_URL + "resnet152-f82ba261.pth", 60192808, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt50_32X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnext50_32x4d-7cdf4587.pth", 25028904)
    IMAGENET1K_V2 = imagenet_weights(_URL + "resnext50_32x4d-1a0047aa.pth", 25028904, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_32X8D_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnext101_32x8d-8ba56ff5.pth", 88791336)
    IMAGENET1K_V2 = imagenet_weights(_URL + "resnext101_32x8d-110c445d.pth", 88791336, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_64X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "resnext101_64x4d-173b62eb.pth", 83455272, resize_size=232)
    DEFAULT = IMAGENET1K_V1


class Wide_ResNet50_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "wide_resnet50_2-95faca4d.pth", 68883240)
    IMAGENET1K_V2 = imagenet_weights(_URL + "wide_resnet50_2-9ba9bcbe.pth", 68883240, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class Wide_ResNet101_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "wide_resnet101_2-32ee1156.pth", 126886696)
    IMAGENET1K_V2 = imagenet_weights(_URL + "wide_resnet101_2-d733dc28.pth", 126886696, resize_size=232)
    DEFAULT = IMAGENET1K_V2


def _resnet(block, layers, weights, weights_enum, progress: bool, **kwargs: Any) -> ResNet:
    weights = handle_weights(weights_enum, weights, kwargs)
    model = ResNet(block, layers, **kwargs)
    return load_weights(model, weights, progress) if weights is not None else model


def _builder(name, block, layers, weights_enum, **fixed):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> ResNet:
        return _resnet(block, layers, weights, weights_enum, progress, **fixed, **kwargs)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"{name} from torchvision (``weights``: :class:`{weights_enum.__name__}` or its name, loaded "
                     "from $TORCH_HOME/hub/checkpoints).")
    build._weights_enum = weights_enum
    return register_model(name)(build)


resnet18 = _builder("resnet18", BasicBlock, [2, 2, 2, 2], ResNet18_Weights)
resnet34 = _builder("resnet34", BasicBlock, [3, 4, 6, 3], ResNet34_Weights)
resnet50 = _builder("resnet50", Bottleneck, [3, 4, 6, 3], ResNet50_Weights)
resnet101 = _builder("resnet101", Bottleneck, [3, 4, 23, 3], ResNet101_Weights)
resnet152 = _builder("resnet152", Bottleneck, [3, 8, 36, 3], ResNet152_Weights)
resnext50_32x4d = _builder("resnext50_32x4d", Bottleneck, [3, 4, 6, 3], ResNeXt50_32X4D_Weights, groups=32,
                           width_per_group=4)
resnext101_32x8d = _builder("resnext101_32x8d", Bottleneck, [3, 4, 23, 3], ResNeXt101_32X8D_Weights, groups=32,
                            width_per_group=8)
resnext101_64x4d = _builder("resnext101_64x4d", Bottleneck, [3, 4, 23, 3], ResNeXt101_64X4D_Weights, groups=64,
                            width_per_group=4)
wide_resnet50_2 = _builder("wide_resnet50_2", Bottleneck, [3, 4, 6, 3], Wide_ResNet50_2_Weights,
                           width_per_group=128)
wide_resnet101_2 = _builder("wide_resnet101_2", Bottleneck, [3, 4, 23, 3], Wide_ResNet101_2_Weights,
                            width_per_group=128)
