"""Shared by the linear-algebra modules: ``LinAlgError``, the named-tuple
result types, argument checks, the small differentiable helpers the backward
formulas use, and LAPACK error reporting."""
from __future__ import annotations

import math

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...backends import backend_of
from .._util import xp_of
from ..reduce import _return_type

__all__ = ["LinAlgError"]

_inf = math.inf


class LinAlgError(RuntimeError):
    """Raised when a matrix is singular / not positive-definite (a
    ``RuntimeError`` subclass, like ``torch.linalg.LinAlgError``)."""


LinAlgError.__module__ = "fabric.linalg"


linalg_slogdet_t = _return_type("linalg_slogdet", ["sign", "logabsdet"])
slogdet_t = _return_type("slogdet", ["sign", "logabsdet"])
linalg_qr_t = _return_type("linalg_qr", ["Q", "R"])
qr_t = _return_type("qr", ["Q", "R"])
linalg_svd_t = _return_type("linalg_svd", ["U", "S", "Vh"])
svd_t = _return_type("svd", ["U", "S", "V"])
linalg_eigh_t = _return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_eig_t = _return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_lstsq_t = _return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
linalg_inv_ex_t = _return_type("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex_t = _return_type("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex_t = _return_type("linalg_solve_ex", ["result", "info"])


# --- small helpers -----------------------------------------------------------------

_TNAME = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_CNAME = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
          "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def _tname(dt):
    return _TNAME.get(np.dtype(dt).name, str(dt))


def _const(array):
    if isinstance(array, np.generic):  # NumPy reductions return scalars for 0-d results
        array = np.asarray(array)
    return Tensor._make(array, False)


def _check_tensor(t, fn, arg, pos):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(t).__name__}")


def _same_device(fn, *tensors):
    cls = tensors[0]._data.__class__
    for t in tensors[1:]:
        if t._data.__class__ is not cls or (cls is not np.ndarray and t._data.device.id != tensors[0]._data.device.id):
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{tensors[0].device} and {t.device}!")


def _out(result, out):
    if out is None:
        return result
    from ..inplace import copy_into_out

    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"out must be a tuple of {len(result)} Tensors")
        for o, r in zip(out, result):
            copy_into_out(o, r)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    return copy_into_out(out, result)


def _is_numpy(a):
    return a.__class__ is np.ndarray


def _check_float(a, fn, low_precision=True):
    """Decompositions need float32/float64 (NumPy's LAPACK has no float16)."""
    k = a.dtype
    if k.kind not in "fc":
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {_tname(k)}")
    if low_precision and k.itemsize < 4:
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got {_tname(k)}")


def _check_matrix(A, fn, name="A", square=True):
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    a = A._data
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{fn}: {name} must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    _check_float(a, fn)
    return a


def _batch_shape_broadcast(fn, s1, s2, msg=None):
    try:
        return np.broadcast_shapes(s1, s2)
    except ValueError:
        raise RuntimeError(msg or f"{fn}: The batch dimensions of the inputs do not broadcast: {list(s1)} and "
                                  f"{list(s2)}") from None


def _eye(n, m, dtype, like):
    return xp_of(like).eye(n, m, dtype=dtype)


def _eye_t(n, like_t):
    return _const(_eye(n, n, like_t._data.dtype, like_t._data))


def _keepdim_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _unreduce(g, shape, dims, keepdim):
    """Reshape a reduced gradient so that it broadcasts against ``shape``."""
    if keepdim or not dims:
        return g
    return g.reshape(_keepdim_shape(shape, dims))


def _sign(x):
    """sign(x) as a constant Tensor (its derivative is zero almost everywhere)."""
    return _const(xp_of(x._data).sign(x._data))


def _abs(x):
    """|x| written as ``x * sign(x)`` so that it is differentiable any number of times
    (complex: the modulus, whose gradient ``sgn`` is written for complex)."""
    if x._data.dtype.kind == "c":
        from ..pointwise import abs as modulus

        return modulus(x)
    return x * _sign(x)


# --- private differentiable helpers (structural ops used by backward formulas) -------

