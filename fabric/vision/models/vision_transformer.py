"""Vision Transformer (ViT-B/16, B/32, L/16, L/32), torchvision's layout
(``conv_proj``, ``class_token``, ``encoder.layers.encoder_layer_<i>``, ``heads.head``).

Example::

    >>> from fabric.vision.models import ViT_B_16_Weights
    >>> ViT_B_16_Weights.DEFAULT.meta["num_params"]
    86567656
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import fabric

from ... import nn
from ..._tensor import Tensor
from ..ops.misc import MLP
from ._api import WeightsEnum, handle_weights, imagenet_weights, load_weights, register_model

__all__ = ["VisionTransformer", "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_L_16_Weights", "ViT_L_32_Weights",
           "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32"]


_LAYER_NORM = partial(nn.LayerNorm, eps=1e-6)


class MLPBlock(MLP):
    """Linear -> GELU -> Dropout -> Linear -> Dropout (keys ``0`` and ``3``)."""

    _version = 2

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Pre-norm self-attention and MLP, each with a residual."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float,
                 norm_layer: Callable[..., nn.Module] = _LAYER_NORM) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 3:
            raise AssertionError(f"Expected (batch_size, seq_length, hidden_dim) got {tuple(input.shape)}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Position embedding, ``num_layers`` EncoderBlocks, final LayerNorm."""

    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                 dropout: float, attention_dropout: float,
                 norm_layer: Callable[..., nn.Module] = _LAYER_NORM) -> None:
        super().__init__()
        self.pos_embedding = nn.Parameter(fabric.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                        norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: Tensor) -> Tensor:
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    """Patch embedding (``conv_proj``), class token, encoder, ``heads``."""

    def __init__(self, image_size: int, patch_size: int, num_layers: int, num_heads: int, hidden_dim: int,
                 mlp_dim: int, dropout: float = 0.0, attention_dropout: float = 0.0, num_classes: int = 1000,
                 representation_size: int | None = None,
                 norm_layer: Callable[..., nn.Module] = _LAYER_NORM) -> None:
        super().__init__()
        if image_size % patch_size != 0:
            raise AssertionError("Input shape indivisible by patch size!")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        seq_length = (image_size // patch_size) ** 2 + 1
        self.class_token = nn.Parameter(fabric.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                               norm_layer)
        self.seq_length = seq_length
        heads: OrderedDict[str, nn.Module] = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)
        fan_in = 3 * patch_size * patch_size
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        if representation_size is not None:
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / hidden_dim))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x: Tensor) -> Tensor:
        n, c, h, w = x.shape
        p = self.patch_size
        if h != self.image_size:
            raise AssertionError(f"Wrong image height! Expected {self.image_size} but got {h}!")
        if w != self.image_size:
            raise AssertionError(f"Wrong image width! Expected {self.image_size} but got {w}!")
        x = self.conv_proj(x).reshape(n, self.hidden_dim, (h // p) * (w // p))
        return x.permute(0, 2, 1)

    def forward(self, x: Tensor) -> Tensor:
        x = self._process_input(x)
        x = fabric.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


_URL = "https://download.pytorch.org/models/"


class ViT_B_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vit_b_16-c867db91.pth", 86567656, min_size=(224, 224))
    DEFAULT = IMAGENET1K_V1


class ViT_B_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vit_b_32-d86f8d99.pth", 88224232, min_size=(224, 224))
    DEFAULT = IMAGENET1K_V1


class ViT_L_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vit_l_16-852ce7e3.pth", 304326632, crop_size=224, resize_size=242,
                                     min_size=(224, 224))
    DEFAULT = IMAGENET1K_V1


class ViT_L_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = imagenet_weights(_URL + "vit_l_32-c7638314.pth", 306535400, min_size=(224, 224))
    DEFAULT = IMAGENET1K_V1


def _builder(name: str, patch: int, layers: int, heads: int, hidden: int, mlp: int, weights_enum):
    def build(*, weights=None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
        w = handle_weights(weights_enum, weights, kwargs)
        image_size = kwargs.pop("image_size", 224)
        model = VisionTransformer(image_size, patch, layers, heads, hidden, mlp, **kwargs)
        return load_weights(model, w, progress) if w is not None else model

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{name} from torchvision (``weights``: :class:`{weights_enum.__name__}`)."
    build._weights_enum = weights_enum
    return register_model(name)(build)


vit_b_16 = _builder("vit_b_16", 16, 12, 12, 768, 3072, ViT_B_16_Weights)
vit_b_32 = _builder("vit_b_32", 32, 12, 12, 768, 3072, ViT_B_32_Weights)
vit_l_16 = _builder("vit_l_16", 16, 24, 16, 1024, 4096, ViT_L_16_Weights)
vit_l_32 = _builder("vit_l_32", 32, 24, 16, 1024, 4096, ViT_L_32_Weights)
