"""Pointwise ops and sums on sparse tensors, as PyTorch gives them for COO (and CSR).

A unary op that maps 0 to 0 (``sin``, ``abs``, ``relu``, ``sqrt`` ...) runs on
the specified values only and keeps the sparsity pattern; it is the dense op's
own ``Function`` applied to the values, so its gradient is the dense op's and
reaches a sparse leaf as a sparse gradient.  The entry point is the dense one
(``fabric.sin(s)``, ``s.sin()``): a sparse operand makes the dense kernel fail
on its placeholder array, and ``autograd.function`` hands the call to the
tensor's ``_pointwise`` (nothing is checked on the dense path).  Ops PyTorch
lacks for a layout raise PyTorch's error for it.

Example::

    >>> import fabric
    >>> s = fabric.tensor([[0., -2.], [3., 0.]]).to_sparse()
    >>> fabric.abs(s).values()
    tensor([2., 3.])
    >>> fabric.sparse.sum(s, 0).to_dense()
    tensor([ 3., -2.])
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _wrap_dim
from ..autograd.function import _apply
from ..backends import backend_of

# Unary ops PyTorch runs on COO / CSR tensors (each maps 0 to 0).
COO_UNARY = frozenset({
    "abs", "neg", "sqrt", "sin", "tanh", "relu", "sgn", "sign", "asin", "atan", "ceil", "floor", "trunc", "round",
    "expm1", "log1p", "sinh", "tan", "asinh", "atanh", "erf", "erfinv", "rad2deg", "deg2rad", "frac", "signbit",
    "isnan", "isinf", "isposinf", "isneginf", "nan_to_num", "square", "conj_physical", "positive"})
CSR_UNARY = (COO_UNARY - {"nan_to_num", "square"}) | {"angle"}
# ...of which these are linear: they keep an uncoalesced tensor's duplicate entries as PyTorch does.
_LINEAR = frozenset({"neg", "positive", "conj_physical"})

_ATEN_NAMES = {"NanToNum": "nan_to_num", "Log1P": "log1p", "Relu": "relu", "Threshold": "threshold"}


def aten_name(cls) -> str:
    """PyTorch's operator name of a fabric op ``Function`` class (``Sin`` -> ``sin``)."""
    name = cls.__name__.lstrip("_")
    return _ATEN_NAMES.get(name, name.lower())


def not_on_layout(name: str, t) -> Exception:
    """PyTorch's error for op ``name`` on a sparse tensor ``t`` that has no kernel for it."""
    if t.is_sparse:
        backend = "SparseCUDA" if t.is_cuda else "SparseCPU"
        return NotImplementedError(
            f"Could not run 'aten::{name}' with arguments from the '{backend}' backend. This could be because "
            "the operator doesn't exist for this backend, or was omitted during the selective/custom build process "
            "(if using custom build).")
    return RuntimeError(f"unsupported tensor layout: {t._layout_name}")


# binary op Functions reached through their function forms (fabric.mul(s, 2) ...): the sparse
# operand's operator method, reflected when the sparse operand is the second one
_BINARY = {"mul": ("__mul__", "__rmul__"), "add": ("__add__", "__radd__"), "sub": ("__sub__", "__rsub__"),
           "div": ("__truediv__", "__rtruediv__"), "powscalar": ("__pow__", None)}


def unary(t, cls, args, arrays):
    """``cls`` (a dense elementwise op) on sparse ``t`` (one of ``args``): run on the values."""
    name = aten_name(cls)
    if name in _BINARY and len(args) == 2:
        method, reflected = _BINARY[name]
        if args[0] is t:
            return getattr(t, method)(args[1])
        if reflected is not None:
            return getattr(t, reflected)(args[0])
        raise not_on_layout("pow", t)
    if name not in t._unary_ops:
        raise not_on_layout(name, t)
    src = t if name in _LINEAR or not t.is_sparse else t.coalesce()
    v = src._vals
    want = arrays[0].dtype  # the placeholder's dtype: the op may have asked for a float copy of an int input
    if v._data.dtype != want:
        v = v.to(_dtype_of(want))
    out = _apply(cls, (v,) + tuple(args[1:]), (v._data,) + tuple(arrays[1:]))
    return src._with_values(out)


def _dtype_of(np_dtype):
    from .. import _dtype as D
    return D.from_numpy_dtype(np_dtype)


# --- binary ------------------------------------------------------------------------------------

def linear_index(idx, shape):
    """Row-major positions of the index columns ``idx`` (``(ndim, nnz)``) in ``shape``."""
    xp = backend_of(idx).xp
    if idx.shape[0] == 0:
        return xp.zeros(idx.shape[1], np.int64)
    return xp.ravel_multi_index(tuple(idx), tuple(shape))


