"""``fabric.vision``: torchvision's API on fabric (``import torchvision`` under
``python -m fabric.run``): :mod:`~fabric.vision.datasets`,
:mod:`~fabric.vision.transforms`, :mod:`~fabric.vision.models`,
:mod:`~fabric.vision.ops` and :mod:`~fabric.vision.utils`.

Submodules load on first use, so ``import fabric`` stays light.

Example::

    >>> from fabric import vision
    >>> vision.transforms.ToTensor()
    ToTensor()
"""
from __future__ import annotations

import importlib

__version__ = "0.28.0+fabric"  # the torchvision release whose API this follows

_SUBMODULES = ("datasets", "transforms", "models", "ops", "utils")

__all__ = list(_SUBMODULES)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_image_backend() -> str:
    """The package used to load images: always ``'PIL'``."""
    return "PIL"


def set_image_backend(backend: str) -> None:
    """Only ``'PIL'`` is available (accimage is not supported)."""
    if backend != "PIL":
        raise ValueError(f"Invalid backend '{backend}'. Options are 'PIL' and 'accimage'" if backend != "accimage"
                         else "fabric.vision supports only the 'PIL' image backend (accimage is not available)")
