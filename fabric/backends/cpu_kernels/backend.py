"""The CPU backend with numba kernels: :class:`NumbaBackend` overrides the fused ops of
:class:`~fabric.backends.numpy_backend.NumpyBackend` where a kernel exists and the arrays
suit it (float32/float64), and falls back to the NumPy reference
(``super()``) everywhere else: float16, other axes, empty arrays, bad arguments (so errors
are the reference's).

Example::

    >>> import numpy as np
    >>> from fabric.backends.cpu_kernels.backend import NumbaBackend
    >>> NumbaBackend().softmax(np.zeros((1, 2)), -1).tolist()
    [[0.5, 0.5]]
"""
from __future__ import annotations

import math

import numpy as np

from ..._rng import mt19937 as _mt19937
from .. import fused
from ..numpy_backend import NumpyBackend

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ACTS = {"none": 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
_F32 = np.dtype(np.float32)
_k = _k32 = None


def kernels():
    """The compiled-kernel module (imports numba on first use)."""
    global _k
    if _k is None:
        from . import kernels as module
        _k = module
    return _k


def kernels32():
    """The vectorised float32 kernels (:mod:`.kernels32`; imports numba on first use)."""
    global _k32
    if _k32 is None:
        from . import kernels32 as module
        _k32 = module
    return _k32


# float64 ops the NumPy reference runs faster than a numba kernel could here: their cost is
# exp, one libm call per element in numba against NumPy's SIMD exp (measured 1.5-2.5x slower,
# see docs/performance.md); float64 is the gradcheck dtype, so these stay on the reference.
# Named as the CUDA kernels are (the agreement tests' ``ran`` reads it).
REFERENCE_FLOAT64 = frozenset({"softmax_fwd", "log_softmax_fwd", "log_softmax_bwd", "safe_softmax_inplace",
                               "cross_entropy_fwd", "cross_entropy_bwd"})


def _for(dtype):
    """The kernel set for ``dtype``: the vectorised float32 one, else the float64-arithmetic one."""
    return kernels32() if dtype == _F32 else kernels()


def _flat(a):
    """``a`` as a C-contiguous flat array (a view when already contiguous)."""
    return np.ascontiguousarray(a).reshape(-1)


def _ok(*arrays) -> bool:
    """All non-empty float32/float64 arrays of one dtype."""
    dt = arrays[0].dtype
    return dt in _FLOATS and arrays[0].size > 0 and all(a.dtype == dt for a in arrays[1:])


def _rows(a):
    """``a`` as C-contiguous (rows, last dim) (a view when already contiguous)."""
    return np.ascontiguousarray(a).reshape(-1, a.shape[-1])


def _axis_ok(axis, ndim) -> bool:
    return ndim >= 1 and isinstance(axis, (int, np.integer)) and -ndim <= axis < ndim


def _vec(a, n, dtype):
    """``a`` as a contiguous length-``n`` vector of ``dtype``, or an empty one for None."""
    if a is None:
        return np.empty(0, dtype)
    return np.ascontiguousarray(a.reshape(-1), dtype=dtype)


def _bernoulli53(key, pos, threshold, out):
    """The CPU generator's bernoulli masks in compiled code (see ``fabric._rng.mt19937``)."""
    return kernels().mt19937_bernoulli53(key, pos, threshold, out)


class NumbaBackend(NumpyBackend):
    """NumPy backend plus compiled fused kernels (see the module docstring).  Creating one
    hands the CPU generator its compiled bernoulli masks (dropout's: the same mt19937 draws)."""

    kernels_enabled = True

    def __init__(self):
        super().__init__()
        _mt19937.register_compiled_bernoulli53(_bernoulli53)

    # --- softmax family (any axis: moved last, rows contiguous) ------------------------------
    @staticmethod
    def _rowwise(kernel, axis, *arrays):
        ndim = arrays[0].ndim
        axis = axis + ndim if axis < 0 else axis
        moved = [np.moveaxis(a, axis, -1) if axis != ndim - 1 else a for a in arrays]
        rows = [_rows(a) for a in moved]
        out = np.empty_like(rows[0])
        kernel(*rows, out)
        out = out.reshape(moved[0].shape)
        return np.moveaxis(out, -1, axis) if axis != ndim - 1 else out

    def softmax(self, x, axis=-1):
        if not (_ok(x) and x.dtype == _F32 and _axis_ok(axis, x.ndim)):
            return super().softmax(x, axis)
        return self._rowwise(kernels32().softmax_fwd, axis, x)

    def safe_softmax_(self, s):
        if not (_ok(s) and s.dtype == _F32 and s.ndim >= 1 and s.flags.c_contiguous and s.flags.writeable):
            return super().safe_softmax_(s)
        kernels32().safe_softmax_inplace(s.reshape(-1, s.shape[-1]))
        return s

    def log_softmax(self, x, axis=-1):
        if not (_ok(x) and x.dtype == _F32 and _axis_ok(axis, x.ndim)):
            return super().log_softmax(x, axis)
        return self._rowwise(kernels32().log_softmax_fwd, axis, x)

    def softmax_backward(self, y, gy, axis=-1):
        if not (_ok(y, gy) and y.shape == gy.shape and _axis_ok(axis, y.ndim)):
            return super().softmax_backward(y, gy, axis)
        return self._rowwise(_for(y.dtype).softmax_bwd, axis, y, gy)

    def log_softmax_backward(self, y, gy, axis=-1):
        if not (_ok(y, gy) and y.dtype == _F32 and y.shape == gy.shape and _axis_ok(axis, y.ndim)):
            return super().log_softmax_backward(y, gy, axis)
        return self._rowwise(kernels32().log_softmax_bwd, axis, y, gy)

    # --- cross entropy ---------------------------------------------------------------------
    def cross_entropy(self, logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
        if not (_ok(logits) and logits.dtype == _F32 and logits.ndim == 2 and logits.shape[1] > 0
                and target.dtype.kind in "iu"):
            return super().cross_entropy(logits, target, weight, ignore_index, label_smoothing)
        n, c = logits.shape
        x = np.ascontiguousarray(logits)
        w = np.ones(c, x.dtype) if weight is None else _vec(weight, c, x.dtype)
        loss, lse = np.empty(n, x.dtype), np.empty(n, x.dtype)
        kernels32().cross_entropy_fwd(x, np.ascontiguousarray(target, np.int64), w, int(ignore_index),
                                    float(label_smoothing), loss, lse)
        return loss, (logits, lse)

    def cross_entropy_backward(self, saved, target, weight, ignore_index, label_smoothing, g_loss):
        logits, lse = saved
        if not (_ok(logits, lse) and logits.dtype == _F32 and logits.ndim == 2 and logits.shape[1] > 0
                and target.dtype.kind in "iu"):
            return super().cross_entropy_backward(saved, target, weight, ignore_index, label_smoothing, g_loss)
        n, c = logits.shape
        x = np.ascontiguousarray(logits)
        w = np.ones(c, x.dtype) if weight is None else _vec(weight, c, x.dtype)
        g = np.ascontiguousarray(np.broadcast_to(g_loss, (n,)), x.dtype)
        out = np.empty_like(x)
        kernels32().cross_entropy_bwd(x, lse, np.ascontiguousarray(target, np.int64), w, int(ignore_index),
                                    float(label_smoothing), g, out)
        return out

    # --- norms -------------------------------------------------------------------------------
    def layer_norm(self, x, weight=None, bias=None, eps=1e-5):
        params = [a for a in (weight, bias) if a is not None]
        if not (_ok(x, *params) and x.shape[-1] > 0):
            return super().layer_norm(x, weight, bias, eps)
        x2 = _rows(x)
        c = x2.shape[1]
        out = np.empty_like(x2)
        mean, rstd = np.empty(x2.shape[0], x.dtype), np.empty(x2.shape[0], x.dtype)
        _for(x.dtype).layer_norm_fwd(x2, _vec(weight, c, x.dtype), _vec(bias, c, x.dtype), float(eps), out, mean, rstd)
        lead = x.shape[:-1]
        return out.reshape(x.shape), mean.reshape(lead), rstd.reshape(lead)

    def layer_norm_backward(self, gy, x, weight, mean, rstd, has_bias=True):
        params = [weight] if weight is not None else []
        if not (_ok(gy, x, mean, rstd, *params) and gy.shape == x.shape and x.shape[-1] > 0):
            return super().layer_norm_backward(gy, x, weight, mean, rstd, has_bias)
        k = kernels()
        g2, x2 = _rows(gy), _rows(x)
        c = x2.shape[1]
        m, r = _vec(mean, 0, x.dtype), _vec(rstd, 0, x.dtype)
        gx = np.empty_like(x2)
        _for(x.dtype).layer_norm_bwd(g2, x2, _vec(weight, c, x.dtype), m, r, gx)
        gw = gb = None
        if weight is not None or has_bias:
            gw_buf, gb_buf = np.empty(c, x.dtype), np.empty(c if has_bias else 0, x.dtype)
            k.norm_bwd_params(g2, x2, m, r, gw_buf, gb_buf)
            gw = gw_buf if weight is not None else None
            gb = gb_buf if has_bias else None
        return gx.reshape(gy.shape), gw, gb

    def rms_norm(self, x, weight=None, eps=1e-6):
        params = [weight] if weight is not None else []
        if not (_ok(x, *params) and x.shape[-1] > 0):
            return super().rms_norm(x, weight, eps)
        x2 = _rows(x)
        out = np.empty_like(x2)
        rstd = np.empty(x2.shape[0], x.dtype)
        kernels().rms_norm_fwd(x2, _vec(weight, x2.shape[1], x.dtype), float(eps), out, rstd)
        return out.reshape(x.shape), rstd.reshape(x.shape[:-1])

    def rms_norm_backward(self, gy, x, weight, rstd):
        params = [weight] if weight is not None else []
        if not (_ok(gy, x, rstd, *params) and gy.shape == x.shape and x.shape[-1] > 0):
            return super().rms_norm_backward(gy, x, weight, rstd)
        k = kernels()
        g2, x2 = _rows(gy), _rows(x)
        c = x2.shape[1]
        r = _vec(rstd, 0, x.dtype)
        gx = np.empty_like(x2)
        k.rms_norm_bwd(g2, x2, _vec(weight, c, x.dtype), r, gx)
        gw = None
        if weight is not None:
            gw = np.empty(c, x.dtype)
            k.norm_bwd_params(g2, x2, np.empty(0, x.dtype), r, gw, np.empty(0, x.dtype))
        return gx.reshape(gy.shape), gw

    # --- activations ---------------------------------------------------------------------------
    def _act(self, x, code):
        xf = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(xf)
        kernels().act_fwd(xf, code, out)
        return out.reshape(x.shape)

    def _act_backward(self, x, gy, code):
        xf = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(xf)
        kernels().act_bwd(xf, np.ascontiguousarray(gy).reshape(-1), code, out)
        return out.reshape(gy.shape)

    def _act32(self, kernel, x, *more):
        out = np.empty(x.shape, x.dtype)
        kernel(_flat(x), *[_flat(a) for a in more], out.reshape(-1))
        return out

    def gelu(self, x, approximate="none"):
        if not (_ok(x) and approximate in ("none", "tanh")):
            return super().gelu(x, approximate)
        if x.dtype == _F32 and approximate == "none":
            return self._act32(kernels32().gelu_fwd, x)
        return self._act(x, _ACTS["gelu" if approximate == "none" else "gelu_tanh"])

    def gelu_backward(self, x, gy, approximate="none"):
        if not (_ok(x, gy) and x.shape == gy.shape and approximate in ("none", "tanh")):
            return super().gelu_backward(x, gy, approximate)
        if x.dtype == _F32 and approximate == "none":
            return self._act32(kernels32().gelu_bwd, x, gy)
        return self._act_backward(x, gy, _ACTS["gelu" if approximate == "none" else "gelu_tanh"])

    def silu(self, x):
        if not _ok(x):
            return super().silu(x)
        if x.dtype == _F32:
            return self._act32(kernels32().silu_fwd, x)
        return self._act(x, _ACTS["silu"])

    def silu_backward(self, x, gy):
        if not (_ok(x, gy) and x.shape == gy.shape):
            return super().silu_backward(x, gy)
        if x.dtype == _F32:
            return self._act32(kernels32().silu_bwd, x, gy)
        return self._act_backward(x, gy, _ACTS["silu"])

    def bias_act(self, x, bias, act):
        if not (_ok(x, bias) and act in _ACTS and bias.ndim == 1 and x.ndim >= 1 and x.shape[-1] == bias.shape[0]):
            return super().bias_act(x, bias, act)
        x2 = _rows(x)
        out = np.empty_like(x2)
        kernels().bias_act_fwd(x2, np.ascontiguousarray(bias), _ACTS[act], out)
        return out.reshape(x.shape)

    def bias_act_backward(self, x, bias, gy, act):
        if not (_ok(x, bias, gy) and act in _ACTS and bias.ndim == 1 and x.shape == gy.shape
                and x.shape[-1] == bias.shape[0]):
            return super().bias_act_backward(x, bias, gy, act)
        x2 = _rows(x)
        gx, gb = np.empty_like(x2), np.empty_like(bias)
        kernels().bias_act_bwd(x2, np.ascontiguousarray(bias), _rows(gy), _ACTS[act], gx, gb)
        return gx.reshape(gy.shape), gb

    # --- dropout (the Philox stream of fused.dropout, bit for bit) ------------------------------
    def dropout(self, x, p, seed, offset):
        if not (_ok(x) and 0.0 < p < 1.0):
            return super().dropout(x, p, seed, offset)
        xf = np.ascontiguousarray(x).reshape(-1)
        out, keep = np.empty_like(xf), np.empty(xf.shape, bool)
        u32 = 0xFFFFFFFF
        seed, offset = int(seed), int(offset)
        kernels().dropout_fwd(xf, np.uint64(fused.dropout_threshold(p)), x.dtype.type(1.0 / (1.0 - p)),
                              np.uint64(offset & u32), np.uint64((offset >> 32) & u32),
                              np.uint64(seed & u32), np.uint64((seed >> 32) & u32), out, keep)
        return out.reshape(x.shape), keep.reshape(x.shape)

    # --- embedding, pooling, col2im --------------------------------------------------------------
    def embedding_backward(self, indices, gy, num_weights, padding_idx=None):
        if not (_ok(gy) and gy.ndim >= 1 and indices.dtype.kind in "iu"):
            return super().embedding_backward(indices, gy, num_weights, padding_idx)
        idx = np.ascontiguousarray(indices, np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= num_weights):
            return super().embedding_backward(indices, gy, num_weights, padding_idx)
        out = np.zeros((num_weights, gy.shape[-1]), gy.dtype)
        kernels().embedding_bwd(idx, _rows(gy), out)
        if padding_idx is not None:
            out[padding_idx] = 0
        return out

    def max_pool2d(self, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        if not (_ok(x) and x.ndim == 4):
            return super().max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
        t = fused._tuple
        (kh, kw), (sh, sw) = t(kernel_size, 2), t(stride if stride is not None else kernel_size, 2)
        (ph, pw), (dh, dw) = t(padding, 2), t(dilation, 2)
        n, c, h, w = x.shape
        oh = fused.pool_output_size(h, kh, sh, ph, dh, ceil_mode)
        ow = fused.pool_output_size(w, kw, sw, pw, dw, ceil_mode)
        if ph > kh // 2 or pw > kw // 2 or oh <= 0 or ow <= 0:
            return super().max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
        y = np.empty((n * c, oh, ow), x.dtype)
        ind = np.empty((n * c, oh, ow), np.int64)
        kernels().max_pool2d_fwd(np.ascontiguousarray(x).reshape(n * c, h, w), kh, kw, sh, sw, ph, pw, dh, dw, y, ind)
        return y.reshape(n, c, oh, ow), ind.reshape(n, c, oh, ow)

    def max_pool2d_backward(self, gy, indices, input_shape):
        if not (_ok(gy) and gy.ndim == 4 and len(input_shape) == 4 and gy.shape == indices.shape):
            return super().max_pool2d_backward(gy, indices, input_shape)
        n, c, h, w = input_shape
        out = np.zeros((n * c, h * w), gy.dtype)
        kernels().max_pool2d_bwd(_rows(gy.reshape(n * c, -1)), _rows(np.asarray(indices, np.int64).reshape(n * c, -1)),
                                 h * w, out)
        return out.reshape(tuple(input_shape))

    def col2im(self, cols, input_shape, kernel_size, stride=1, padding=0, dilation=1):
        nd = len(input_shape) - 2
        if not (_ok(cols) and nd in (1, 2)):
            return super().col2im(cols, input_shape, kernel_size, stride, padding, dilation)
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = fused._conv_geometry(nd, kernel_size, stride, padding, dilation)
        n, c = input_shape[:2]
        h, w = (1, input_shape[2]) if nd == 1 else input_shape[2:]
        oh, ow = fused.conv_output_size(h, kh, sh, ph, dh), fused.conv_output_size(w, kw, sw, pw, dw)
        if oh <= 0 or ow <= 0 or cols.size != n * c * kh * kw * oh * ow:
            return super().col2im(cols, input_shape, kernel_size, stride, padding, dilation)
        out = np.zeros((n, c, h, w), cols.dtype)
        kernels().col2im_2d(np.ascontiguousarray(cols).reshape(n, c, kh, kw, oh * ow), kh, kw, sh, sw, ph, pw,
                            dh, dw, oh, ow, out)
        return out.reshape(tuple(input_shape))

    # --- optimizers -----------------------------------------------------------------------------
    @staticmethod
    def _flat_ok(*groups) -> bool:
        first = groups[0][0]
        return first.dtype in _FLOATS and all(
            a.dtype == first.dtype and a.flags.c_contiguous and a.flags.writeable
            for g in groups for a in g)

    def sgd_step(self, params, grads, momentum_bufs, lr, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, maximize=False, first_step=False):
        groups = [params, grads] + ([momentum_bufs] if momentum else [])
        if not params or not self._flat_ok(*groups):
            return super().sgd_step(params, grads, momentum_bufs, lr, momentum, dampening, weight_decay,
                                    nesterov, maximize, first_step)
        k = kernels()
        dt = params[0].dtype.type
        empty = np.empty(0, params[0].dtype)
        for i, p in enumerate(params):
            buf = momentum_bufs[i].reshape(-1) if momentum else empty
            k.sgd_update(p.reshape(-1), grads[i].reshape(-1), buf, dt(lr), dt(momentum), dt(1.0 - dampening),
                         dt(weight_decay), bool(momentum), bool(nesterov), bool(maximize), bool(first_step))

    def adam_step(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr=1e-3,
                  beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False,
                  maximize=False, decoupled_weight_decay=False):
        groups = [params, grads, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if amsgrad else [])
        if not params or not self._flat_ok(*groups):
            return super().adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr, beta1,
                                     beta2, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay)
        k = kernels()
        dt = params[0].dtype.type
        scalars = (dt(1.0 - beta1), dt(beta2), dt(1.0 - beta2), dt(eps), dt(weight_decay),
                   dt(1.0 - lr * weight_decay))
        flags = (bool(amsgrad), bool(maximize), bool(decoupled_weight_decay))
        step_size = dt(lr / (1.0 - beta1 ** step))
        bc2_sqrt = dt(math.sqrt(1.0 - beta2 ** step))
        empty = np.empty(0, params[0].dtype)
        for i, p in enumerate(params):
            vmax = max_exp_avg_sqs[i].reshape(-1) if amsgrad else empty
            k.adam_update(p.reshape(-1), grads[i].reshape(-1), exp_avgs[i].reshape(-1), exp_avg_sqs[i].reshape(-1),
                          vmax, *scalars, *flags, step_size, bc2_sqrt)
