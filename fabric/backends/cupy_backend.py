"""The GPU backend: CuPy arrays, with the fused ops as CUDA RawKernels.

:class:`KernelOps` holds the launch code of every fused op: it prepares the
arrays (contiguous, last axis, dtypes), picks the launch geometry and calls a
kernel provider's ``get(name, dtype)(grid, block, args, shared_mem=...)``.
:class:`CupyBackend` plugs in the real provider (``cupy.RawModule``); the CPU
test harness plugs in kernels compiled with g++ and NumPy arrays, so this same
launch code is exercised without a GPU.  Where a kernel does not apply (an
unsupported dtype, a mixed-dtype optimizer group, ...) the method falls back
to the reference twin in :mod:`fabric.backends.fused`, run on CuPy arrays.

Example (on a machine with a CUDA device)::

    >>> from fabric.backends import cupy_backend          # doctest: +SKIP
    >>> be = get_cupy_backend()                           # doctest: +SKIP
    >>> be.softmax(be.xp.zeros((2, 4), "float32"), -1)    # doctest: +SKIP
    array([[0.25, 0.25, 0.25, 0.25],
           [0.25, 0.25, 0.25, 0.25]], dtype=float32)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._rng.philox import PhiloxGenerator
from . import determinism, fused
from .base import Backend
from .cuda import launch
from .cuda.launch import cache_config, elementwise_config, rows_config

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_i32, _i64, _f64 = np.int32, np.int64, np.float64


def _check_int32(*values) -> bool:
    return all(v < 2 ** 31 for v in values)


def _deterministic() -> bool:
    """``fabric.use_deterministic_algorithms(True)`` is on (read at call time)."""
    return determinism.enabled()


class KernelOps:
    """Fused ops launched through ``self.kernels`` on arrays of ``self.xp``.

    Mixed into a :class:`~fabric.backends.base.Backend`; falls back to the
    base class's reference implementation (``super()``) where no kernel applies.
    """

    xp: Any

    kernels: Any = None   # provider: .get(kernel, dtype) -> launchable, .limits, .pointer_tables(...)

    # --- helpers -----------------------------------------------------------
    def _ok(self, kernel: str, *arrays) -> bool:
        """A kernel applies: all arrays share a float dtype it is built for."""
        dt = arrays[0].dtype
        return (dt in _FLOATS and launch.supports(kernel, dt)
                and all(a is None or a.dtype == dt for a in arrays))

    def _c(self, a):
        return self.xp.ascontiguousarray(a)

    def _param(self, a, like, cols):
        """An optional per-column parameter as a contiguous array of ``like``'s dtype
        (an empty placeholder when absent: the kernel is told not to read it)."""
        xp = self.xp
        if a is None:
            return xp.empty((0,), like.dtype), 0
        if a.shape != (cols,):
            raise ValueError(f"expected a parameter of shape ({cols},), got {a.shape}")
        return xp.ascontiguousarray(a, dtype=like.dtype), 1

    def _rowwise(self, kernel, x, axis):
        """Run a row kernel ``(x, y, rows, cols, cached)`` along ``axis``."""
        xp = self.xp
        axis = axis % x.ndim
        xm = xp.moveaxis(x, axis, -1) if axis != x.ndim - 1 else x
        xm = self._c(xm)
        y = xp.empty_like(xm)
        cols = xm.shape[-1]
        rows = xm.size // cols if cols else 0
        if rows:
            mode, grid, block, smem = launch.row_mode_config(rows, cols, xm.itemsize, 1, self.kernels.limits)
            self.kernels.get(kernel, x.dtype)(grid, block, (xm, y, _i64(rows), _i32(cols), _i32(mode)),
                                              shared_mem=smem)
        return xp.moveaxis(y, -1, axis) if axis != x.ndim - 1 else y

    def _rowwise_bwd(self, kernel, y, gy, axis, copies):
        xp = self.xp
        axis = axis % y.ndim
        if axis != y.ndim - 1:
            y, gy = xp.moveaxis(y, axis, -1), xp.moveaxis(gy, axis, -1)
        y, gy = self._c(y), self._c(gy)
        gx = xp.empty_like(gy)
        cols = y.shape[-1]
        rows = y.size // cols if cols else 0
        if rows:
            mode, grid, block, smem = launch.row_mode_config(rows, cols, y.itemsize, copies, self.kernels.limits)
            self.kernels.get(kernel, y.dtype)(grid, block, (y, gy, gx, _i64(rows), _i32(cols), _i32(mode)),
                                              shared_mem=smem)
        return xp.moveaxis(gx, -1, axis) if axis != gx.ndim - 1 else gx

    def _row_ok(self, kernel, *arrays) -> bool:
        x = arrays[0]
        return x.ndim >= 1 and self._ok(kernel, *arrays) and _check_int32(x.shape[-1] if x.ndim else 0)

    # --- softmax family -----------------------------------------------------
    def softmax(self, x, axis=-1):
        if x.ndim == 0 or not self._row_ok("softmax_fwd", x):
            return super().softmax(x, axis)
        return self._rowwise("softmax_fwd", x, axis)

    def log_softmax(self, x, axis=-1):
        if x.ndim == 0 or not self._row_ok("log_softmax_fwd", x):
            return super().log_softmax(x, axis)
        return self._rowwise("log_softmax_fwd", x, axis)

    def softmax_backward(self, y, gy, axis=-1):
        if y.ndim == 0 or not self._row_ok("softmax_bwd", y, gy):
            return super().softmax_backward(y, gy, axis)
        return self._rowwise_bwd("softmax_bwd", y, gy, axis, 2)

    def log_softmax_backward(self, y, gy, axis=-1):
        if y.ndim == 0 or not self._row_ok("log_softmax_bwd", y, gy):
            return super().log_softmax_backward(y, gy, axis)
        return self._rowwise_bwd("log_softmax_bwd", y, gy, axis, 1)

    # --- cross entropy --------------------------------------------------------
    def cross_entropy(self, logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
        if logits.ndim != 2 or not self._row_ok("cross_entropy_fwd", logits):
            return super().cross_entropy(logits, target, weight, ignore_index, label_smoothing)
        xp = self.xp
        n, c = logits.shape
        acc = fused.acc_dtype(logits.dtype)
        logits = self._c(logits)
        target = xp.ascontiguousarray(target, dtype=np.int64)
        w, has_w = self._param(weight, logits, c)
        loss = xp.empty((n,), logits.dtype)
        lse = xp.empty((n,), acc)
        if n:
            grid, block = rows_config(n, c, self.kernels.limits)
            self.kernels.get("cross_entropy_fwd", logits.dtype)(
                grid, block, (logits, target, w, loss, lse, _i64(n), _i32(c), _i64(ignore_index),
                              _f64(label_smoothing), _i32(has_w)))
        return loss, (logits, lse)

    def cross_entropy_backward(self, saved, target, weight, ignore_index, label_smoothing, g_loss):
        logits, lse = saved
        if logits.ndim != 2 or not self._row_ok("cross_entropy_bwd", logits):
            return super().cross_entropy_backward(saved, target, weight, ignore_index, label_smoothing, g_loss)
        xp = self.xp
        n, c = logits.shape
        target = xp.ascontiguousarray(target, dtype=np.int64)
        w, has_w = self._param(weight, logits, c)
        g = xp.ascontiguousarray(xp.broadcast_to(g_loss, (n,)), dtype=logits.dtype)
        gx = xp.empty_like(logits)
        if n:
            grid, block = rows_config(n, c, self.kernels.limits)
            self.kernels.get("cross_entropy_bwd", logits.dtype)(
                grid, block, (logits, lse, target, w, g, gx, _i64(n), _i32(c), _i64(ignore_index),
                              _f64(label_smoothing), _i32(has_w)))
        return gx

    # --- norms ------------------------------------------------------------------
    def layer_norm(self, x, weight=None, bias=None, eps=1e-5):
        if x.ndim == 0 or x.shape[-1] == 0 or not self._row_ok("layer_norm_fwd", x):
            return super().layer_norm(x, weight, bias, eps)
        xp = self.xp
        x = self._c(x)
        cols = x.shape[-1]
        rows = x.size // cols
        w, has_w = self._param(weight, x, cols)
        b, has_b = self._param(bias, x, cols)
        acc = fused.acc_dtype(x.dtype)
        y = xp.empty_like(x)
        mean = xp.empty(x.shape[:-1], acc)
        rstd = xp.empty(x.shape[:-1], acc)
        if rows:
            lim = self.kernels.limits
            cached, smem = cache_config(cols, x.itemsize, 1, lim)
            grid, block = rows_config(rows, cols, lim)
            self.kernels.get("layer_norm_fwd", x.dtype)(
                grid, block, (x, w, b, y, mean, rstd, _i64(rows), _i32(cols), _f64(eps),
                              _i32(has_w), _i32(has_b), _i32(cached)), shared_mem=smem)
        return y, mean, rstd

    def _param_grads(self, kernel, gy, x, stats, rows, cols, two):
        """Column sums over rows (gweight, and gbias when ``two``) via per-chunk partials."""
        xp = self.xp
        lim = self.kernels.limits
        col_blocks = -(-cols // 32)
        n_chunks = max(1, min(-(-rows // 64), max(1, lim.max_grid // col_blocks), 65535))
        per_chunk = -(-rows // n_chunks)
        n_chunks = -(-rows // per_chunk)
        acc = fused.acc_dtype(x.dtype)
        part_w = xp.empty((n_chunks, cols), acc)
        args = (gy, x) + stats + (part_w,)
        if two:
            part_b = xp.empty((n_chunks, cols), acc)
            args += (part_b,)
        grid = (min(col_blocks, lim.max_grid), n_chunks)
        self.kernels.get(kernel, x.dtype)(grid, (32, 8), args + (_i64(rows), _i32(cols), _i64(per_chunk)))
        return (part_w.sum(axis=0), part_b.sum(axis=0)) if two else part_w.sum(axis=0)

    def layer_norm_backward(self, gy, x, weight, mean, rstd, has_bias=True):
        if x.ndim == 0 or x.shape[-1] == 0 or not self._row_ok("layer_norm_bwd", x, gy):
            return super().layer_norm_backward(gy, x, weight, mean, rstd, has_bias)
        xp = self.xp
        x, gy = self._c(x), self._c(gy)
        acc = fused.acc_dtype(x.dtype)
        mean, rstd = xp.ascontiguousarray(mean, dtype=acc), xp.ascontiguousarray(rstd, dtype=acc)
        cols = x.shape[-1]
        rows = x.size // cols
        w, has_w = self._param(weight, x, cols)
        gx = xp.empty_like(gy)
        gweight = gbias = None
        pdtype = weight.dtype if weight is not None else gy.dtype
        if rows:
            lim = self.kernels.limits
            cached, smem = cache_config(cols, x.itemsize, 2, lim)
            grid, block = rows_config(rows, cols, lim)
            self.kernels.get("layer_norm_bwd", x.dtype)(
                grid, block, (gy, x, w, mean, rstd, gx, _i64(rows), _i32(cols), _i32(has_w), _i32(cached)),
                shared_mem=smem)
            if weight is not None or has_bias:
                sw, sb = self._param_grads("layer_norm_bwd_params", gy, x, (mean, rstd), rows, cols, True)
                gweight = sw.astype(pdtype) if weight is not None else None
                gbias = sb.astype(pdtype) if has_bias else None
        else:
            gweight = xp.zeros((cols,), pdtype) if weight is not None else None
            gbias = xp.zeros((cols,), pdtype) if has_bias else None
        return gx, gweight, gbias

    def rms_norm(self, x, weight=None, eps=1e-6):
        if x.ndim == 0 or x.shape[-1] == 0 or not self._row_ok("rms_norm_fwd", x):
            return super().rms_norm(x, weight, eps)
        xp = self.xp
        x = self._c(x)
        cols = x.shape[-1]
        rows = x.size // cols
        w, has_w = self._param(weight, x, cols)
        y = xp.empty_like(x)
        rstd = xp.empty(x.shape[:-1], fused.acc_dtype(x.dtype))
        if rows:
            lim = self.kernels.limits
            cached, smem = cache_config(cols, x.itemsize, 1, lim)
            grid, block = rows_config(rows, cols, lim)
            self.kernels.get("rms_norm_fwd", x.dtype)(
                grid, block, (x, w, y, rstd, _i64(rows), _i32(cols), _f64(eps), _i32(has_w), _i32(cached)),
                shared_mem=smem)
        return y, rstd

    def rms_norm_backward(self, gy, x, weight, rstd):
        if x.ndim == 0 or x.shape[-1] == 0 or not self._row_ok("rms_norm_bwd", x, gy):
            return super().rms_norm_backward(gy, x, weight, rstd)
        xp = self.xp
        x, gy = self._c(x), self._c(gy)
        rstd = xp.ascontiguousarray(rstd, dtype=fused.acc_dtype(x.dtype))
        cols = x.shape[-1]
        rows = x.size // cols
        w, has_w = self._param(weight, x, cols)
        gx = xp.empty_like(gy)
        gweight = None
        if rows:
            lim = self.kernels.limits
            cached, smem = cache_config(cols, x.itemsize, 2, lim)
            grid, block = rows_config(rows, cols, lim)
            self.kernels.get("rms_norm_bwd", x.dtype)(
                grid, block, (gy, x, w, rstd, gx, _i64(rows), _i32(cols), _i32(has_w), _i32(cached)),
                shared_mem=smem)
            if weight is not None:
                gweight = self._param_grads("rms_norm_bwd_params", gy, x, (rstd,), rows, cols, False)
                gweight = gweight.astype(weight.dtype)
        elif weight is not None:
            gweight = xp.zeros((cols,), weight.dtype)
        return gx, gweight

    # --- elementwise activations -------------------------------------------------
    def _elementwise(self, kernel, inputs, extra):
        xp = self.xp
        inputs = [self._c(a) for a in inputs]
        out = xp.empty_like(inputs[0])
        n = out.size
        if n:
            grid, block = elementwise_config(n, self.kernels.limits)
            self.kernels.get(kernel, out.dtype)(grid, block, tuple(inputs) + (out, _i64(n)) + extra)
        return out

    def gelu(self, x, approximate="none"):
        if approximate not in ("none", "tanh") or not self._ok("gelu_fwd", x):
            return super().gelu(x, approximate)
        return self._elementwise("gelu_fwd", [x], (_i32(approximate == "tanh"),))

    def gelu_backward(self, x, gy, approximate="none"):
        if approximate not in ("none", "tanh") or not self._ok("gelu_bwd", x, gy):
            return super().gelu_backward(x, gy, approximate)
        return self._elementwise("gelu_bwd", [x, gy], (_i32(approximate == "tanh"),))

    def silu(self, x):
        if not self._ok("silu_fwd", x):
            return super().silu(x)
        return self._elementwise("silu_fwd", [x], ())

    def silu_backward(self, x, gy):
        if not self._ok("silu_bwd", x, gy):
            return super().silu_backward(x, gy)
        return self._elementwise("silu_bwd", [x, gy], ())

    def _bias_act_ok(self, kernel, x, bias, act, *more):
        return (act in launch.ACT_CODES and x.ndim >= 1 and bias.shape == x.shape[-1:]
                and x.shape[-1] > 0 and self._ok(kernel, x, *more))

    def bias_act(self, x, bias, act):
        if not self._bias_act_ok("bias_act_fwd", x, bias, act):
            return super().bias_act(x, bias, act)
        b = self.xp.ascontiguousarray(bias, dtype=x.dtype)
        return self._elementwise("bias_act_fwd", [x, b], (_i32(x.shape[-1]), _i32(launch.ACT_CODES[act])))

    def bias_act_backward(self, x, bias, gy, act):
        if not self._bias_act_ok("bias_act_bwd", x, bias, act, gy):
            return super().bias_act_backward(x, bias, gy, act)
        xp = self.xp
        cols = x.shape[-1]
        b = xp.ascontiguousarray(bias, dtype=x.dtype)
        gx = self._elementwise("bias_act_bwd", [x, b, gy], (_i32(cols), _i32(launch.ACT_CODES[act])))
        gb = gx.reshape(-1, cols).sum(axis=0, dtype=fused.acc_dtype(gx.dtype)).astype(bias.dtype)
        return gx, gb

    # --- dropout -----------------------------------------------------------------
    def dropout(self, x, p, seed, offset):
        if not 0.0 < p < 1.0 or not self._ok("dropout_fwd", x):
            return super().dropout(x, p, seed, offset)
        xp = self.xp
        x = self._c(x)
        y = xp.empty_like(x)
        mask = xp.empty(x.shape, dtype=bool)
        n = x.size
        if n:
            grid, block = elementwise_config(-(-n // 4), self.kernels.limits)
            self.kernels.get("dropout_fwd", x.dtype)(
                grid, block, (x, y, mask, _i64(n), np.uint32(fused.dropout_threshold(p)),
                              _f64(1.0 / (1.0 - p)), np.uint64(int(seed) & (2 ** 64 - 1)),
                              np.uint64(int(offset) & (2 ** 64 - 1))))
        return y, mask

    # --- embedding ------------------------------------------------------------------
    def embedding_backward(self, indices, gy, num_weights, padding_idx=None):
        if gy.ndim < 1 or not self._ok("embedding_bwd", gy) or not _check_int32(gy.shape[-1]):
            return super().embedding_backward(indices, gy, num_weights, padding_idx)
        xp = self.xp
        dim = gy.shape[-1]
        idx = xp.ascontiguousarray(indices.reshape(-1), dtype=np.int64)
        g = self._c(gy).reshape(-1, dim)
        gw = xp.zeros((num_weights, dim), fused.acc_dtype(gy.dtype))
        pad = -1 if padding_idx is None else (padding_idx % num_weights)
        total = idx.size * dim
        if total and _deterministic():
            self._segment_sums(idx, g, gw, pad)
        elif total:
            grid, block = elementwise_config(total, self.kernels.limits)
            self.kernels.get("embedding_bwd", gy.dtype)(
                grid, block, (idx, g, gw, _i64(idx.size), _i32(dim), _i64(num_weights), _i64(pad)))
        return gw.astype(gy.dtype, copy=False)

    # --- im2col / col2im ------------------------------------------------------------------
    def _conv_args(self, input_shape, kernel_size, stride, padding, dilation):
        ndim = len(input_shape) - 2
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = fused._conv_geometry(ndim, kernel_size, stride, padding, dilation)
        n, c = input_shape[:2]
        h, w = (1, input_shape[2]) if ndim == 1 else input_shape[2:]
        oh = fused.conv_output_size(h, kh, sh, ph, dh)
        ow = fused.conv_output_size(w, kw, sw, pw, dw)
        if oh <= 0 or ow <= 0:
            raise ValueError(f"input {tuple(input_shape)} is too small for kernel {kernel_size}")
        geo = (c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
        return n, c, kh * kw, oh * ow, tuple(_i32(v) for v in geo)

    def im2col(self, x, kernel_size, stride=1, padding=0, dilation=1):
        if x.ndim not in (3, 4) or not self._ok("im2col_fwd", x):
            return super().im2col(x, kernel_size, stride, padding, dilation)
        xp = self.xp
        n, c, kk, l_out, geo = self._conv_args(x.shape, kernel_size, stride, padding, dilation)
        x = self._c(x)
        cols = xp.empty((n, c * kk, l_out), x.dtype)
        if cols.size:
            grid, block = elementwise_config(cols.size, self.kernels.limits)
            self.kernels.get("im2col_fwd", x.dtype)(grid, block, (x, cols, _i64(cols.size)) + geo)
        return cols

    def col2im(self, cols, input_shape, kernel_size, stride=1, padding=0, dilation=1):
        if len(input_shape) not in (3, 4) or not self._ok("im2col_bwd", cols):
            return super().col2im(cols, input_shape, kernel_size, stride, padding, dilation)
        xp = self.xp
        n, c, kk, l_out, geo = self._conv_args(input_shape, kernel_size, stride, padding, dilation)
        if cols.shape != (n, c * kk, l_out):
            raise ValueError(f"cols of shape {cols.shape} do not match input {tuple(input_shape)}")
        cols = self._c(cols)
        x = xp.empty(tuple(input_shape), cols.dtype)
        if x.size:
            grid, block = elementwise_config(x.size, self.kernels.limits)
            self.kernels.get("im2col_bwd", cols.dtype)(grid, block, (cols, x, _i64(x.size)) + geo)
        return x

    # --- max pooling ---------------------------------------------------------------------------
    def max_pool2d(self, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        if x.ndim != 4 or not self._ok("max_pool2d_fwd", x):
            return super().max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
        xp = self.xp
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (
            fused._tuple(kernel_size, 2), fused._tuple(stride if stride is not None else kernel_size, 2),
            fused._tuple(padding, 2), fused._tuple(dilation, 2))
        if ph > kh // 2 or pw > kw // 2:
            raise ValueError("pad should be at most half of effective kernel size")
        n, c, h, w = x.shape
        oh = fused.pool_output_size(h, kh, sh, ph, dh, ceil_mode)
        ow = fused.pool_output_size(w, kw, sw, pw, dw, ceil_mode)
        if oh <= 0 or ow <= 0:
            raise ValueError(f"input {x.shape} is too small for kernel {kernel_size}")
        x = self._c(x)
        y = xp.empty((n, c, oh, ow), x.dtype)
        idx = xp.empty((n, c, oh, ow), np.int64)
        if y.size:
            grid, block = elementwise_config(y.size, self.kernels.limits)
            geo = tuple(_i32(v) for v in (h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw))
            self.kernels.get("max_pool2d_fwd", x.dtype)(grid, block, (x, y, idx, _i64(y.size)) + geo)
        return y, idx

    def max_pool2d_backward(self, gy, indices, input_shape):
        if gy.ndim != 4 or not self._ok("max_pool2d_bwd", gy):
            return super().max_pool2d_backward(gy, indices, input_shape)
        xp = self.xp
        _n, _c, h, w = input_shape
        gy = self._c(gy)
        idx = xp.ascontiguousarray(indices, dtype=np.int64)
        gx = xp.zeros(tuple(input_shape), fused.acc_dtype(gy.dtype))
        if gy.size and _deterministic():
            # flat input positions, summed without atomics (the embedding kernel, dim = 1)
            planes = gy.shape[0] * gy.shape[1]
            flat = (idx.reshape(planes, -1) + (xp.arange(planes, dtype=np.int64) * (h * w))[:, None]).reshape(-1)
            self._segment_sums(flat, gy.reshape(-1, 1), gx.reshape(-1, 1), -1)
        elif gy.size:
            grid, block = elementwise_config(gy.size, self.kernels.limits)
            self.kernels.get("max_pool2d_bwd", gy.dtype)(
                grid, block, (gy, idx, gx, _i64(gy.size), _i64(gy.shape[2] * gy.shape[3]), _i64(h * w)))
        return gx.astype(gy.dtype, copy=False)

    def _segment_sums(self, idx, g, out, pad) -> None:
        """out[idx[i], :] += g[i, :] without atomics (``embedding_bwd_sorted``): a stable
        sort of ``idx``, then one thread per (run of equal indices, column)."""
        xp = self.xp
        n, dim = g.shape
        order = xp.argsort(idx, kind="stable").astype(np.int64, copy=False)
        sorted_idx = xp.ascontiguousarray(idx[order])
        cuts = xp.flatnonzero(sorted_idx[1:] != sorted_idx[:-1]).astype(np.int64, copy=False) + 1
        bounds = xp.concatenate([xp.zeros((1,), np.int64), cuts, xp.full((1,), n, np.int64)])
        n_seg = int(bounds.size) - 1
        grid, block = elementwise_config(n_seg * dim, self.kernels.limits)
        self.kernels.get("embedding_bwd_sorted", g.dtype)(
            grid, block, (xp.ascontiguousarray(order), sorted_idx, bounds, _i64(n_seg), g, out, _i32(dim),
                          _i64(out.shape[0]), _i64(pad)))

    # --- optimizer steps ---------------------------------------------------------------------------
    def _group_ok(self, kernel, *lists) -> bool:
        first = lists[0][0]
        if not launch.supports(kernel, first.dtype):
            return False
        return all(a.dtype == first.dtype and a.flags.c_contiguous and a.shape == p.shape
                   for lst in lists for a, p in zip(lst, lists[0]))

    def _multi_tensor(self, kernel, lists, scalars):
        xp = self.xp
        lim = self.kernels.limits
        sizes = [int(p.size) for p in lists[0]]
        chunk = lim.chunk_size
        offsets = launch.chunk_table(sizes, chunk)
        n_chunks = int(offsets[-1])
        if not n_chunks:
            return
        tables = self.kernels.pointer_tables(*lists)
        meta = xp.asarray(np.concatenate([np.asarray(sizes, np.int64), offsets]))
        grid = (min(n_chunks, lim.max_grid),)
        block = (lim.elementwise_block,)
        self.kernels.get(kernel, lists[0][0].dtype)(
            grid, block, tuple(tables) + (meta[:len(sizes)], meta[len(sizes):], _i32(len(sizes)),
                                          _i32(chunk)) + scalars)

    def sgd_step(self, params, grads, momentum_bufs, lr, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, maximize=False, first_step=False):
        if not params:
            return
        lists = [params, grads] + ([momentum_bufs] if momentum else [])
        if not self._group_ok("sgd_step", *lists):
            return super().sgd_step(params, grads, momentum_bufs, lr, momentum, dampening,
                                    weight_decay, nesterov, maximize, first_step)
        bufs = momentum_bufs if momentum else params   # never read when momentum == 0
        self._multi_tensor("sgd_step", [params, grads, bufs], (
            _f64(lr), _f64(momentum), _f64(1.0 - dampening), _f64(weight_decay),
            _i32(bool(nesterov)), _i32(bool(maximize)), _i32(bool(first_step))))

    def adam_step(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr=1e-3,
                  beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False,
                  maximize=False, decoupled_weight_decay=False):
        if not params:
            return
        lists = [params, grads, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if amsgrad else [])
        if not self._group_ok("adam_step", *lists):
            return super().adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr,
                                     beta1, beta2, eps, weight_decay, amsgrad, maximize,
                                     decoupled_weight_decay)
        step_size = lr / (1.0 - beta1 ** step)
        bc2_sqrt = math.sqrt(1.0 - beta2 ** step)
        vmax = max_exp_avg_sqs if amsgrad else exp_avg_sqs   # never read without amsgrad
        # differences from 1 in double, rounded once by the kernel (as the reference's Python floats)
        self._multi_tensor("adam_step", [params, grads, exp_avgs, exp_avg_sqs, vmax], (
            _f64(1.0 - beta1), _f64(beta2), _f64(1.0 - beta2), _f64(eps), _f64(weight_decay),
            _f64(1.0 - lr * weight_decay), _f64(step_size), _f64(bc2_sqrt), _i32(bool(amsgrad)),
            _i32(bool(maximize)), _i32(bool(decoupled_weight_decay))))


def _import_cupy():
    """Import CuPy and check for a usable device; RuntimeError (saying why) otherwise."""
    try:
        import cupy
    except Exception as e:  # ImportError, or a CUDA library that fails to load
        raise RuntimeError(
            "the CUDA backend needs CuPy, which could not be imported "
            f"({type(e).__name__}: {e}); install it with: pip install cupy-cuda12x") from e
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CuPy 14 raises cudaErrorInsufficientDriver / cudaErrorNoDevice here
        raise RuntimeError(f"the CUDA backend found no usable CUDA device: {e}") from e
    if count == 0:
        raise RuntimeError("the CUDA backend found no usable CUDA device: no CUDA devices")
    return cupy


class CupyBackend(KernelOps, Backend):
    """The ``cuda`` backend.  Raises RuntimeError on construction when CuPy is
    missing or there is no usable device/driver."""

    name = "cuda"

    def __init__(self):
        cupy = _import_cupy()
        self.xp = cupy
        self.kernels = launch.CupyKernels(cupy)
        self._pending_host_copies: list = []
        self._peak_allocated: dict[int, int] = {}
        self._peak_reserved: dict[int, int] = {}
        self._track_memory()

    # --- devices ------------------------------------------------------------
    def device_context(self, index: int):
        """``cupy.cuda.Device(index)``: arrays created inside live on ``cuda:index``."""
        return self.xp.cuda.Device(index)

    def make_generator(self, device_index: int = 0) -> PhiloxGenerator:
        """The default random stream of ``cuda:device_index`` (see :class:`PhiloxGenerator`)."""
        return PhiloxGenerator(self.xp, device_index, self.device_context)

    # --- memory statistics (fabric.cuda.memory_allocated & co.) ---------------
    def _track_memory(self) -> None:
        """Follow the default pool's allocations with a CuPy memory hook, so that
        the peak of its used (and reserved) bytes is known per device, as
        PyTorch's caching allocator reports it.  The hook costs a Python call
        per allocation and per free, O(1) each; CuPy's hooks are per thread, so
        memory freed by another thread is not seen until the next
        :meth:`reset_peak_memory_stats` resynchronises the count."""
        cupy = self.xp
        pool = cupy.get_default_memory_pool()
        used, peak_a, peak_r = {}, self._peak_allocated, self._peak_reserved

        class _Tracker(cupy.cuda.MemoryHook):
            name = f"fabric-memory-stats-{id(self)}"

            def malloc_postprocess(self, **kw):
                dev = kw["device_id"]
                u = used[dev] = used.get(dev, 0) + kw["mem_size"]
                if u > peak_a.get(dev, 0):
                    peak_a[dev] = u

            def free_postprocess(self, **kw):
                dev = kw["device_id"]
                used[dev] = used.get(dev, 0) - kw["mem_size"]

            def alloc_postprocess(self, **kw):   # the pool grew: rare, so its O(n) total is affordable
                dev = kw["device_id"]
                r = pool.total_bytes()
                if r > peak_r.get(dev, 0):
                    peak_r[dev] = r

        for i in range(cupy.cuda.runtime.getDeviceCount()):
            with cupy.cuda.Device(i):
                used[i] = pool.used_bytes()
        self._used = used
        self._memory_hook = _Tracker()
        self._memory_hook.__enter__()

    def memory_stats(self, device_index: int) -> dict:
        """Current and peak bytes of the default memory pool on ``cuda:device_index``
        (keys as in ``torch.cuda.memory_stats``)."""
        self._prune_pending()   # allocations held for finished streams (record_stream) go back
        pool = self.xp.get_default_memory_pool()
        with self.xp.cuda.Device(device_index):
            used, reserved = pool.used_bytes(), pool.total_bytes()
        return {"allocated_bytes.all.current": used,
                "allocated_bytes.all.peak": max(used, self._peak_allocated.get(device_index, 0)),
                "reserved_bytes.all.current": reserved,
                "reserved_bytes.all.peak": max(reserved, self._peak_reserved.get(device_index, 0))}

    def reset_peak_memory_stats(self, device_index: int) -> None:
        stats = self.memory_stats(device_index)
        self._used[device_index] = stats["allocated_bytes.all.current"]
        self._peak_allocated[device_index] = stats["allocated_bytes.all.current"]
        self._peak_reserved[device_index] = stats["reserved_bytes.all.current"]

    def empty_cache(self, device_index: int) -> None:
        """Return the pool's cached, unused blocks of ``cuda:device_index`` to the driver."""
        with self.xp.cuda.Device(device_index):
            self.xp.get_default_memory_pool().free_all_blocks()

    # --- pinned host memory ------------------------------------------------------
    def is_pinned(self, array) -> bool:
        """Whether NumPy ``array`` lies in page-locked memory from CuPy's pinned pool."""
        if not isinstance(array, np.ndarray):
            return False
        pinned = self.xp.cuda.PinnedMemoryPointer
        b = array.base
        while b is not None:
            if isinstance(b, pinned):
                return True
            b = getattr(b, "base", None)
        return False

    def pin(self, array):
        """A copy of NumPy ``array`` in page-locked (pinned) host memory, or
        ``array`` itself if it is pinned already.  Host-to-device copies from
        pinned memory are faster and can run asynchronously
        (``non_blocking=True``); ``DataLoader(pin_memory=True)`` pins batches."""
        if self.is_pinned(array):
            return array
        import cupyx

        out = cupyx.empty_pinned(array.shape, array.dtype)
        out[...] = array
        return out

    # --- primitives -------------------------------------------------------
    def scatter_add(self, target, index, values) -> None:
        import cupyx

        cupyx.scatter_add(target, index, values)

    def _prune_pending(self) -> None:
        self._pending_host_copies = [(ev, buf) for ev, buf in self._pending_host_copies if not ev.done]

    def _hold_until_done(self, obj, stream) -> None:
        """Keep ``obj`` (a host buffer, a device allocation) referenced until the work
        queued on ``stream`` so far has run: CuPy's pools would otherwise hand its
        memory to the next allocation while an asynchronous copy still uses it
        (PyTorch's caching host allocator records such events too)."""
        self._prune_pending()
        ev = self.xp.cuda.Event(disable_timing=True)
        ev.record(stream)
        self._pending_host_copies.append((ev, obj))

    def to_numpy(self, array, non_blocking: bool = False):
        """A host copy of ``array``.  With ``non_blocking`` the copy goes to pinned
        memory on the current stream and the caller must synchronize before reading."""
        cupy = self.xp
        if not non_blocking:
            return cupy.asnumpy(array)
        import cupyx

        out = cupyx.empty_pinned(array.shape, array.dtype)
        with cupy.cuda.Device(array.device.id):
            stream = cupy.cuda.get_current_stream()
            cupy.ascontiguousarray(array).get(out=out, stream=stream, blocking=False)
            self._hold_until_done(out, stream)   # even if the caller drops the result at once
        return out

    def from_numpy(self, array, device_index: int = 0, non_blocking: bool = False):
        """A device copy of ``array`` on ``cuda:device_index`` (a device array
        already there is returned as it is; one on another device is copied).
        With ``non_blocking`` the copy is asynchronous on the current stream:
        straight from ``array`` when it is pinned (:meth:`pin`), else staged
        through a pinned buffer; either host buffer is kept alive until an event
        recorded after the copy has completed, so the pinned pool cannot hand it
        to the next batch while the copy is pending."""
        cupy = self.xp
        if isinstance(array, cupy.ndarray):
            if array.device.id == device_index:
                return array
            return self.to_device(array, device_index)
        with cupy.cuda.Device(device_index):
            if not non_blocking:
                return cupy.asarray(array)
            host = np.asarray(array)
            pinned = host if host.flags.c_contiguous and self.is_pinned(host) else self.pin(
                np.ascontiguousarray(host))
            out = cupy.empty(host.shape, host.dtype)
            stream = cupy.cuda.get_current_stream()
            out.set(pinned, stream=stream)
            self._hold_until_done(pinned, stream)
            return out

    def to_device(self, array, device_index: int, non_blocking: bool = False):
        """A copy of device ``array`` on ``cuda:device_index`` (peer copy, on the
        current stream of the destination; ``non_blocking`` changes nothing:
        device-to-device copies never block the host).  Stream-ordered both ways:
        the destination stream first waits for an event recorded on the source
        device's current stream (work still writing ``array``), and the source
        stream then waits for the copy (later work there must not overwrite or
        free ``array`` before the copy has read it)."""
        cupy = self.xp
        src_dev = array.device.id
        with cupy.cuda.Device(src_dev):
            src = cupy.ascontiguousarray(array)
            src_stream = cupy.cuda.get_current_stream()
            written = cupy.cuda.Event(disable_timing=True)
            written.record(src_stream)
        with cupy.cuda.Device(device_index):
            dst_stream = cupy.cuda.get_current_stream()
            dst_stream.wait_event(written)
            out = src.copy()
            read = cupy.cuda.Event(disable_timing=True)
            read.record(dst_stream)
        with cupy.cuda.Device(src_dev):
            src_stream.wait_event(read)
        return out

    def record_stream(self, array, stream) -> None:
        """``Tensor.record_stream``: ``array`` is used by work queued on ``stream``
        (a ``cupy.cuda.Stream``), so its memory must not go back to the pool for
        reuse until that work is done.  When ``array`` is garbage collected an
        event is recorded on ``stream`` and the allocation is held until it completes."""
        import weakref

        mem = array.data.mem
        weakref.finalize(array, self._hold_until_done, mem, stream)

    def sliding_window_view(self, array, window_shape, axis):
        return self.xp.lib.stride_tricks.sliding_window_view(array, window_shape, axis=axis)
