"""``fabric.sparse``: COO sparse tensors (``torch.sparse``'s subset used by
graph networks and sparse embeddings).

Example::

    >>> import fabric
    >>> i = fabric.tensor([[0, 1, 1], [2, 0, 2]])
    >>> s = fabric.sparse_coo_tensor(i, fabric.tensor([3., 4., 5.]), (2, 3))
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 5.]])
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from . import _csr
from . import _pointwise as _pw
from ._coo import SparseTensor, mm
from ._csr import SparseCsrTensor, sparse_csr_tensor
from ._layout import layout, sparse_coo, sparse_csr, strided

__all__ = ["mm", "sum", "addmm", "spmm", "softmax", "log_softmax", "sparse_coo_tensor", "sparse_csr_tensor",
           "SparseTensor", "SparseCsrTensor", "layout", "sparse_coo", "sparse_csr", "strided",
           "check_sparse_tensor_invariants"]


class check_sparse_tensor_invariants:
    """``check_sparse_tensor_invariants.is_enabled()``: fabric checks
    invariants only when ``check_invariants=True`` is passed."""

    _enabled = False

    @staticmethod
    def is_enabled() -> bool:
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._enabled = False


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None) -> SparseTensor:
    """Build a COO tensor from ``indices`` (``(sparse_dim, nnz)``) and
    ``values`` (``(nnz,) + dense_shape``); ``size`` defaults to the smallest
    shape holding every index.

    Example::

        >>> import fabric
        >>> fabric.sparse_coo_tensor([[0, 1]], [1., 2.], (3,)).to_dense()
        tensor([1., 2., 0.])
    """
    from .._creation import as_tensor, tensor
    idx = indices if isinstance(indices, Tensor) else tensor(indices, dtype=D.int64, device=device)
    if idx.dtype is not D.int64:
        if idx.is_floating_point():
            raise RuntimeError("indices must be an int64 tensor")
        idx = idx.long()
    if isinstance(values, Tensor):
        vals = values if dtype is None else values.to(dtype)
        if device is not None:
            vals = vals.to(device)
    else:
        vals = as_tensor(values, dtype=dtype, device=device)
    if device is not None:
        idx = idx.to(device)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.dim() == 0:
        raise RuntimeError("values must have at least one dimension")  # PyTorch: values must be (nnz, ...)
    nnz = idx.shape[1]
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {vals.shape[0]}")
    sdim = idx.shape[0]
    a = idx._data
    if size is None:
        if nnz == 0:
            raise RuntimeError("cannot infer the size of an empty sparse tensor; pass size=")
        size = tuple(int(m) + 1 for m in a.max(1)) + tuple(vals.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sdim + vals.dim() - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sdim}) + dense_dim ({vals.dim() - 1}), "
                           f"but got {len(size)}")
    if tuple(vals.shape[1:]) != size[sdim:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + list(size[sdim:])}, got {list(vals.shape)}")
    if check_invariants or (check_invariants is None and check_sparse_tensor_invariants._enabled):
        _check_invariants(a, size[:sdim])
    if requires_grad:
        vals = vals.detach().requires_grad_(True) if vals.requires_grad is False or not vals.is_leaf else vals
    return SparseTensor._build(idx.detach(), vals, size, bool(is_coalesced) or nnz <= 1)


def _check_invariants(a, sparse_size):
    if a.size == 0:
        return
    host = np.asarray(a) if isinstance(a, np.ndarray) else a.get()
    if (host < 0).any():
        d = int(np.nonzero((host < 0).any(1))[0][0])
        raise RuntimeError(f"found negative index {int(host[d].min())} for dim {d}")
    for d, n in enumerate(sparse_size):
        m = int(host[d].max())
        if m >= n:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {n} but found index {m}")


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
    """``Tensor.to_sparse()``: the COO form of a dense tensor (nonzeros only).

    Example::

        >>> import fabric
        >>> fabric.tensor([0., 5.]).to_sparse().values()
        tensor([5.])
    """
    if layout is sparse_csr:
        return _csr.to_sparse_csr(self)
    if layout is not None and layout != sparse_coo:
        raise NotImplementedError(f"to_sparse(layout={layout!r}): fabric supports fabric.sparse_coo and "
                                  "fabric.sparse_csr")
    sd = self.dim() if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= self.dim():
        raise RuntimeError(f"sparse_dim argument must be in [0, {self.dim()}] range, but {sd} is given")
    data = self._data
    xp = np if isinstance(data, np.ndarray) else __import__("cupy")
    mask = data != 0
    if self.dim() > sd:
        mask = mask.reshape(data.shape[:sd] + (-1,)).any(-1)
    nz = xp.nonzero(mask) if sd else ((),)
    if sd:
        idx = xp.stack(nz).astype(np.int64) if len(nz) else xp.zeros((0, 0), np.int64)
        vals = self[tuple(Tensor._make(i) for i in nz)]
    else:
        idx = xp.zeros((0, 1), np.int64)
        vals = self.unsqueeze(0)
        return SparseTensor._build(Tensor._make(idx), vals, self.shape, True)
    return SparseTensor._build(Tensor._make(idx.reshape(sd, -1)), vals, self.shape, True)


def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    """``Tensor.to_dense()`` of a dense tensor is the tensor itself."""
    return self if dtype is None else self.to(dtype)


def sum(input, dim=None, dtype=None):
    """Sum of a sparse tensor: a dense 0-d tensor for ``dim=None`` (or when
    every sparse dim is summed), else a coalesced sparse tensor.

    Example::

        >>> import fabric
        >>> s = fabric.tensor([[0., 1.], [2., 0.]]).to_sparse()
        >>> fabric.sparse.sum(s, 0).to_dense(), fabric.sparse.sum(s).item()
        (tensor([2., 1.]), 3.0)
    """
    if not input.is_sparse:
        out = input.sum() if dim is None else input.sum(dim)
        return out if dtype is None else out.to(dtype)
    return _pw.sparse_sum(input, dim, False, dtype)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1``."""
    return beta * mat + alpha * mm(mat1, mat2)


