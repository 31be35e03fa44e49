"""Loss functions (``torch.nn.functional``), with PyTorch's formulas,
reductions, legacy ``size_average``/``reduce`` arguments and errors.

The hot losses are single Functions: ``cross_entropy`` on class indices runs
the backend's fused log-softmax + NLL kernel (plain backward uses the fused
gradient; ``create_graph=True`` a differentiable Tensor formula), ``nll_loss``
gathers along the class dim and its gradient is a linear scatter whose own
gradient is the gather again, ``binary_cross_entropy`` follows PyTorch's
clamped-log formula and gradient, and ``ctc_loss`` runs the forward-backward
algorithm in log space, vectorised over the batch.  The rest are composed
from Tensor ops exactly as PyTorch composes them, so autograd (and double
backward) comes for free.

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> logits = fabric.tensor([[2.0, 0.0, -1.0], [0.0, 1e4, 0.0]])
    >>> F.cross_entropy(logits, fabric.tensor([0, 1]))
    tensor(0.0846)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import ops as _ops
from ..._tensor import Tensor
from ...autograd.function import Function, _apply, once_differentiable
from ...backends import backend_of
from ...ops._registry import declare_op
from ...ops._util import xp_of
from ._activation import _const, _grad_mode, _log_softmax, _mask_scale, _softmax, _type_name, logsigmoid, threshold
from ._activation import _where as _select
from ._distance import pairwise_distance

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "soft_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
    "ctc_loss",
]


# --------------------------------------------------------------------------
# reductions (PyTorch's torch.nn._reduction)
# --------------------------------------------------------------------------
def legacy_get_string(size_average, reduce, emit_warning=True) -> str:
    """Map the deprecated ``size_average`` / ``reduce`` pair to a reduction."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                      stacklevel=3)
    return ret


def get_reduction(reduction) -> str:
    """Validate ``reduction`` ('none' | 'mean' | 'sum'; 'elementwise_mean' warns)."""
    if reduction in ("none", "mean", "sum"):
        return reduction
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=3)
        return "mean"
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduction(size_average, reduce, reduction) -> str:
    if size_average is not None or reduce is not None:
        return legacy_get_string(size_average, reduce)
    return get_reduction(reduction)


def _apply_reduction(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean()


def _check_tensor(t, name, arg, pos):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(t).__name__}")


def _size_warning(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _broadcast_pair(input, target):
    shape = np.broadcast_shapes(input._data.shape, target._data.shape)
    if input._data.shape != shape:
        input = input.expand(shape)
    if target._data.shape != shape:
        target = target.expand(shape)
    return input, target


def _where(mask, a, b):
    """``where(mask, a, b)`` for a constant boolean array ``mask`` and
    Tensors (or numbers) ``a``, ``b``; the unused branch gets a zero gradient."""
    out = None
    for v, m in ((a, mask), (b, ~mask)):
        if isinstance(v, Tensor):
            term = _mask_scale(v, m) if v._data.shape == m.shape else _mask_scale(v.expand(m.shape), m)
        elif v != 0:
            term = _const(m.astype(_dtype_of(a, b)) * v)
        else:
            continue
        out = term if out is None else out + term
    if out is None:
        out = _const(xp_of(mask).zeros(mask.shape, _dtype_of(a, b)))
    return out


def _dtype_of(a, b):
    for v in (a, b):
        if isinstance(v, Tensor):
            return v._data.dtype
    return np.float32


def _clamp_min(t, lo):
    """``max(t, lo)`` for a number ``lo``; gradient passes where ``t > lo``
    (PyTorch's clamp_min passes it where ``t >= lo``; the difference is the
    measure-zero tie)."""
    keep = t._data >= lo
    out = _mask_scale(t, keep)
    return out + _const((~keep).astype(t._data.dtype) * t._data.dtype.type(lo))


def _relu(t):
    return threshold(t, 0.0, 0.0)


def _target_dtype_check(target):
    dt = target._data.dtype
    if dt != np.int64 and dt != np.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_type_name(dt)}")


# --------------------------------------------------------------------------
# negative log likelihood and cross entropy
# --------------------------------------------------------------------------
class _Targets:
    """Class-index targets prepared once: ``t`` with ignored entries set to
    class 0, the per-element weight ``wt`` (0 where ignored), the ``valid``
    mask, the input shape and, for 'mean', the summed weight ``total``."""

    __slots__ = ("t", "wt", "valid", "shape", "total")

    def __init__(self, t, wt, valid, shape, total=None):
        self.t, self.wt, self.valid, self.shape, self.total = t, wt, valid, shape, total


def _divide(s, total, dtype):
    with np.errstate(divide="ignore", invalid="ignore"):
        return (s / total).astype(dtype, copy=False)


