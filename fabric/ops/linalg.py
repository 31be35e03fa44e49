"""Linear algebra: matrix products (mm, bmm, mv, dot, einsum, tensordot ...),
norms, and the ``fabric.linalg`` decompositions and solvers.

Forward passes call ``backend_of(array).xp.linalg`` (NumPy on CPU, CuPy on
GPU); every backward is written with Tensor ops, so double backward works.
The ``torch.linalg`` names (``inv``, ``svd``, ``norm`` ...) are defined here
as ``linalg_<name>`` and exported under their PyTorch names by
``fabric/linalg.py``; this module's ``__all__`` holds only top-level names
(``torch.mm``, ``torch.det``, ``torch.svd`` ...).

Complex dtypes are out of scope in fabric, so ``linalg.eig`` / ``eigvals``
(whose results are complex for general real matrices) raise
NotImplementedError; use ``linalg.eigh`` for symmetric matrices.

Example::

    >>> import fabric
    >>> A = fabric.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> fabric.linalg.det(A)
    tensor(5.)
    >>> fabric.einsum("ij,j->i", A, fabric.ones(2))
    tensor([3., 4.])
"""
from __future__ import annotations

import builtins
import functools
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ..autograd.function import Function, _apply, _apply1, once_differentiable
from ..autograd.grad_mode import state as _grad_state
from ..backends import backend_of
from . import _autocast as _amp
from ._util import normalize_dims, xp_of
from .arith import MatMul, _np_errstate, matmul, mul

__all__ = ["addbmm", "addbmm_", "addmm", "addmm_", "addmv", "addmv_", "addr", "addr_", "baddbmm", "baddbmm_", "bmm",
           "cdist", "chain_matmul", "cholesky", "cholesky_inverse", "cholesky_solve", "cross", "det",
           "dot", "einsum", "ger", "inner", "inverse", "kron", "logdet", "matrix_exp", "matrix_power",
           "mm", "mv", "outer", "pinverse", "qr", "slogdet", "svd", "tensordot", "trace", "vander", "vdot"]

_inf = math.inf


class LinAlgError(RuntimeError):
    """Raised when a matrix is singular / not positive-definite (a
    ``RuntimeError`` subclass, like ``torch.linalg.LinAlgError``)."""


LinAlgError.__module__ = "fabric.linalg"


from .reduce import VectorNorm, _return_type  # noqa: E402  (PyTorch's repr: fabric.return_types.<name>(...))

linalg_slogdet_t = _return_type("linalg_slogdet", ["sign", "logabsdet"])
slogdet_t = _return_type("slogdet", ["sign", "logabsdet"])
linalg_qr_t = _return_type("linalg_qr", ["Q", "R"])
qr_t = _return_type("qr", ["Q", "R"])
linalg_svd_t = _return_type("linalg_svd", ["U", "S", "Vh"])
svd_t = _return_type("svd", ["U", "S", "V"])
linalg_eigh_t = _return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_lstsq_t = _return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
linalg_inv_ex_t = _return_type("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex_t = _return_type("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex_t = _return_type("linalg_solve_ex", ["result", "info"])


# --- small helpers -----------------------------------------------------------------

_TNAME = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
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
    from .inplace import copy_into_out

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
    if k.kind != "f":
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
    """|x| written as ``x * sign(x)`` so that it is differentiable any number of times."""
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
    u = np.array(a, dtype=np.float64, copy=True)
    n = min(u.shape)
    info = 0
    for j in range(n):
        p = j + int(np.argmax(np.abs(u[j:, j])))
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


# =====================================================================================
# Matrix products
# =====================================================================================

class Mm(MatMul):
    _node_name = "MmBackward0"


class Bmm(MatMul):
    _node_name = "BmmBackward0"


class Mv(MatMul):
    _node_name = "MvBackward0"


class Dot(MatMul):
    _node_name = "DotBackward0"


def _check_mm_dtype(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CNAME.get(a._data.dtype.name)} != "
                           f"{_CNAME.get(b._data.dtype.name)}")


def _check_not_bool(fn, t):
    if t._data.dtype == np.bool_:
        raise NotImplementedError(f"\"{fn}\" not implemented for 'Bool'")


def mm(input, mat2, *, out=None):
    """Matrix product of two 2-D tensors (no broadcasting; see ``matmul``).

    Example::

        >>> fabric.mm(fabric.ones(2, 3), fabric.ones(3, 4)).shape
        fabric.Size([2, 4])
    """
    if _amp.active and out is None and (c := _amp.cast("mm", input, mat2)):
        input, mat2 = c
    _check_tensor(input, "mm", "input", 1)
    _check_tensor(mat2, "mm", "mat2", 2)
    if input._sparse or mat2._sparse:  # a sparse operand: fabric/sparse
        return _out(input.mm(mat2) if input._sparse else mat2._rmm(input), out)
    x, y = input._data, mat2._data
    if x.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if y.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if x.shape[1] != y.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({x.shape[0]}x{x.shape[1]} and "
                           f"{y.shape[0]}x{y.shape[1]})")
    _check_mm_dtype(input, mat2)
    _check_not_bool("addmm_impl_cpu_", input)
    _same_device("mm", input, mat2)
    return _out(_apply(Mm, (input, mat2), (x, y)), out)


def bmm(input, mat2, *, out=None):
    """Batched matrix product of two 3-D tensors ``(b, n, m) @ (b, m, p)``."""
    if _amp.active and out is None and (c := _amp.cast("bmm", input, mat2)):
        input, mat2 = c
    _check_tensor(input, "bmm", "input", 1)
    _check_tensor(mat2, "bmm", "mat2", 2)
    x, y = input._data, mat2._data
    if x.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if y.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if y.shape[0] != x.shape[0] or y.shape[1] != x.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{x.shape[0]}, "
                           f"{x.shape[2]}] but got: [{y.shape[0]}, {y.shape[1]}].")
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected scalar type {_tname(x.dtype)} but found {_tname(y.dtype)}")
    _check_not_bool("bmm", input)
    _same_device("bmm", input, mat2)
    return _out(_apply(Bmm, (input, mat2), (x, y)), out)


def mv(input, vec, *, out=None):
    """Matrix-vector product ``(n, m) @ (m,)``."""
    if _amp.active and out is None and (c := _amp.cast("mv", input, vec)):
        input, vec = c
    _check_tensor(input, "mv", "input", 1)
    _check_tensor(vec, "mv", "vec", 2)
    x, y = input._data, vec._data
    if x.ndim != 2 or y.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {x.ndim}, {y.ndim}")
    if x.shape[1] != y.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({x.shape[0]}), mat ({x.shape[0]}x{x.shape[1]}), vec "
                           f"({y.shape[0]})")
    if x.dtype != y.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_tname(y.dtype)}, "
                           f"{_tname(x.dtype)}, and {_tname(y.dtype)}")
    _check_not_bool("addmv_impl_cpu", input)
    _same_device("mv", input, vec)
    return _out(_apply(Mv, (input, vec), (x, y)), out)


def dot(input, tensor, *, out=None):
    """Inner product of two 1-D tensors of the same size and dtype."""
    if _amp.active and out is None and (c := _amp.cast("dot", input, tensor)):
        with _amp.excluded():
            return dot(*c)
    _check_tensor(input, "dot", "input", 1)
    _check_tensor(tensor, "dot", "tensor", 2)
    x, y = input._data, tensor._data
    if x.ndim != 1 or y.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {x.ndim}D and {y.ndim}D tensors")
    if x.shape[0] != y.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{x.shape[0]}] and src [{y.shape[0]}] to have "
                           f"the same number of elements, but got {x.shape[0]} and {y.shape[0]} elements respectively")
    if x.dtype != y.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_tname(x.dtype)} and "
                           f"{_tname(y.dtype)}")
    _check_not_bool("dot", input)
    _same_device("dot", input, tensor)
    return _out(_apply(Dot, (input, tensor), (x, y)), out)


def vdot(input, other, *, out=None):
    """``dot`` that conjugates its first argument (identical for real dtypes)."""
    if _amp.active and out is None and (c := _amp.cast("vdot", input, other)):
        with _amp.excluded():
            return vdot(*c)
    return dot(input, other, out=out)


def outer(input, vec2, *, out=None):
    """Outer product ``input[:, None] * vec2[None, :]`` (dtypes promote)."""
    _check_tensor(input, "outer", "input", 1)
    _check_tensor(vec2, "outer", "vec2", 2)
    if input._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input._data.ndim}-D")
    if vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    return _out(mul(input.reshape(-1, 1), vec2), out)


ger = outer


def inner(input, other, *, out=None):
    """Sum of products over the last dim: shape ``input.shape[:-1] + other.shape[:-1]``
    (a plain product when either is 0-d)."""
    _check_tensor(input, "inner", "input", 1)
    _check_tensor(other, "inner", "other", 2)
    x, y = input._data, other._data
    if x.ndim == 0 or y.ndim == 0:
        return _out(mul(input, other), out)
    if x.shape[-1] != y.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(x.shape)} and {list(y.shape)}")
    if x.dtype != y.dtype:
        raise RuntimeError("both inputs should have same dtype")
    return _out(tensordot(input, other, ([-1], [-1])), out)


