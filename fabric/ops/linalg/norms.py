"""Norms: ``linalg.vector_norm``, ``matrix_norm``, ``norm`` and ``cond``.

Example::

    >>> import fabric
    >>> fabric.linalg.vector_norm(fabric.tensor([3.0, 4.0]))
    tensor(5.)
"""
from __future__ import annotations

import builtins
import math
from collections.abc import Sequence

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor, _wrap_dim
from ...autograd.function import _apply1
from .._registry import declare_op
from .._registry import public_names as declared_names
from .._util import normalize_dims, xp_of
from ..reduce import VectorNorm
from ._common import _abs, _amax, _check_matrix, _check_tensor, _const, _inf, _masked_fill, _out, _tname
from .decompositions import linalg_svdvals
from .solvers import linalg_inv_ex

__all__ = ["linalg_cond", "linalg_matrix_norm", "linalg_norm", "linalg_vector_norm"]

# =====================================================================================
# Norms
# =====================================================================================

def _norm_dtype(A, dtype, fn):
    a = A._data
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {_tname(a.dtype)}")
    if dtype is None:
        return A
    dt = D.to_dtype(dtype)
    if dt.is_complex != (a.dtype.kind == "c") or not (dt.is_floating_point or dt.is_complex) \
            or dt.np.itemsize < a.dtype.itemsize:
        raise RuntimeError(f"{fn}: the dtype of the input ({_tname(a.dtype)}) should be convertible without "
                           f"narrowing to the specified dtype ({_tname(dt.np)})")
    return A if dt.np == a.dtype else A.to(dt)


def _check_ord(ord, fn):
    if isinstance(ord, Tensor):
        ord = ord.item()
    if isinstance(ord, builtins.bool) or not isinstance(ord, (int, float, np.integer, np.floating)):
        raise TypeError(f"{fn}(): argument 'ord' must be Number, not {type(ord).__name__}")
    return float(ord)


@declare_op(name="vector_norm", namespace="linalg", autocast="linalg_vector_norm", method=False)
def linalg_vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
                       dtype: D.dtype | None = None, out: Tensor | None = None) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all dims when None), treating
    the selected dims as one flat vector.

    Example::

        >>> fabric.linalg.vector_norm(fabric.tensor([3.0, -4.0]))
        tensor(5.)
        >>> fabric.linalg.vector_norm(fabric.tensor([3.0, -4.0]), float("inf"))
        tensor(4.)
    """
    _check_tensor(x, "linalg.vector_norm", "x", 1)
    ord = _check_ord(ord, "linalg.vector_norm")
    x = _norm_dtype(x, dtype, "linalg.vector_norm")
    if x._data.dtype.kind == "c":  # the norm of complex numbers is that of their moduli
        x = _abs(x)
    a = x._data
    dims = normalize_dims(dim, a.ndim) if not (isinstance(dim, (list, tuple)) and len(dim) == 0) \
        else tuple(range(a.ndim))
    if (ord < 0 or ord == _inf) and any(a.shape[d] == 0 for d in dims):
        o = "inf" if ord == _inf else ("-inf" if ord == -_inf else f"{ord:g}")
        raise RuntimeError(f"linalg.vector_norm cannot compute the {o} norm on an empty tensor because the operation "
                           "does not have an identity")
    return _out(_apply1(VectorNorm, x, (a, ord, dims, keepdim)), out)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, _inf, -_inf)


@declare_op(name="matrix_norm", namespace="linalg", autocast="linalg_matrix_norm", method=False)
def linalg_matrix_norm(A: Tensor, ord: float | str = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *,
                       dtype: D.dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2,
    inf, -inf (2/-2/'nuc' through the singular values).

    Example::

        >>> fabric.linalg.matrix_norm(fabric.eye(3), "nuc")
        tensor(3.)
    """
    _check_tensor(A, "linalg.matrix_norm", "A", 1)
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(dim, (int, np.integer)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    nd = A._data.ndim
    d0, d1 = _wrap_dim(dim[0], nd), _wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    else:
        ord = _check_ord(ord, "linalg.matrix_norm")
        if ord not in _MATRIX_ORDS:
            raise RuntimeError(f"linalg.matrix_norm: Order {ord:g} not supported.")
    A = _norm_dtype(A, dtype, "linalg.matrix_norm")
    if ord == "fro":
        return _out(linalg_vector_norm(A, 2, (d0, d1), keepdim), out)
    if ord in ("nuc", 2, -2):
        perm = [i for i in range(nd) if i not in (d0, d1)] + [d0, d1]
        S = linalg_svdvals(A.permute(tuple(perm)) if perm != list(range(nd)) else A)
        if ord == "nuc":
            r = S.sum(-1)
        else:
            r = _amax(S, (S._data.ndim - 1,), False, ord == 2, shown_dim=-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return _out(r, out)
    # 1 / -1: max/min absolute column sum; inf / -inf: max/min absolute row sum
    sum_dim, max_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
    s = _abs(A).sum(sum_dim, keepdim=True)
    r = _amax(s, (max_dim,), True, ord > 0, shown_dim=max_dim - (sum_dim < max_dim))
    if not keepdim:
        r = r.squeeze((d0, d1))
    return _out(r, out)


@declare_op(name="norm", namespace="linalg", autocast=False, method=False)
def linalg_norm(A: Tensor, ord: float | str | None = None, dim: int | Sequence[int] | None = None,
                keepdim: bool = False, *, out: Tensor | None = None, dtype: D.dtype | None = None) -> Tensor:
    """Vector or matrix norm, chosen as ``torch.linalg.norm`` does: a string
    ``ord`` or a 2-tuple ``dim`` means a matrix norm; ``ord=None`` is the
    2-norm of the flattened input (Frobenius for matrices)."""
    _check_tensor(A, "linalg.norm", "A", 1)
    if dim is not None:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    else:
        dims = None
    if ord is not None:
        if isinstance(ord, str) or (dims is not None and len(dims) == 2):
            return linalg_matrix_norm(A, ord, dims if dims is not None else (-2, -1), keepdim, dtype=dtype, out=out)
        if dims is None:
            if A._data.ndim not in (1, 2):
                raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                                   f"Got {A._data.ndim}D.")
            if A._data.ndim == 2:
                return linalg_matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    return linalg_vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)


@declare_op(name="cond", namespace="linalg", autocast="linalg_cond", method=False)
def linalg_cond(A: Tensor, p: float | str | None = None, *, out: Tensor | None = None) -> Tensor:
    """Condition number: ``smax / smin`` for p in (None, 2), ``smin / smax``
    for -2, else ``norm(A, p) * norm(inv(A), p)`` (square A)."""
    _check_tensor(A, "linalg.cond", "A", 1)
    if A._data.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p is None or p == 2 or p == -2:
        S = linalg_svdvals(A)
        if S._data.shape[-1] == 0:
            return _out(_const(xp_of(S._data).zeros(S._data.shape[:-1], S._data.dtype)), out)
        r = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
        return _out(r, out)
    _check_matrix(A, "linalg.cond")
    inv, info = linalg_inv_ex(A)
    r = linalg_matrix_norm(A, p) * linalg_matrix_norm(inv, p)
    bad = info._data != 0
    if bool(bad.any()):
        r = _masked_fill(r, bad, math.inf)  # singular: infinite condition number
    return _out(r, out)




@declare_op()
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """p-norm of ``input - other``."""
    return linalg_vector_norm(input - other, p)


__all__ += declared_names(__name__)
