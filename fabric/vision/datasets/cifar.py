"""CIFAR-10 and CIFAR-100 from the official python tarballs
(``root/cifar-10-batches-py/data_batch_1`` ... as torchvision lays them out).

The batch files are pickles; they are read by a restricted unpickler
(:func:`~fabric.vision.datasets.utils.load_pickled_arrays`) that runs no code
from the file. A sample is ``(32x32x3 uint8 NumPy array, int)``.

Example::

    >>> from fabric.vision.datasets import CIFAR10
    >>> CIFAR10.base_folder
    'cifar-10-batches-py'
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .utils import check_integrity, download_url, extract_tar, load_pickled_arrays
from .vision import VisionDataset, apply_transforms

__all__ = ["CIFAR10", "CIFAR100"]


class CIFAR10(VisionDataset):
    """`CIFAR-10 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: 50,000
    training and 10,000 test 32x32 colour images in 10 classes.

    Args:
        root: folder holding ``cifar-10-batches-py`` (or where to put it).
        train: the five training batches (else the test batch).
        transform, target_transform: applied to the image / the target.
        download: fetch and extract the tarball (MD5 checked) unless the
            batches are already there.

    Every batch file is checked against its MD5 before use, as torchvision does.
    """

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddbe9ce2dea5b4beb5a5"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}

    def __init__(self, root: str | os.PathLike, train: bool = True, transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        data, targets = [], []
        for file_name, _ in self.train_list if self.train else self.test_list:
            entry = load_pickled_arrays(os.path.join(self.root, self.base_folder, file_name))
            batch = np.asarray(entry["data"])
            labels = entry["labels"] if "labels" in entry else entry["fine_labels"]
            if batch.dtype != np.uint8 or batch.ndim != 2 or batch.shape[1] != 3 * 32 * 32 or len(labels) != len(batch):
                raise RuntimeError(f"{file_name}: expected N x 3072 uint8 images and N labels, got "
                                   f"{batch.shape} {batch.dtype} and {len(labels)} labels")
            data.append(batch)
            targets.extend(int(t) for t in labels)
        self.data = np.vstack(data).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1))  # HWC, as torchvision
        self.targets = targets
        self._load_meta()

    def _load_meta(self) -> None:
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if not check_integrity(path, self.meta["md5"]):
            raise RuntimeError("Dataset metadata file not found or corrupted. You can use download=True to download it")
        self.classes = [str(c) for c in load_pickled_arrays(path)[self.meta["key"]]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = np.ascontiguousarray(self.data[index]), self.targets[index]
        img, target = apply_transforms(self.transform, self.target_transform, img, target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        folder = os.path.join(self.root, self.base_folder)
        return all(check_integrity(os.path.join(folder, name), md5) for name, md5 in self.train_list + self.test_list)

    def download(self) -> None:
        """Fetch the tarball (MD5 checked) and extract it into ``root``."""
        if self._check_integrity():
            return
        archive = os.path.join(self.root, self.filename)
        if not check_integrity(archive, self.tgz_md5):
            download_url([self.url], archive, self.tgz_md5)
        extract_tar(archive, self.root)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """`CIFAR-100 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: as
    :class:`CIFAR10` with 100 fine classes (``root/cifar-100-python``)."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