def lookup(c, idx):
    """Values of the coalesced sparse ``c`` at index columns ``idx`` (zero rows where ``c`` has no entry),
    differentiable in ``c``'s values."""
    from ..ops.join import cat
    xp = backend_of(idx).xp
    sd = c.sparse_dim()
    keys = linear_index(c._idx._data, c._shape[:sd])
    want = linear_index(idx, c._shape[:sd])
    pos = xp.searchsorted(keys, want)
    pos = xp.minimum(pos, max(keys.shape[0] - 1, 0))
    hit = keys[pos] == want if keys.shape[0] else xp.zeros(want.shape, bool)
    pos = xp.where(hit, pos, keys.shape[0])  # a miss reads the zero row appended below
    vals = c._vals
    padded = cat([vals, vals.new_zeros((1,) + tuple(vals.shape[1:]))])
    return padded[Tensor._make(pos)]


def mul_sparse(a, b):
    """``a * b`` of two sparse COO tensors with PyTorch's result pattern: the
    intersection (coalesced) when both are coalesced; otherwise the pattern of
    the uncoalesced operand (of the one with fewer entries when both are, the
    second on a tie), its values times the other's (zero where it has none)."""
    if a.shape != b.shape:
        raise RuntimeError(f"mul(sparse, sparse): expected 'self' and 'other' to have same size, but "
                           f"{list(a.shape)} != {list(b.shape)}")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError("mul(sparse, sparse): both operands need the same number of sparse dimensions")
    if a.is_coalesced() and b.is_coalesced():
        xp = backend_of(a._idx._data).xp
        sd = a.sparse_dim()
        ka = linear_index(a._idx._data, a._shape[:sd])
        kb = linear_index(b._idx._data, b._shape[:sd])
        common, ia, ib = _intersect(xp, ka, kb)
        idx = a._idx._data[:, ia]
        vals = a._vals[Tensor._make(ia)] * b._vals[Tensor._make(ib)]
        return type(a)._build(Tensor._make(idx), vals, a._shape, True)
    if a.is_coalesced() or (not b.is_coalesced() and b._nnz() <= a._nnz()):
        a, b = b, a
    return type(a)._build(a._idx, a._vals * lookup(b.coalesce(), a._idx._data), a._shape, False)


def _intersect(xp, ka, kb):
    if xp is np:
        return np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    pos = xp.minimum(xp.searchsorted(kb, ka), max(kb.shape[0] - 1, 0))
    hit = kb[pos] == ka if kb.shape[0] else xp.zeros(ka.shape, bool)
    ia = xp.nonzero(hit)[0]
    return ka[ia], ia, pos[ia]


def merge_plan(ka, kb):
    """PyTorch's sparse + sparse walk: two cursors over the entries of ``a`` and
    ``b`` (row-major keys ``ka``, ``kb``, host arrays); the smaller key is emitted
    and advances, equal keys are emitted once, summed.  Returns, per result
    entry, its key and the positions in ``a`` and ``b`` (-1: none)."""
    na, nb = ka.shape[0], kb.shape[0]
    if (na < 2 or bool((ka[1:] >= ka[:-1]).all())) and (nb < 2 or bool((kb[1:] >= kb[:-1]).all())):
        return _merge_sorted(ka, kb)
    keys, ia, ib = [], [], []  # unsorted input: the walk itself
    i = j = 0
    while i < na and j < nb:
        x, y = ka[i], kb[j]
        if x <= y:
            keys.append(x)
            ia.append(i)
            i += 1
            ib.append(j if x == y else -1)
            j += x == y
        else:
            keys.append(y)
            ia.append(-1)
            ib.append(j)
            j += 1
    keys += list(ka[i:]) + list(kb[j:])
    ia += list(range(i, na)) + [-1] * (nb - j)
    ib += [-1] * (na - i) + list(range(j, nb))
    return np.array(keys, np.int64), np.array(ia, np.int64), np.array(ib, np.int64)


