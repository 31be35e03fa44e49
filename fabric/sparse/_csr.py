"""Sparse CSR matrices (``layout == fabric.sparse_csr``): ``crow_indices``
(``(rows + 1,)``), ``col_indices`` and ``values`` (``(nnz,)``), as PyTorch's
2-D ``torch.sparse_csr`` tensors.

Autograd flows through the ``values`` tensor, as for COO (``_coo.py``); a CSR
tensor shares its values with the COO form it converts to (the row of each
entry is expanded from ``crow_indices``), so products, ``to_dense`` and the
pointwise ops are the COO ones on that form.  ``sparse.mm`` / ``@`` / ``addmm``
with a dense right operand run SciPy's CSR product when SciPy is installed
(``_kernels.spmm``), else NumPy.

Example::

    >>> import fabric
    >>> c = fabric.tensor([[0., 2., 0.], [3., 0., 4.]]).to_sparse_csr()
    >>> c.crow_indices(), c.col_indices()
    (tensor([0, 1, 3]), tensor([1, 0, 2]))
    >>> c @ fabric.ones(3, 1)
    tensor([[2.],
            [7.]])
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..backends import backend_of
from . import _pointwise as _pw
from ._coo import SparseTensor, _NoDenseData, _part, _with_suffixes
from ._layout import sparse_csr


def _layout_error(name, got):
    return RuntimeError(f"{name} expected sparse coordinate tensor layout but got {got}")


class SparseCsrTensor(Tensor):
    """A 2-D sparse CSR tensor; build one with :func:`fabric.sparse_csr_tensor`
    or ``Tensor.to_sparse_csr()``."""

    is_sparse = False
    is_sparse_csr = True
    _sparse = True
    layout = sparse_csr
    _layout_name = "SparseCsr"
    _unary_ops = _pw.CSR_UNARY
    _crow: Tensor
    _col: Tensor
    _vals: Tensor
    _shape: tuple

    @staticmethod
    def _build(crow: Tensor, col: Tensor, values: Tensor, shape) -> SparseCsrTensor:
        t = object.__new__(SparseCsrTensor)
        t._requires_grad = False
        t._output_nr = 0
        t._grad = None
        t._vc = None
        t._base = None
        t._meta = None
        t._crow, t._col, t._vals = crow, col, values
        t._shape = tuple(int(s) for s in shape)
        t._data = _NoDenseData(t._shape, values._data.dtype, "CSR")
        return t

    # --- attributes -----------------------------------------------------------------
    shape = SparseTensor.shape
    size = SparseTensor.size
    dtype = SparseTensor.dtype
    device = SparseTensor.device
    is_cuda = SparseTensor.is_cuda
    ndim = SparseTensor.ndim
    dim = SparseTensor.dim
    numel = SparseTensor.numel
    grad_fn = SparseTensor.grad_fn
    requires_grad = SparseTensor.requires_grad
    is_leaf = SparseTensor.is_leaf

    def requires_grad_(self, requires_grad: bool = True) -> SparseCsrTensor:
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        g = self._vals.grad
        if g is None:
            return self._grad
        return SparseCsrTensor._build(self._crow, self._col, g, self._shape)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals.grad = None
        self._grad = value

    def sparse_dim(self) -> int:
        return 2

    def dense_dim(self) -> int:
        return 0

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def crow_indices(self) -> Tensor:
        return self._crow

    def col_indices(self) -> Tensor:
        return self._col

    def values(self) -> Tensor:
        return self._vals

    def indices(self):
        raise _layout_error("indices", "SparseCsr")

    def coalesce(self):
        raise _layout_error("coalesce", "SparseCsr")

    def is_coalesced(self):
        raise _layout_error("is_coalesced", "SparseCsr")

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError("Tensors of type SparseCsrTensorImpl do not have is_contiguous")

    def stride(self, dim=None):
        raise RuntimeError("Sparse CSR tensors do not have strides")

    def detach(self) -> SparseCsrTensor:
        return SparseCsrTensor._build(self._crow, self._col, self._vals.detach(), self._shape)

    def clone(self, memory_format=None) -> SparseCsrTensor:
        return SparseCsrTensor._build(self._crow.clone(), self._col.clone(), self._vals.clone(), self._shape)

    # --- conversions ----------------------------------------------------------------
    def _rows(self):
        crow = self._crow._data.astype(np.int64, copy=False)
        xp = backend_of(crow).xp
        return xp.repeat(xp.arange(self._shape[0], dtype=np.int64), xp.diff(crow))

    def to_sparse_coo(self, sparse_dim=None) -> SparseTensor:
        """The COO form (sharing the values; coalesced when the columns of each row are sorted and unique)."""
        if sparse_dim is not None and sparse_dim != 2:
            raise RuntimeError(f"sparse_dim argument must be 2 for a CSR tensor, got {sparse_dim}")
        xp = backend_of(self._col._data).xp
        idx = xp.stack([self._rows(), self._col._data.astype(np.int64, copy=False)])
        keys = _pw.linear_index(idx, self._shape)
        ordered = keys.shape[0] < 2 or bool((keys[1:] > keys[:-1]).all())
        return SparseTensor._build(Tensor._make(idx), self._vals, self._shape, ordered)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is sparse_csr:
            return self
        return self.to_sparse_coo(sparse_dim)

    def to_sparse_csr(self, dense_dim=None) -> SparseCsrTensor:
        return self

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        return self.to_sparse_coo().to_dense(dtype)

    def to(self, *args, **kwargs) -> SparseCsrTensor:
        index_args = [a for a in args if not isinstance(a, D.dtype)]
        index_kwargs = {k: v for k, v in kwargs.items() if k == "device"}
        return SparseCsrTensor._build(self._crow.to(*index_args, **index_kwargs),
                                      self._col.to(*index_args, **index_kwargs),
                                      self._vals.to(*args, **kwargs), self._shape)

    def double(self, memory_format=None):
        return self.to(D.float64)

    def float(self, memory_format=None):
        return self.to(D.float32)

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        return self.to("cuda" if device is None else device)

    # --- arithmetic: the COO ops on the COO form, back to CSR -------------------------
    def _with_values(self, values) -> SparseCsrTensor:
        return SparseCsrTensor._build(self._crow, self._col, values, self._shape)

    def _pointwise(self, cls, args, arrays):
        return _pw.unary(self, cls, args, arrays)

    def __neg__(self):
        return self._with_values(-self._vals)

    neg = __neg__

    def __mul__(self, other):
        if isinstance(other, Tensor) and (other.is_sparse or other.is_sparse_csr):
            return _to_csr(self.to_sparse_coo() * _as_coo(other))
        if isinstance(other, Tensor) and other.dim() > 0:
            raise _pw.not_on_layout("mul", self)
        return self._with_values(self._vals * other)

    __rmul__ = mul = __mul__

    def add(self, other, *, alpha=1):
        if isinstance(other, Tensor) and (other.is_sparse or other.is_sparse_csr):
            return _to_csr(self.to_sparse_coo().add(_as_coo(other), alpha=alpha))
        if isinstance(other, Tensor):
            return self.to_dense() + (other if alpha == 1 else other * alpha)  # PyTorch: a dense result
        raise _pw.not_on_layout("add", self)

    def __add__(self, other):
        return self.add(other)

    def __radd__(self, other):
        if isinstance(other, Tensor):
            return other + self.to_dense()
        raise _pw.not_on_layout("add", self)

    def sub(self, other, *, alpha=1):
        return self.add(other, alpha=-alpha)

    __sub__ = sub

    def __truediv__(self, other):
        raise _pw.not_on_layout("div", self)

    div = __rtruediv__ = __truediv__

    def __pow__(self, exponent):
        raise _pw.not_on_layout("pow", self)

    pow = __pow__

    def sum(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return self._vals.sum() if dtype is None else self._vals.to(dtype).sum()
        if not keepdim:
            raise RuntimeError("reduction operations on CSR tensors with keepdim=False is unsupported")
        return _to_csr(_pw.sparse_sum(self.to_sparse_coo(), dim, True, dtype))

    # --- products -------------------------------------------------------------------
    def __matmul__(self, other):
        from ._coo import mm
        if isinstance(other, Tensor) and other.is_sparse_csr:
            return _to_csr(mm(self.to_sparse_coo(), other.to_sparse_coo()))
        return mm(self, other)

    mm = matmul = __matmul__

    def __rmatmul__(self, other):
        return other @ self.to_dense()

    _rmm = __rmatmul__

    # --- printing --------------------------------------------------------------------
    def __repr__(self) -> str:
        body = ("tensor(" + _part(self._crow, "crow_indices") + ",\n       " + _part(self._col, "col_indices")
                + ",\n       " + _part(self._vals, "values"))
        return _with_suffixes(body, self, force_newline=False)

    __str__ = __repr__


def _as_coo(t):
    return t.to_sparse_coo() if t.is_sparse_csr else t


def _to_csr(s: SparseTensor) -> SparseCsrTensor:
    """The CSR form of a 2-D COO tensor (coalesced first; shares its values)."""
    if s.dim() != 2 or s.dense_dim() != 0:
        raise NotImplementedError("fabric's CSR tensors are 2-D with scalar values")
    s = s.coalesce()
    row = s._idx._data[0]
    xp = backend_of(row).xp
    crow = xp.searchsorted(row, xp.arange(s._shape[0] + 1, dtype=np.int64)).astype(np.int64)
    return SparseCsrTensor._build(Tensor._make(crow), Tensor._make(s._idx._data[1].copy()), s._vals, s._shape)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None) -> SparseCsrTensor:
    """A 2-D CSR tensor from ``crow_indices`` (``(rows + 1,)``, starting at 0,
    non-decreasing), ``col_indices`` and ``values`` (``(nnz,)`` each); ``size``
    defaults to ``(rows, max(col) + 1)``.

    Example::

        >>> import fabric
        >>> fabric.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [2., 3., 4.]).to_dense()
        tensor([[0., 2., 0.],
                [3., 0., 4.]])
    """
    from .._creation import as_tensor, tensor
    from . import check_sparse_tensor_invariants

    crow = crow_indices if isinstance(crow_indices, Tensor) else tensor(crow_indices, dtype=D.int64, device=device)
    col = col_indices if isinstance(col_indices, Tensor) else tensor(col_indices, dtype=D.int64, device=device)
    for name, t in (("crow_indices", crow), ("col_indices", col)):
        if t.dtype not in (D.int32, D.int64):
            raise RuntimeError(f"{name} must be an int32 or int64 tensor, but got {t.dtype}")
    if crow.dtype != col.dtype:
        crow, col = crow.long(), col.long()
    if isinstance(values, Tensor):
        vals = values if dtype is None else values.to(dtype)
        if device is not None:
            vals = vals.to(device)
    else:
        vals = as_tensor(values, dtype=dtype, device=device)
    if device is not None:
        crow, col = crow.to(device), col.to(device)
    if crow.dim() != 1 or col.dim() != 1 or vals.dim() != 1:
        raise NotImplementedError("fabric's CSR tensors are 2-D with scalar values (1-D crow_indices, col_indices "
                                  "and values)")
    if col.shape[0] != vals.shape[0]:
        raise RuntimeError(f"col_indices and values must have the same number of elements, but got "
                           f"{col.shape[0]} and {vals.shape[0]}")
    rows = crow.shape[0] - 1
    if size is None:
        cols = int(col._data.max()) + 1 if col.shape[0] else 0
        size = (rows, cols)
    size = tuple(int(s) for s in size)
    if len(size) != 2:
        raise NotImplementedError(f"fabric's CSR tensors are 2-D (got size {size}); batched and hybrid CSR are "
                                  "not supported")
    if check_invariants or (check_invariants is None and check_sparse_tensor_invariants.is_enabled()):
        _check_csr(crow._data, col._data, size)
    if requires_grad:
        vals = vals.detach().requires_grad_(True)
    return SparseCsrTensor._build(crow.detach(), col.detach(), vals, size)


def _check_csr(crow, col, size):
    crow = np.asarray(crow if isinstance(crow, np.ndarray) else crow.get())
    col = np.asarray(col if isinstance(col, np.ndarray) else col.get())
    if crow.shape[0] != size[0] + 1:
        raise RuntimeError(f"crow_indices.size(-1) == nrows + 1 is unsatisfied: {crow.shape[0]} != {size[0] + 1}")
    if crow[0] != 0:
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if crow[-1] != col.shape[0]:
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    if (np.diff(crow) < 0).any():
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied.")
    if col.size and (col.min() < 0 or col.max() >= size[1]):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")


def to_sparse_csr(self, dense_dim=None) -> SparseCsrTensor:
    """``Tensor.to_sparse_csr()``: the CSR form of a 2-D dense (or COO) tensor.

    Example::

        >>> import fabric
        >>> fabric.eye(2).to_sparse_csr().crow_indices()
        tensor([0, 1, 2])
    """
    if dense_dim not in (None, 0):
        raise NotImplementedError("to_sparse_csr(dense_dim=): fabric's CSR tensors have no dense dimensions")
    if self.dim() != 2:
        raise NotImplementedError(f"to_sparse_csr: fabric's CSR tensors are 2-D (got a {self.dim()}-D tensor); "
                                  "batched CSR is not supported")
    return _to_csr(self if self.is_sparse else self.to_sparse())


def _no_compressed(name):
    def method(self):
        raise RuntimeError(f"{name} expected sparse row compressed tensor layout but got "
                           f"{'Sparse' if self.is_sparse else 'Strided'}")
    method.__name__ = name
    return method
