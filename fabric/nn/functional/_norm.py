"""Normalisation functions: ``batch_norm``, ``layer_norm``, ``group_norm``,
``instance_norm``, ``rms_norm``, ``local_response_norm``, ``normalize``.

``layer_norm`` and ``rms_norm`` run the backend's fused forward/backward
(``backend.layer_norm`` ...).  Each backward has two paths: under plain
``backward()`` the fused array kernel, under ``create_graph=True`` the same
formula written with differentiable Tensor ops (tests check they agree).

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> F.layer_norm(fabric.tensor([[1.0, 3.0]]), (2,))
    tensor([[-1.0000,  1.0000]])
"""
from __future__ import annotations

import builtins

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function, _apply, _apply1
from ...autograd.grad_mode import no_grad
from ...autograd.grad_mode import state as _grad_state
from ...backends import backend_of
from ...backends.fused import acc_dtype
from ...ops._registry import declare_op
from ...ops._util import reject_complex, xp_of
from ...ops.reduce import VectorNorm

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
           "normalize"]


def _const(arr):
    return Tensor._make(arr, False)


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _up(a):
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _shape_list(s):
    return "[" + ", ".join(str(v) for v in s) + "]"


def _normalized_shape(normalized_shape, fn):
    if isinstance(normalized_shape, (builtins.int, np.integer)) and not isinstance(normalized_shape, bool):
        raise TypeError(f"{fn}(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    return tuple(builtins.int(s) for s in normalized_shape)  # pyright: ignore[reportGeneralTypeIssues] (bool: as torch)


def _check_last_dims(input, shape, weight, bias, fn):
    x = input._data
    n = len(shape)
    if n == 0 or x.ndim < n or tuple(x.shape[x.ndim - n:]) != shape:
        star = "[*, " if fn == "layer_norm" else "[*"
        raise RuntimeError(f"Given normalized_shape={_shape_list(shape)}, expected input with shape "
                           f"{star}{', '.join(str(s) for s in shape)}], but got input of size{_shape_list(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._data.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{_shape_list(t._data.shape)} and normalized_shape = {_shape_list(shape)}")


# --- layer norm ---------------------------------------------------------------
class LayerNorm(Function):
    """Normalise over the last ``n`` dims (fused backend forward/backward)."""

    _array_forward = True
    _node_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, n, eps):
        cols = _prod(x.shape[x.ndim - n:])
        x2 = x.reshape(-1, cols)
        y, mean, rstd = backend_of(x).layer_norm(x2, None if w is None else w.reshape(-1),
                                                 None if b is None else b.reshape(-1), eps)
        ctx.mean, ctx.rstd, ctx.n, ctx.eps = mean, rstd, n, eps
        ctx.save_for_backward(x, w)
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if _grad_state.enabled:
            return _layer_norm_backward_graph(gy, x, w, ctx.n, ctx.eps, need_w, need_b) + (None, None)
        xd = x._data
        cols = _prod(xd.shape[xd.ndim - ctx.n:])
        wd = None if w is None else w._data.reshape(-1)
        gx, gw, gb = backend_of(xd).layer_norm_backward(gy._data.reshape(-1, cols), xd.reshape(-1, cols), wd,
                                                        ctx.mean, ctx.rstd, need_b)
        return (_const(gx.reshape(xd.shape)) if need_x else None,
                _const(gw.reshape(w._data.shape)) if need_w else None,
                _const(gb.reshape(xd.shape[xd.ndim - ctx.n:])) if need_b else None, None, None)


def _layer_norm_backward_graph(gy, x, w, n, eps, need_w, need_b):
    """The layer-norm gradients as differentiable Tensor ops (for create_graph)."""
    dims = tuple(range(x.ndim - n, x.ndim))
    lead = tuple(range(x.ndim - n))
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps) ** -0.5
    xhat = xc * rstd
    g = gy * w if w is not None else gy
    gx = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
    gw = gb = None
    if need_w:
        gw = (gy * xhat).sum(lead) if lead else gy * xhat
    if need_b:
        gb = gy.sum(lead) if lead else gy
    return gx, gw, gb


