"""Pretrained weights: ``Weights`` (a checkpoint's URL, its preprocessing and
metadata) and the ``WeightsEnum`` of each model (``ResNet18_Weights.IMAGENET1K_V1``
...), with torchvision's names and file names.

fabric never downloads a checkpoint: ``get_state_dict`` reads it from
``$TORCH_HOME/hub/checkpoints/<file name>`` (``~/.cache/torch`` when
``TORCH_HOME`` is unset), the folder torchvision downloads into, and raises a
RuntimeError naming the URL and the path to put the file at when it is absent.

Example::

    >>> from fabric.vision.models import ResNet18_Weights
    >>> ResNet18_Weights.DEFAULT.url.rsplit("/", 1)[-1]
    'resnet18-f37072fd.pth'
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["Weights", "WeightsEnum", "get_dir", "load_state_dict_from_url", "register_model", "get_model",
           "get_model_builder", "get_model_weights", "get_weight", "list_models"]

_HASH = re.compile(r"-([a-f0-9]*)\.")


def get_dir() -> str:
    """The hub folder: ``$TORCH_HOME/hub`` (default ``$XDG_CACHE_HOME/torch/hub``, i.e. ``~/.cache/torch/hub``)."""
    torch_home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"),
                                                                       "torch")))
    return os.path.join(torch_home, "hub")


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = True):
    """The state dict of the checkpoint ``url`` names, read from the local
    checkpoint folder (``model_dir``, default ``get_dir()/checkpoints``).
    With ``check_hash`` the file's SHA-256 must start with the hex digits in
    its name (``resnet18-f37072fd.pth``)."""
    from ... import serialization

    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    filename = file_name or os.path.basename(url.split("?")[0])
    path = os.path.join(model_dir, filename)
    if not os.path.isfile(path):
        raise RuntimeError(f"checkpoint {filename} not found: fabric does not download weights. Fetch {url} and put "
                           f"it at {path} (the folder is $TORCH_HOME/hub/checkpoints; TORCH_HOME defaults to "
                           "~/.cache/torch), then try again.")
    if check_hash:
        r = _HASH.search(filename)
        prefix = r.group(1) if r else None
        if prefix:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            if not digest.startswith(prefix):
                raise RuntimeError(f'invalid hash value (expected "{prefix}", got "{digest}")')
    return serialization.load(path, map_location=map_location, weights_only=weights_only)


@dataclass
class Weights:
    """A checkpoint: where it lives, the preprocessing it expects, and metadata."""

    url: str
    transforms: Callable
    meta: dict[str, Any] = field(default_factory=dict)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Weights):
            return NotImplemented
        return self.url == other.url and self.meta == other.meta

    def __hash__(self) -> int:
        return hash(self.url)


class WeightsEnum(Enum):
    """Base of each model's weights enum (``DEFAULT`` aliases the best entry)."""

    @classmethod
    def verify(cls, obj: Any) -> Any:
        if obj is not None:
            if type(obj) is str:
                obj = cls[obj.replace(cls.__name__ + ".", "")]
            elif not isinstance(obj, cls):
                raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but received "
                                f"{obj.__class__.__name__}.")
        return obj

    def get_state_dict(self, *args: Any, **kwargs: Any):
        return load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def transforms(self) -> Callable:
        return self.value.transforms

    @property
    def meta(self) -> dict[str, Any]:
        return self.value.meta


_MODELS: dict[str, Callable] = {}


def register_model(name: str | None = None):
    def wrapper(fn):
        key = name if name is not None else fn.__name__
        if key in _MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        _MODELS[key] = fn
        return fn

    return wrapper


def list_models(module=None, include=None, exclude=None) -> list[str]:
    """Names of the registered model builders (optionally only those of ``module``)."""
    import fnmatch

    names = [k for k, v in _MODELS.items() if module is None or v.__module__.rsplit(".", 1)[0] == module.__name__
             or v.__module__ == module.__name__]
    if include:
        patterns = [include] if isinstance(include, str) else include
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)]
    if exclude:
        patterns = [exclude] if isinstance(exclude, str) else exclude
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in patterns)]
    return sorted(names)


def get_model_builder(name: str) -> Callable:
    name = name.lower()
    try:
        return _MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config: Any):
    """Build the model registered as ``name`` (``get_model("resnet18", weights=None)``)."""
    return get_model_builder(name)(**config)


def get_model_weights(name) -> type[WeightsEnum]:
    """The weights enum class of a model (by name or builder)."""
    fn = get_model_builder(name) if isinstance(name, str) else name
    enum = getattr(fn, "_weights_enum", None)
    if enum is None:
        raise ValueError(f"The weight enum for the specific method couldn't be retrieved for {fn.__name__}")
    return enum


def get_weight(name: str) -> WeightsEnum:
    """``get_weight("ResNet50_Weights.IMAGENET1K_V2")``."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    import importlib

    enum = getattr(importlib.import_module(__package__), enum_name, None)
    if enum is None or not (isinstance(enum, type) and issubclass(enum, WeightsEnum)):
        raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
    return enum[value_name]


def handle_weights(builder_weights_enum, weights, kwargs: dict, num_classes_key: str = "num_classes"):
    """Checks ``weights`` and, when given, fixes ``num_classes`` to the checkpoint's."""
    weights = builder_weights_enum.verify(weights)
    if weights is not None:
        n = len(weights.meta["categories"]) if "categories" in weights.meta else weights.meta.get("num_classes", 1000)
        if num_classes_key in kwargs and kwargs[num_classes_key] != n:
            raise ValueError(f"The parameter '{num_classes_key}' expected value {n} but got {kwargs[num_classes_key]} "
                             "instead.")
        kwargs[num_classes_key] = n
    return weights


def imagenet_weights(url: str, num_params: int, crop_size: int = 224, resize_size: int = 256, interpolation=None,
                     **meta: Any) -> Weights:
    """A torchvision ImageNet-1K checkpoint entry."""
    from functools import partial

    from ..transforms._presets import ImageClassification
    from ..transforms.functional import InterpolationMode

    preset = partial(ImageClassification, crop_size=crop_size, resize_size=resize_size,
                     interpolation=interpolation or InterpolationMode.BILINEAR)
    return Weights(url=url, transforms=preset,
                   meta={"num_params": num_params, "num_classes": 1000, "min_size": (1, 1), **meta})


def load_weights(model, weights, progress: bool = True, remap=None):
    """Load ``weights`` (a WeightsEnum member) into ``model``; ``remap`` renames old keys first."""
    state_dict = weights.get_state_dict(progress=progress, check_hash=True)
    if remap is not None:
        state_dict = remap(state_dict)
    model.load_state_dict(state_dict)
    return model
