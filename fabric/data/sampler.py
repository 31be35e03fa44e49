"""Samplers: which indices a :class:`~fabric.data.DataLoader` reads, in which
order. They draw from fabric's CPU generator exactly as PyTorch's samplers draw
from torch's, so the same seed gives the same index sequence.

Example::

    >>> import fabric
    >>> from fabric.data import RandomSampler, BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    >>> g = fabric.Generator().manual_seed(0)
    >>> sorted(RandomSampler(range(5), generator=g))
    [0, 1, 2, 3, 4]
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import numpy as np

from .. import _dtype as D
from .._creation import as_tensor
from .._random_ops import multinomial, randperm
from ..random import Generator, generator_for

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]

_T_co = TypeVar("_T_co", covariant=True)
_INT64 = np.dtype(np.int64)


def _random_int64(generator=None) -> int:
    """``int(torch.empty((), dtype=torch.int64).random_(generator=generator))``:
    the draw PyTorch uses to seed samplers and DataLoader workers."""
    return int(generator_for(generator).random_((), _INT64))


class Sampler(Generic[_T_co]):
    """Base class: subclasses implement ``__iter__`` (and usually ``__len__``).

    No default ``__len__`` on purpose (as in PyTorch): ``len()`` of a sampler
    without one raises TypeError.
    """

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def _chunks(self) -> Iterator[range]:
        yield range(len(self.data_source))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Random indices: a fresh permutation per pass (``replacement=False``,
    repeated when ``num_samples > len``), or ``num_samples`` uniform draws.

    Without a ``generator`` each pass draws a seed from the default generator
    and runs a private generator from it, like PyTorch; with replacement the
    draws come 32 at a time, again like PyTorch, so that the streams agree.
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        # the dataset may change size between passes
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        for chunk in self._chunks():
            yield from chunk

    def _chunks(self) -> Iterator[list[int]]:
        """The index lists PyTorch's ``__iter__`` draws one after the other
        (each drawn when the previous one is used up); BatchSampler slices
        them directly instead of pulling indices one by one."""
        n = len(self.data_source)
        if self.generator is None:
            generator = Generator()
            generator.manual_seed(_random_int64())
        else:
            generator = self.generator
        impl = generator_for(generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield impl.randint(0, n, (32,), _INT64).tolist()
            yield impl.randint(0, n, (self.num_samples % 32,), _INT64).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield impl.randperm(n, _INT64).tolist()
            yield impl.randperm(n, _INT64).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in random order (no replacement)."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probabilities proportional to
    ``weights`` (``fabric.multinomial``).

    Example::

        >>> import fabric
        >>> g = fabric.Generator().manual_seed(0)
        >>> list(WeightedRandomSampler([0.0, 0.0, 1.0], 3, generator=g))
        [2, 2, 2]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=D.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rand_tensor = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from iter(rand_tensor.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``
    (the last one shorter unless ``drop_last``)."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        if type(self.sampler) in (RandomSampler, SequentialSampler):
            return self._from_chunks(self.sampler._chunks())
        return self._from_iter()

    def _from_chunks(self, chunks) -> Iterator[list[int]]:
        """The batches :meth:`_from_iter` would make, sliced from whole index
        lists. A chunk is pulled only when the buffered indices cannot fill
        the next batch, exactly when the one-by-one path would have pulled
        its first index, so the random draws happen at the same moments."""
        bs = self.batch_size
        buf, start = [], 0
        for chunk in chunks:
            if start:
                del buf[:start]
                start = 0
            buf.extend(chunk)
            while len(buf) - start >= bs:
                yield buf[start:start + bs]
                start += bs
        if len(buf) > start and not self.drop_last:
            yield buf[start:]

    def _from_iter(self) -> Iterator[list[int]]:
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*([sampler_iter] * self.batch_size)):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
