"""MNIST and Fashion-MNIST from their standard IDX files, with torchvision's
folder layout and API (``root/MNIST/raw/train-images-idx3-ubyte[.gz]``; the
same files directly in ``root`` work too).

A sample is ``(image, target)``: the image a 28x28 ``uint8`` NumPy array
(torchvision gives a PIL image; :class:`~fabric.data.transforms.ToTensor`
turns either into a 1x28x28 float tensor in [0, 1]) and the target an int.

Example::

    >>> from fabric.vision.datasets import MNIST
    >>> MNIST.resources[0][0]
    'train-images-idx3-ubyte.gz'
"""
from __future__ import annotations

import os
import string
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._creation import from_numpy
from ...data.dataset import Dataset
from .utils import check_integrity, download_url, extract_zip_members, read_idx
from .vision import apply_transforms

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST"]


class MNIST(Dataset):
    """`MNIST <http://yann.lecun.com/exdb/mnist/>`_ handwritten digits.

    Args:
        root: folder holding ``MNIST/raw/<files>`` (torchvision's layout) or the
            files themselves; each file may be gzip-compressed or not.
        train: the 60,000 training images (else the 10,000 test images).
        transform: applied to the image (a HxW uint8 NumPy array).
        target_transform: applied to the target (an int).
        download: fetch the missing files from :attr:`mirrors` into
            ``root/MNIST/raw``, verifying each file's MD5; RuntimeError naming
            every mirror tried when none answers (e.g. offline).

    Attributes: ``data`` (uint8 tensor N x 28 x 28), ``targets`` (int64 tensor),
    ``classes``, ``class_to_idx``.
    """

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root: str | os.PathLike, train: bool = True, transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False) -> None:
        self.root = os.path.expanduser(os.fspath(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        if download:
            self.download()
        images, labels = self._find(self._image_file), self._find(self._label_file)
        if images is None or labels is None:
            raise RuntimeError(f"Dataset not found. You can use download=True to download it (looked for "
                               f"{self._image_file}[.gz] and {self._label_file}[.gz] in {self.raw_folder} and "
                               f"{self.root})")
        self._images = read_idx(images)
        self._labels = read_idx(labels)
        if self._images.dtype != np.uint8 or self._images.ndim != 3:
            raise RuntimeError(f"{images}: expected a 3-d uint8 IDX file, got {self._images.ndim}-d "
                               f"{self._images.dtype}")
        if self._labels.dtype != np.uint8 or self._labels.ndim != 1:
            raise RuntimeError(f"{labels}: expected a 1-d uint8 IDX file, got {self._labels.ndim}-d "
                               f"{self._labels.dtype}")
        if len(self._images) != len(self._labels):
            raise RuntimeError(f"{images} holds {len(self._images)} images but {labels} {len(self._labels)} labels")
        self.data = from_numpy(self._images)
        self.targets = from_numpy(self._labels.astype(np.int64))
        self._targets_list = self.targets.tolist()

    @property
    def _split(self) -> str:
        return "train" if self.train else "t10k"

    @property
    def _image_file(self) -> str:
        return f"{self._split}-images-idx3-ubyte"

    @property
    def _label_file(self) -> str:
        return f"{self._split}-labels-idx1-ubyte"

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "processed")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    @property
    def train_labels(self):
        warnings.warn("train_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def test_labels(self):
        warnings.warn("test_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def train_data(self):
        warnings.warn("train_data has been renamed data", stacklevel=2)
        return self.data

    @property
    def test_data(self):
        warnings.warn("test_data has been renamed data", stacklevel=2)
        return self.data

    def _find(self, name: str) -> str | None:
        for folder in (self.raw_folder, self.root):
            for candidate in (name, name + ".gz"):
                path = os.path.join(folder, candidate)
                if os.path.isfile(path):
                    return path
        return None

    def _check_exists(self) -> bool:
        return all(self._find(os.path.splitext(f)[0]) is not None for f, _ in self.resources)

    def download(self) -> None:
        """Download the files that are missing (each checked against its MD5)."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            path = os.path.join(self.raw_folder, filename)
            if self._find(os.path.splitext(filename)[0]) is not None or check_integrity(path, md5):
                continue
            download_url([f"{mirror}{filename}" for mirror in self.mirrors], path, md5)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = self._images[index].copy(), self._targets_list[index]
        img, target = apply_transforms(self.transform, self.target_transform, img, target)
        return img, target

    def __len__(self) -> int:
        return len(self._images)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}", f"Root location: {self.root}", self.extra_repr()]
        if self.transform is not None:
            lines.append(f"Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"Target transform: {self.target_transform!r}")
        return "\n".join([f"Dataset {self.__class__.__name__}"] + ["    " + line for line in lines])


class FashionMNIST(MNIST):
    """`Fashion-MNIST <https://github.com/zalandoresearch/fashion-mnist>`_:
    the same format and API as :class:`MNIST` (folder ``root/FashionMNIST/raw``)."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


class KMNIST(MNIST):
    """`Kuzushiji-MNIST <https://github.com/rois-codh/kmnist>`_: cursive
    Japanese characters in MNIST's format (folder ``root/KMNIST/raw``)."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


_EMNIST_MERGED = set("cijklmopsuvwxyz")
_EMNIST_ALL = set(string.digits + string.ascii_letters)


class EMNIST(MNIST):
    """`EMNIST <https://www.nist.gov/itl/products-and-services/emnist-dataset>`_:
    letters and digits in MNIST's format, in six ``split``\\ s (byclass,
    bymerge, balanced, letters, digits, mnist). Files
    ``root/EMNIST/raw/emnist-<split>-<train|test>-{images-idx3,labels-idx1}-ubyte[.gz]``
    as torchvision lays them out; ``download=True`` fetches NIST's zip (MD5
    checked) and extracts the files of every split.
    """

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    classes_split_dict = {
        "byclass": sorted(_EMNIST_ALL),
        "bymerge": sorted(_EMNIST_ALL - _EMNIST_MERGED),
        "balanced": sorted(_EMNIST_ALL - _EMNIST_MERGED),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root: str | os.PathLike, split: str, **kwargs: Any) -> None:
        if split not in self.splits:
            valid = ", ".join(repr(s) for s in self.splits)
            raise ValueError(f"Unknown value '{split}' for argument split. Valid values are {{{valid}}}.")
        self.split = split
        self.classes = self.classes_split_dict[split]
        super().__init__(root, **kwargs)

    @property
    def _file_prefix(self) -> str:
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def _image_file(self) -> str:
        return f"{self._file_prefix}-images-idx3-ubyte"

    @property
    def _label_file(self) -> str:
        return f"{self._file_prefix}-labels-idx1-ubyte"

    def _check_exists(self) -> bool:
        return self._find(self._image_file) is not None and self._find(self._label_file) is not None

    def download(self) -> None:
        """Fetch NIST's zip (MD5 checked) and extract the IDX files into ``raw_folder``."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        archive = os.path.join(self.raw_folder, "gzip.zip")
        if not check_integrity(archive, self.md5):
            download_url([self.url], archive, self.md5)
        extract_zip_members(archive, self.raw_folder, lambda name: name.startswith("gzip/emnist-")
                            and name.endswith("-ubyte.gz"))