class NllLoss(Function):
    """``-w[t] * x[n, t, ...]`` (0 where ignored), reduced; ``x`` is (N, C, *d)."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, tg, reduction):
        xp = xp_of(x)
        ctx.tg, ctx.reduction = tg, reduction
        picked = xp.take_along_axis(x, tg.t[:, None], axis=1)[:, 0]
        loss = _select(tg.valid, -(picked * tg.wt), x.dtype.type(0))
        if reduction == "none":
            return loss
        s = loss.sum(dtype=loss.dtype)
        return s if reduction == "sum" else _divide(s, tg.total, x.dtype)

    @staticmethod
    def backward(ctx, gy):
        tg = ctx.tg
        g = gy if ctx.reduction == "none" else gy.expand(tg.t.shape)
        if ctx.reduction == "mean":
            with np.errstate(divide="ignore"):  # all targets ignored: 0/0, as PyTorch
                g = g / _const(xp_of(tg.t).asarray(tg.total))
        return _apply(NllScatter, (g, tg), (g._data, tg)), None, None


class NllScatter(Function):
    """The gradient of :class:`NllLoss` ('none'): ``gx[n, t, ...] = -w[t] g[n, ...]``
    (0 where ignored). Linear in ``g``; its gradient is NllLoss('none') again."""

    _array_forward = True
    _node_name = "NllLossBackwardBackward0"

    @staticmethod
    def forward(ctx, g, tg):
        ctx.tg = tg
        xp = xp_of(g)
        c = tg.shape[1]
        classes = xp.arange(c).reshape((1, c) + (1,) * (len(tg.shape) - 2))
        with np.errstate(invalid="ignore"):
            vals = _select(tg.valid, -(g * tg.wt), g.dtype.type(0))
        return _select(tg.t[:, None] == classes, vals[:, None], g.dtype.type(0))

    @staticmethod
    def backward(ctx, ggx):
        return _apply(NllLoss, (ggx, ctx.tg, "none"), (ggx._data, ctx.tg, "none")), None


def _nll_prepare(input, target, weight, ignore_index, reduction):
    """Validate like PyTorch's nll_loss_nd; returns ``(input (N, C, *d), targets, out_shape)``."""
    x = input._data
    t = target._data
    if x.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {x.ndim})")
    if x.ndim != 1 and t.ndim and x.shape[0] != t.shape[0]:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({t.shape[0]}).")
    _target_dtype_check(target)
    if x.ndim <= 2:
        if t.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if x.ndim == 2 and (t.ndim == 0 or x.shape[0] != t.shape[0]):
            raise RuntimeError(f"size mismatch (got input: {list(x.shape)}, target: {list(t.shape)})")
    elif x.ndim == 4 and t.ndim != 3:
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                           f"{t.ndim}")
    elif t.shape[1:] != x.shape[2:]:
        if x.ndim == 4:
            raise RuntimeError(f"size mismatch (got input: {list(x.shape)} , target: {list(t.shape)}")
        raise RuntimeError(f"Expected target size {list((x.shape[0],) + x.shape[2:])}, got {list(t.shape)}")
    c = x.shape[-1] if x.ndim == 1 else x.shape[1]
    if weight is not None:
        w = weight._data
        if w.ndim != 1 or w.size != c:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                               f"weight tensor of shape: {list(w.shape)}")
        if w.dtype != x.dtype:
            raise RuntimeError(f"expected scalar type {_type_name(x.dtype)} but found {_type_name(w.dtype)}")
    out_shape = t.shape
    if x.ndim == 1:  # unbatched: one row
        input = input.reshape((1, c))
        x = input._data
        t = t.reshape(1) if t.ndim == 0 else t[:1]
        out_shape = target._data.shape if target._data.ndim == 0 else (1,)
    xp = xp_of(x)
    if t.dtype != np.int64:
        t = t.astype(np.int64)
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= c))
    if t.size and bool(bad.any()):
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")
    t_safe = xp.where(valid, t, 0)
    wt = weight._data[t_safe] * valid if weight is not None else valid.astype(x.dtype)
    total = wt.sum(dtype=x.dtype) if reduction == "mean" else None
    return input, _Targets(t_safe, wt, valid, x.shape, total), out_shape


