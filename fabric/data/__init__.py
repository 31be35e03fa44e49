"""``fabric.data`` (also ``fabric.utils.data``): datasets, samplers and the
``DataLoader``, with the names and behaviour of ``torch.utils.data``;
``fabric.data.datasets`` holds MNIST, FashionMNIST and Digits,
``fabric.data.transforms`` the basic image transforms.

Example::

    >>> import fabric
    >>> from fabric.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(fabric.arange(6).reshape(3, 2), fabric.tensor([0, 1, 0]))
    >>> x, y = next(iter(DataLoader(ds, batch_size=2)))
    >>> x.shape, y
    (fabric.Size([2, 2]), tensor([0, 1]))
"""
from __future__ import annotations

from . import dataloader, dataset, datasets, distributed, sampler, transforms  # noqa: F401
from ._worker import WorkerInfo
from .dataloader import DataLoader, _DatasetKind, default_collate, default_convert, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "_DatasetKind",
           "default_collate", "default_convert", "get_worker_info", "random_split"]