class _AddScaled(Function):
    """``beta * input + alpha * prod`` (``input`` ignored, NaN included, when beta == 0)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, p, beta, alpha):
        ctx.beta, ctx.alpha = beta, alpha
        # ``p`` is always a fresh internal product (mm/mv/bmm/outer), so it may be updated in place
        out = p * alpha if alpha != 1 else p
        if out.dtype != p.dtype:
            out = out.astype(p.dtype)
        if beta != 0:
            out += x * beta if beta != 1 else x
        return out

    @staticmethod
    def backward(ctx, gy):
        need_x, need_p = ctx.needs_input_grad[:2]
        gx = gy * ctx.beta if need_x else None
        gp = (gy * ctx.alpha if ctx.alpha != 1 else gy) if need_p else None
        return gx, gp, None, None


def _scalar(v, kind):
    v = v.item() if isinstance(v, Tensor) else v
    if kind in "iu":
        return int(v)  # PyTorch truncates a float alpha/beta for integer tensors
    return v


def _add_scaled(fn, input, prod, beta, alpha):
    _check_tensor(input, fn, "input", 1)
    kind = prod._data.dtype.kind
    beta, alpha = _scalar(beta, kind), _scalar(alpha, kind)
    shp, target = input._data.shape, prod._data.shape
    if len(shp) > len(target):
        raise RuntimeError(f"expand(torch.{_tname(input._data.dtype)}Tensor{{{list(shp)}}}, size={list(target)}): the "
                           f"number of sizes provided ({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shp)})")
    for i in range(1, len(shp) + 1):
        if shp[-i] not in (1, target[-i]):
            raise RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                               f"({shp[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(shp)}")
    _same_device(fn, input, prod)
    return _apply(_AddScaled, (input, prod, beta, alpha), (input._data, prod._data, beta, alpha))


def _check_add_dtype(input, mat2):
    if input._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tname(input._data.dtype)} and "
                           f"{_tname(mat2._data.dtype)}")


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the result.

    Example::

        >>> fabric.addmm(fabric.zeros(3), fabric.ones(2, 4), fabric.ones(4, 3), alpha=0.5)
        tensor([[2., 2., 2.],
                [2., 2., 2.]])
    """
    if _amp.active and out is None and (c := _amp.cast("addmm", input, mat1, mat2)):
        input, mat1, mat2 = c
    _check_tensor(input, "addmm", "input", 1)
    _check_tensor(mat2, "addmm", "mat2", 3)
    _check_add_dtype(input, mat2)
    return _out(_add_scaled("addmm", input, mm(mat1, mat2), beta, alpha), out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``."""
    if _amp.active and out is None and (c := _amp.cast("addmv", input, mat, vec)):
        input, mat, vec = c
    _check_tensor(input, "addmv", "input", 1)
    _check_tensor(mat, "addmv", "mat", 2)
    _check_tensor(vec, "addmv", "vec", 3)
    if not (input._data.dtype == mat._data.dtype == vec._data.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_tname(input._data.dtype)}, "
                           f"{_tname(mat._data.dtype)}, and {_tname(vec._data.dtype)}")
    return _out(_add_scaled("addmv", input, mv(mat, vec), beta, alpha), out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    if _amp.active and out is None and (c := _amp.cast("addbmm", input, batch1, batch2)):
        input, batch1, batch2 = c
    _check_tensor(input, "addbmm", "input", 1)
    _check_tensor(batch2, "addbmm", "batch2", 3)
    _check_add_dtype(input, batch2)
    return _out(_add_scaled("addbmm", input, bmm(batch1, batch2).sum(0, dtype=batch1.dtype), beta, alpha), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (batch1 @ batch2)`` batched."""
    if _amp.active and out is None and (c := _amp.cast("baddbmm", input, batch1, batch2)):
        input, batch1, batch2 = c
    _check_tensor(input, "baddbmm", "input", 1)
    _check_tensor(batch2, "baddbmm", "batch2", 3)
    _check_add_dtype(input, batch2)
    return _out(_add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha), out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` (dtypes promote, as in PyTorch)."""
    if _amp.active and out is None and (c := _amp.cast("addr", input, vec1, vec2)):
        input, vec1, vec2 = c
    _check_tensor(input, "addr", "input", 1)
    prod = outer(vec1, vec2)
    dt = D.result_type(input, prod)
    if input.dtype != dt:
        input = input.to(dt)
    if prod.dtype != dt:
        prod = prod.to(dt)
    return _out(_add_scaled("addr", input, prod, beta, alpha), out)


def _inplace_from(self, result, name):
    if result._data.shape != self._data.shape:
        raise RuntimeError(f"{name}: output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(result._data.shape)}")
    return self.copy_(result)


def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    """In-place ``addmm``."""
    return _inplace_from(self, addmm(self, mat1, mat2, beta=beta, alpha=alpha), "addmm_")


def addmv_(self, mat, vec, *, beta=1, alpha=1):
    """In-place ``addmv``."""
    return _inplace_from(self, addmv(self, mat, vec, beta=beta, alpha=alpha), "addmv_")


def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place ``addbmm``."""
    return _inplace_from(self, addbmm(self, batch1, batch2, beta=beta, alpha=alpha), "addbmm_")


def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place ``baddbmm``."""
    return _inplace_from(self, baddbmm(self, batch1, batch2, beta=beta, alpha=alpha), "baddbmm_")


def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    """In-place ``addr``."""
    return _inplace_from(self, addr(self, vec1, vec2, beta=beta, alpha=alpha), "addr_")


# --- einsum ----------------------------------------------------------------------------

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ELL = "..."


def _einsum_parse_term(term, start, op_index):
    """Subscripts of one operand as a list of letters and at most one ``...``."""
    out = []
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != _ELL:
                raise RuntimeError(f"einsum(): found '.' for operand {op_index} that is not part of any ellipsis")
            if _ELL in out:
                raise RuntimeError(f"einsum(): found '.' for operand {op_index} for which an ellipsis was already "
                                   "found")
            out.append(_ELL)
            i += 3
            continue
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given at index {start + i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        out.append(c)
        i += 1
    return out


@functools.lru_cache(maxsize=1024)
def _einsum_spec(equation, shapes):
    """Turn a PyTorch einsum equation into explicit per-operand subscripts
    (ellipses replaced by fresh letters) and explicit output subscripts."""
    raw = equation
    if "->" in raw:
        lhs, rhs = raw.split("->", 1)
    else:
        lhs, rhs = raw, None
    terms = []
    pos = 0
    for k, t in enumerate(lhs.split(",")):
        stripped = [(pos + i, c) for i, c in enumerate(t) if c != " "]
        terms.append(_einsum_parse_term("".join(c for _, c in stripped), stripped[0][0] if stripped else pos, k)
                     if stripped else [])
        pos += len(t) + 1
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    user = {c for t in terms for c in t if c != _ELL}
    ell_ndim = 0
    for k, (t, shp) in enumerate(zip(terms, shapes)):
        n_sub = sum(1 for c in t if c != _ELL)
        if _ELL in t:
            if n_sub > len(shp):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_sub}) is more than the "
                                   f"number of dimensions ({len(shp)}) for operand {k}")
            ell_ndim = max(ell_ndim, len(shp) - n_sub)
        elif n_sub != len(shp):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_sub}) does not match the "
                               f"number of dimensions ({len(shp)}) for operand {k} and no ellipsis was given")
    free = [c for c in _LETTERS if c not in user]
    if ell_ndim > len(free):
        raise RuntimeError("einsum(): too many subscripts (at most 52 distinct letters plus ellipsis dimensions)")
    ell = "".join(free[:ell_ndim])
    in_subs = []
    for t, shp in zip(terms, shapes):
        s = []
        for c in t:
            if c == _ELL:
                e = len(shp) - (len(t) - 1)
                s.append(ell[ell_ndim - e:] if e else "")
            else:
                s.append(c)
        in_subs.append("".join(s))
    if rhs is None:
        counts = {}
        for t in terms:
            for c in t:
                if c != _ELL:
                    counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        start = len(lhs) + 2
        stripped = [(start + i, c) for i, c in enumerate(rhs) if c != " "]
        t = _einsum_parse_term("".join(c for _, c in stripped), stripped[0][0] if stripped else start, len(terms)) \
            if stripped else []
        seen = set()
        out = ""
        for c in t:
            if c == _ELL:
                out += ell
                continue
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in user:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
            seen.add(c)
            out += c
    return tuple(in_subs), out


def _einsum_sizes(in_subs, shapes):
    sizes = {}
    for k, (s, shp) in enumerate(zip(in_subs, shapes)):
        own = {}
        for c, n in zip(s, shp):
            if c in own and own[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the sizes don't match, "
                                   f"{n} != {own[c]}")
            own[c] = n
        for c, n in own.items():
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = n
            elif n != 1 and n != prev:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast "
                                   f"with previously seen size {prev}")
    return sizes


def _prod(shape):
    n = 1
    for v in shape:
        n *= v
    return n


def _drop_axes(s, drop):
    return tuple(i for i, c in enumerate(s) if c in drop), "".join(c for c in s if c not in drop)


@functools.lru_cache(maxsize=1024)
def _einsum_plan(in_subs, out_subs, shapes):
    """How to evaluate an explicit einsum: generalized diagonals first, then
    pairwise contractions left to right, each one batched matmul (as
    PyTorch's sumproduct_pair), then a final sum and permutation."""
    size = {}
    for s, shp in zip(in_subs, shapes):
        size.update(zip(s, shp))
    diags, subs = [], []
    for s in in_subs:
        u = "".join(dict.fromkeys(s))
        diags.append(f"{s}->{u}" if u != s else None)
        subs.append(u)
    pairs = []
    sa = subs[0]
    for k in range(1, len(subs)):
        sb = subs[k]
        keep = set(out_subs).union(*(set(t) for t in subs[k + 1:]))
        sum_a, sa = _drop_axes(sa, {c for c in sa if c not in sb and c not in keep})
        sum_b, sb = _drop_axes(sb, {c for c in sb if c not in sa and c not in keep})
        batch = [c for c in sa if c in sb and c in keep]
        contr = [c for c in sa if c in sb and c not in keep]
        ak = [c for c in sa if c not in sb]
        bk = [c for c in sb if c not in sa]
        nb, m, kk, n = (_prod(size[c] for c in g) for g in (batch, ak, contr, bk))
        pairs.append((sum_a, sum_b, tuple(sa.index(c) for c in batch + ak + contr), (nb, m, kk),
                      tuple(sb.index(c) for c in batch + contr + bk), (nb, kk, n),
                      tuple(size[c] for c in batch + ak + bk)))
        sa = "".join(batch + ak + bk)
    final_sum, sa = _drop_axes(sa, {c for c in sa if c not in out_subs})
    perm = tuple(sa.index(c) for c in out_subs)
    return tuple(diags), tuple(pairs), final_sum, perm


def _einsum_arrays(xp, in_subs, out_subs, arrays):
    """Evaluate an explicit einsum (see ``_einsum_plan``); the result never
    aliases an input."""
    diags, pairs, final_sum, perm = _einsum_plan(in_subs, out_subs, tuple(a.shape for a in arrays))
    ops = [a if d is None else xp.einsum(d, a) for d, a in zip(diags, arrays)]
    a0 = ops[0]
    for b, (sum_a, sum_b, pa, sha, pb, shb, shr) in zip(ops[1:], pairs):
        if sum_a:
            a0 = a0.sum(axis=sum_a)
        if sum_b:
            b = b.sum(axis=sum_b)
        a0 = (a0.transpose(pa).reshape(sha) @ b.transpose(pb).reshape(shb)).reshape(shr)
    if final_sum:
        a0 = a0.sum(axis=final_sum)
    a0 = a0.transpose(perm)
    if not pairs and not final_sum:
        return a0.copy()
    return xp.ascontiguousarray(a0) if a0.ndim > 1 else a0


class Einsum(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, spec, *arrays):
        in_subs, out_subs, _sizes = spec
        ctx.spec = spec
        ctx.save_for_backward(*arrays)
        return _einsum_arrays(xp_of(arrays[0]), in_subs, out_subs, arrays)

    @staticmethod
    def backward(ctx, gy):
        in_subs, out_subs, sizes = ctx.spec
        ops = ctx.saved_tensors
        grads = [None]
        for k, need in enumerate(ctx.needs_input_grad[1:]):
            if not need:
                grads.append(None)
                continue
            subs = in_subs[k]
            uniq = "".join(dict.fromkeys(subs))
            other_subs = [s for j, s in enumerate(in_subs) if j != k] + [out_subs]
            other_ops = [t for j, t in enumerate(ops) if j != k] + [gy]
            avail = set("".join(other_subs))
            target = "".join(c for c in uniq if c in avail)
            g = _einsum_core(other_subs, target, other_ops)
            full = tuple(sizes[c] for c in uniq)
            if len(target) < len(uniq):
                gs = dict(zip(target, g._data.shape))
                g = g.reshape(tuple(gs.get(c, 1) for c in uniq))
            if g._data.shape != full:  # letters that only other operands broadcast
                g = g.expand(full)
            if len(uniq) < len(subs):
                shape = tuple(sizes[c] for c in subs)
                g = _apply(_EinsumDiagEmbed, (g, subs, uniq, shape), (g._data, subs, uniq, shape))
            grads.append(g)
        return tuple(grads)


class _EinsumDiagEmbed(Function):
    """Gradient of an operand with repeated subscripts (``'ii->i'``): place
    the gradient on the generalized diagonal of a zero tensor."""
    _array_forward = True

    @staticmethod
    def forward(ctx, g, subs, uniq, shape):
        ctx.subs, ctx.uniq = subs, uniq
        xp = xp_of(g)
        z = xp.zeros(shape, g.dtype)
        nd = len(uniq)
        ar = {c: xp.arange(g.shape[i]).reshape(tuple(-1 if j == i else 1 for j in range(nd)))
              for i, c in enumerate(uniq)}
        z[tuple(ar[c] for c in subs)] = g
        return z

    @staticmethod
    def backward(ctx, gz):
        return _einsum_core([ctx.subs], ctx.uniq, [gz]), None, None, None


def _einsum_core(in_subs, out_subs, tensors):
    shapes = [t._data.shape for t in tensors]
    sizes = _einsum_sizes(in_subs, shapes)
    arrays = []
    for s, t in zip(in_subs, tensors):
        a = t._data
        target = tuple(sizes[c] for c in s)
        if a.shape != target:
            a = xp_of(a).broadcast_to(a, target)
        arrays.append(a)
    spec = (tuple(in_subs), out_subs, sizes)
    return _apply(Einsum, (spec, *tensors), (spec, *arrays))


def _sublist_to_str(sub):
    out = ""
    for v in sub:
        if v is Ellipsis:
            out += _ELL
        else:
            v = int(v)
            if not 0 <= v < 52:
                raise RuntimeError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), "
                                   f"got {v}")
            out += _LETTERS[v]
    return out


def einsum(*args):
    """Einstein summation, PyTorch's rules: ellipsis broadcasting, implicit
    output (sorted letters that occur once), repeated subscripts (diagonals,
    traces), size-1 broadcasting, and the sublist format
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.  All operands must share a dtype.

    Example::

        >>> a = fabric.arange(6.).reshape(2, 3)
        >>> fabric.einsum("ij->j", a)
        tensor([3., 5., 7.])
        >>> fabric.einsum("ii", fabric.eye(3))
        tensor(3.)
    """
    if _amp.active and (c := _amp.cast("einsum", *args)):
        with _amp.excluded():
            return einsum(*c)
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    else:
        ops, subs = list(args[0::2]), list(args[1::2])
        out_sub = None
        if len(ops) > len(subs):
            out_sub = ops.pop()
            if not isinstance(out_sub, (list, tuple)):
                raise TypeError("einsum(): the sublist format expects each operand to be followed by its subscripts")
        equation = ",".join(_sublist_to_str(s) for s in subs)
        if out_sub is not None:
            equation += "->" + _sublist_to_str(out_sub)
        operands = tuple(ops)
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): expected Tensor operands, but operand {i} is {type(t).__name__}")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    dt = operands[0]._data.dtype
    for t in operands[1:]:
        if t._data.dtype != dt:
            raise RuntimeError(f"expected scalar type {_tname(dt)} but found {_tname(t._data.dtype)}")
    _same_device("einsum", *operands)
    if len(operands) > 1:
        _check_not_bool("bmm", operands[0])
    in_subs, out_subs = _einsum_spec(equation, tuple(t._data.shape for t in operands))
    if len(operands) == 1 and dt.kind in "biu" and dt != np.int64 and set(in_subs[0]) - set(out_subs):
        operands = (operands[0].to(D.int64),)  # PyTorch sums integers as int64 (single-operand reductions)
    return _einsum_core(in_subs, out_subs, list(operands))


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` dims of ``a`` and ``b``: an int (last ``dims`` of
    ``a`` with the first of ``b``) or a pair of dim lists."""
    if _amp.active and out is None and (c := _amp.cast("tensordot", a, b, dims, out)):
        with _amp.excluded():
            return tensordot(*c)
    _check_tensor(a, "tensordot", "a", 1)
    _check_tensor(b, "tensordot", "b", 2)
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = list(range(na - dims, na))
        db = list(range(dims))
        shown_a = [d - na for d in da]
        shown_b = db
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
        da, db = dims
        da = [da] if isinstance(da, (int, np.integer)) else list(da)
        db = [db] if isinstance(db, (int, np.integer)) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        shown_a, shown_b = da, db
        da = [_wrap_dim(d, na) for d in da]
        db = [_wrap_dim(d, nb) for d in db]
    for x, y, sx, sy in zip(da, db, shown_a, shown_b):
        if a._data.shape[x] != b._data.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._data.shape[x]} in dim "
                               f"{sx} and second has size {b._data.shape[y]} in dim {sy}")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    _check_not_bool("dot" if len(da) == na and len(db) == nb else "addmm_impl_cpu_", a)
    _same_device("tensordot", a, b)
    if na + nb - len(da) > 52 or na + nb > 52 + len(da):
        raise RuntimeError("tensordot: too many dimensions (at most 52 distinct subscripts)")
    la = list(_LETTERS[:na])
    lb = list(_LETTERS[na:na + nb])
    for x, y in zip(da, db):
        lb[y] = la[x]
    out_subs = "".join(c for i, c in enumerate(la) if i not in da) + "".join(c for i, c in enumerate(lb)
                                                                             if i not in db)
    return _out(_einsum_core(["".join(la), "".join(lb)], out_subs, [a, b]), out)


def kron(input, other, *, out=None):
    """Kronecker product; the result's shape is the elementwise product of
    the (left-padded) shapes, and dtypes promote."""
    _check_tensor(input, "kron", "input", 1)
    _check_tensor(other, "kron", "other", 2)
    nd = max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + input._data.shape
    sb = (1,) * (nd - other._data.ndim) + other._data.shape
    a = input.reshape(tuple(v for s in sa for v in (s, 1)))
    b = other.reshape(tuple(v for s in sb for v in (1, s)))
    return _out(mul(a, b).reshape(tuple(x * y for x, y in zip(sa, sb))), out)


class Trace(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        ctx.nm = x.shape
        dt = np.int64 if x.dtype.kind in "biu" else x.dtype
        return xp_of(x).trace(x, dtype=dt)

    @staticmethod
    def backward(ctx, gy):
        n, m = ctx.nm
        return gy * _const(_eye(n, m, gy._data.dtype, gy._data))


def trace(input):
    """Sum of the main diagonal of a 2-D tensor (integers sum as int64)."""
    if _amp.active and (c := _amp.cast("trace", input)):
        with _amp.excluded():
            return trace(*c)
    _check_tensor(input, "trace", "input", 1)
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    _check_not_bool("trace", input)
    return _apply(Trace, (input,), (input._data,))


class LinalgCross(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b, dim):
        ctx.dim = dim
        ctx.save_for_backward(a, b)
        xp = xp_of(a)
        shape = np.broadcast_shapes(a.shape, b.shape)
        a = xp.broadcast_to(a, shape)
        b = xp.broadcast_to(b, shape)
        pre = (slice(None),) * dim

        def c(x, i):
            return x[pre + (i,)]

        return xp.stack([c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1),
                         c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
                         c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)], axis=dim)

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        ga = _cross(b, gy, ctx.dim) if need_a else None
        gb = _cross(gy, a, ctx.dim) if need_b else None
        return ga, gb, None


def _cross(a, b, dim):
    return _apply(LinalgCross, (a, b, dim), (a._data, b._data, dim))


def _cross_checked(input, other, dim, fn):
    _check_tensor(input, fn, "input", 1)
    _check_tensor(other, fn, "other", 2)
    x, y = input._data, other._data
    if x.ndim != y.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. Got {x.ndim} and {y.ndim}")
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected scalar type {_tname(x.dtype)} but found {_tname(y.dtype)}")
    _check_not_bool("cross", input)
    shape = _batch_shape_broadcast(fn, x.shape, y.shape, f"linalg.cross: the shapes of the inputs do not broadcast: "
                                                          f"{list(x.shape)} and {list(y.shape)}")
    d = _wrap_dim(dim, len(shape))
    if x.shape[d] != 3 or y.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {x.shape[d]} and "
                           f"{y.shape[d]}")
    _same_device(fn, input, other)
    return _cross(input, other, d)


def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors along ``dim``; without ``dim``, the first
    dim of size 3 (deprecated in PyTorch, which warns; so does fabric)."""
    if _amp.active and out is None and (c := _amp.cast("cross", input, other, dim)):
        with _amp.excluded():
            return cross(*c)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        _check_tensor(input, "cross", "input", 1)
        _check_tensor(other, "cross", "other", 2)
        shape = _batch_shape_broadcast("cross", input._data.shape, other._data.shape)
        dims = [i for i, s in enumerate(shape) if s == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims[0]
    return _out(_cross_checked(input, other, dim, "cross"), out)


def linalg_cross(input, other, *, dim=-1, out=None):
    """``torch.linalg.cross``: cross product along ``dim`` (default -1), broadcasting."""
    return _out(_cross_checked(input, other, dim, "linalg.cross"), out)


class Cdist(Function):
    """Pairwise p-norm distances between the rows of ``x1`` and ``x2``."""
    _array_forward = True
    _node_name = "CdistBackward0"

    @staticmethod
    def forward(ctx, x1, x2, p, use_mm):
        xp = xp_of(x1)
        ctx.p = p
        with _np_errstate(xp):
            if p == 2 and use_mm:
                n1 = (x1 * x1).sum(-1)[..., :, None]
                n2 = (x2 * x2).sum(-1)[..., None, :]
                d = n1 + n2 - 2 * (x1 @ xp.swapaxes(x2, -1, -2))
                y = xp.sqrt(xp.maximum(d, 0))
            else:
                diff = xp.abs(x1[..., :, None, :] - x2[..., None, :, :])
                if p == 0:
                    y = (diff != 0).sum(-1).astype(x1.dtype)
                elif p == 1:
                    y = diff.sum(-1)
                elif p == 2:
                    y = xp.sqrt((diff * diff).sum(-1))
                elif p == _inf:
                    y = diff.max(-1) if diff.shape[-1] else xp.zeros(diff.shape[:-1], x1.dtype)
                else:
                    y = (diff ** p).sum(-1) ** (1.0 / p)
        ctx.save_for_backward(x1, x2, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x1, x2, y = ctx.saved_tensors
        p = ctx.p
        need1, need2 = ctx.needs_input_grad[:2]
        if p == 0:
            return (x1 * 0 if need1 else None), (x2 * 0 if need2 else None), None, None
        if p == 2:
            zero = y._data == 0
            ratio = _masked_fill(gy / _masked_fill(y, zero, 1), zero, 0)
            g1 = (x1 * ratio.sum(-1, keepdim=True) - ratio @ x2) if need1 else None
            g2 = (x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT @ x1) if need2 else None
            return g1, g2, None, None
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        sgn = _sign(diff)
        g = gy.unsqueeze(-1)
        if p == 1:
            t = sgn * g
        elif p == _inf:
            mask = _abs(diff)._data == y._data[..., None]
            t = sgn * _const(mask.astype(diff._data.dtype)) * g
        else:
            zero = y._data == 0
            dz = diff._data == 0
            ad = _masked_fill(_abs(diff), dz, 1)
            scale = _masked_fill(gy / _masked_fill(y, zero, 1) ** (p - 1), zero, 0).unsqueeze(-1)
            t = _masked_fill(sgn * ad ** (p - 1), dz, 0) * scale
        return (t.sum(-2) if need1 else None), (-t.sum(-3) if need2 else None), None, None


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Batched pairwise distances ``(..., P, M), (..., R, M) -> (..., P, R)``.

    ``compute_mode`` picks, as in PyTorch, the matrix-product formula for
    p = 2 ('use_mm_for_euclid_dist_if_necessary': when P or R > 25;
    'use_mm_for_euclid_dist': always; 'donot_use_mm_for_euclid_dist': never).
    It changes only rounding, never the gradient, which is zero where a
    distance is zero.
    """
    if _amp.active and (c := _amp.cast("cdist", x1, x2, p, compute_mode)):
        with _amp.excluded():
            return cdist(*c)
    _check_tensor(x1, "cdist", "x1", 1)
    _check_tensor(x2, "cdist", "x2", 2)
    a, b = x1._data, x2._data
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    if a.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_tname(a.dtype)}")
    if b.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {_tname(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_tname(a.dtype)} but found {_tname(b.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    modes = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    _same_device("cdist", x1, x2)
    mode = modes[compute_mode]
    batch = _batch_shape_broadcast("cdist", a.shape[:-2], b.shape[:-2])
    xp = xp_of(a)
    aa = xp.broadcast_to(a, batch + a.shape[-2:])
    bb = xp.broadcast_to(b, batch + b.shape[-2:])
    use_mm = p == 2 and (mode == 1 or (mode == 0 and (a.shape[-2] > 25 or b.shape[-2] > 25)))
    p = float(p)
    return _apply(Cdist, (x1, x2, p, use_mm), (aa, bb, p, use_mm))


def _chain_order(shapes):
    """Optimal parenthesization of a matrix chain (classic O(n^3) DP)."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multi_dot(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_multi_dot(mats, split, i, k), _multi_dot(mats, split, k + 1, j))


def linalg_multi_dot(tensors, *, out=None):
    """Product of a chain of matrices in the cheapest order; the first may be
    a 1-D row vector and the last a 1-D column vector."""
    if _amp.active and out is None and (c := _amp.cast("linalg_multi_dot", tensors)):
        with _amp.excluded():
            return linalg_multi_dot(*c)
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"multi_dot(): expected Tensors, but element {i} is {type(t).__name__}")
    first, last = tensors[0]._data.ndim, tensors[-1]._data.ndim
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i in range(1, n - 1):
        if tensors[i]._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i]._data.ndim}D")
    dt = tensors[0]._data.dtype
    for i, t in enumerate(tensors[1:], 1):
        if t._data.dtype != dt:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_CNAME.get(dt.name)} and tensor {i} {_CNAME.get(t._data.dtype.name)}")
    _check_not_bool("addmm_impl_cpu_", tensors[0])
    _same_device("multi_dot", *tensors)
    mats = list(tensors)
    if first == 1:
        mats[0] = mats[0].unsqueeze(0)
    if last == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(n - 1):
        s1, s2 = mats[i]._data.shape, mats[i + 1]._data.shape
        if s1[1] != s2[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(s1)} and {list(s2)} cannot "
                               "be multiplied")
    if n == 2:
        r = matmul(mats[0], mats[1])
    else:
        r = _multi_dot(mats, _chain_order([m._data.shape for m in mats]), 0, n - 1)
    if first == 1 and last == 1:
        r = r.reshape(())
    elif first == 1:
        r = r.squeeze(0)
    elif last == 1:
        r = r.squeeze(-1)
    return _out(r, out)


