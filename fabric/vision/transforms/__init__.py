"""``torchvision.transforms``: the v1 classes (:mod:`.transforms`), the
functional API (:mod:`.functional`), AutoAugment/RandAugment/TrivialAugmentWide
(:mod:`.autoaugment`) and the ``v2`` names that coincide with v1.

Example::

    >>> from fabric.vision import transforms
    >>> transforms.RandomHorizontalFlip(0.5)
    RandomHorizontalFlip(p=0.5)
"""
from __future__ import annotations

from . import functional  # noqa: F401
from .autoaugment import AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .transforms import *  # noqa: F403
from .transforms import __all__ as _transforms_all

__all__ = list(_transforms_all) + ["AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide"]


def __getattr__(name: str):
    if name == "v2":  # loads on first use
        import importlib

        return importlib.import_module(f"{__name__}.v2")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
