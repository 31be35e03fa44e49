"""``F.embedding``, ``F.embedding_bag`` and ``F.one_hot``.

The weight gradient of a lookup is the fused ``embedding_backward`` of the
backend (a BLAS one-hot product or a sort + segment sum on the CPU, a kernel
on CUDA) — never ``np.add.at``.  Every backward is itself differentiable.

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> w = fabric.arange(6.0).reshape(3, 2)
    >>> F.embedding(fabric.tensor([2, 0]), w)
    tensor([[4., 5.],
            [0., 1.]])
"""
from __future__ import annotations

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...autograd.grad_mode import no_grad
from ...backends import backend_of
from ...ops._util import xp_of

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _check_indices(idx, name="embedding"):
    if idx.dtype != np.int64 and idx.dtype != np.int32:
        tname = {"float32": "Float", "float64": "Double", "float16": "Half", "bool": "Bool", "int16": "Short",
                 "int8": "Char", "uint8": "Byte"}.get(str(idx.dtype), str(idx.dtype))
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{tname}Tensor instead (while checking arguments for {name})")


def _check_range(idx, num):
    if idx.size and (bool((idx < 0).any()) or bool((idx >= num).any())):
        raise IndexError("index out of range in self")


class Embedding(Function):
    """Row lookup ``weight[indices]``; ``indices`` is an integer array."""

    _array_forward = True

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        ctx.indices, ctx.num = indices, weight.shape[0]
        ctx.padding_idx, ctx.scale_grad_by_freq = padding_idx, scale_grad_by_freq
        return xp_of(weight).take(weight, indices, axis=0)

    @staticmethod
    def backward(ctx, gy):
        gw = _apply(EmbeddingBackward, (gy, ctx.indices, ctx.num, ctx.padding_idx, ctx.scale_grad_by_freq),
                    (gy._data, ctx.indices, ctx.num, ctx.padding_idx, ctx.scale_grad_by_freq))
        return gw, None, None, None


class SparseEmbedding(Embedding):
    """``embedding(sparse=True)``: the weight's gradient is an uncoalesced
    sparse COO tensor with one row per looked-up index (padding_idx dropped),
    as PyTorch's ``embedding_sparse_backward``."""

    @staticmethod
    def backward(ctx, gy):
        from ...sparse import SparseTensor
        idx = ctx.indices.reshape(-1)
        vals = gy.reshape(idx.shape[0], -1)
        if ctx.scale_grad_by_freq:
            counts = _counts(ctx.indices, ctx.num)
            vals = vals / Tensor._make(counts[idx].astype(gy._data.dtype)[:, None])
        if ctx.padding_idx is not None:
            keep = idx != ctx.padding_idx
            idx = idx[keep]
            vals = vals[Tensor._make(keep)]
        shape = (ctx.num, vals.shape[1])
        return SparseTensor._build(Tensor._make(idx[None, :].astype(np.int64)), vals, shape), None, None, None


class SparseBagRows(SparseEmbedding):
    """The row lookup of ``embedding_bag(sparse=True)``: a sparse weight gradient
    with one row per bag entry, in input order; PyTorch has no frequency scaling
    for it (its error is raised by the backward, as PyTorch's)."""

    @staticmethod
    def backward(ctx, gy):
        if ctx.scale_grad_by_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        return SparseEmbedding.backward(ctx, gy)


class EmbeddingBackward(Function):
    """Gradient of :class:`Embedding` wrt the weight: rows of ``gy`` summed
    per index (scaled by 1/frequency with ``scale_grad_by_freq``; zero for
    ``padding_idx``).  Its own backward is a lookup, so it is differentiable."""

    _array_forward = True
    _node_name = "EmbeddingDenseBackward0"

    @staticmethod
    def forward(ctx, gy, indices, num, padding_idx, scale_grad_by_freq):
        ctx.indices, ctx.padding_idx, ctx.scale = indices, padding_idx, scale_grad_by_freq
        gw = backend_of(gy).embedding_backward(indices, gy, num, padding_idx)
        if scale_grad_by_freq:
            counts = _counts(indices, num)
            ctx.counts = counts
            gw /= xp_of(gw).maximum(counts, 1).astype(gw.dtype)[:, None]
        return gw

    @staticmethod
    def backward(ctx, ggw):
        idx = ctx.indices
        gg = _apply(Embedding, (ggw, idx, None, False), (ggw._data, idx, None, False))
        if ctx.scale or ctx.padding_idx is not None:
            xp = xp_of(idx)
            f = xp.ones(idx.shape, ggw._data.dtype)
            if ctx.scale:
                f /= ctx.counts[idx].astype(f.dtype)
            if ctx.padding_idx is not None:
                f[idx == ctx.padding_idx] = 0
            gg = gg * Tensor._make(f[..., None], False)
        return gg, None, None, None, None