def chain_matmul(*matrices, out=None):
    """Deprecated PyTorch alias of ``linalg.multi_dot`` for 2-D matrices (warns)."""
    if _amp.active and out is None and (c := _amp.cast("chain_matmul", *matrices)):
        with _amp.excluded():
            return chain_matmul(*c)
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    for _i, m in enumerate(matrices):
        if not isinstance(m, Tensor) or m._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {getattr(m, 'ndim', '?')}, expected 2 instead.")
    if len(matrices) == 1:
        return _out(matrices[0].clone(), out)
    return linalg_multi_dot(matrices, out=out)


def linalg_vecdot(x, y, *, dim=-1, out=None):
    """``sum(x * y, dim)`` with broadcasting (``torch.linalg.vecdot``)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_vecdot", x, y, dim)):
        with _amp.excluded():
            return linalg_vecdot(*c[:2], dim=c[2])
    _check_tensor(x, "linalg.vecdot", "x", 1)
    _check_tensor(y, "linalg.vecdot", "y", 2)
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{_tname(x._data.dtype)}")
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_tname(x._data.dtype)} and y of type {_tname(y._data.dtype)} instead")
    return _out(mul(x, y).sum(dim), out)


# =====================================================================================
# Norms
# =====================================================================================

def _norm_dtype(A, dtype, fn):
    a = A._data
    if a.dtype.kind != "f":
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {_tname(a.dtype)}")
    if dtype is None:
        return A
    dt = D.to_dtype(dtype)
    if not dt.is_floating_point or dt.np.itemsize < a.dtype.itemsize:
        raise RuntimeError(f"{fn}: the dtype of the input ({_tname(a.dtype)}) should be convertible without "
                           f"narrowing to the specified dtype ({_tname(dt.np)})")
    return A if dt.np == a.dtype else A.to(dt)


def _check_ord(ord, fn):
    if isinstance(ord, Tensor):
        ord = ord.item()
    if isinstance(ord, builtins.bool) or not isinstance(ord, (int, float, np.integer, np.floating)):
        raise TypeError(f"{fn}(): argument 'ord' must be Number, not {type(ord).__name__}")
    return float(ord)


def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ``ord``-norm of ``x`` over ``dim`` (all dims when None), treating
    the selected dims as one flat vector.

    Example::

        >>> fabric.linalg.vector_norm(fabric.tensor([3.0, -4.0]))
        tensor(5.)
        >>> fabric.linalg.vector_norm(fabric.tensor([3.0, -4.0]), float("inf"))
        tensor(4.)
    """
    if _amp.active and out is None and (c := _amp.cast("linalg_vector_norm", x, ord, dim, keepdim, dtype)):
        with _amp.excluded():
            return linalg_vector_norm(*c[:4], dtype=c[4])
    _check_tensor(x, "linalg.vector_norm", "x", 1)
    ord = _check_ord(ord, "linalg.vector_norm")
    x = _norm_dtype(x, dtype, "linalg.vector_norm")
    a = x._data
    dims = normalize_dims(dim, a.ndim) if not (isinstance(dim, (list, tuple)) and len(dim) == 0) \
        else tuple(range(a.ndim))
    if (ord < 0 or ord == _inf) and any(a.shape[d] == 0 for d in dims):
        o = "inf" if ord == _inf else ("-inf" if ord == -_inf else f"{ord:g}")
        raise RuntimeError(f"linalg.vector_norm cannot compute the {o} norm on an empty tensor because the operation "
                           "does not have an identity")
    return _out(_apply1(VectorNorm, x, (a, ord, dims, keepdim)), out)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, _inf, -_inf)


