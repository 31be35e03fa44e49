"""ConvNeXt tiny/small/base/large, torchvision's layout.

Example::

    >>> from fabric.vision.models import ConvNeXt_Tiny_Weights
    >>> ConvNeXt_Tiny_Weights.DEFAULT.meta["num_params"]
    28589128
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ...nn import functional as F
from ..ops.misc import Conv2dNormActivation, Permute
from ..ops.stochastic_depth import StochasticDepth
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["ConvNeXt", "ConvNeXt_Tiny_Weights", "ConvNeXt_Small_Weights", "ConvNeXt_Base_Weights",
           "ConvNeXt_Large_Weights", "convnext_tiny", "convnext_small", "convnext_base", "convnext_large"]


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an (N, C, H, W) tensor."""

    def forward(self, x: Tensor) -> Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """7x7 depthwise conv, LayerNorm, MLP (x4, GELU), layer scale, stochastic depth, residual."""

    def __init__(self, dim: int, layer_scale: float, stochastic_depth_prob: float,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
                                   Permute([0, 2, 3, 1]), norm_layer(dim),
                                   nn.Linear(in_features=dim, out_features=4 * dim, bias=True), nn.GELU(),
                                   nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
                                   Permute([0, 3, 1, 2]))
        self.layer_scale = nn.Parameter(fabric.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input: Tensor) -> Tensor:
        return self.stochastic_depth(self.layer_scale * self.block(input)) + input


class CNBlockConfig:
    def __init__(self, input_channels: int, out_channels: int | None, num_layers: int) -> None:
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers


class ConvNeXt(nn.Module):
    """Patchify stem (4x4, stride 4), stages of CNBlocks joined by downsampling, ``classifier``."""

    def __init__(self, block_setting: list[CNBlockConfig], stochastic_depth_prob: float = 0.0,
                 layer_scale: float = 1e-6, num_classes: int = 1000, block: Callable[..., nn.Module] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None, **kwargs: Any) -> None:
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        block = block or CNBlock
        norm_layer = norm_layer or partial(LayerNorm2d, eps=1e-6)
        layers: list[nn.Module] = [Conv2dNormActivation(3, block_setting[0].input_channels, kernel_size=4, stride=4,
                                                        padding=0, norm_layer=norm_layer, activation_layer=None,
                                                        bias=True)]
        total = sum(cnf.num_layers for cnf in block_setting)
        block_id = 0
        for cnf in block_setting:
            stage = []
            for _ in range(cnf.num_layers):
                stage.append(block(cnf.input_channels, layer_scale, stochastic_depth_prob * block_id / (total - 1.0)))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                            nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        last_out = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(norm_layer(last_out), nn.Flatten(1), nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)))


_URL = "https://download.pytorch.org/models/"


class ConvNeXt_Tiny_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "convnext_tiny-983f1562.pth", 28589128, resize_size=236, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "convnext_small-0c510722.pth", 50223688, resize_size=230,
                                     min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Base_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "convnext_base-6075fbad.pth", 88591464, resize_size=232, min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "convnext_large-ea097f82.pth", 197767336, resize_size=232,
                                     min_size=(32, 32))
    DEFAULT = IMAGENET1K_V1


def _builder(name: str, setting, sd_prob: float, weights_enum):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> ConvNeXt:
        w = handle_weights(weights_enum, weights, kwargs)
        cfgs = [CNBlockConfig(*c) for c in setting]
        model = ConvNeXt(cfgs, stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", sd_prob), **kwargs)
        return load_weights(model, w, progress) if w is not None else model

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{name} from torchvision (``weights``: :class:`{weights_enum.__name__}`)."
    build._weights_enum = weights_enum
    return register_model(name)(build)


convnext_tiny = _builder("convnext_tiny", [(96, 192, 3), (192, 384, 3), (384, 768, 9), (768, None, 3)], 0.1,
                         ConvNeXt_Tiny_Weights)
convnext_small = _builder("convnext_small", [(96, 192, 3), (192, 384, 3), (384, 768, 27), (768, None, 3)], 0.4,
                          ConvNeXt_Small_Weights)
convnext_base = _builder("convnext_base", [(128, 256, 3), (256, 512, 3), (512, 1024, 27), (1024, None, 3)], 0.5,
                         ConvNeXt_Base_Weights)
convnext_large = _builder("convnext_large", [(192, 384, 3), (384, 768, 3), (768, 1536, 27), (1536, None, 3)], 0.5,
                          ConvNeXt_Large_Weights)