def _merge_sorted(ka, kb):
    # On sorted keys the walk pairs the k-th occurrence of a key in `a` with its k-th in `b`,
    # and emits in (key, occurrence) order.
    def ranks(k):
        return np.arange(k.shape[0]) - np.searchsorted(k, k, "left")
    keys = np.concatenate([ka, kb])
    rank = np.concatenate([ranks(ka), ranks(kb)])
    src = np.repeat([0, 1], [ka.shape[0], kb.shape[0]])
    pos = np.concatenate([np.arange(ka.shape[0]), np.arange(kb.shape[0])])
    order = np.lexsort((src, rank, keys))
    keys, rank, src, pos = keys[order], rank[order], src[order], pos[order]
    paired = np.zeros(keys.shape[0], bool)  # an entry of `b` merged into the `a` entry before it
    paired[1:] = (keys[1:] == keys[:-1]) & (rank[1:] == rank[:-1])
    first = ~paired
    ia = np.where(src == 0, pos, -1)[first]
    ib = np.where(src == 1, pos, -1)
    ib_first = ib[first]
    merged_into = np.nonzero(paired)[0] - 1  # the a-entry (index in the sorted list) each b joins
    slot = np.cumsum(first) - 1
    ib_first[slot[merged_into]] = pos[paired]
    return keys[first], ia, ib_first


def add_sparse(a, b, alpha):
    """``a + alpha * b`` of two sparse COO tensors, with PyTorch's entry order (see :func:`merge_plan`)."""
    from ..ops.join import cat
    sd = a.sparse_dim()
    to_host = backend_of(a._idx._data).to_numpy if not isinstance(a._idx._data, np.ndarray) else np.asarray
    ka = to_host(linear_index(a._idx._data, a._shape[:sd]))
    kb = to_host(linear_index(b._idx._data, a._shape[:sd]))
    keys, ia, ib = merge_plan(ka, kb)
    xp = backend_of(a._idx._data).xp
    idx = xp.asarray(np.stack(np.unravel_index(keys, a._shape[:sd])).astype(np.int64).reshape(sd, -1))
    bv = b._vals.to(a._vals.dtype)
    if alpha != 1:
        bv = bv * alpha

    def padded(v):  # position -1 reads the appended zero row
        return cat([v, v.new_zeros((1,) + tuple(v.shape[1:]))])

    vals = padded(a._vals)[Tensor._make(xp.asarray(ia))] + padded(bv)[Tensor._make(xp.asarray(ib))]
    return type(a)._build(Tensor._make(idx), vals, a._shape, a.is_coalesced() and b.is_coalesced())


def mul_dense(s, d):
    """``sparse * dense`` (either order): a sparse result with ``s``'s pattern,
    the dense operand broadcast to ``s``'s shape and read at its entries."""
    if d.dim() == 0:
        return s._with_values(s._vals * d)
    try:
        shape = np.broadcast_shapes(tuple(d.shape), s._shape)
    except ValueError:
        shape = None
    if shape != s._shape:
        raise RuntimeError(f"mul(sparse, dense): the dense operand of shape {list(d.shape)} does not broadcast to "
                           f"the sparse shape {list(s._shape)}")
    sd = s.sparse_dim()
    full = d.expand(s._shape)
    picked = full[tuple(Tensor._make(i) for i in s._idx._data)] if sd else full.unsqueeze(0).expand(
        (s._nnz(),) + s._shape)
    return s._with_values(s._vals * picked)


def pow_scalar(s, exponent):
    """``s ** exponent`` for a number ``exponent`` (entries only; 0 ** 0 would densify)."""
    if isinstance(exponent, Tensor):
        if exponent.dim() != 0:
            raise RuntimeError("pow(sparse, tensor) is supported only for a 0-d exponent")
        exponent = exponent.item()
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make the result tensor "
                           "dense")
    c = s.coalesce()
    return c._with_values(c._vals ** exponent)


# --- sums --------------------------------------------------------------------------------------

def sparse_sum(s, dim=None, keepdim=False, dtype=None):
    """``torch.sparse.sum``: a dense 0-d tensor over all dims (or over every
    sparse dim of a hybrid tensor), else a coalesced sparse tensor."""
    vals = s._vals if dtype is None else s._vals.to(dtype)
    if dim is None:
        return vals.sum()
    n = s.dim()
    dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, n) for d in dims]
    if len(set(dims)) != len(dims):
        d = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    sd = s.sparse_dim()
    sparse_dims = [d for d in dims if d < sd]
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(dense_dims, keepdim=keepdim)
    kept = [d for d in range(sd) if d not in sparse_dims]
    dense_shape = tuple(vals.shape[1:])
    if not kept and not keepdim:
        return vals.sum(0)  # every sparse dim summed: a dense result
    idx = s._idx._data
    xp = backend_of(idx).xp
    if keepdim:
        new_idx = idx.copy()
        new_idx[sparse_dims] = 0
        shape = tuple(1 if d in sparse_dims else s._shape[d] for d in range(sd)) + dense_shape
    else:
        new_idx = idx[kept] if kept else xp.zeros((0, idx.shape[1]), np.int64)
        shape = tuple(s._shape[d] for d in kept) + dense_shape
    return type(s)._build(Tensor._make(new_idx), vals, shape, False).coalesce()