def linalg_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2,
    inf, -inf (2/-2/'nuc' through the singular values).

    Example::

        >>> fabric.linalg.matrix_norm(fabric.eye(3), "nuc")
        tensor(3.)
    """
    if _amp.active and out is None and (c := _amp.cast("linalg_matrix_norm", A, ord, dim, keepdim, dtype)):
        with _amp.excluded():
            return linalg_matrix_norm(*c[:4], dtype=c[4])
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


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
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


def linalg_cond(A, p=None, *, out=None):
    """Condition number: ``smax / smin`` for p in (None, 2), ``smin / smax``
    for -2, else ``norm(A, p) * norm(inv(A), p)`` (square A)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_cond", A, p)):
        with _amp.excluded():
            return linalg_cond(*c)
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


# =====================================================================================
# Inverses, determinants, solvers
# =====================================================================================

class LinalgInv(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a):
        xp = xp_of(a)
        try:
            y = xp.linalg.inv(a)
        except np.linalg.LinAlgError:
            _raise_lu("linalg.inv", a, "inv")
        if _gpu_failed(y, a):
            _raise_lu("linalg.inv", a, "inv")
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, gy):
        y, = ctx.saved_tensors
        yt = y.mT
        return -(yt @ (gy @ yt))


def linalg_inv(A, *, out=None):
    """Inverse of a (batch of) square matrices; singular input raises
    ``fabric.linalg.LinAlgError``.

    Example::

        >>> fabric.linalg.inv(fabric.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    if _amp.active and out is None and (c := _amp.cast("linalg_inv", A)):
        with _amp.excluded():
            return linalg_inv(*c)
    a = _check_matrix(A, "linalg.inv")
    return _out(_apply(LinalgInv, (A,), (a,)), out)


def inverse(input, *, out=None):
    """``torch.inverse``: alias of ``linalg.inv``."""
    if _amp.active and out is None and (c := _amp.cast("inverse", input)):
        with _amp.excluded():
            return inverse(*c)
    return linalg_inv(input, out=out)


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


def linalg_inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``: ``info`` (int32) is 0 for invertible matrices and
    the 1-based index of the first zero pivot of the LU factorization
    otherwise; the inverse of such a matrix is NaN (LAPACK leaves partial
    results there)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_inv_ex", A, check_errors)):
        with _amp.excluded():
            return linalg_inv_ex(*c[:1], check_errors=c[1])
    a = _check_matrix(A, "linalg.inv_ex")
    try:
        inv = linalg_inv(A)
        info = xp_of(a).zeros(a.shape[:-2], np.int32)
    except LinAlgError:
        if check_errors:
            raise
        infos = _infos(a, "lu")
        bad = _bad_mask(infos, a)
        inv = _masked_fill(linalg_inv(_replace_bad(A, bad)), bad[..., None, None], math.nan)
        info = _to_device(infos, a)
    return _out(linalg_inv_ex_t(inv, _const(info)), out)


class LinalgDet(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a):
        y = xp_of(a).linalg.det(a)
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        a, det = ctx.saved_tensors
        d = (gy * det).unsqueeze(-1).unsqueeze(-1)
        singular = det._data == 0
        if not bool(singular.any()):
            return d * linalg_inv(a).mT
        # cofactor matrix through the SVD: det(U) det(Vh) U diag(prod_{j != i} s_j) Vh
        U, S, Vh = linalg_svd(a, full_matrices=False)
        alpha = _const(xp_of(a._data).linalg.det(U._data) * xp_of(a._data).linalg.det(Vh._data))
        cof = (U * (_ProdOthers.apply(S) * alpha.unsqueeze(-1)).unsqueeze(-2)) @ Vh
        g_sing = gy.unsqueeze(-1).unsqueeze(-1) * cof
        if bool(singular.all()):
            return g_sing
        ok = ~singular
        safe = _masked_fill(a, singular[..., None, None], 0) + _const(
            singular[..., None, None] * _eye(a._data.shape[-1], a._data.shape[-1], a._data.dtype, a._data))
        g_reg = d * linalg_inv(safe).mT
        return _masked_fill(g_reg, singular[..., None, None], 0) + _masked_fill(g_sing, ok[..., None, None], 0)


class _ProdOthers(Function):
    """``out[..., i] = prod_{j != i} s[..., j]`` (exact with zeros)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, s):
        ctx.save_for_backward(s)
        return _prod_others(xp_of(s), s)

    @staticmethod
    @once_differentiable
    def backward(ctx, gy):
        s, = ctx.saved_tensors
        xp = xp_of(s._data)
        sd, g = s._data, gy._data
        k = sd.shape[-1]
        out = xp.zeros_like(sd)
        for j in range(k):  # d out_i / d s_j = prod_{l not in {i, j}} s_l
            t = sd.copy()
            t[..., j] = 1
            q = _prod_others(xp, t)
            q[..., j] = 0
            out[..., j] = (g * q).sum(-1)
        return _const(out)