@declare_op(method=False)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of log-probabilities ``input`` (N, C, *d) at
    class indices ``target`` (N, *d), with class ``weight`` and ``ignore_index``;
    'mean' divides by the summed weights of the non-ignored targets.

    >>> import fabric, fabric.nn.functional as F
    >>> F.nll_loss(fabric.tensor([[-1.0, -2.0], [-3.0, -4.0]]), fabric.tensor([1, 0]))
    tensor(2.5000)
    """
    _check_tensor(input, "nll_loss", "input", 1)
    _check_tensor(target, "nll_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    inp, tg, out_shape = _nll_prepare(input, target, weight, ignore_index, reduction)
    out = _apply(NllLoss, (inp, tg, reduction), (inp._data, tg, reduction))
    if reduction == "none" and out._data.shape != out_shape:
        out = out.reshape(out_shape)
    return out


class CrossEntropy(Function):
    """Fused log-softmax + NLL over rows of ``x`` (M, C) with class indices
    ``target`` (M,), class weights, ignore_index and label smoothing (the
    backend kernel), reduced."""

    _array_forward = True
    _node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, label_smoothing, reduction, tg):
        loss, (_, lse) = backend_of(x).cross_entropy(x, target, weight, ignore_index, label_smoothing)
        ctx.save_for_backward(x, lse)
        ctx.args = (target, weight, ignore_index, label_smoothing, reduction, tg)
        if reduction == "none":
            return loss
        s = loss.sum(dtype=loss.dtype)
        return s if reduction == "sum" else _divide(s, tg.total, x.dtype)

    @staticmethod
    def backward(ctx, gy):
        x, lse = ctx.saved_tensors
        target, weight, ignore_index, eps, reduction, tg = ctx.args
        xd = x._data
        n, c = xd.shape
        xp = xp_of(xd)
        g = gy if reduction == "none" else gy.expand((n,))
        if reduction == "mean":
            with np.errstate(divide="ignore"):
                g = g / _const(xp.asarray(tg.total))
        if not _grad_mode():
            gd = g._data.astype(xd.dtype, copy=False)
            gx = backend_of(xd).cross_entropy_backward((xd, lse._data), target, weight, ignore_index, eps, gd)
            return _const(gx), None, None, None, None, None, None
        # differentiable: g * (a * softmax(x) - B) with a constant per row and a constant B
        dt = xd.dtype
        valid, t, wt = tg.valid.reshape(-1), tg.t.reshape(-1), tg.wt.reshape(-1)
        w = weight if weight is not None else xp.ones(c, dt)
        a = (1.0 - eps) * wt + (eps * w.sum() / c) * valid
        b = xp.where(t[:, None] == xp.arange(c)[None, :], ((1.0 - eps) * wt)[:, None], dt.type(0))
        b = b + (eps / c) * w[None, :] * valid[:, None]
        p = _softmax(x, 1)
        gx = g.reshape((n, 1)) * (p * _const(a.astype(dt)[:, None]) - _const(b.astype(dt)))
        return gx, None, None, None, None, None, None


def _to_rows(input):
    """(N, C, *d) -> (N * prod(d), C) for the row-wise kernels."""
    x = input._data
    if x.ndim == 2:
        return input
    return input.permute((0,) + tuple(range(2, x.ndim)) + (1,)).reshape((-1, x.shape[1]))


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing):
    x = input._data
    if target._data.dtype.kind != "f":
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_type_name(target._data.dtype)}")
    class_dim = 0 if x.ndim == 1 else 1
    c = x.shape[class_dim]
    if weight is not None and (weight._data.ndim != 1 or weight._data.size != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight._data.shape)}")
    logp = _log_softmax(input, class_dim)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + (label_smoothing / c)
    prod = logp * target
    if weight is not None:
        prod = prod * weight.reshape((c,) + (1,) * (x.ndim - class_dim - 1))
    if reduction == "none":
        return -prod.sum(class_dim)
    s = -prod.sum()
    if reduction == "sum":
        return s
    if x.size == 0:
        return s * float("nan")
    return s / (x.size // c)


@declare_op(method=False)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits ``input`` (N, C, *d) or (C,) and class
    indices (N, *d) or class probabilities (same shape as ``input``), with
    class ``weight``, ``ignore_index`` and ``label_smoothing`` exactly as in
    PyTorch; computed from a stable log-softmax (no overflow at 1e4).

    >>> import fabric, fabric.nn.functional as F
    >>> F.cross_entropy(fabric.tensor([[0.0, 0.0]]), fabric.tensor([1]))
    tensor(0.6931)
    """
    _check_tensor(input, "cross_entropy", "input", 1)
    _check_tensor(target, "cross_entropy", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"log_softmax_lastdim_kernel_impl" not implemented for \'{_type_name(x.dtype)}\'')
    if target._data.shape == x.shape:
        if target._data.dtype.kind == "f" and ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 1.0 or label_smoothing < 0.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    inp, tg, out_shape = _nll_prepare(input, target, weight, ignore_index, reduction)
    rows = _to_rows(inp)
    xr = rows._data
    t = target._data.reshape(-1)
    if t.dtype != np.int64:
        t = t.astype(np.int64)
    if xr.shape[0] != t.shape[0]:  # 1-D input with a (1,) target
        t = t[:1]
    wd = weight._data if weight is not None else None
    eps = float(label_smoothing) if label_smoothing > 0 else 0.0
    out = _apply(CrossEntropy, (rows, None, weight, None, None, None, None),
                 (xr, t, wd, ignore_index, eps, reduction, tg))
    if reduction == "none":
        out = out.reshape(out_shape)
    return out


# --------------------------------------------------------------------------
# regression losses
# --------------------------------------------------------------------------
def _weighted(loss, weight, input, reduction):
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / weight.sum()


@declare_op(method=False)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target) ** 2``, reduced.

    >>> import fabric, fabric.nn.functional as F
    >>> F.mse_loss(fabric.tensor([1.0, 3.0]), fabric.tensor([0.0, 0.0]))
    tensor(5.)
    """
    _check_tensor(input, "mse_loss", "input", 1)
    _check_tensor(target, "mse_loss", "target", 2)
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    d = input - target
    if d._data.dtype.kind != "f":
        raise NotImplementedError(f'"mse_cpu" not implemented for \'{_type_name(d._data.dtype)}\'')
    loss = d * d
    if weight is not None:
        return _weighted(loss, weight, input, reduction)
    return _apply_reduction(loss, reduction)


@declare_op(method=False)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|``, reduced.

    >>> import fabric, fabric.nn.functional as F
    >>> F.l1_loss(fabric.tensor([1.0, -3.0]), fabric.tensor([0.0, 0.0]))
    tensor(2.)
    """
    _check_tensor(input, "l1_loss", "input", 1)
    _check_tensor(target, "l1_loss", "target", 2)
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    loss = _ops.abs(input - target)
    if weight is not None:
        return _weighted(loss, weight, input, reduction)
    return _apply_reduction(loss, reduction)