def _counts(indices, num):
    xp = xp_of(indices)
    return xp.bincount(indices.reshape(-1).astype(np.int64), minlength=num)


def _normalize_padding_idx(padding_idx, num):
    if padding_idx is None:
        return None
    if padding_idx > 0:
        if padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = num + padding_idx
    return int(padding_idx)


def _renorm_(weight, indices, max_norm, norm_type):
    """Rescale (in place, no grad) the rows of ``weight`` used by ``indices``
    whose ``norm_type``-norm exceeds ``max_norm`` (PyTorch's embedding_renorm_)."""
    w = weight._data
    xp = xp_of(w)
    rows = xp.unique(indices.reshape(-1))
    if rows.size == 0:
        return
    sel = w[rows].astype(np.float64)
    a = xp.abs(sel)
    if norm_type == float("inf"):
        norms = a.max(axis=1)
    elif norm_type == 0:
        norms = (a != 0).sum(axis=1).astype(np.float64)
    else:
        norms = (a ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    big = norms > max_norm
    if not bool(big.any()):
        return
    scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
    rb = rows[big]
    w[rb] = w[rb] * scale[:, None]
    weight._bump_version()


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Look up rows of ``weight`` (``(num_embeddings, dim)``) at integer
    ``input``; returns ``input.shape + (dim,)``.  ``padding_idx`` rows get no
    gradient; ``max_norm`` renormalises the used rows of ``weight`` in place.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.embedding(fabric.tensor([[0, 1]]), fabric.eye(3)).shape
        fabric.Size([1, 2, 3])
    """
    idx = input._data
    _check_indices(idx)
    w = weight._data
    num = w.shape[0]
    padding_idx = _normalize_padding_idx(padding_idx, num)
    _check_range(idx, num)
    if max_norm is not None:
        with no_grad():
            _renorm_(weight, idx, max_norm, norm_type)
    if sparse:
        return _apply(SparseEmbedding, (weight, idx, padding_idx, scale_grad_by_freq),
                      (w, idx, padding_idx, bool(scale_grad_by_freq)))
    return _apply(Embedding, (weight, idx, padding_idx, scale_grad_by_freq),
                  (w, idx, padding_idx, bool(scale_grad_by_freq)))


class _SegmentSum(Function):
    """``out[b] = sum of rows x[i] with seg[i] == b`` (``seg`` sorted)."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, seg, num_segments):
        ctx.seg = seg
        out = xp_of(x).zeros((num_segments,) + x.shape[1:], x.dtype)
        if seg.size:
            backend_of(x).scatter_add(out, seg, x)
        return out

    @staticmethod
    def backward(ctx, gy):
        return _apply(_GatherRows, (gy, ctx.seg), (gy._data, ctx.seg)), None, None


class _GatherRows(Function):
    """``out[i] = x[seg[i]]`` (the adjoint of :class:`_SegmentSum`)."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, seg):
        ctx.seg, ctx.n = seg, x.shape[0]
        return xp_of(x).take(x, seg, axis=0)

    @staticmethod
    def backward(ctx, gy):
        return _apply(_SegmentSum, (gy, ctx.seg, ctx.n), (gy._data, ctx.seg, ctx.n)), None


class _PickMax(Function):
    """``out[b, d] = x[arg[b, d], d]`` where ``arg`` is -1 for an empty bag (giving 0)."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, arg):
        ctx.arg, ctx.n = arg, x.shape[0]
        xp = xp_of(x)
        cols = xp.arange(x.shape[1])[None, :]
        out = x[xp.maximum(arg, 0), cols]
        out[arg < 0] = 0
        return out

    @staticmethod
    def backward(ctx, gy):
        return _apply(_PlaceMax, (gy, ctx.arg, ctx.n), (gy._data, ctx.arg, ctx.n)), None


class _PlaceMax(Function):
    """Adjoint of :class:`_PickMax`: ``z[arg[b, d], d] = g[b, d]``."""

    _array_forward = True

    @staticmethod
    def forward(ctx, g, arg, n):
        ctx.arg = arg
        xp = xp_of(g)
        z = xp.zeros((n, g.shape[1]), g.dtype)
        valid = arg >= 0
        cols = xp.broadcast_to(xp.arange(g.shape[1])[None, :], arg.shape)
        z[arg[valid], cols[valid]] = g[valid]
        return z

    @staticmethod
    def backward(ctx, gz):
        return _apply(_PickMax, (gz, ctx.arg), (gz._data, ctx.arg)), None, None


def _segment_argmax(x, seg, starts, num_segments):
    """Row index of the (first) maximum of each segment and column; -1 for
    empty segments.  ``x`` rows are grouped by segment in order."""
    xp = xp_of(x)
    n, d = x.shape
    arg = xp.full((num_segments, d), -1, np.int64)
    if n == 0 or d == 0:
        return arg
    counts = xp.bincount(seg, minlength=num_segments)
    nonempty = counts > 0
    pos = xp.arange(n)[:, None]
    if xp is np:
        ne_starts = starts[nonempty]
        mx = np.maximum.reduceat(x, ne_starts, axis=0)
        full = np.empty((num_segments, d), x.dtype)
        full[nonempty] = mx
        cand = np.where(x == full[seg], pos, n)
        arg[nonempty] = np.minimum.reduceat(cand, ne_starts, axis=0)
    else:
        full = xp.full((num_segments, d), -xp.inf, x.dtype)
        xp.maximum.at(full, seg, x)
        cand = xp.where(x == full[seg], pos, n)
        first = xp.full((num_segments, d), n, np.int64)
        xp.minimum.at(first, seg, cand)
        arg = xp.where(nonempty[:, None], first, -1)
    return arg


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings without materialising
    the lookups per bag.  ``input`` is 2-D ``(B, L)`` (fixed-length bags) or
    1-D with ``offsets`` (start of each bag).  Empty bags give zeros.
    ``sparse=True`` (sum and mean): the weight's gradient is a sparse COO
    tensor with one row per bag entry (``padding_idx`` entries dropped).

    Example::

        >>> import fabric
        >>> w = fabric.arange(6.0).reshape(3, 2)
        >>> fabric.nn.functional.embedding_bag(fabric.tensor([0, 2, 1]), w, fabric.tensor([0, 2]), mode="sum")
        tensor([[4., 6.],
                [2., 3.]])
    """
    idx = input._data
    w = weight._data
    num = w.shape[0]
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if w.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}")
    _check_indices(idx, "embedding_bag")
    xp = xp_of(w)
    psw = per_sample_weights
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        bags, length = idx.shape
        off_host = np.arange(bags, dtype=np.int64) * length
        idx = idx.reshape(-1)
        if psw is not None:
            psw = psw.reshape(-1)
        include_last_offset = False
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets._data.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        _check_indices(offsets._data, "embedding_bag")
        off_host = offsets._to_host_numpy().astype(np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if psw is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    n = idx.shape[0]
    if off_host.size and off_host[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(off_host[0])}")
    if off_host.size and off_host[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                           f"{int(off_host[-1])}")
    if off_host.size > 1 and bool((np.diff(off_host) < 0).any()):
        raise RuntimeError("embedding_bag: offsets must be non-decreasing")
    padding_idx = _normalize_padding_idx(padding_idx, num)
    _check_range(idx, num)
    if max_norm is not None:
        with no_grad():
            _renorm_(weight, idx, max_norm, norm_type)
    if include_last_offset:
        num_bags = max(off_host.size - 1, 0)
        ends = off_host[1:]
    else:
        num_bags = off_host.size
        ends = np.append(off_host[1:], n)
    lengths = ends - off_host[:num_bags]
    seg = np.repeat(np.arange(num_bags, dtype=np.int64), lengths)
    used = int(lengths.sum())
    if used != n:  # with include_last_offset, indices past the last offset belong to no bag
        idx = idx[:used]
        if psw is not None:
            psw = psw[:used]
    if padding_idx is not None:
        keep = idx != padding_idx
        seg = seg[keep if keep.__class__ is np.ndarray else backend_of(keep).to_numpy(keep)]
        idx = idx[keep]
        if psw is not None:
            psw = psw[Tensor._make(keep, False)]
    if xp is not np:
        seg = xp.asarray(seg)
    rows = _apply(SparseBagRows if sparse else Embedding, (weight, idx, padding_idx, bool(scale_grad_by_freq)),
                  (w, idx, padding_idx, bool(scale_grad_by_freq)))
    if psw is not None:
        rows = rows * psw.unsqueeze(-1)
    if mode == "max":
        seg_host = seg if seg.__class__ is np.ndarray else backend_of(seg).to_numpy(seg)
        starts_k = np.searchsorted(seg_host, np.arange(num_bags))
        arg = _segment_argmax(rows._data, seg, starts_k, num_bags)
        return _apply(_PickMax, (rows, arg), (rows._data, arg))
    out = _apply(_SegmentSum, (rows, seg, num_bags), (rows._data, seg, num_bags))
    if mode == "mean":
        counts = xp.bincount(seg, minlength=num_bags) if seg.size else xp.zeros(num_bags, np.int64)
        out = out / Tensor._make(xp.maximum(counts, 1).astype(w.dtype)[:, None], False)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``(*,)`` int64 class indices to ``(*, num_classes)`` int64 one-hot rows.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.one_hot(fabric.tensor([0, 2]), 3)
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    x = tensor._data
    if x.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = xp_of(x)
    if num_classes == -1:
        if x.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.max()) + 1
    if x.size:
        if int(x.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(x.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = (x[..., None] == xp.arange(num_classes, dtype=np.int64)).astype(np.int64)
    return Tensor._make(out, False)