def _prod_others(xp, s):
    k = s.shape[-1]
    ones = xp.ones(s.shape[:-1] + (1,), s.dtype)
    pre = xp.concatenate([ones, xp.cumprod(s[..., :-1], axis=-1)], axis=-1) if k else s
    suf = xp.flip(xp.concatenate([ones, xp.cumprod(xp.flip(s[..., 1:], -1), axis=-1)], axis=-1), -1) if k else s
    return pre * suf


def linalg_det(A, *, out=None):
    """Determinant of a (batch of) square matrices; the gradient is the
    cofactor matrix (through the SVD where ``det == 0``)."""
    a = _check_matrix(A, "linalg.det")
    return _out(_apply(LinalgDet, (A,), (a,)), out)


def det(input):
    """``torch.det``: alias of ``linalg.det``."""
    return linalg_det(input)


class LinalgSlogdet(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a):
        sign, lad = xp_of(a).linalg.slogdet(a)
        ctx.mark_non_differentiable(0)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(a)
        return sign, lad

    @staticmethod
    def backward(ctx, gsign, glad):
        if glad is None:
            return None
        a, = ctx.saved_tensors
        return glad.unsqueeze(-1).unsqueeze(-1) * linalg_inv(a).mT


def linalg_slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant: ``det = sign * exp(logabsdet)``."""
    a = _check_matrix(A, "linalg.slogdet")
    return _out(linalg_slogdet_t(*_apply(LinalgSlogdet, (A,), (a,))), out)


def slogdet(input):
    """``torch.slogdet``: like ``linalg.slogdet``."""
    return slogdet_t(*linalg_slogdet(input))


def logdet(input):
    """``log(det(input))``: NaN for a negative determinant (with a zero
    gradient there, as in PyTorch), -inf for a singular matrix."""
    sign, lad = linalg_slogdet(input)
    return _masked_fill(lad, sign._data < 0, math.nan)


def _solve_is_vector(a, b):
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


class LinalgSolve(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b, left, vector):
        xp = xp_of(a)
        a_in = a
        ctx.left, ctx.vector = left, vector
        bb = b[..., None] if vector else b
        if not left:
            a = xp.swapaxes(a, -1, -2)
            bb = xp.swapaxes(bb, -1, -2)
        batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
        if a.ndim == 2 and batch:
            # one matrix, many right-hand sides: factor A once, solve for all columns together
            n, k = bb.shape[-2:]
            a2 = a
            b2 = xp.moveaxis(xp.broadcast_to(bb, batch + (n, k)), -2, 0).reshape(n, -1)
        else:
            a2 = xp.broadcast_to(a, batch + a.shape[-2:])
            b2 = xp.broadcast_to(bb, batch + bb.shape[-2:])
        try:
            x = xp.linalg.solve(a2, b2)
        except np.linalg.LinAlgError:
            _raise_lu("torch.linalg.solve", a2, "solve")
        if _gpu_failed(x, a2):
            _raise_lu("torch.linalg.solve", a2, "solve")
        if a2.ndim == 2 and batch:
            x = xp.moveaxis(x.reshape((n,) + batch + (k,)), 0, -2)
        if not left:
            x = xp.ascontiguousarray(xp.swapaxes(x, -1, -2))
        if vector:
            x = x[..., 0]
        ctx.save_for_backward(a_in, x)
        return x

    @staticmethod
    def backward(ctx, gy):
        a, x = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        left, vector = ctx.left, ctx.vector
        gb = linalg_solve(a.mT, gy, left=left)
        ga = None
        if need_a:
            if vector:
                ga = -(gb.unsqueeze(-1) @ x.unsqueeze(-2))
            elif left:
                ga = -(gb @ x.mT)
            else:
                ga = -(x.mT @ gb)
        return ga, (gb if need_b else None), None, None


def linalg_solve(A, B, *, left=True, out=None):
    """Solve ``A X = B`` (``X A = B`` when ``left=False``) for square ``A``.
    ``B`` is a batch of vectors when it is 1-D or has shape ``A.shape[:-1]``.

    Example::

        >>> A = fabric.tensor([[3.0, 1.0], [1.0, 2.0]])
        >>> fabric.linalg.solve(A, fabric.tensor([9.0, 8.0]))
        tensor([2., 3.])
    """
    if _amp.active and out is None and (c := _amp.cast("linalg_solve", A, B, left)):
        with _amp.excluded():
            return linalg_solve(*c[:2], left=c[2])
    a = _check_matrix(A, "linalg.solve")
    _check_tensor(B, "linalg.solve", "B", 2)
    b = B._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_tname(a.dtype)} and B of type {_tname(b.dtype)} instead")
    _same_device("linalg.solve", A, B)
    vector = _solve_is_vector(a, b)
    n = a.shape[-1]
    if vector and not left and n != 1:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({n}x{n} and "
                           f"{b.shape[-1]}x1)")
    if vector and not left:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    n = a.shape[-1]
    if vector:
        if b.shape[-1] != n:
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                               f"{b.shape[-1]}x1)")
        batch_b = b.shape[:-1]
    else:
        if b.ndim < 2:
            raise RuntimeError("linalg.solve: The input tensor B must have at least 1 dimensions.")
        k = b.shape[-2] if left else b.shape[-1]
        if k != n:
            shown = f"{b.shape[-2]}x{b.shape[-1]}"
            eq = "AX = B" if left else "XA = B"
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                               f"{shown})")
        batch_b = b.shape[:-2]
    _batch_shape_broadcast("linalg.solve", a.shape[:-2], batch_b)
    return _out(_apply(LinalgSolve, (A, B, left, vector), (a, b, left, vector)), out)


def linalg_solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)`` version of ``solve``: a singular matrix gives a
    nonzero ``info`` (the first zero pivot of its LU factorization) and NaN
    results instead of raising, unless ``check_errors``."""
    vector = isinstance(A, Tensor) and isinstance(B, Tensor) and _solve_is_vector(A._data, B._data)
    try:
        x = linalg_solve(A, B, left=left)
        b = B._data
        batch = np.broadcast_shapes(A._data.shape[:-2], b.shape[:-1] if vector else b.shape[:-2])
        info = xp_of(A._data).zeros(batch, np.int32)
    except LinAlgError:
        if check_errors:
            raise
        a, b = A._data, B._data
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-1] if vector else b.shape[:-2])
        Ab = A.expand(batch + a.shape[-2:])
        infos = _infos(Ab._data, "lu")
        bad = _bad_mask(infos, a)
        x = _masked_fill(linalg_solve(_replace_bad(Ab, bad), B, left=left),
                         bad[..., None] if vector else bad[..., None, None], math.nan)
        info = _to_device(infos, a)
    return _out(linalg_solve_ex_t(x, _const(info)), out)


class LinalgSolveTriangular(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b, upper, left, unitriangular):
        xp = xp_of(a)
        ctx.upper, ctx.left, ctx.unit = upper, left, unitriangular
        n = a.shape[-1]
        mask = xp.tri(n, n, -1 if unitriangular else 0, dtype=bool)
        if upper:
            mask = mask.T
        t = xp.where(mask, a, xp.zeros((), a.dtype))
        if unitriangular:
            t = t + xp.eye(n, dtype=a.dtype)
        if not left:
            t = xp.swapaxes(t, -1, -2)
            b = xp.swapaxes(b, -1, -2)
        batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
        t = xp.broadcast_to(t, batch + t.shape[-2:])
        b = xp.broadcast_to(b, batch + b.shape[-2:])
        try:
            x = xp.linalg.solve(t, b)
        except np.linalg.LinAlgError:  # a zero on the diagonal: substitute, giving inf/nan like LAPACK's trsm
            x = _substitute(xp, t, b, lower=(not upper) if left else upper)
        if not left:
            x = xp.ascontiguousarray(xp.swapaxes(x, -1, -2))
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, gy):
        a, x = ctx.saved_tensors
        upper, left, unit = ctx.upper, ctx.left, ctx.unit
        need_a, need_b = ctx.needs_input_grad[:2]
        gb = linalg_solve_triangular(a.mT, gy, upper=not upper, left=left, unitriangular=unit)
        ga = None
        if need_a:
            ga = -(gb @ x.mT) if left else -(x.mT @ gb)
            ga = _tri(ga, (1 if unit else 0) if upper else (-1 if unit else 0), upper)
        return ga, (gb if need_b else None), None, None, None


def _substitute(xp, T, B, lower):
    """Forward/back substitution, one row at a time (only used for singular
    triangular matrices, where the LU-based solver refuses)."""
    n = T.shape[-1]
    X = xp.zeros(B.shape, np.result_type(T, B))
    rows = range(n) if lower else range(n - 1, -1, -1)
    with _np_errstate(xp):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = (T[..., i:i + 1, done] @ X[..., done, :])[..., 0, :]
            X[..., i, :] = (B[..., i, :] - acc) / T[..., i, i:i + 1]
    return X


def linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Solve ``A X = B`` (``X A = B`` if not ``left``) reading only the upper
    or lower triangle of ``A`` (and assuming a unit diagonal if
    ``unitriangular``).  Computed with the general (LU) solver on the masked
    triangle; a zero on the diagonal gives inf/nan, as in PyTorch."""
    a = _check_matrix(A, "linalg.solve_triangular")
    _check_tensor(B, "linalg.solve_triangular", "B", 2)
    b = B._data
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of type "
                           f"{_tname(a.dtype)} and B of type {_tname(b.dtype)} instead")
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    _batch_shape_broadcast("linalg.solve_triangular", a.shape[:-2], b.shape[:-2])
    _same_device("linalg.solve_triangular", A, B)
    return _out(_apply(LinalgSolveTriangular, (A, B, upper, left, unitriangular), (a, b, upper, left, unitriangular)),
                out)


# =====================================================================================
# Decompositions
# =====================================================================================

class LinalgCholesky(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, upper):
        xp = xp_of(a)
        ctx.upper = upper
        try:
            L = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            _raise_chol("linalg.cholesky", a)
        if not bool(xp.isfinite(L).all()):  # NaN input: potrf reports failure, NumPy/CuPy do not
            _raise_chol("linalg.cholesky", a)
        if upper:
            L = xp.ascontiguousarray(xp.swapaxes(L, -1, -2))
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx, gL):
        L, = ctx.saved_tensors
        if ctx.upper:  # Murray (2016), arXiv:1602.07527, as in PyTorch's cholesky_backward
            L, gL = L.mT, gL.mT
        P = _tril(L.mT @ gL)
        P = 0.5 * (P + _tril(P, -1).mT)
        P = linalg_solve_triangular(L.mT, P, upper=True, left=True)
        return linalg_solve_triangular(L, P, upper=False, left=False), None


def linalg_cholesky(A, *, upper=False, out=None):
    """Cholesky factor ``L`` (lower; ``upper=True`` gives ``L^T``) of a
    symmetric positive-definite matrix, reading its lower triangle.  Not
    positive-definite input raises ``fabric.linalg.LinAlgError``."""
    if _amp.active and out is None and (c := _amp.cast("linalg_cholesky", A, upper)):
        with _amp.excluded():
            return linalg_cholesky(*c[:1], upper=c[1])
    a = _check_matrix(A, "linalg.cholesky")
    return _out(_apply(LinalgCholesky, (A, upper), (a, upper)), out)


def linalg_cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``: ``info`` (int32) is 0 on success, else the order of the
    first leading minor that is not positive-definite; ``L`` of such a
    matrix is NaN (LAPACK leaves a partial factor there)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_cholesky_ex", A, upper, check_errors)):
        with _amp.excluded():
            return linalg_cholesky_ex(*c[:1], upper=c[1], check_errors=c[2])
    a = _check_matrix(A, "linalg.cholesky_ex")
    try:
        L = linalg_cholesky(A, upper=upper)
        info = xp_of(a).zeros(a.shape[:-2], np.int32)
    except LinAlgError:
        if check_errors:
            raise
        infos = _infos(a, "chol")
        bad = _bad_mask(infos, a)
        L = _masked_fill(linalg_cholesky(_replace_bad(A, bad), upper=upper), bad[..., None, None], math.nan)
        info = _to_device(infos, a)
    return _out(linalg_cholesky_ex_t(L, _const(info)), out)


def cholesky(input, upper=False, *, out=None):
    """``torch.cholesky`` (deprecated in PyTorch, which warns; so does fabric)."""
    if _amp.active and out is None and (c := _amp.cast("cholesky", input, upper)):
        with _amp.excluded():
            return cholesky(*c)
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                  "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH",
                  UserWarning, stacklevel=2)
    return linalg_cholesky(input, upper=upper, out=out)


def _tri_array(xp, L, upper):
    n = L.shape[-1]
    mask = xp.tri(n, n, dtype=bool)
    return xp.where(mask.T if upper else mask, L, xp.zeros((), L.dtype))


def _cholesky_solve_arrays(xp, b, L, upper):
    T = _tri_array(xp, L, upper)
    Tt = xp.swapaxes(T, -1, -2)
    first, second = (Tt, T) if upper else (T, Tt)  # A = U^T U or L L^T
    batch = np.broadcast_shapes(T.shape[:-2], b.shape[:-2])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    first = xp.broadcast_to(first, batch + T.shape[-2:])
    second = xp.broadcast_to(second, batch + T.shape[-2:])
    try:
        return xp.linalg.solve(second, xp.linalg.solve(first, b))
    except np.linalg.LinAlgError:
        raise LinAlgError("cholesky_solve: the Cholesky factor has a zero on its diagonal") from None


class CholeskySolve(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, b, L, upper):
        ctx.upper = upper
        x = _cholesky_solve_arrays(xp_of(b), b, L, upper)
        ctx.save_for_backward(L, x)
        return x

    @staticmethod
    def backward(ctx, gx):
        L, x = ctx.saved_tensors
        need_b, need_L = ctx.needs_input_grad[:2]
        gb = cholesky_solve(gx, L, ctx.upper)
        gL = None
        if need_L:  # PyTorch's cholesky_solve_backward: treats L as a full matrix
            common = gb @ x.mT
            common = common + common.mT
            gL = -(L @ common) if ctx.upper else -(common @ L)
        return (gb if need_b else None), gL, None


def cholesky_solve(B, L, upper=False, *, out=None):
    """Solve ``A X = B`` given the Cholesky factor of ``A`` (lower ``L``, or
    upper ``U`` with ``upper=True``); batch dims broadcast.  The forward reads
    only the factor's triangle; the gradient with respect to ``L`` is
    PyTorch's formula, which treats ``L`` as a full matrix."""
    if _amp.active and out is None and (c := _amp.cast("cholesky_solve", B, L, upper)):
        with _amp.excluded():
            return cholesky_solve(*c)
    _check_tensor(B, "cholesky_solve", "input", 1)
    _check_tensor(L, "cholesky_solve", "input2", 2)
    b, l_ = B._data, L._data
    if b.ndim < 2 or l_.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions instead" if b.ndim < 2
                           else f"u should have at least 2 dimensions, but has {l_.ndim} dimensions instead")
    if b.dtype != l_.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_tname(b.dtype)} and A of "
                           f"type {_tname(l_.dtype)} instead.")
    _check_float(l_, "cholesky_solve")
    if l_.shape[-1] != l_.shape[-2] or b.shape[-2] != l_.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {l_.shape[-2]} by "
                           f"{l_.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    _batch_shape_broadcast("cholesky_solve", b.shape[:-2], l_.shape[:-2])
    _same_device("cholesky_solve", B, L)
    return _out(_apply(CholeskySolve, (B, L, upper), (b, l_, upper)), out)


class CholeskyInverse(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, L, upper):
        xp = xp_of(L)
        ctx.upper = upper
        eye = xp.broadcast_to(xp.eye(L.shape[-1], dtype=L.dtype), L.shape)
        y = _cholesky_solve_arrays(xp, eye, L, upper)
        ctx.save_for_backward(L, y)
        return y

    @staticmethod
    def backward(ctx, g):
        L, inv = ctx.saved_tensors
        common = inv @ ((g + g.mT) @ inv)  # PyTorch's cholesky_inverse_backward
        return (-(L @ common) if ctx.upper else -(common @ L)), None


def cholesky_inverse(L, upper=False, *, out=None):
    """Inverse of ``A`` from its Cholesky factor (``A = L L^T``, or ``U^T U``
    with ``upper=True``), reading the factor's triangle; the gradient is
    PyTorch's formula (``L`` treated as a full matrix)."""
    if _amp.active and out is None and (c := _amp.cast("cholesky_inverse", L, upper)):
        with _amp.excluded():
            return cholesky_inverse(*c)
    _check_tensor(L, "cholesky_inverse", "input", 1)
    l_ = L._data
    if l_.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor input must have at least 2 dimensions.")
    if l_.shape[-1] != l_.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are {l_.shape[-2]} by "
                           f"{l_.shape[-1]} matrices")
    _check_float(l_, "cholesky_inverse")
    return _out(_apply(CholeskyInverse, (L, upper), (l_, upper)), out)


class LinalgQr(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, mode):
        xp = xp_of(a)
        ctx.mode = mode
        ctx.set_materialize_grads(False)
        if mode == "r":
            R = xp.linalg.qr(a, mode="r")
            Q = xp.empty((0,), a.dtype)
        else:
            Q, R = xp.linalg.qr(a, mode=mode)
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        mode = ctx.mode
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        m, n = Q._data.shape[-2], R._data.shape[-1]
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_backward_square(gQ, gR, Q, R), None
        # wide case: A = [X | Y], R = [U | V], X = Q U, Y = Q V (Liao et al., 2019)
        U = R[..., :, :m]
        gU = gR[..., :, :m] if gR is not None else None
        gV = gR[..., :, m:] if gR is not None else None
        if gV is not None:
            Y = Q @ R[..., :, m:]  # the input's trailing columns
            gQ = (gQ + Y @ gV.mT) if gQ is not None else Y @ gV.mT
        gX = _qr_backward_square(gQ, gU, Q, U)
        gY = Q @ gV if gV is not None else _const(xp_of(Q._data).zeros(Q._data.shape[:-1] + (n - m,), Q._data.dtype))
        from .join import cat

        return cat([gX, gY], -1), None


def _copyltu(M):
    return _tril(M, -1) + _tril(M, -1).mT + _diag_embed(_diagonal(M))


def _qr_backward_square(gQ, gR, Q, R):
    """gA = (gQ + Q copyltu(M)) R^{-T}, M = R gR^T - gQ^T Q (A = QR, m >= n)."""
    M = None
    if gR is not None:
        M = R @ gR.mT
    if gQ is not None:
        M = -(gQ.mT @ Q) if M is None else M - gQ.mT @ Q
    if M is None:
        return None
    B = Q @ _copyltu(M)
    if gQ is not None:
        B = B + gQ
    return linalg_solve_triangular(R.mT, B, upper=False, left=False)


def linalg_qr(A, mode="reduced", *, out=None):
    """QR decomposition ``A = Q R`` (Householder, via LAPACK geqrf/orgqr):
    ``mode`` is 'reduced', 'complete' or 'r' (Q is then an empty tensor)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_qr", A, mode)):
        with _amp.excluded():
            return linalg_qr(*c)
    a = _check_matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    return _out(linalg_qr_t(*_apply(LinalgQr, (A, mode), (a, mode))), out)


def qr(input, some=True, *, out=None):
    """``torch.qr`` (deprecated in PyTorch, which warns; so does fabric):
    ``some=True`` is mode 'reduced', ``some=False`` 'complete'."""
    if _amp.active and out is None and (c := _amp.cast("qr", input, some)):
        with _amp.excluded():
            return qr(*c)
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                  "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                  "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning, stacklevel=2)
    return _out(qr_t(*linalg_qr(input, "reduced" if some else "complete")), out)


def _lapack_svd(a, full_matrices, compute_uv=True):
    xp = xp_of(a)
    try:
        return xp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    except np.linalg.LinAlgError:
        if not bool(xp.isfinite(a).all()):
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix contained "
                              "non-finite values.") from None
        raise _converge_error("linalg.svd", "singular values") from None


class LinalgSvd(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, full_matrices):
        ctx.full = full_matrices
        ctx.set_materialize_grads(False)
        U, S, Vh = _lapack_svd(a, full_matrices)
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        return _svd_backward(gU, gS, gVh, U, S, Vh, ctx.full), None


def _svd_backward(gU, gS, gVh, U, S, Vh, full):
    """PyTorch's svd_backward (real case), well-defined for distinct nonzero
    singular values; extra columns of a full U / rows of a full Vh are ignored."""
    k = S._data.shape[-1]
    if full:
        if U._data.shape[-1] != k:
            U = U[..., :k]
            gU = gU[..., :k] if gU is not None else None
        if Vh._data.shape[-2] != k:
            Vh = Vh[..., :k, :]
            gVh = gVh[..., :k, :] if gVh is not None else None
    m, n = U._data.shape[-2], Vh._data.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return (U * gS.unsqueeze(-2)) @ Vh
    Sr, Sc = S.unsqueeze(-2), S.unsqueeze(-1)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye_t(k, S)  # E_ij = s_j^2 - s_i^2, 1 on the diagonal
    UhgU = None
    if gU is not None:
        X = U.mT @ gU
        UhgU = X - X.mT
    VhgV = None
    if gVh is not None:
        X = Vh @ gVh.mT
        VhgV = X - X.mT
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * Sr + Sc * VhgV) / E
    elif UhgU is not None:
        gA = (UhgU * Sr) / E
    else:
        gA = (Sc * VhgV) / E
    if gS is not None:
        gA = gA + _diag_embed(gS)
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / Sr
        gA = gA + gUSinv - U @ (U.mT @ gUSinv)
        gA = gA @ Vh
    elif m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / Sc
        gA = gA + SinvgVh - (SinvgVh @ Vh.mT) @ Vh
        gA = U @ gA
    else:
        gA = U @ (gA @ Vh)
    return gA


def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """``A = U diag(S) Vh`` with ``S`` descending.  Gradients follow PyTorch's
    formula (defined for distinct singular values; U and Vh are unique only
    up to the signs of their columns/rows)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_svd", A, full_matrices, driver)):
        with _amp.excluded():
            return linalg_svd(*c[:2], driver=c[2])
    a = _check_matrix(A, "linalg.svd", square=False)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    return _out(linalg_svd_t(*_apply(LinalgSvd, (A, full_matrices), (a, full_matrices))), out)


