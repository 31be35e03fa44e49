"""``DistributedSampler``: each of ``num_replicas`` processes reads its own
``1/num_replicas`` of the dataset, with PyTorch's exact shuffling (``seed +
epoch``), padding and strided subsampling.

Example::

    >>> from fabric.data import DistributedSampler
    >>> list(DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False))
    [1, 4, 7, 0]
"""
from __future__ import annotations

import math
from collections.abc import Iterator

from .._random_ops import randperm
from ..random import Generator
from .dataset import Dataset
from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _default_world():
    """(world size, rank) from ``fabric.distributed`` when it exists and is
    initialised; PyTorch's error otherwise."""
    try:
        from .. import distributed as dist  # optional package
    except ImportError:
        raise RuntimeError("Requires distributed package to be available") from None
    if not (dist.is_available() and dist.is_initialized()):
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return dist.get_world_size(), dist.get_rank()


class DistributedSampler(Sampler):
    """Restricts loading to the shard of one replica.

    ``shuffle=True`` permutes with a generator seeded ``seed + epoch``; call
    :meth:`set_epoch` each epoch for a new order. Without ``drop_last`` the
    index list is padded by wrapping around so that every replica gets
    ``ceil(len / num_replicas)`` indices; with it the tail is dropped. Replica
    ``rank`` takes every ``num_replicas``-th index starting at ``rank``.
    """

    def __init__(self, dataset: Dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            world, world_rank = _default_world()
            num_replicas = world if num_replicas is None else num_replicas
            rank = world_rank if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator:
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle=True`` each epoch gets its own order."""
        self.epoch = epoch
