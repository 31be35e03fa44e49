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
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all

__all__ = list(_transforms_all)


def __getattr__(name: str):
    # autoaugment and v2 load on first use
    import importlib

    if name in ("v2", "autoaugment"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide", "AugMix"):
        return getattr(importlib.import_module(f"{__name__}.autoaugment"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
