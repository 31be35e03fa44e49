"""Sparse COO tensors: ``indices`` (``(sparse_dim, nnz)`` int64) plus
``values`` (``(nnz,) + dense_shape``), as PyTorch's ``torch.sparse_coo``.

Autograd flows through the ``values`` tensor, so a sparse leaf's ``.grad``
is a sparse tensor with the leaf's indices (PyTorch's semantics).  Kernels
(``_kernels.py``) use SciPy's CSR product on CPU when SciPy is installed,
CuPy's ``cupyx.scipy.sparse`` on GPU, and NumPy scatter-adds otherwise.

Example::

    >>> import fabric
    >>> s = fabric.tensor([[0., 2.], [3., 0.]]).to_sparse()
    >>> s.indices()
    tensor([[0, 1],
            [1, 0]])
    >>> fabric.sparse.mm(s, fabric.ones(2, 1))
    tensor([[2.],
            [3.]])
"""
from __future__ import annotations

import re

import numpy as np

from .. import _dtype as D
from .._tensor import Size, Tensor
from ..autograd.function import Function, _apply
from ..backends import backend_of
from . import _pointwise as _pw
from ._layout import sparse_coo


class _NoDenseData:
    """Stands in for ``_data`` so the autograd engine can read a sparse
    gradient's shape and dtype; any other dense-array use fails clearly."""

    __slots__ = ("shape", "dtype", "layout")

    def __init__(self, shape, dtype, layout="COO"):
        self.shape = shape
        self.dtype = dtype
        self.layout = layout

    @property
    def ndim(self):
        return len(self.shape)

    def astype(self, dtype, copy=True):
        """The float copy an op asks of an integer input: a placeholder of that dtype
        (the op then fails on it and runs on the values, see ``_pointwise.py``)."""
        return _NoDenseData(self.shape, np.dtype(dtype), self.layout)

    def __getattr__(self, name):
        raise NotImplementedError(f"this operation is not supported on sparse {self.layout} tensors (array "
                                  f"attribute {name!r}); call .to_dense() first")


class _ToDense(Function):
    """Scatter-add ``values`` into a zero dense array; backward gathers."""

    _node_name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx, values, indices, shape):
        ctx.indices = indices
        xp = backend_of(values).xp
        if indices.shape[0] == 0:  # no sparse dims: every value lands on the whole tensor
            return values.sum(0).reshape(shape)
        out = xp.zeros(shape, values.dtype)
        if indices.shape[1]:
            if xp is np:
                np.add.at(out, tuple(indices), values)
            else:
                xp.add.at(out, tuple(indices), values)
        return out

    @staticmethod
    def backward(ctx, g):
        idx = ctx.indices
        if idx.shape[0] == 0:
            return g.unsqueeze(0).expand((idx.shape[1],) + tuple(g.shape)), None, None
        return g[tuple(Tensor._make(i) for i in idx)], None, None


class _SpMM(Function):
    """``S @ D`` for a 2-D sparse ``S`` (scalar values) and a dense 2-D ``D``.
    Gradients: ``dS.values = rowsum(G[row] * D[col])``, ``dD = S^T @ G``."""

    _node_name = "SparseAddmmBackward0"

    @staticmethod
    def forward(ctx, values, dense, indices, shape):
        ctx.indices, ctx.shape = indices, shape
        ctx.save_for_backward(values, dense)
        from ._kernels import spmm
        return spmm(indices[0], indices[1], values, shape, dense)

    @staticmethod
    def backward(ctx, g):
        values, dense = ctx.saved_tensors
        row, col = ctx.indices
        gv = gd = None
        if ctx.needs_input_grad[0]:
            gv = (g[Tensor._make(row)] * dense[Tensor._make(col)]).sum(1)
        if ctx.needs_input_grad[1]:
            m, k = ctx.shape
            t_idx = ctx.indices[::-1]
            gd = _apply(_SpMM, (values, g, t_idx, (k, m)), (values._data, g._data, t_idx, (k, m)))
        return gv, gd, None, None


