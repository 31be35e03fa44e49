"""SVHN (Street View House Numbers) from its MATLAB files, read through SciPy
(``scipy.io.loadmat``) when SciPy is installed; otherwise a clear error.

Example::

    >>> from fabric.vision.datasets import SVHN
    >>> sorted(SVHN.split_list)
    ['extra', 'test', 'train']
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .utils import check_integrity, download_url
from .vision import VisionDataset, apply_transforms

__all__ = ["SVHN"]


class SVHN(VisionDataset):
    """`SVHN <http://ufldl.stanford.edu/housenumbers/>`_ 32x32 digits; label
    10 (the digit 0) becomes 0, as in torchvision. ``root`` holds
    ``<split>_32x32.mat`` directly. A sample is (32x32x3 uint8 NumPy array, int);
    ``data`` is N x 3 x 32 x 32."""

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root: str | os.PathLike, split: str = "train", transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        if split not in self.split_list:
            valid = ", ".join(repr(s) for s in self.split_list)
            raise ValueError(f"Unknown value '{split}' for argument split. Valid values are {{{valid}}}.")
        self.split = split
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        try:
            import scipy.io as sio
        except ImportError as e:
            raise ImportError("fabric.vision.datasets.SVHN reads MATLAB files through SciPy: pip install scipy") from e
        loaded = sio.loadmat(os.path.join(self.root, self.filename))
        self.data = np.transpose(loaded["X"], (3, 2, 0, 1))  # N x C x H x W
        self.labels = loaded["y"].astype(np.int64).reshape(-1)
        np.place(self.labels, self.labels == 10, 0)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = np.ascontiguousarray(np.transpose(self.data[index], (1, 2, 0))), int(self.labels[index])
        img, target = apply_transforms(self.transform, self.target_transform, img, target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.file_md5)

    def download(self) -> None:
        if not self._check_integrity():
            download_url([self.url], os.path.join(self.root, self.filename), self.file_md5)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
