"""The CPU backend: NumPy."""
from __future__ import annotations

import numpy as np

from .base import Backend


class NumpyBackend(Backend):
    name = "cpu"
    xp = np

    def scatter_add(self, target, index, values) -> None:
        # np.add.at is slow on large index arrays; for a single integer index
        # array along axis 0, bincount-style accumulation is much faster.
        if (isinstance(index, np.ndarray) and index.ndim == 1 and target.ndim >= 1
                and index.dtype.kind in "iu" and target.flags.c_contiguous):
            flat = target.reshape(target.shape[0], -1)
            vals = np.broadcast_to(values, (index.shape[0],) + target.shape[1:]).reshape(index.shape[0], -1)
            if flat.shape[1] == 1:
                flat[:, 0] += np.bincount(index % target.shape[0], weights=vals[:, 0], minlength=target.shape[0]).astype(target.dtype, copy=False)
                return
            order = np.argsort(index, kind="stable")
            sidx = index[order] % target.shape[0]
            uniq, starts = np.unique(sidx, return_index=True)
            sums = np.add.reduceat(vals[order], starts, axis=0)
            flat[uniq] += sums.astype(target.dtype, copy=False)
            return
        np.add.at(target, index, values)

    def to_numpy(self, array):
        return array

    def from_numpy(self, array, device_index: int = 0):
        return array
