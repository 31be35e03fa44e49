"""``Digits``: the 1,797 8x8 handwritten digits (UCI optdigits) that ship
inside scikit-learn, so it works fully offline. scikit-learn is fabric's
optional ``examples`` extra (``pip install 'fabric-dl[examples]'``).

The images keep MNIST's conventions so code can switch between the two: a
sample is ``(8x8 uint8 NumPy array, int)``, with the original 0..16 grey
levels scaled to 0..255 (``round(v * 255 / 16)``), so ``ToTensor`` gives
values in [0, 1].

The train/test split is stratified and deterministic: within each class a
permutation from ``fabric.Generator().manual_seed(split_seed)`` picks
``round(test_fraction * count)`` test images; both parts keep the original
order.

Example::

    >>> from fabric.vision.datasets import Digits
    >>> train, test = Digits(train=True), Digits(train=False)   # doctest: +SKIP
    >>> len(train), len(test)                                    # doctest: +SKIP
    (1438, 359)
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._creation import from_numpy
from ...data.dataset import Dataset
from ...random import Generator
from .vision import apply_transforms

__all__ = ["Digits"]

_EXTRA_HINT = ("fabric.data.datasets.Digits needs scikit-learn, which ships the digits data: install fabric's "
               "'examples' extra (pip install 'fabric-dl[examples]') or scikit-learn itself")


def _load_sklearn_digits():
    try:
        from sklearn.datasets import load_digits  # pyright: ignore[reportMissingImports] (optional extra)
    except ImportError as e:
        raise ImportError(_EXTRA_HINT) from e
    return _parse_once(load_digits)


@functools.lru_cache(maxsize=1)
def _parse_once(load_digits):
    bunch = load_digits()
    return bunch.images, bunch.target


def _split(targets: np.ndarray, test_fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of the test samples (stratified, deterministic)."""
    g = Generator().manual_seed(seed)
    test = np.zeros(targets.shape[0], dtype=bool)
    for c in np.unique(targets):
        members = np.flatnonzero(targets == c)
        perm = g._impl.randperm(members.size, np.dtype(np.int64))
        test[members[perm[:round(test_fraction * members.size)]]] = True
    return test


class Digits(Dataset):
    """scikit-learn's 8x8 digits as a map-style dataset.

    Args:
        root: unused (the data ships inside scikit-learn); accepted so that
            code written for MNIST runs unchanged.
        train: the training part (else the test part) of the split.
        transform, target_transform: applied to the image / the target.
        download: unused, accepted like ``root``.
        test_fraction: share of each class held out for testing (0.2).
        split_seed: seed of the split (0).

    Raises ImportError naming the ``examples`` extra when scikit-learn is missing.
    """

    classes = [str(i) for i in range(10)]

    def __init__(self, root: str | None = None, train: bool = True, transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False, *, test_fraction: float = 0.2,
                 split_seed: int = 0) -> None:
        if not 0.0 < test_fraction < 1.0:
            raise ValueError(f"test_fraction should be in (0, 1), got {test_fraction}")
        self.root = root
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        self.test_fraction = test_fraction
        self.split_seed = split_seed
        images, targets = _load_sklearn_digits()
        keep = ~_split(targets, test_fraction, split_seed) if train else _split(targets, test_fraction, split_seed)
        self._images = np.rint(images[keep] * (255.0 / 16.0)).astype(np.uint8)
        self._targets_list = targets[keep].astype(np.int64).tolist()
        self.data = from_numpy(self._images)
        self.targets = from_numpy(targets[keep].astype(np.int64))

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = self._images[index].copy(), self._targets_list[index]
        img, target = apply_transforms(self.transform, self.target_transform, img, target)
        return img, target

    def __len__(self) -> int:
        return len(self._images)

    def __repr__(self) -> str:
        split = "Train" if self.train else "Test"
        return f"Dataset Digits\n    Number of datapoints: {len(self)}\n    Split: {split}"