class SparseTensor(Tensor):
    """A sparse COO tensor (``layout == fabric.sparse_coo``); build one with
    :func:`fabric.sparse_coo_tensor` or ``Tensor.to_sparse()``."""

    is_sparse = True
    _sparse = True
    layout = sparse_coo
    _layout_name = "Sparse"
    _idx: Tensor     # (sparse_dim, nnz) int64
    _vals: Tensor    # (nnz,) + dense shape; autograd flows through it
    _shape: tuple
    _coalesced: bool

    @staticmethod
    def _build(indices: Tensor, values: Tensor, shape, coalesced=False) -> SparseTensor:
        t = object.__new__(SparseTensor)
        t._requires_grad = False
        t._output_nr = 0
        t._grad = None
        t._vc = None
        t._base = None
        t._meta = None
        t._idx = indices
        t._vals = values
        t._shape = tuple(int(s) for s in shape)
        t._coalesced = bool(coalesced)
        t._data = _NoDenseData(t._shape, values._data.dtype)
        return t

    # --- attributes -----------------------------------------------------------------
    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @grad_fn.setter
    def grad_fn(self, value):
        if value is not None:
            raise RuntimeError("cannot set grad_fn of a sparse tensor")

    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim=None):
        return Size(self._shape) if dim is None else self._shape[dim]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def is_cuda(self) -> bool:
        return self._vals.is_cuda

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return Size(self._shape).numel()

    def sparse_dim(self) -> int:
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        return len(self._shape) - self._idx.shape[0]

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self) -> Tensor:
        return self._idx

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx.detach()

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError("Tensors of type SparseTensorImpl do not have is_contiguous")

    def stride(self, dim=None):
        raise RuntimeError("Tensors of type SparseTensorImpl do not have strides")

    # --- autograd: delegated to the values ------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._vals.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._vals.is_leaf

    @property
    def grad(self):
        g = self._vals.grad
        if g is None:
            return self._grad
        return SparseTensor._build(self._idx, g, self._shape, self._coalesced)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals.grad = None
            self._grad = None
        else:
            self._grad = value

    def detach(self) -> SparseTensor:
        return SparseTensor._build(self._idx, self._vals.detach(), self._shape, self._coalesced)

    def clone(self, memory_format=None) -> SparseTensor:
        return SparseTensor._build(self._idx.clone(), self._vals.clone(), self._shape, self._coalesced)

    # --- conversions ----------------------------------------------------------------
    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        v = self._vals if dtype is None else self._vals.to(dtype)
        return _apply(_ToDense, (v, self._idx._data, self._shape), (v._data, self._idx._data, self._shape))

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return self

    def coalesce(self) -> SparseTensor:
        """Sort indices (row-major) and sum the values of duplicates."""
        if self._coalesced:
            return self
        idx = self._idx._data
        xp = backend_of(idx).xp
        nnz = idx.shape[1]
        if nnz == 0:
            return SparseTensor._build(self._idx, self._vals, self._shape, True)
        lin = xp.ravel_multi_index(tuple(idx), self._shape[:idx.shape[0]]) if idx.shape[0] else xp.zeros(nnz, np.int64)
        uniq, inverse = xp.unique(lin, return_inverse=True)
        inverse = inverse.reshape(-1)
        new_idx = xp.stack(xp.unravel_index(uniq, self._shape[:idx.shape[0]])).astype(np.int64) if idx.shape[0] \
            else xp.zeros((0, 1), np.int64)
        vals = self._vals
        summed = vals.new_zeros((len(uniq),) + tuple(vals.shape[1:])).index_add(0, Tensor._make(inverse), vals)
        return SparseTensor._build(Tensor._make(new_idx.reshape(idx.shape[0], -1)), summed, self._shape, True)

    def to(self, *args, **kwargs) -> SparseTensor:
        return SparseTensor._build(self._idx.to(*[a for a in args if not _is_dtype(a)],
                                                **{k: v for k, v in kwargs.items() if k == "device"}),
                                   self._vals.to(*args, **kwargs), self._shape, self._coalesced)

    def double(self, memory_format=None):
        return self.to(D.float64)

    def float(self, memory_format=None):
        return self.to(D.float32)

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        return self.to("cuda" if device is None else device)

    # --- arithmetic (fabric/sparse/_pointwise.py) ---------------------------------------
    _unary_ops = _pw.COO_UNARY

    def _with_values(self, values) -> SparseTensor:
        return SparseTensor._build(self._idx, values, self._shape, self._coalesced)

    def _pointwise(self, cls, args, arrays):
        return _pw.unary(self, cls, args, arrays)

    def __neg__(self):
        return self._with_values(-self._vals)

    def neg(self):
        return -self

    def __mul__(self, other):
        if isinstance(other, Tensor):
            return _pw.mul_sparse(self, other) if other.is_sparse else _pw.mul_dense(self, other)
        return self._with_values(self._vals * other)

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, other):
        if isinstance(other, Tensor) and (other.is_sparse or other.dim() > 0):
            raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                               f"{list(other.shape)} for divisor)")
        return self._with_values(self._vals / other)

    def div(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return self / other
        c = self.coalesce()
        return c._with_values(c._vals.div(other, rounding_mode=rounding_mode))

    def __floordiv__(self, other):
        return self.div(other, rounding_mode="floor")

    def __rtruediv__(self, other):
        raise _pw.not_on_layout("reciprocal", self)

    def __pow__(self, exponent):
        return _pw.pow_scalar(self, exponent)

    pow = __pow__

    def square(self):
        return self ** 2

    def add(self, other, *, alpha=1):
        if isinstance(other, Tensor) and other.is_sparse:
            if other.shape != self.shape:
                raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                                   f"{list(self.shape)} while other has size {list(other.shape)} (FYI: op2-sparse "
                                   f"addition does not currently support broadcasting)")
            return _pw.add_sparse(self, other, alpha)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")

    def __add__(self, other):
        return self.add(other)

    def __radd__(self, other):  # dense + sparse: a dense result
        if isinstance(other, Tensor):
            return other + self.to_dense()
        return self.add(other)

    def sub(self, other, *, alpha=1):
        return self.add(other, alpha=-alpha)

    __sub__ = sub

    def __rsub__(self, other):
        if isinstance(other, Tensor):
            return other - self.to_dense()
        return self.add(other)

    def _bool_map(self, name):
        c = self.coalesce()
        return c._with_values(getattr(c._vals, name)())

    def isnan(self):
        return self._bool_map("isnan")

    def isinf(self):
        return self._bool_map("isinf")

    def isposinf(self):
        return self._bool_map("isposinf")

    def isneginf(self):
        return self._bool_map("isneginf")

    def signbit(self):
        return self._bool_map("signbit")

    # --- products and reductions -----------------------------------------------------
    def __matmul__(self, other):
        return mm(self, other)

    mm = matmul = __matmul__

    def __rmatmul__(self, other):
        return mm(other, self)

    _rmm = __rmatmul__  # dense @ sparse, from fabric.mm / fabric.matmul

    def sum(self, dim=None, keepdim=False, dtype=None):
        return _pw.sparse_sum(self, dim, keepdim, dtype)

    def t(self):
        if self.dim() != 2 or self.sparse_dim() != 2:
            raise RuntimeError("t() expects a 2-D sparse tensor with two sparse dimensions")
        return SparseTensor._build(Tensor._make(self._idx._data[::-1].copy()), self._vals, self._shape[::-1])

    def transpose(self, dim0, dim1):
        if sorted((dim0 % 2, dim1 % 2)) != [0, 1] or self.dim() != 2:
            raise NotImplementedError("transpose of sparse COO tensors: only 2-D with dims (0, 1) is supported")
        return self.t()

    # --- printing --------------------------------------------------------------------
    def __repr__(self) -> str:
        body = ("tensor(" + _part(self._idx, "indices") + ",\n       " + _part(self._vals, "values"))
        return _with_suffixes(body, self, force_newline=True)

    __str__ = __repr__