class _Tri(Function):
    """tril (``upper=False``) or triu of the last two dims."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, k, upper):
        ctx.k, ctx.upper = k, upper
        xp = xp_of(x)
        n, m = x.shape[-2:]
        mask = xp.tri(n, m, k - 1 if upper else k, dtype=bool)
        if upper:
            mask = ~mask
        return xp.where(mask, x, xp.zeros((), x.dtype))

    @staticmethod
    def backward(ctx, gy):
        return _tri(gy, ctx.k, ctx.upper), None, None


def _tri(x, k=0, upper=False):
    return _apply(_Tri, (x, k, upper), (x._data, k, upper))


def _tril(x, k=0):
    return _tri(x, k, False)


def _triu(x, k=0):
    return _tri(x, k, True)


class _Diagonal(Function):
    """The main diagonal of the last two dims (a copy)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        ctx.nm = x.shape[-2:]
        return xp_of(x).diagonal(x, axis1=-2, axis2=-1).copy()

    @staticmethod
    def backward(ctx, gy):
        return _diag_embed(gy, *ctx.nm)


class _DiagEmbed(Function):
    """Batched ``diag(v)`` of shape ``(..., n, m)``."""
    _array_forward = True

    @staticmethod
    def forward(ctx, v, n, m):
        xp = xp_of(v)
        out = xp.zeros(v.shape[:-1] + (n, m), v.dtype)
        i = xp.arange(v.shape[-1])
        out[..., i, i] = v
        return out

    @staticmethod
    def backward(ctx, gy):
        return _diagonal(gy), None, None


def _diagonal(x):
    return _apply(_Diagonal, (x,), (x._data,))


def _diag_embed(v, n=None, m=None):
    k = v._data.shape[-1]
    n = k if n is None else n
    m = k if m is None else m
    return _apply(_DiagEmbed, (v, n, m), (v._data, n, m))


