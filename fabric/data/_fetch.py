"""Fetchers: turn what the sampler yields into a batch, in the main process
or in a worker (as ``torch.utils.data._utils.fetch``).

:class:`_MapDatasetFetcher` has one fast path: a :class:`TensorDataset`
(possibly under plain :class:`Subset` s, as ``random_split`` makes) with the
default collate is gathered with one ``take`` per tensor instead of indexing
each sample and stacking. The result is the same list of tensors that
``default_collate`` of the samples gives (``test_fast_path_matches_generic``
holds the two together); anything unusual (autograd, odd indices, an index
error) takes the generic path.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import state as _grad_state
from ..backends import backend_of
from ._collate import default_collate
from .dataset import Subset, TensorDataset

__all__ = []


class _BaseDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        raise NotImplementedError


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _tensor_source(dataset):
    """``(tensors, index map or None)`` when ``dataset`` is a TensorDataset,
    maybe under plain Subsets; ``None`` otherwise."""
    maps = []
    while type(dataset) is Subset:
        maps.append(dataset.indices)
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or not dataset.tensors:
        return None
    tensors = dataset.tensors
    if not all(isinstance(t, Tensor) and t.ndim >= 1 for t in tensors):
        return None
    n = len(dataset)
    index_map = None
    for indices in reversed(maps):  # innermost subset first
        idx = _as_index(indices.tolist() if isinstance(indices, Tensor) else indices)
        if idx is None or (idx.size and (idx.min() < -n or idx.max() >= n)):
            return None
        idx = np.where(idx < 0, idx + n, idx)
        index_map = idx if index_map is None else index_map[idx]
        n = idx.size
    return tensors, index_map


def _as_index(index):
    try:
        idx = np.asarray(index)
    except Exception:
        return None
    return idx if idx.ndim == 1 and idx.dtype.kind in "iu" else None


class _MapDatasetFetcher(_BaseDatasetFetcher):
    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self._fast = _tensor_source(dataset) if auto_collation and collate_fn is default_collate else None

    def fetch(self, possibly_batched_index):
        if self.auto_collation:
            if self._fast is not None:
                batch = self._fast_fetch(possibly_batched_index)
                if batch is not None:
                    return batch
            if hasattr(self.dataset, "__getitems__") and self.dataset.__getitems__:
                data = self.dataset.__getitems__(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)

    def _fast_fetch(self, index):
        tensors, index_map = self._fast  # pyright: ignore[reportGeneralTypeIssues] (only called when set)
        if _grad_state.enabled and any(t._requires_grad for t in tensors):
            return None
        idx = _as_index(index)
        if idx is None or idx.size == 0:
            return None
        n = tensors[0]._data.shape[0] if index_map is None else index_map.size
        if idx.min() < -n or idx.max() >= n:
            return None  # the generic path raises the proper IndexError
        if index_map is not None:
            idx = index_map[idx]
        out = []
        for t in tensors:
            a = t._data
            if a.__class__ is np.ndarray:
                out.append(Tensor._make(a.take(idx, axis=0), False))
            else:
                xp = backend_of(a).xp
                out.append(Tensor._make(xp.take(a, xp.asarray(idx), axis=0), False))
        return out