def _smooth(d, beta, scale):
    """``0.5 d^2 / beta`` where ``|d| < beta`` else ``scale * (|d| - 0.5 beta)``
    (smooth L1 with scale 1; Huber is ``beta * smooth_l1`` with scale = beta)."""
    ad = _ops.abs(d)
    quad = ad._data < beta
    if scale == 1.0:
        return _where(quad, d * d * (0.5 / beta), ad - 0.5 * beta)
    return _where(quad, d * d * 0.5, (ad - 0.5 * beta) * scale)


@declare_op(method=False)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` for ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``).

    >>> import fabric, fabric.nn.functional as F
    >>> F.smooth_l1_loss(fabric.tensor([0.5, 3.0]), fabric.tensor([0.0, 0.0]), reduction="none")
    tensor([0.1250, 2.5000])
    """
    _check_tensor(input, "smooth_l1_loss", "input", 1)
    _check_tensor(target, "smooth_l1_loss", "target", 2)
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return _apply_reduction(_ops.abs(input - target), reduction)
    return _apply_reduction(_smooth(input - target, beta, 1.0), reduction)


@declare_op(method=False)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` for ``|d| < delta``, else ``delta * (|d| - 0.5 delta)``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.huber_loss(fabric.tensor([0.5, 3.0]), fabric.tensor([0.0, 0.0]), reduction="none", delta=2.0)
    tensor([0.1250, 4.0000])
    """
    _check_tensor(input, "huber_loss", "input", 1)
    _check_tensor(target, "huber_loss", "target", 2)
    _size_warning(input, target)
    reduction = get_reduction(reduction)
    input, target = _broadcast_pair(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    loss = _smooth(input - target, delta, float(delta))
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        return _apply_reduction(loss * weight, reduction)
    return _apply_reduction(loss, reduction)


# --------------------------------------------------------------------------
# binary cross entropy
# --------------------------------------------------------------------------
_BCE_EPS = 1e-12


class BinaryCrossEntropy(Function):
    """``-w (t log x + (1 - t) log(1 - x))`` with the logs clamped at -100;
    gradients ``w (x - t) / max(x (1 - x), 1e-12)`` and ``-w logit(x)``
    (PyTorch's)."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, t, w):
        xp = xp_of(x)
        ctx.save_for_backward(x, t, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_x = xp.maximum(xp.log(x), x.dtype.type(-100))
            log_1mx = xp.maximum(xp.log1p(-x), x.dtype.type(-100))
        loss = (t - 1) * log_1mx - t * log_x
        if w is not None:
            loss = loss * w
        return loss

    @staticmethod
    def backward(ctx, gy):
        x, t, w = ctx.saved_tensors
        need_x, need_t, _ = ctx.needs_input_grad
        gx = gt = None
        if need_x:
            gx = gy * (x - t) / _clamp_min((1.0 - x) * x, _BCE_EPS)
            if w is not None:
                gx = gx * w
        if need_t:  # -logit(x), not clamped (as PyTorch)
            if _grad_mode():
                d = _ops.log1p(-x) - _ops.log(x)
            else:
                xd = x._data
                xp = xp_of(xd)
                with np.errstate(divide="ignore", invalid="ignore"):
                    d = _const(xp.log1p(-xd) - xp.log(xd))
            gt = gy * d if w is None else gy * d * w
        return gx, gt, None


@declare_op(method=False)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy between probabilities ``input`` and ``target``
    (logs clamped at -100 as in PyTorch, so ``input`` 0 or 1 gives 100).

    >>> import fabric, fabric.nn.functional as F
    >>> F.binary_cross_entropy(fabric.tensor([0.5, 1.0]), fabric.tensor([1.0, 0.0]), reduction="none")
    tensor([  0.6931, 100.0000])
    """
    _check_tensor(input, "binary_cross_entropy", "input", 1)
    _check_tensor(target, "binary_cross_entropy", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    x, t = input._data, target._data
    if t.dtype != x.dtype:
        raise RuntimeError(f"Found dtype {_type_name(t.dtype)} but expected {_type_name(x.dtype)}")
    if x.size:
        if not bool(((x >= 0) & (x <= 1)).all()):
            raise RuntimeError("all elements of input should be between 0 and 1")
        if not bool(((t >= 0) & (t <= 1)).all()):
            raise RuntimeError("all elements of target should be between 0 and 1")
    w = None
    if weight is not None:
        shape = np.broadcast_shapes(t.shape, weight._data.shape)
        if shape != x.shape:
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape {list(shape)}")
        weight = weight.expand(shape) if weight._data.shape != shape else weight
        w = weight._data
    loss = _apply(BinaryCrossEntropy, (input, target, weight), (x, t, w))
    return _apply_reduction(loss, reduction)


@declare_op(method=False)
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """``BCE(sigmoid(input), target)`` computed stably from logits:
    ``(1 - t) x - lw * logsigmoid(x)`` with ``lw = 1 + (pos_weight - 1) t``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.binary_cross_entropy_with_logits(fabric.tensor([1e4, -1e4]), fabric.tensor([1.0, 0.0]))
    tensor(0.)
    """
    _check_tensor(input, "binary_cross_entropy_with_logits", "input", 1)
    _check_tensor(target, "binary_cross_entropy_with_logits", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    ls = logsigmoid(input)
    if pos_weight is not None:
        ls = ls * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - ls
    if weight is not None:
        loss = loss * weight
    return _apply_reduction(loss, reduction)


# --------------------------------------------------------------------------
# divergences and likelihoods
# --------------------------------------------------------------------------
@declare_op(method=False)
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence ``target * (log(target) - input)`` (``input``
    holds log-probabilities); ``reduction='batchmean'`` divides the sum by
    the batch size, which is the mathematical KL divergence.

    >>> import fabric, fabric.nn.functional as F
    >>> F.kl_div(fabric.tensor([[-1.0, -1.0]]), fabric.tensor([[0.5, 0.5]]), reduction="batchmean")
    tensor(0.3069)
    """
    _check_tensor(input, "kl_div", "input", 1)
    _check_tensor(target, "kl_div", "target", 2)
    if size_average is not None or reduce is not None:
        red = legacy_get_string(size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        red = "sum" if reduction == "batchmean" else get_reduction(reduction)
    if input._data.dtype.kind != "f" or target._data.dtype.kind != "f":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:
        loss = _ops.xlogy(target, target) - target * input
    out = _apply_reduction(loss, red)
    if reduction == "batchmean" and input.dim() != 0 and size_average is None and reduce is None:
        out = out / input.shape[0]
    return out


@declare_op(method=False)
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log likelihood: ``exp(input) - target * input``
    (``log_input``) or ``input - target * log(input + eps)``, plus the
    Stirling term for ``target > 1`` when ``full``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.poisson_nll_loss(fabric.tensor([0.0]), fabric.tensor([2.0]))
    tensor(1.)
    """
    _check_tensor(input, "poisson_nll_loss", "input", 1)
    _check_tensor(target, "poisson_nll_loss", "target", 2)
    if size_average is not None or reduce is not None:
        reduction = legacy_get_string(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = _ops.exp(input) - target * input
    else:
        loss = input - target * _ops.log(input + eps)
    if full:
        big = target._data > 1
        ts = _mask_scale(target, big) + _const((~big).astype(target._data.dtype))  # 1 where masked: finite
        stirling = ts * _ops.log(ts) - ts + 0.5 * _ops.log(2 * math.pi * ts)
        loss = loss + _mask_scale(stirling, big)
    return _apply_reduction(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood ``0.5 (log(var) + (input - target)^2 / var)``
    with ``var`` clamped below at ``eps`` (the clamp does not stop the gradient,
    as in PyTorch).

    >>> import fabric, fabric.nn.functional as F
    >>> F.gaussian_nll_loss(fabric.tensor([1.0]), fabric.tensor([0.0]), fabric.tensor([1.0]))
    tensor(0.5000)
    """
    _check_tensor(input, "gaussian_nll_loss", "input", 1)
    _check_tensor(target, "gaussian_nll_loss", "target", 2)
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _const(xp_of(input._data).full(input._data.shape, var, input._data.dtype))
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    vd = var._data
    var = var + _const(xp_of(vd).maximum(vd, vd.dtype.type(eps)) - vd)
    loss = 0.5 * (_ops.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


# --------------------------------------------------------------------------
# margin and embedding losses
# --------------------------------------------------------------------------
@declare_op(method=False)
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for -1.

    >>> import fabric, fabric.nn.functional as F
    >>> F.cosine_embedding_loss(fabric.tensor([[1.0, 0.0]]), fabric.tensor([[0.0, 1.0]]), fabric.tensor([1]))
    tensor(1.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1:
        if input1.dim() != 2 or input2.dim() != 2:
            raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                               f"{list(input1.shape)} and {list(input2.shape)}.")
    elif input1.dim() != 1 or input2.dim() != 1:
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(td)
    mag1 = (input1 * input1).sum(td) + eps
    mag2 = (input2 * input2).sum(td) + eps
    cos = prod_sum / (mag1 * mag2) ** 0.5
    t = target._data
    pos = 1 - cos
    neg = _relu(cos - margin)
    out = _where(t == 1, pos, 0) + _where(t == -1, neg, 0)
    return _apply_reduction(out, reduction)


@declare_op(method=False)
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.margin_ranking_loss(fabric.tensor([1.0]), fabric.tensor([2.0]), fabric.tensor([1.0]))
    tensor(1.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _apply_reduction(_relu(-target * (input1 - input2) + margin), reduction)


@declare_op(method=False)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1.

    >>> import fabric, fabric.nn.functional as F
    >>> F.hinge_embedding_loss(fabric.tensor([0.3, 2.0]), fabric.tensor([-1, 1]), reduction="none")
    tensor([0.7000, 2.0000])
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    t = target._data
    out = _where(t != 1, _relu(margin - input), 0) + _where(t != -1, input, 0)
    return _apply_reduction(out, reduction)


@declare_op(method=False)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``, computed stably.

    >>> import fabric, fabric.nn.functional as F
    >>> F.soft_margin_loss(fabric.tensor([0.0]), fabric.tensor([1.0]))
    tensor(0.6931)
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _apply_reduction(-logsigmoid(input * target), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-sample mean over classes of the binary logistic loss.

    >>> import fabric, fabric.nn.functional as F
    >>> F.multilabel_soft_margin_loss(fabric.tensor([[0.0, 0.0]]), fabric.tensor([[1.0, 0.0]]))
    tensor(0.6931)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_get_string(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    c = input.size(class_dim)
    loss = loss.sum(class_dim) / c
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


def _onehot_rows(xp, t, c):
    return t[:, None] == xp.arange(c)[None, :]


@declare_op(method=False)
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss: ``sum_{j != y} max(0, margin - x[y] + x[j])^p / C``,
    scaled by ``weight[y]``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.multi_margin_loss(fabric.tensor([[0.1, 0.2, 0.4, 0.8]]), fabric.tensor([3]))
    tensor(0.3250)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = input._data
    t = target._data
    ndim = x.ndim
    if not ((ndim == 2 and x.shape[1] != 0) or (ndim == 1 and x.shape[0] != 0) or ndim == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(x.shape)}")
    nframe = x.shape[0] if ndim == 2 else 1
    dim = x.shape[-1] if ndim else 1
    if t.ndim > 1 or t.size != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got {list(t.shape)}. "
                           f"Input has shape {list(x.shape)}.")
    if weight is not None and weight._data.size != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight._data.shape)}")
    tt = t.reshape(-1).astype(np.int64, copy=False)
    if tt.size and bool(((tt < 0) | (tt >= dim)).any()):
        raise RuntimeError("target out of range")
    xs = input.reshape((nframe, dim))
    xp = xp_of(x)
    onehot = _onehot_rows(xp, tt, dim)
    x_y = (xs * _const(onehot.astype(x.dtype))).sum(1, keepdim=True)
    z = _relu(xs - x_y + margin)
    h = z if p == 1 else z * z
    h = h * _const((~onehot).astype(x.dtype))
    if weight is not None:
        h = h * _const(weight._data[tt][:, None])
    loss = h.sum(1) / dim
    if reduction == "none":
        return loss if t.ndim > 0 else loss.reshape(())
    return _apply_reduction(loss, reduction)


@declare_op(method=False)
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss over (target class, non-target class) pairs;
    ``target`` lists class indices, ended by the first -1.

    >>> import fabric, fabric.nn.functional as F
    >>> F.multilabel_margin_loss(fabric.tensor([[0.1, 0.2, 0.4, 0.8]]), fabric.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """
    reduction = _reduction(size_average, reduce, reduction)
    x = input._data
    t = target._data
    ndim = x.ndim
    if not ((ndim == 2 and x.shape[1] != 0) or (ndim == 1 and x.shape[0] != 0) or ndim == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(x.shape)}")
    if t.shape != x.shape:
        raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: {list(x.shape)}")
    nframe = x.shape[0] if ndim == 2 else 1
    dim = x.shape[-1] if ndim else 1
    xp = xp_of(x)
    tt = t.reshape(nframe, dim).astype(np.int64, copy=False)
    if tt.size and bool(((tt < -1) | (tt >= dim)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    valid = xp.cumprod(tt >= 0, axis=1).astype(bool)     # entries before the first -1
    rows = xp.arange(nframe)[:, None] * dim
    idx = (rows + xp.where(valid, tt, 0))[valid]
    count = xp.bincount(idx.reshape(-1), minlength=nframe * dim).reshape(nframe, dim).astype(x.dtype)
    is_target = count > 0
    xs = input.reshape((nframe, dim))
    # pairs (target class j, non-target class k): max(0, 1 - x[j] + x[k]), j counted with multiplicity
    z = _relu(xs.unsqueeze(1) - xs.unsqueeze(2) + 1.0)
    pair_w = count[:, :, None] * (~is_target)[:, None, :]
    loss = (z * _const(pair_w.astype(x.dtype))).sum((1, 2)) / dim
    if reduction == "none":
        return loss if ndim == 2 else loss.reshape(())
    return _apply_reduction(loss, reduction)


@declare_op(method=False)
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the pairwise p-norm distance.

    >>> import fabric, fabric.nn.functional as F
    >>> a = fabric.tensor([[0.0, 0.0]])
    >>> F.triplet_margin_loss(a, fabric.tensor([[1.0, 0.0]]), fabric.tensor([[3.0, 0.0]]))
    tensor(0.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = pairwise_distance(positive, negative, p, eps)
        d_neg = _where(d_swap._data < d_neg._data, d_swap, d_neg)
    return _apply_reduction(_relu(margin + d_pos - d_neg), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """Triplet loss with a custom ``distance_function`` (default: pairwise distance).

    >>> import fabric, fabric.nn.functional as F
    >>> a = fabric.tensor([[0.0, 0.0]])
    >>> F.triplet_margin_with_distance_loss(a, fabric.tensor([[1.0, 0.0]]), fabric.tensor([[1.5, 0.0]]))
    tensor(0.5000)
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    if distance_function is None:
        distance_function = pairwise_distance
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_swap = distance_function(positive, negative)
        d_neg = _where(d_swap._data < d_neg._data, d_swap, d_neg)
    loss = _relu(margin + d_pos - d_neg)
    return _apply_reduction(loss, reduction)


# --------------------------------------------------------------------------
# CTC
# --------------------------------------------------------------------------
def _lse3(xp, a, b, c):
    """Elementwise log(exp(a) + exp(b) + exp(c)) with -inf handled."""
    m = xp.maximum(xp.maximum(a, b), c)
    finite = m > -np.inf
    ms = xp.where(finite, m, 0)
    s = xp.exp(a - ms) + xp.exp(b - ms) + xp.exp(c - ms)
    with np.errstate(divide="ignore"):
        return xp.where(finite, xp.log(s) + ms, -np.inf)


def _ctc_alpha_beta(lp, labels, in_len, tgt_len, blank):
    """Log-space forward (alpha) and backward (beta) variables.

    ``lp`` (T, N, C) log-probabilities; ``labels`` (N, S) padded targets;
    returns ``alpha, beta`` of shape (T, N, L) with ``L = 2 S + 1`` (both
    include the emission at ``t``, as in PyTorch) and ``nll`` (N,).
    """
    xp = xp_of(lp)
    T, N, _ = lp.shape
    S = labels.shape[1]
    L = 2 * S + 1
    ext = xp.full((N, L), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    s_idx = xp.arange(L)
    # a label may be reached by skipping the blank before it when it differs from the label two back
    skip = xp.zeros((N, L), bool)
    if L > 2:
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid_s = s_idx[None, :] < (2 * tgt_len[:, None] + 1)
    neg_inf = lp.dtype.type(-np.inf)
    emit = xp.take_along_axis(lp, xp.broadcast_to(ext[None], (T, N, L)), axis=2)   # (T, N, L)
    emit = xp.where(valid_s[None], emit, neg_inf)

    alpha = xp.full((T, N, L), neg_inf, lp.dtype)
    alpha[0, :, 0] = emit[0, :, 0]
    if L > 1:
        alpha[0, :, 1] = xp.where(tgt_len > 0, emit[0, :, 1], neg_inf)
    pad1 = xp.full((N, 1), neg_inf, lp.dtype)
    pad2 = xp.full((N, 2), neg_inf, lp.dtype)
    for t in range(1, T):
        prev = alpha[t - 1]
        a1 = xp.concatenate([pad1, prev[:, :-1]], axis=1)
        a2 = xp.where(skip, xp.concatenate([pad2, prev[:, :-2]], axis=1), neg_inf)
        alpha[t] = _lse3(xp, prev, a1, a2) + emit[t]

    beta = xp.full((T, N, L), neg_inf, lp.dtype)
    last = in_len - 1                                          # (N,)
    end = 2 * tgt_len                                          # index of the final blank
    skip_next = xp.zeros((N, L), bool)                         # s -> s+2 allowed when s+2 may skip
    if L > 2:
        skip_next[:, :-2] = skip[:, 2:]
    n_ar = xp.arange(N)
    for t in range(T - 1, -1, -1):
        init = t == last                                        # (N,)
        if t < T - 1:
            nxt = beta[t + 1]
            b1 = xp.concatenate([nxt[:, 1:], pad1], axis=1)
            b2 = xp.where(skip_next, xp.concatenate([nxt[:, 2:], pad2], axis=1), neg_inf)
            rec = _lse3(xp, nxt, b1, b2) + emit[t]
            beta[t] = xp.where((t < last)[:, None], rec, neg_inf)
        if bool(init.any()):
            rows = n_ar[init]
            b = xp.full((rows.shape[0], L), neg_inf, lp.dtype)
            e = end[rows]
            b[xp.arange(rows.shape[0]), e] = emit[t, rows, e]
            has = tgt_len[rows] > 0
            em1 = xp.maximum(e - 1, 0)
            b[xp.arange(rows.shape[0]), em1] = xp.where(has, emit[t, rows, em1], b[xp.arange(rows.shape[0]), em1])
            beta[t, rows] = b

    a_last = alpha[last, n_ar]                                  # (N, L)
    e = end
    l1 = a_last[n_ar, e]
    l2 = xp.where(tgt_len > 0, a_last[n_ar, xp.maximum(e - 1, 0)], neg_inf)
    ll = _lse3(xp, l1, l2, xp.full_like(l1, neg_inf))
    return alpha, beta, -ll, ext


class CtcLoss(Function):
    """Per-sequence CTC negative log likelihood (N,); the gradient is
    PyTorch's ``exp(lp) - exp(log(alpha beta) + nll - lp)`` (which assumes
    ``log_probs`` come from a log_softmax), zero past each input length."""

    _array_forward = True
    _node_name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx, lp, labels, in_len, tgt_len, blank, zero_infinity):
        xp = xp_of(lp)
        work = lp.astype(np.float32) if lp.dtype == np.float16 else lp
        alpha, beta, nll, ext = _ctc_alpha_beta(work, labels, in_len, tgt_len, blank)
        ctx.save_for_backward(lp)
        ctx.state = (alpha, beta, nll, ext, in_len, zero_infinity)
        if zero_infinity:
            nll = xp.where(nll == np.inf, nll.dtype.type(0), nll)
        return nll.astype(lp.dtype, copy=False)

    @staticmethod
    @once_differentiable
    def backward(ctx, gy):
        lp, = ctx.saved_tensors
        alpha, beta, nll, ext, in_len, zero_infinity = ctx.state
        lpd = lp._data
        xp = xp_of(lpd)
        work = lpd.astype(np.float32) if lpd.dtype == np.float16 else lpd
        T, N, C = work.shape
        ab = alpha + beta                                          # (T, N, L)
        m = ab.max(axis=2, keepdims=True)
        m = xp.where(m > -np.inf, m, 0)
        vals = xp.exp(ab - m)
        flat_idx = (xp.arange(T * N).reshape(T, N, 1) * C + ext[None]).reshape(-1)
        acc = xp.zeros(T * N * C, work.dtype)
        backend_of(work).scatter_add(acc, flat_idx, vals.reshape(-1))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lcab = xp.log(acc.reshape(T, N, C)) + m                 # log sum over states of each class
            grad = xp.exp(work) - xp.exp(lcab + nll[None, :, None] - work)
        live = xp.arange(T)[:, None] < in_len[None, :]             # (T, N)
        grad = xp.where(live[:, :, None], grad, 0)
        if zero_infinity:
            grad = xp.where((nll == np.inf)[None, :, None], 0, grad)
        g = gy._data.astype(work.dtype, copy=False)
        grad = grad * g[None, :, None]
        return _const(grad.astype(lpd.dtype, copy=False)), None, None, None, None, None


def _lengths(v, n, name):
    """Per-sample lengths (a tensor, a list/tuple or an int) as a host int64 array."""
    if isinstance(v, Tensor):
        a = v._data
        a = backend_of(a).to_numpy(a) if a.__class__ is not np.ndarray else a
        a = np.asarray(a, dtype=np.int64).reshape(-1)
    else:
        a = np.asarray(list(v) if not isinstance(v, int) else [v], dtype=np.int64).reshape(-1)
    if a.shape[0] != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return a


_CTC_CHECK = "(while checking arguments for ctc_loss_allocate_outputs)"


@declare_op(method=False)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist Temporal Classification loss of ``log_probs`` (T, N, C)
    (or (T, C) unbatched) against ``targets`` (N, S) padded or 1-D
    concatenated, with per-sample input and target lengths.  'mean' divides
    each loss by its target length and averages over the batch.

    >>> import fabric, fabric.nn.functional as F
    >>> lp = fabric.zeros(2, 1, 2).log_softmax(2)
    >>> F.ctc_loss(lp, fabric.tensor([[1]]), [2], [1], reduction="sum")
    tensor(0.2877)
    """
    _check_tensor(log_probs, "ctc_loss", "log_probs", 1)
    _check_tensor(targets, "ctc_loss", "targets", 2)
    reduction = get_reduction(reduction)
    lp_t = log_probs
    unbatched = lp_t.dim() == 2
    if unbatched:
        lp_t = lp_t.unsqueeze(1)
        if targets.dim() == 1:
            targets = targets.unsqueeze(0)
    if lp_t.dim() != 3:
        raise RuntimeError(f"ctc_loss expects log_probs to be 2-D or 3-D, got {log_probs.dim()}-D")
    lp = lp_t._data
    if lp.dtype.kind != "f":
        raise RuntimeError(f'"ctc_loss_cpu" not implemented for \'{_type_name(lp.dtype)}\'')
    T, N, C = lp.shape
    xp = xp_of(lp)
    if not (0 <= blank < C):
        raise RuntimeError("blank must be in label range")
    in_len = _lengths(input_lengths, N, "input_lengths")
    tgt_len = _lengths(target_lengths, N, "target_lengths")
    tg = targets._data
    tg = backend_of(tg).to_numpy(tg) if tg.__class__ is not np.ndarray else tg
    tg = np.asarray(tg).astype(np.int64)
    for name, lens in (("target_lengths", tgt_len), ("input_lengths", in_len)):
        if (lens < 0).any():
            raise RuntimeError(f"Expected {name} to have value at least 0, but got value {int(lens[lens < 0][0])} "
                               f"{_CTC_CHECK}")
    S = int(tgt_len.max()) if N else 0
    labels = np.zeros((N, S), np.int64)
    if tg.ndim == 1:
        if tg.shape[0] != int(tgt_len.sum()):
            raise RuntimeError(f"Expected tensor to have size {int(tgt_len.sum())} at dimension 0, but got size "
                               f"{tg.shape[0]} for argument #2 'targets' {_CTC_CHECK}")
        starts = np.concatenate([[0], np.cumsum(tgt_len)[:-1]])
        pos = np.arange(S)[None, :]
        take = pos < tgt_len[:, None]
        labels[take] = tg[(starts[:, None] + pos)[take]]
    elif tg.ndim == 2:
        if tg.shape[0] != N:
            raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got size {tg.shape[0]} for "
                               f"argument #2 'targets' {_CTC_CHECK}")
        if tg.shape[1] < S:
            raise RuntimeError(f"Expected tensor to have size at least {S} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' {_CTC_CHECK}")
        labels = tg[:, :S].copy()
        labels[np.arange(S)[None, :] >= tgt_len[:, None]] = blank
    else:
        raise RuntimeError(f"Expected 1-D or 2-D targets, got {tg.ndim}-D")
    if (in_len > T).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{int(in_len[in_len > T][0])} {_CTC_CHECK}")
    used = np.arange(S)[None, :] < tgt_len[:, None]
    if used.any() and (((labels < 0) | (labels >= C)) & used).any():
        raise RuntimeError("ctc_loss: target index out of range [0, num_classes)")
    if xp is not np:
        labels, in_len_d, tgt_len_d = xp.asarray(labels), xp.asarray(in_len), xp.asarray(tgt_len)
    else:
        in_len_d, tgt_len_d = in_len, tgt_len
    nll = _apply(CtcLoss, (lp_t, None, None, None, blank, zero_infinity),
                 (lp, labels, in_len_d, tgt_len_d, blank, zero_infinity))
    if reduction == "mean":
        div = xp.maximum(xp.asarray(tgt_len_d), 1).astype(lp.dtype)
        out = (nll / _const(div)).mean()
    elif reduction == "sum":
        out = nll.sum()
    else:
        out = nll
    if unbatched and reduction == "none":
        out = out.reshape(())
    return out
