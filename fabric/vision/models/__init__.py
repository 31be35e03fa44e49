"""``torchvision.models``: classification architectures with torchvision's
module layout (so ``state_dict`` keys match and torchvision checkpoints load)
and their ``weights=`` enums (files read from ``$TORCH_HOME/hub/checkpoints``).

Example::

    >>> from fabric.vision import models
    >>> m = models.resnet18(num_classes=10)
    >>> m.fc.out_features
    10
"""
from __future__ import annotations

from ._api import Weights, WeightsEnum, get_model, get_model_builder, get_model_weights, get_weight, list_models
from .alexnet import *  # noqa: F403
from .convnext import *  # noqa: F403
from .densenet import *  # noqa: F403
from .efficientnet import *  # noqa: F403
from .googlenet import *  # noqa: F403
from .inception import *  # noqa: F403
from .mobilenetv2 import *  # noqa: F403
from .mobilenetv3 import *  # noqa: F403
from .resnet import *  # noqa: F403
from .shufflenetv2 import *  # noqa: F403
from .squeezenet import *  # noqa: F403
from .vgg import *  # noqa: F403
from .vision_transformer import *  # noqa: F403

__all__ = ["Weights", "WeightsEnum", "get_model", "get_model_builder", "get_model_weights", "get_weight",
           "list_models"]
