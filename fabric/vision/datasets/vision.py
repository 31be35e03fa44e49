"""``VisionDataset``: the base of torchvision's datasets (root, transforms,
the standard ``repr``).

Example::

    >>> from fabric.vision.datasets import VisionDataset
    >>> VisionDataset("data").root
    'data'
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...data.dataset import Dataset


def apply_transforms(transform: Callable | None, target_transform: Callable | None, sample: Any,
                     target: Any) -> tuple[Any, Any]:
    """``(transform(sample), target_transform(target))``, each only where set: the tail of every dataset's
    ``__getitem__`` (called with the dataset's current attributes, so a transform assigned later applies)."""
    if transform is not None:
        sample = transform(sample)
    if target_transform is not None:
        target = target_transform(target)
    return sample, target


class StandardTransform:
    """Apply ``transform`` to the input and ``target_transform`` to the target."""

    def __init__(self, transform: Callable | None = None, target_transform: Callable | None = None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:
        return apply_transforms(self.transform, self.target_transform, input, target)

    def __repr__(self) -> str:
        body = [self.__class__.__name__]
        if self.transform is not None:
            body.append(f"Transform: {self.transform!r}")
        if self.target_transform is not None:
            body.append(f"Target transform: {self.target_transform!r}")
        return "\n".join(body)


class VisionDataset(Dataset):
    """Base class: ``root``, and either ``transforms`` (applied to (input,
    target)) or ``transform`` / ``target_transform`` (not both)."""

    _repr_indent = 4

    def __init__(self, root: str | os.PathLike | None = None, transforms: Callable | None = None,
                 transform: Callable | None = None, target_transform: Callable | None = None) -> None:
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        has_transforms = transforms is not None
        has_separate_transform = transform is not None or target_transform is not None
        if has_transforms and has_separate_transform:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        if has_separate_transform:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError  # each dataset defines its samples

    def __len__(self) -> int:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body += repr(self.transforms).splitlines()
        return "\n".join([f"Dataset {self.__class__.__name__}"] + [" " * self._repr_indent + line for line in body])