class _MaskedFill(Function):
    """``where(mask, value, x)`` for a constant boolean ``mask`` array."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.mask = mask
        return xp_of(x).where(mask, xp_of(x).asarray(value, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx, gy):
        return _masked_fill(gy, ctx.mask, 0), None, None


def _masked_fill(x, mask, value):
    return _apply(_MaskedFill, (x, mask, value), (x._data, mask, value))


class _Amax(Function):
    """amax / amin over ``dims``; the gradient is split evenly among ties
    (as PyTorch's amax does)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, largest):
        y = x.max(axis=dims, keepdims=keepdim) if largest else x.min(axis=dims, keepdims=keepdim)
        ctx.dims, ctx.keepdim, ctx.shape = dims, keepdim, x.shape
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        yk = y._data if ctx.keepdim else y._data.reshape(_keepdim_shape(ctx.shape, ctx.dims))
        mask = x._data == yk
        w = mask / mask.sum(axis=ctx.dims, keepdims=True)
        return _unreduce(gy, ctx.shape, ctx.dims, ctx.keepdim) * _const(w.astype(x._data.dtype)), None, None, None


def _amax(x, dims, keepdim=False, largest=True, shown_dim=None):
    """amax/amin of a non-negative quantity (a norm): an empty max is 0, an
    empty min an IndexError, as in ``torch.linalg.matrix_norm``."""
    if any(x._data.shape[d] == 0 for d in dims):
        if not largest:
            raise IndexError(f"amin(): Expected reduction dim {dims[0] if shown_dim is None else shown_dim} to have "
                             "non-zero size.")
        shape = _keepdim_shape(x._data.shape, dims) if keepdim else tuple(
            s for i, s in enumerate(x._data.shape) if i not in dims)
        return _apply(_ZerosGrad, (x, None), (x._data, xp_of(x._data).zeros(shape, x._data.dtype)))
    return _apply(_Amax, (x, dims, keepdim, largest), (x._data, dims, keepdim, largest))


class _ZerosGrad(Function):
    """A constant result that still joins the graph with a zero gradient
    (PyTorch's ``matrix_power(A, 0)`` requires grad when ``A`` does)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, value):
        return value

    @staticmethod
    def backward(ctx, gy):
        return gy * 0, None


# --- LAPACK error reporting (error path only) -----------------------------------------

def _getrf_info(a):
    """LAPACK getrf's ``info`` for one matrix: 1-based index of the first
    exactly-zero pivot of LU with partial pivoting, 0 if none."""
    u = np.array(a, dtype=np.complex128 if a.dtype.kind == "c" else np.float64, copy=True)
    n = min(u.shape)
    info = 0
    for j in range(n):
        col = u[j:, j]
        p = j + int(np.argmax(np.abs(col.real) + np.abs(col.imag)))  # LAPACK's |re| + |im|
        if u[p, j] == 0:
            if info == 0:
                info = j + 1
            continue
        if p != j:
            u[[j, p]] = u[[p, j]]
        u[j + 1:, j:] -= np.outer(u[j + 1:, j] / u[j, j], u[j, j:])
    return info


def _potrf_info(a):
    """LAPACK potrf's ``info`` for one matrix: the order of the first leading
    minor that is not positive-definite (0 if it is)."""
    a = np.array(a, dtype=np.float64, copy=True)
    n = a.shape[-1]
    L = np.zeros_like(a)
    for j in range(n):
        d = a[j, j] - L[j, :j] @ L[j, :j]
        if not d > 0:
            return j + 1
        L[j, j] = math.sqrt(d)
        L[j + 1:, j] = (a[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return 0


def _host(a):
    return a if _is_numpy(a) else backend_of(a).to_numpy(a)


def _infos(a, kind):
    """Per-matrix LAPACK info for a batch (host loop; error path / *_ex only)."""
    h = _host(a)
    flat = h.reshape((-1,) + h.shape[-2:])
    f = _getrf_info if kind == "lu" else _potrf_info
    return np.array([f(m) for m in flat], dtype=np.int32).reshape(h.shape[:-2])


def _batch_prefix(infos, batched):
    bad = np.flatnonzero(infos.reshape(-1))
    if bad.size == 0:
        return None, 0
    i = int(bad[0])
    return (f"(Batch element {i}): " if batched else ""), int(infos.reshape(-1)[i])


def _raise_lu(fn, a, what):
    infos = _infos(a, "lu")
    prefix, k = _batch_prefix(infos, a.ndim > 2)
    if prefix is None:
        prefix, k = ("", 1)
    if what == "inv":
        raise LinAlgError(f"{fn}: {prefix}The diagonal element {k} is zero, the inversion could not be completed "
                          "because the input matrix is singular.")
    raise LinAlgError(f"{fn}: {prefix}The solver failed because the input matrix is singular.")


def _raise_chol(fn, a):
    infos = _infos(a, "chol")
    prefix, k = _batch_prefix(infos, a.ndim > 2)
    if prefix is None:
        prefix, k = ("", 1)
    raise LinAlgError(f"{fn}: {prefix}The factorization could not be completed because the input is not "
                      f"positive-definite (the leading minor of order {k} is not positive-definite).")


def _gpu_failed(result, a):
    """CuPy does not raise on singular input: a non-finite result from a
    finite input means the factorization failed."""
    if _is_numpy(result):
        return False
    xp = xp_of(result)
    return not bool(xp.isfinite(result).all()) and bool(xp.isfinite(a).all())


def _converge_error(fn, what):
    return LinAlgError(f"{fn}: The algorithm failed to converge because the input matrix is ill-conditioned or has "
                       f"too many repeated {what}.")



def _check_not_bool(fn, t):
    if t._data.dtype == np.bool_:
        raise NotImplementedError(f"\"{fn}\" not implemented for 'Bool'")



def _bad_mask(infos, like):
    bad = infos != 0
    return bad if _is_numpy(like) else backend_of(like).from_numpy(bad, like.device.id)


def _to_device(arr, like):
    return arr if _is_numpy(like) else backend_of(like).from_numpy(arr, like.device.id)


def _replace_bad(A, bad):
    """``A`` with the failed matrices replaced by the identity (differentiable elsewhere)."""
    a = A._data
    n = a.shape[-1]
    m = bad[..., None, None]
    return _masked_fill(A, m, 0) + _const((m * _eye(n, n, a.dtype, a)).astype(a.dtype))