def _part(t, name):
    """``name=tensor(...)`` of an index or values tensor inside a sparse repr (no dtype, ``size=(0,)`` if empty)."""
    from .._formatting import tensor_repr
    r = tensor_repr(Tensor._make(t._data), " " * 7 + f"{name}=tensor(").lstrip()
    r = re.sub(r",\s*dtype=fabric\.\w+\)$", ")", r)
    return r.replace("=tensor([])", "=tensor([], size=(0,))")


def _with_suffixes(body, t, force_newline):
    """PyTorch's tail of a sparse repr: device, size, nnz, dtype, layout, grad_fn / requires_grad,
    each after ``", "``, or on a new line when it would pass the line width (the first one always
    for COO)."""
    from .. import _formatting
    suffixes = [f"size={t._shape}", f"nnz={t._nnz()}"]
    if t.device.type != "cpu":
        suffixes.insert(0, f"device='{t.device}'")
    if t.dtype is not D.get_default_dtype():
        suffixes.append(f"dtype={t.dtype!r}")
    suffixes.append(f"layout={t.layout!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    out = [body]
    last = len(body) - body.rfind("\n") + 1  # PyTorch's count (one more than the line's length)
    for suffix in suffixes:
        if force_newline or last + len(suffix) + 2 > _formatting.LINEWIDTH:
            out.append(",\n       " + suffix)
            last = 7 + len(suffix)
            force_newline = False
        else:
            out.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(out) + ")"


_C_NAME = {D.float32: "Float", D.float64: "Double", D.float16: "Half", D.bfloat16: "BFloat16"}


def _is_dtype(a):
    return isinstance(a, D.dtype)


def mm(mat1, mat2):
    """``sparse @ dense`` (dense result) or ``sparse @ sparse`` (sparse result);
    a CSR operand is taken in its COO form (which shares its values)."""
    if mat1.is_sparse_csr:
        if isinstance(mat2, Tensor) and mat2.dtype != mat1.dtype and not mat2._sparse:
            raise RuntimeError(f"expected scalar type {_C_NAME[mat1.dtype]} but found {_C_NAME[mat2.dtype]}")
        mat1 = mat1.to_sparse_coo()
    if isinstance(mat2, Tensor) and mat2.is_sparse_csr:
        mat2 = mat2.to_sparse_coo()
    if not mat1.is_sparse:
        if mat2.is_sparse:
            return mat1 @ mat2.to_dense()
        return mat1 @ mat2
    if mat2.is_sparse:
        return mm(mat1, mat2.to_dense()).to_sparse()
    if mat1.sparse_dim() != 2 or mat1.dense_dim() != 0:
        raise NotImplementedError("sparse.mm: only 2-D sparse matrices with scalar values are supported")
    vec = mat2.dim() == 1
    d = mat2.unsqueeze(1) if vec else mat2
    if d.dim() != 2:
        raise RuntimeError(f"mm: expected 2-D dense operand, got {d.dim()}-D")
    if mat1.shape[1] != d.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{d.shape[0]}x{d.shape[1]})")
    if mat1.dtype != d.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: {mat1.dtype} != {d.dtype}")
    v = mat1._vals
    out = _apply(_SpMM, (v, d, mat1._idx._data, mat1._shape), (v._data, d._data, mat1._idx._data, mat1._shape))
    return out.squeeze(1) if vec else out