def _needs_grad(*ts):
    return _grad_state.enabled and any(t._requires_grad for t in ts)


def linalg_svdvals(A, *, driver=None, out=None):
    """Singular values in descending order (no U/V computed unless a gradient
    is needed)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_svdvals", A, driver)):
        with _amp.excluded():
            return linalg_svdvals(*c[:1], driver=c[1])
    a = _check_matrix(A, "linalg.svdvals", square=False)
    if _needs_grad(A):
        return _out(linalg_svd(A, full_matrices=False, driver=driver).S, out)
    return _out(_const(_lapack_svd(a, False, compute_uv=False)), out)


def svd(input, some=True, compute_uv=True, *, out=None):
    """``torch.svd``: returns ``(U, S, V)`` with ``V`` (not ``Vh``);
    ``some=True`` gives the reduced decomposition.  With
    ``compute_uv=False``, U and V are zero-filled ``(m, m)``/``(n, n)``."""
    if _amp.active and out is None and (c := _amp.cast("svd", input, some, compute_uv)):
        with _amp.excluded():
            return svd(*c)
    a = _check_matrix(input, "svd", square=False)
    if not compute_uv:
        S = linalg_svdvals(input)
        xp = xp_of(a)
        m, n = a.shape[-2:]
        U = _const(xp.zeros(a.shape[:-2] + (m, m), a.dtype))
        V = _const(xp.zeros(a.shape[:-2] + (n, n), a.dtype))
        return _out(svd_t(U, S, V), out)
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return _out(svd_t(U, S, Vh.mT), out)


class LinalgEigh(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, uplo):
        ctx.set_materialize_grads(False)
        try:
            L, V = xp_of(a).linalg.eigh(a, UPLO=uplo)
        except np.linalg.LinAlgError:
            raise _converge_error("linalg.eigh", "eigenvalues") from None
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        if gV is None:
            if gL is None:
                return None, None
            return (V * gL.unsqueeze(-2)) @ V.mT, None
        X = V.mT @ gV
        X = 0.5 * (X - X.mT)
        n = L._data.shape[-1]
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye_t(n, L)  # E_ij = l_j - l_i, 1 on the diagonal
        if gL is not None:
            X = X + _diag_embed(gL)
        return V @ ((X / E) @ V.mT), None


def _check_uplo(UPLO, fn):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def linalg_eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric
    matrix, reading the ``UPLO`` triangle.  Gradients are defined for
    distinct eigenvalues; eigenvectors are unique only up to sign."""
    if _amp.active and out is None and (c := _amp.cast("linalg_eigh", A, UPLO)):
        with _amp.excluded():
            return linalg_eigh(*c)
    a = _check_matrix(A, "linalg.eigh")
    uplo = _check_uplo(UPLO, "linalg.eigh")
    return _out(linalg_eigh_t(*_apply(LinalgEigh, (A, uplo), (a, uplo))), out)


def linalg_eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric matrix."""
    if _amp.active and out is None and (c := _amp.cast("linalg_eigvalsh", A, UPLO)):
        with _amp.excluded():
            return linalg_eigvalsh(*c)
    a = _check_matrix(A, "linalg.eigvalsh")
    uplo = _check_uplo(UPLO, "linalg.eigvalsh")
    if _needs_grad(A):
        return _out(linalg_eigh(A, uplo).eigenvalues, out)
    try:
        w = xp_of(a).linalg.eigvalsh(a, UPLO=uplo)
    except np.linalg.LinAlgError:
        raise _converge_error("linalg.eigvalsh", "eigenvalues") from None
    return _out(_const(w), out)


def _complex_unsupported(name):
    raise NotImplementedError(f"fabric.linalg.{name}: the eigen-decomposition of a general real matrix is complex, and "
                              "complex dtypes are out of scope in fabric. For symmetric matrices use "
                              "fabric.linalg.eigh / eigvalsh.")


def linalg_eig(A, *, out=None):
    """Not supported: results are complex (complex dtypes are out of scope)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_eig", A)):
        with _amp.excluded():
            return linalg_eig(*c)
    _complex_unsupported("eig")


def linalg_eigvals(A, *, out=None):
    """Not supported: results are complex (complex dtypes are out of scope)."""
    if _amp.active and out is None and (c := _amp.cast("linalg_eigvals", A)):
        with _amp.excluded():
            return linalg_eigvals(*c)
    _complex_unsupported("eigvals")


def _tolerances(a, S_max, atol, rtol, rcond, fn):
    """PyTorch's rule: tol = max(atol, rtol * smax); rtol defaults to
    eps * max(m, n), or to 0 when a positive atol is given."""
    xp = xp_of(a)
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError(f"{fn}: rcond and rtol cannot both be given")
        rtol = rcond
    dt = a.dtype

    def arr(v):
        if v is None:
            return None
        if isinstance(v, Tensor):
            v = v._data
        return xp.asarray(v, dtype=dt)

    atol_a, rtol_a = arr(atol), arr(rtol)
    eps = np.finfo(dt).eps * max(a.shape[-2], a.shape[-1])
    if rtol_a is None:
        rtol_a = xp.asarray(eps, dtype=dt)
        if atol_a is not None:
            rtol_a = xp.where(atol_a > 0, xp.zeros((), dt), rtol_a)
    if atol_a is None:
        atol_a = xp.zeros((), dt)
    return xp.maximum(atol_a[..., None] if atol_a.ndim else atol_a,
                      (rtol_a[..., None] if rtol_a.ndim else rtol_a) * S_max)


class LinalgPinv(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, atol, rtol, rcond, hermitian):
        xp = xp_of(a)
        m, n = a.shape[-2:]
        if a.size == 0:
            y = xp.zeros(a.shape[:-2] + (n, m), a.dtype)
        elif hermitian:
            L, V = xp.linalg.eigh(a)
            absL = xp.abs(L)
            tol = _tolerances(a, absL.max(-1, keepdims=True), atol, rtol, rcond, "linalg.pinv")
            with _np_errstate(xp):
                inv = xp.where(absL > tol, 1 / L, xp.zeros((), a.dtype))
            y = (V * inv[..., None, :]) @ xp.swapaxes(V, -1, -2)
        else:
            U, S, Vh = _lapack_svd(a, False)
            tol = _tolerances(a, S[..., :1], atol, rtol, rcond, "linalg.pinv")
            with _np_errstate(xp):
                inv = xp.where(tol < S, 1 / S, xp.zeros((), a.dtype))
            y = (xp.swapaxes(Vh, -1, -2) * inv[..., None, :]) @ xp.swapaxes(U, -1, -2)
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        a, p = ctx.saved_tensors
        return _pinv_backward(gy, p, a), None, None, None, None