def spmm(input, mat2):
    """``fabric.spmm``: the same as :func:`mm` with a sparse left operand."""
    return mm(input, mat2)


def _masked_softmax(input, dim, log, dtype):
    # Unspecified entries count as -inf (PyTorch's sparse softmax): computed densely, then the
    # specified entries are picked back out, so gradients reach the values only.
    from ..nn import functional as F
    if not input.is_sparse:
        raise RuntimeError("sparse softmax expects a sparse COO input")
    s = input.coalesce()
    if dim < 0:
        dim += s.dim()
    if dim >= s.sparse_dim():
        raise NotImplementedError("sparse softmax over a dense dimension of a hybrid tensor is not supported")
    vals = s._vals if dtype is None else s._vals.to(dtype)
    xp = np if isinstance(vals._data, np.ndarray) else __import__("cupy")
    hole = xp.full(s._shape, -np.inf, vals._data.dtype)
    hole[tuple(s._idx._data)] = 0
    dense = SparseTensor._build(s._idx, vals, s._shape, True).to_dense() + Tensor._make(hole)
    out = (F.log_softmax if log else F.softmax)(dense, dim)
    picked = out[tuple(Tensor._make(i) for i in s._idx._data)]
    return SparseTensor._build(s._idx, picked, s._shape, True)


def softmax(input, dim, *, dtype=None):
    """Softmax over the specified entries along ``dim`` (unspecified ones act as
    ``-inf``); the result has ``input``'s sparsity pattern.  Computed through a
    dense intermediate (memory ``O(numel)``)."""
    return _masked_softmax(input, dim, False, dtype)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax over the specified entries along ``dim`` (see :func:`softmax`)."""
    return _masked_softmax(input, dim, True, dtype)


Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo = to_sparse
Tensor.to_dense = to_dense
Tensor.to_sparse_csr = _csr.to_sparse_csr
Tensor.crow_indices = _csr._no_compressed("crow_indices")
Tensor.col_indices = _csr._no_compressed("col_indices")
Tensor.layout = strided