@declare_op(method=False)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing ``normalized_shape`` dims to zero mean
    and unit (biased) variance, then apply ``weight`` and ``bias``.

    Example::

        >>> import fabric
        >>> y = fabric.nn.functional.layer_norm(fabric.randn(2, 5), (5,))
        >>> bool(y.mean(-1).abs().sum() < 1e-5)
        True
    """
    shape = _normalized_shape(normalized_shape, "layer_norm")
    reject_complex(input, NotImplementedError, "\"LayerNormKernelImpl\" not implemented for '{dtype}'")
    _check_last_dims(input, shape, weight, bias, "layer_norm")
    w = None if weight is None else weight._data
    b = None if bias is None else bias._data
    return _apply(LayerNorm, (input, weight, bias, len(shape), eps), (input._data, w, b, len(shape), eps))


# --- RMS norm -------------------------------------------------------------------
class RMSNorm(Function):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last ``n`` dims (fused)."""

    _array_forward = True
    _node_name = "RmsNormBackward0"

    @staticmethod
    def forward(ctx, x, w, n, eps):
        cols = _prod(x.shape[x.ndim - n:])
        y, rstd = backend_of(x).rms_norm(x.reshape(-1, cols), None if w is None else w.reshape(-1), eps)
        ctx.rstd, ctx.n, ctx.eps = rstd, n, eps
        ctx.save_for_backward(x, w)
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        need_x, need_w = ctx.needs_input_grad[:2]
        if _grad_state.enabled:
            dims = tuple(range(x.ndim - ctx.n, x.ndim))
            lead = tuple(range(x.ndim - ctx.n))
            rstd = ((x * x).mean(dims, keepdim=True) + ctx.eps) ** -0.5
            g = gy * w if w is not None else gy
            gx = rstd * (g - x * (rstd * rstd) * (g * x).mean(dims, keepdim=True))
            gw = None
            if need_w:
                gw = (gy * x * rstd).sum(lead) if lead else gy * x * rstd
            return gx, gw, None, None
        xd = x._data
        cols = _prod(xd.shape[xd.ndim - ctx.n:])
        wd = None if w is None else w._data.reshape(-1)
        gx, gw = backend_of(xd).rms_norm_backward(gy._data.reshape(-1, cols), xd.reshape(-1, cols), wd, ctx.rstd)
        return (_const(gx.reshape(xd.shape)) if need_x else None,
                _const(gw.reshape(w._data.shape)) if need_w else None, None, None)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalisation over the trailing ``normalized_shape``
    dims; ``eps`` defaults to the machine epsilon of the computation dtype.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.rms_norm(fabric.tensor([[3.0, 4.0]]), (2,), eps=0.0)
        tensor([[0.8485, 1.1314]])
    """
    shape = _normalized_shape(normalized_shape, "rms_norm")
    _check_last_dims(input, shape, weight, None, "rms_norm")
    x = input._data
    if eps is None:
        eps = float(np.finfo(acc_dtype(x.dtype) if x.dtype.kind == "f" else np.float32).eps)
    w = None if weight is None else weight._data
    return _apply(RMSNorm, (input, weight, len(shape), eps), (x, w, len(shape), eps))


# --- batch norm -------------------------------------------------------------------
class BatchNorm(Function):
    """Batch normalisation over all dims but 1; in training it updates the
    running statistics in place (biased variance normalises, unbiased
    variance goes into ``running_var``)."""

    _array_forward = True
    _node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, w, b, rm, rv, training, momentum, eps):
        xp = xp_of(x)
        c = x.shape[1]
        axes = (0,) + tuple(range(2, x.ndim))
        bshape = (1, c) + (1,) * (x.ndim - 2)
        xa = _up(x)
        if training:
            mean = xa.mean(axis=axes)
            xc = xa - mean.reshape(bshape)
            var = (xc * xc).mean(axis=axes)
            rstd = 1.0 / xp.sqrt(var + eps)
            count = x.size // c
            if rm is not None:
                rm[...] = (momentum * mean.astype(np.float64) + (1.0 - momentum) * rm.astype(np.float64)
                           ).astype(rm.dtype)
            if rv is not None:
                unbiased = var.astype(np.float64) * (count / max(count - 1, 1))
                rv[...] = (momentum * unbiased + (1.0 - momentum) * rv.astype(np.float64)).astype(rv.dtype)
        else:
            mean = rm.astype(xa.dtype)
            rstd = (1.0 / xp.sqrt(rv.astype(np.float64) + eps)).astype(xa.dtype)
            xc = xa - mean.reshape(bshape)
        y = xc * rstd.reshape(bshape)
        if w is not None:
            y *= _up(w).reshape(bshape)
        if b is not None:
            y += _up(b).reshape(bshape)
        ctx.mean, ctx.rstd, ctx.training, ctx.eps = mean, rstd, training, eps
        ctx.save_for_backward(x, w)
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        c = x._data.shape[1]
        axes = (0,) + tuple(range(2, x._data.ndim))
        bshape = (1, c) + (1,) * (x._data.ndim - 2)
        if _grad_state.enabled:
            if ctx.training:
                mu = x.mean(axes, keepdim=True)
                xc = x - mu
                rstd = ((xc * xc).mean(axes, keepdim=True) + ctx.eps) ** -0.5
            else:
                rstd = _const(ctx.rstd.reshape(bshape).astype(x._data.dtype))
                xc = x - _const(ctx.mean.reshape(bshape).astype(x._data.dtype))
            xhat = xc * rstd
            g = gy * w.reshape(bshape) if w is not None else gy
            if ctx.training:
                gx = rstd * (g - g.mean(axes, keepdim=True) - xhat * (g * xhat).mean(axes, keepdim=True))
            else:
                gx = g * rstd
            gw = (gy * xhat).sum(axes) if need_w else None
            gb = gy.sum(axes) if need_b else None
            return gx, gw, gb, None, None, None, None, None
        xd, g0 = _up(x._data), _up(gy._data)
        rstd = ctx.rstd.reshape(bshape)
        xhat = (xd - ctx.mean.reshape(bshape)) * rstd
        gx = gw = gb = None
        if need_x:
            g = g0 * _up(w._data).reshape(bshape) if w is not None else g0
            if ctx.training:
                gx = g - g.mean(axis=axes, keepdims=True)
                gx -= xhat * (g * xhat).mean(axis=axes, keepdims=True)
                gx *= rstd
            else:
                gx = g * rstd
            gx = _const(gx.astype(x._data.dtype, copy=False))
        if need_w:
            gw = _const((g0 * xhat).sum(axis=axes).astype(w._data.dtype, copy=False))
        if need_b:
            gb = _const(g0.sum(axis=axes).astype(gy._data.dtype, copy=False))
        return gx, gw, gb, None, None, None, None, None


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _verify_spatial_size(size):
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each channel (dim 1) with batch statistics (``training``)
    or with ``running_mean``/``running_var``; in training the running
    statistics are updated in place with ``momentum``.

    Example::

        >>> import fabric
        >>> rm, rv = fabric.zeros(3), fabric.ones(3)
        >>> y = fabric.nn.functional.batch_norm(fabric.randn(8, 3), rm, rv, training=True)
        >>> y.shape, bool(rm.abs().sum() > 0)
        (fabric.Size([8, 3]), True)
    """
    if training:
        _verify_batch_size(input.size())
    x = input._data
    if x.ndim < 2:
        raise ValueError(f"batch_norm(): expected at least 2D input (got {x.ndim}D input)")
    c = x.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t._data.size != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    if x.size == 0:
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    rm = None if running_mean is None else running_mean._data
    rv = None if running_var is None else running_var._data
    w = None if weight is None else weight._data
    b = None if bias is None else bias._data
    mom = 0.0 if momentum is None else float(momentum)
    out = _apply(BatchNorm, (input, weight, bias, running_mean, running_var, training, mom, eps),
                 (x, w, b, rm, rv, bool(training), mom, float(eps)))
    if training:
        for t in (running_mean, running_var):
            if t is not None:
                t._bump_version()
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each channel of each sample over its spatial dims (batch
    norm of the ``(1, N*C, *)`` reshaped input, as PyTorch computes it).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.instance_norm(fabric.randn(2, 3, 5)).shape
        fabric.Size([2, 3, 5])
    """
    if use_input_stats:
        _verify_spatial_size(input.size())
    x = input._data
    n, c = x.shape[0], x.shape[1]
    xr = input.reshape((1, n * c) + x.shape[2:])

    def rep(t):
        return None if t is None else t.reshape(1, c).expand(n, c).reshape(n * c)

    rm = None if running_mean is None else _const(xp_of(x).tile(running_mean._data, n))
    rv = None if running_var is None else _const(xp_of(x).tile(running_var._data, n))
    out = batch_norm(xr, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    with no_grad():
        if running_mean is not None:
            running_mean._data[...] = rm._data.reshape(n, c).mean(axis=0).astype(running_mean._data.dtype)
            running_mean._bump_version()
        if running_var is not None:
            running_var._data[...] = rv._data.reshape(n, c).mean(axis=0).astype(running_var._data.dtype)
            running_var._bump_version()
    return out.reshape(x.shape)


@declare_op(method=False)
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise groups of ``C // num_groups`` channels of each sample, then
    apply the per-channel ``weight`` and ``bias``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.group_norm(fabric.randn(2, 4, 3), 2).shape
        fabric.Size([2, 4, 3])
    """
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, c = x.shape[0], x.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {_shape_list(x.shape)} and num_groups={num_groups}")
    _verify_batch_size([n * c // num_groups, num_groups] + list(x.shape[2:]))
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.shape[0] != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {_shape_list(t._data.shape)} and input of shape "
                               f"{_shape_list(x.shape)}")
    grouped = input.reshape(n, num_groups, -1) if x.size else input.reshape(n, num_groups, 0)
    y = _apply(LayerNorm, (grouped, None, None, 1, eps), (grouped._data, None, None, 1, eps)).reshape(x.shape)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(bshape)
    if bias is not None:
        y = y + bias.reshape(bshape)
    return y


# --- local response norm ------------------------------------------------------------
class _ChannelWindowMean(Function):
    """``out[:, c] = sum(x[:, c-lo : c+hi+1]) / size`` with zero padding (dim 1)."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, lo, hi, size):
        ctx.lo, ctx.hi, ctx.size = lo, hi, size
        xp = xp_of(x)
        c = x.shape[1]
        pad = [(0, 0)] * x.ndim
        pad[1] = (lo, hi)
        xpad = xp.pad(x, pad)
        out = xp.zeros_like(x)
        for o in range(lo + hi + 1):  # a loop over window offsets, not elements
            out += xpad[:, o:o + c]
        out /= size
        return out

    @staticmethod
    def backward(ctx, gy):
        return _apply(_ChannelWindowMean, (gy, ctx.hi, ctx.lo, ctx.size), (gy._data, ctx.hi, ctx.lo, ctx.size)), \
            None, None, None


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """Divide each element by ``(k + alpha * mean of squares over a window of
    ``size`` neighbouring channels) ** beta``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.local_response_norm(fabric.ones(1, 4, 2), 3).shape
        fabric.Size([1, 4, 2])
    """
    nd = input.dim()
    if nd < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {nd} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    win = _apply(_ChannelWindowMean, (sq, size // 2, (size - 1) // 2, size), (sq._data, size // 2, (size - 1) // 2,
                                                                            size))
    return input / (win * alpha + k) ** beta


# --- normalize ---------------------------------------------------------------------------
class _ClampMin(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, v):
        ctx.mask = (x >= v).astype(x.dtype)
        return xp_of(x).maximum(x, x.dtype.type(v))

    @staticmethod
    def backward(ctx, gy):
        return gy * _const(ctx.mask), None


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.normalize(fabric.tensor([[3.0, 4.0]]))
        tensor([[0.6000, 0.8000]])
    """
    from ..._tensor import _wrap_dim

    x = input._data
    d = _wrap_dim(dim, x.ndim) if x.ndim else 0
    src = input if x.ndim else input.reshape(1)
    norm = _apply1(VectorNorm, src, (src._data, float(p), (d,), True))
    denom = _apply(_ClampMin, (norm, eps), (norm._data, eps))
    result = src / denom
    if not x.ndim:
        result = result.reshape(())
    if out is not None:
        from ...ops.inplace import copy_into_out

        return copy_into_out(out, result)
    return result