def _pinv_backward(g, pinvA, A):
    """PyTorch's pinv_backward (valid where the rank is locally constant)."""
    m, n = A._data.shape[-2:]
    pinvAh = pinvA.mT
    gh = g.mT
    if m <= n:
        K = gh @ pinvA
        KpinvAh = K @ pinvAh
        return -(pinvA @ K).mT + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gh - K @ A)
    K = pinvA @ gh
    pinvAhK = pinvAh @ K
    return -(K @ pinvA).mT + (gh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A


def linalg_pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Moore-Penrose pseudo-inverse through the SVD (``eigh`` when
    ``hermitian``); singular values ``<= max(atol, rtol * smax)`` are treated
    as zero.  ``rcond`` is PyTorch's legacy name for ``rtol``.  The gradient
    is PyTorch's pinv_backward formula (also for ``hermitian=True``)."""
    a = _check_matrix(A, "linalg.pinv", square=False)
    atol, rtol, rcond = (v._data if isinstance(v, Tensor) else v for v in (atol, rtol, rcond))
    return _out(_apply(LinalgPinv, (A, None, None, None, hermitian), (a, atol, rtol, rcond, hermitian)), out)


def pinverse(input, rcond=1e-15):
    """``torch.pinverse``: ``linalg.pinv(input, rtol=rcond)``."""
    if _amp.active and (c := _amp.cast("pinverse", input, rcond)):
        with _amp.excluded():
            return pinverse(*c)
    return linalg_pinv(input, rcond=rcond)


class LinalgLstsq(Function):
    """Minimum-norm least squares through one SVD; outputs
    ``(solution, singular_values, rank)`` (the last two non-differentiable)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b, rcond, vector):
        xp = xp_of(a)
        ctx.vector = vector
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(1, 2)
        bb = b[..., None] if vector else b
        batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
        U, S, Vh = _lapack_svd(xp.broadcast_to(a, batch + a.shape[-2:]), False)
        m, n = a.shape[-2:]
        if rcond is None or rcond < 0:
            rcond = np.finfo(a.dtype).eps * max(m, n)
        smax = S[..., :1] if S.shape[-1] else xp.zeros(S.shape[:-1] + (1,), S.dtype)
        keep = rcond * smax < S
        with _np_errstate(xp):
            inv = xp.where(keep, 1 / S, xp.zeros((), a.dtype))
        x = xp.swapaxes(Vh, -1, -2) @ (inv[..., :, None] * (xp.swapaxes(U, -1, -2) @ bb))
        if vector:
            x = x[..., 0]
        ctx.save_for_backward(a, b)
        return x, S, keep.sum(-1).astype(np.int64)

    @staticmethod
    def backward(ctx, gx, gS, grank):
        if gx is None:
            return None, None, None, None
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        if ctx.vector:
            gx, b = gx.unsqueeze(-1), b.unsqueeze(-1)
        pinvA = linalg_pinv(a)
        ga = _pinv_backward(gx @ b.mT, pinvA, a) if need_a else None
        gb = (pinvA.mT @ gx) if need_b else None
        if gb is not None and ctx.vector:
            gb = gb.squeeze(-1)
        return ga, gb, None, None


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def linalg_lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B`` (minimum norm for rank-deficient
    ``A``), returned as ``(solution, residuals, rank, singular_values)``.

    Which outputs are filled follows PyTorch's CPU drivers: ``gelsy``
    (default): rank; ``gelsd``/``gelss``: rank and singular values; ``gels``:
    neither; residuals (squared column norms of ``A X - B``) when m > n and
    every matrix has full rank, except for ``gelsy``.  Every driver is
    computed with one SVD, so the effective rank is ``#{s > rcond * smax}``
    (gelsy uses a rank-revealing QR instead: borderline ranks may differ).
    The residuals are differentiable with their true gradient (PyTorch
    ignores their gradient).  The gradient of the solution is PyTorch's
    (through ``pinv(A)``).

    Example::

        >>> A = fabric.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> fabric.linalg.lstsq(A, fabric.tensor([[1.0], [2.0], [3.0]])).solution
        tensor([[1.0000],
                [2.0000]])
    """
    if _amp.active and (c := _amp.cast("linalg_lstsq", A, B, rcond, driver)):
        with _amp.excluded():
            return linalg_lstsq(*c[:3], driver=c[3])
    a = _check_matrix(A, "torch.linalg.lstsq", square=False)
    _check_tensor(B, "linalg.lstsq", "B", 2)
    b = B._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {_tname(a.dtype)} and other's dtype {_tname(b.dtype)}")
    if driver is None:
        driver = "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if not (a.ndim >= b.ndim and a.ndim - b.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = b.ndim == a.ndim - 1  # lstsq's own rule (not linalg.solve's)
    if (b.shape[-1] if vector else b.shape[-2]) != a.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    _batch_shape_broadcast("torch.linalg.lstsq", a.shape[:-2], b.shape[:-1] if vector else b.shape[:-2])
    _same_device("linalg.lstsq", A, B)
    if isinstance(rcond, Tensor):
        rcond = rcond.item()
    X, S, rank = _apply(LinalgLstsq, (A, B, rcond, vector), (a, b, rcond, vector))
    xp = xp_of(a)
    m, n = a.shape[-2:]
    empty = _const(xp.zeros((0,), a.dtype))
    full_rank = bool((rank._data == n).all())
    if driver == "gels":
        rank = _const(xp.zeros((0,), np.int64))
    if driver not in ("gelsd", "gelss"):
        S = empty
    residuals = empty
    if driver != "gelsy" and m > n and full_rank:
        Xm = X.unsqueeze(-1) if vector else X
        r = matmul(A, Xm) - (B.unsqueeze(-1) if vector else B)
        residuals = (r * r).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    return linalg_lstsq_t(X, residuals, rank, S)


def linalg_matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` by repeated squaring; negative powers
    use the inverse; ``n = 0`` gives the identity (still joined to the
    graph with a zero gradient, as in PyTorch)."""
    _check_tensor(A, "linalg.matrix_power", "A", 1)
    if isinstance(n, Tensor):
        n = n.item()
    if isinstance(n, builtins.bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    a = A._data
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {a.shape[-2]} "
                           f"by {a.shape[-1]} matrices")
    n = int(n)
    if n > 1:
        _check_not_bool("addmm_impl_cpu_", A)
    if n == 0:
        eye = xp_of(a).broadcast_to(_eye(a.shape[-1], a.shape[-1], a.dtype, a), a.shape).copy()
        return _out(_apply(_ZerosGrad, (A, eye), (a, eye)), out)
    if n == 1:
        return _out(A.clone(), out)
    if n < 0:
        A = linalg_inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return _out(result, out)


def matrix_power(input, n, *, out=None):
    """``torch.matrix_power``: alias of ``linalg.matrix_power``."""
    return linalg_matrix_power(input, n, out=out)


def linalg_matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Number of singular values ``> max(atol, rtol * smax)`` (int64); ``tol``
    is PyTorch's legacy absolute tolerance."""
    if _amp.active and out is None and (c := _amp.cast("linalg_matrix_rank", A, tol, hermitian, atol, rtol)):
        with _amp.excluded():
            return linalg_matrix_rank(*c[:3], atol=c[3], rtol=c[4])
    _check_tensor(A, "linalg.matrix_rank", "A", 1)
    a = A._data
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if a.dtype.kind != "f" or a.dtype.itemsize < 4:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError("linalg.matrix_rank: tol cannot be given together with atol or rtol")
        atol, rtol = tol, 0.0
    xp = xp_of(a)
    if a.size == 0:
        return _out(_const(xp.zeros(a.shape[:-2], np.int64)), out)
    if hermitian:
        try:
            S = xp.abs(xp.linalg.eigvalsh(a))
        except np.linalg.LinAlgError:
            raise _converge_error("linalg.matrix_rank", "eigenvalues") from None
        smax = S.max(-1, keepdims=True)
    else:
        S = _lapack_svd(a, False, compute_uv=False)
        smax = S[..., :1]
    tolv = _tolerances(a, smax, atol, rtol, None, "linalg.matrix_rank")
    return _out(_const((tolv < S).sum(-1).astype(np.int64)), out)


# --- matrix exponential -------------------------------------------------------------------

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(xp, a):
    """Batched matrix exponential: scaling and squaring with the degree-13
    Pade approximant (Higham 2005), computed in float64."""
    dt = a.dtype
    A = a.astype(np.float64)
    n = A.shape[-1]
    if A.size == 0:
        return A.astype(dt)
    norm1 = xp.abs(A).sum(-2).max(-1)
    with _np_errstate(xp):
        s = xp.maximum(0, xp.ceil(xp.log2(norm1 / _THETA13)))
    s = xp.where(xp.isfinite(s), s, 0).astype(np.int64)
    A = A / (2.0 ** s)[..., None, None]
    b = _PADE13
    eye = xp.eye(n)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    R = xp.linalg.solve(V - U, V + U)
    smax = int(s.max()) if s.size else 0
    for i in range(smax):
        R = xp.where((s > i)[..., None, None], R @ R, R)
    return R.astype(dt)


class LinalgMatrixExp(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _expm(xp_of(a), a)

    @staticmethod
    def backward(ctx, gy):
        a, = ctx.saved_tensors
        from .join import cat

        n = a._data.shape[-1]
        at = a.mT
        z = _const(xp_of(a._data).zeros(a._data.shape, a._data.dtype))
        # d/dA <G, exp(A)> is the upper-right block of exp([[A^T, G], [0, A^T]])
        big = cat([cat([at, gy], -1), cat([z, at], -1)], -2)
        return linalg_matrix_exp(big)[..., :n, n:]


def linalg_matrix_exp(A):
    """Matrix exponential ``sum_k A^k / k!`` of square matrices."""
    a = _check_matrix(A, "linalg.matrix_exp")
    return _apply(LinalgMatrixExp, (A,), (a,))


def matrix_exp(input):
    """``torch.matrix_exp``: alias of ``linalg.matrix_exp``."""
    return linalg_matrix_exp(input)


# --- vander, tensorinv, tensorsolve, diagonal -----------------------------------------------

class LinalgVander(Function):
    """Columns ``x**0, x**1, ...`` (``increasing``) or reversed."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, N, increasing):
        xp = xp_of(x)
        ctx.N, ctx.increasing = N, increasing
        out = xp.empty(x.shape + (N,), x.dtype)
        if N:
            out[..., 0] = 1
            if N > 1:
                out[..., 1:] = xp.cumprod(xp.broadcast_to(x[..., None], x.shape + (N - 1,)), axis=-1)
        if not increasing:
            out = out[..., ::-1].copy()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, gy):
        V, = ctx.saved_tensors
        N = ctx.N
        if N < 2:
            return gy.sum(-1) * 0, None, None
        if not ctx.increasing:
            rev = np.arange(N - 1, -1, -1)
            gy, V = gy[..., rev], V[..., rev]
        k = _const(xp_of(V._data).arange(1, N, dtype=V._data.dtype))
        return (gy[..., 1:] * k * V[..., :N - 1]).sum(-1), None, None


def _vander(x, N, increasing, fn):
    _check_tensor(x, fn, "x", 1)
    if x._data.dtype.kind in "biu" and x._data.dtype != np.int64:
        x = x.to(D.int64)  # integer powers accumulate in int64, as in PyTorch
    if N is None:
        N = x._data.shape[-1] if x._data.ndim else 1
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    return _apply(LinalgVander, (x, int(N), increasing), (x._data, int(N), increasing))


def linalg_vander(x, *, N=None):
    """``torch.linalg.vander``: ``(..., n) -> (..., n, N)`` with columns
    ``x**0 ... x**(N-1)`` (``N`` defaults to ``n``)."""
    _check_tensor(x, "linalg.vander", "x", 1)
    if x._data.dtype == np.bool_:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    if (N if N is not None else (x._data.shape[-1] if x._data.ndim else 1)) <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _vander(x, N, True, "linalg.vander")


def vander(x, N=None, increasing=False):
    """``torch.vander``: 1-D ``x``, decreasing powers unless ``increasing``."""
    _check_tensor(x, "vander", "x", 1)
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    return _vander(x, N, increasing, "vander")


def linalg_tensorinv(A, ind=2, *, out=None):
    """Inverse of ``A`` viewed as a square matrix ``prod(shape[:ind]) x prod(shape[ind:])``."""
    if _amp.active and out is None and (c := _amp.cast("linalg_tensorinv", A, ind)):
        with _amp.excluded():
            return linalg_tensorinv(*c)
    _check_tensor(A, "linalg.tensorinv", "A", 1)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shp = A._data.shape
    rows, cols = int(np.prod(shp[:ind])), int(np.prod(shp[ind:]))
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return _out(linalg_inv(A.reshape(rows, cols)).reshape(shp[ind:] + shp[:ind]), out)


def linalg_tensorsolve(A, B, dims=None, *, out=None):
    """``X`` with ``tensordot(A, X, X.ndim) == B``; ``dims`` are moved to the end of ``A`` first."""
    if _amp.active and out is None and (c := _amp.cast("linalg_tensorsolve", A, B, dims)):
        with _amp.excluded():
            return linalg_tensorsolve(*c)
    _check_tensor(A, "linalg.tensorsolve", "A", 1)
    _check_tensor(B, "linalg.tensorsolve", "B", 2)
    if dims is not None:
        nd = A._data.ndim
        dd = [_wrap_dim(d, nd) for d in dims]
        A = A.permute(tuple([i for i in range(nd) if i not in dd] + dd))
    shp = A._data.shape
    rest = shp[B._data.ndim:]
    n = int(np.prod(B._data.shape))
    m = int(np.prod(rest))
    if n != m:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {m} != {n}")
    return _out(linalg_solve(A.reshape(n, m), B.reshape(n)).reshape(rest), out)


def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``torch.linalg.diagonal``: ``A.diagonal(offset, dim1, dim2)`` (defaults
    pick the last two dims)."""
    from . import shape

    return shape.diagonal(A, offset, dim1, dim2)


def _unsupported(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"fabric.linalg.{name} is not implemented (NumPy/CuPy expose no LU/LDL/Householder "
                                  "factorization routines); use linalg.solve / inv / cholesky / qr instead.")
    f.__name__ = name
    f.__doc__ = "Not implemented in fabric: raises NotImplementedError."
    return f


linalg_lu = _unsupported("lu")
linalg_lu_factor = _unsupported("lu_factor")
linalg_lu_factor_ex = _unsupported("lu_factor_ex")
linalg_lu_solve = _unsupported("lu_solve")
linalg_ldl_factor = _unsupported("ldl_factor")
linalg_ldl_factor_ex = _unsupported("ldl_factor_ex")
linalg_ldl_solve = _unsupported("ldl_solve")
linalg_householder_product = _unsupported("householder_product")
