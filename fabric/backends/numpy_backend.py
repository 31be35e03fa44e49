"""The CPU backend: NumPy."""
from __future__ import annotations

import numpy as np

from .base import Backend


class NumpyBackend(Backend):
    name = "cpu"
    xp = np

    def scatter_add(self, target, index, values) -> None:
        """``target[index] += values`` with repeated indices accumulating.

        ``np.add.at`` is slow on large index arrays, so a 1-D integer index
        along axis 0 (what every caller in fabric passes) sums duplicates
        first: ``bincount`` for one float column, else a stable sort plus
        ``np.add.reduceat``; ``target`` may be any writeable view.
        """
        if not (isinstance(index, np.ndarray) and index.ndim == 1 and target.ndim >= 1
                and index.dtype.kind in "iu"):
            np.add.at(target, index, values)
            return
        if index.size == 0:
            return
        n = target.shape[0]
        idx = index.astype(np.intp, copy=False)
        if idx.dtype.kind == "i" and idx.min() < 0:
            idx = np.where(idx < 0, idx + n, idx)
        inner = target.shape[1:]
        vals = np.broadcast_to(values, (idx.shape[0],) + inner)
        if target.dtype.kind == "f" and vals.size == idx.size:
            summed = np.bincount(idx, weights=vals.reshape(-1), minlength=n)
            target += summed.astype(target.dtype, copy=False).reshape(target.shape)
            return
        order = np.argsort(idx, kind="stable")
        sidx = idx[order]
        starts = np.flatnonzero(np.concatenate(([True], sidx[1:] != sidx[:-1])))
        sums = np.add.reduceat(vals[order], starts, axis=0)
        target[sidx[starts]] += sums.astype(target.dtype, copy=False)

    def to_numpy(self, array):
        return array

    def from_numpy(self, array, device_index: int = 0):
        return array
