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

import contextlib
import functools
import math
import os
from typing import Any

import numpy as np

from .. import _special_functions as _sf
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


# --------------------------------------------------------------------------
# the CUDA random stream
# --------------------------------------------------------------------------
_DEFAULT_SEED = 67280421310721          # PyTorch's default seed, CPU and CUDA
_U64_MASK = (1 << 64) - 1


def _on_device(method):
    """Run a generator method with its device current, so results land there."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._context(self.device_index):
            return method(self, *args, **kwargs)
    return wrapper


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float, np.generic))


class PhiloxGenerator:
    """The default random stream of a CUDA device: Philox4x32-10, counter based.

    The interface is that of the CPU generator
    (:class:`fabric._rng.MT19937Generator`): ``manual_seed``, ``initial_seed``,
    ``seed``, ``get_state``/``set_state`` and the samplers ``uniform``,
    ``normal``, ``randint``, ``random_``, ``randperm``, ``bernoulli``,
    ``exponential``, ``geometric``, ``log_normal``, ``cauchy``,
    ``multinomial``, ``poisson`` (plus ``random_u32``/``random_u64``); results
    are arrays of ``xp`` (CuPy) on ``cuda:device_index``.

    The stream: the state is ``(seed, offset)``.  Each draw of ``n`` 32-bit
    words takes the next offset and uses word ``i`` of
    ``philox4x32_10(counter=(i//4 lo, i//4 hi, offset lo, offset hi), key=seed)``
    (:func:`fabric.backends.fused.philox4x32`, the function the dropout kernel
    implements), then advances the offset by one.  So the same seed gives the
    same numbers on every device, on every run, and on the CPU with
    ``xp=numpy`` (which is how it is tested).  ``get_state()`` is 16 bytes,
    seed then offset (little-endian uint64), the layout of
    ``torch.cuda.get_rng_state()``.

    These are **not** PyTorch's CUDA numbers: PyTorch draws through curand's
    Philox with per-kernel offsets and thread layouts (``rand`` unrolls 4 per
    thread, ``randn`` uses curand's Box-Muller, ``randperm`` sorts random keys
    with a different key width, ...) that depend on the GPU's launch
    configuration, so ``torch.cuda.manual_seed(s)`` and
    ``fabric.cuda.manual_seed(s)`` give different streams.  Only the CPU
    generator reproduces PyTorch.

    Floats: float32/float16 uniforms use the top 24 bits of one word, float64
    53 bits of two; ``normal`` is Box-Muller on such uniforms (float32 math for
    float32/float16); ``randint``/``random_`` take ``u % range + low`` with a
    32-bit word for ranges below ``2**32``, else a 64-bit one; ``randperm`` sorts
    64-bit random keys.

    Example (any array module works; CUDA uses CuPy)::

        >>> g = PhiloxGenerator(np)
        >>> g.manual_seed(0)
        >>> a = g.uniform((3,), np.float32)
        >>> g.manual_seed(0)
        >>> bool((g.uniform((3,), np.float32) == a).all()), g.get_state().tolist()[8]
        (True, 1)
    """

    __slots__ = ("_context", "_offset", "_seed", "device_index", "xp")

    def __init__(self, xp, device_index: int = 0, device_context=None, seed: int = _DEFAULT_SEED):
        self.xp = xp
        self.device_index = int(device_index)
        self._context = device_context or (lambda _i: contextlib.nullcontext())
        self.manual_seed(seed)

    # --- seeding and state ------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        seed = int(seed)
        if not -(1 << 63) <= seed <= _U64_MASK:
            raise RuntimeError("Overflow when unpacking long long")
        self._seed = seed & _U64_MASK
        self._offset = 0

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Reseed from the OS entropy source; returns the new seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def get_state(self) -> np.ndarray:
        """16 uint8 bytes: seed, offset (little-endian uint64)."""
        return np.array([self._seed, self._offset], "<u8").view(np.uint8).copy()

    def set_state(self, state) -> None:
        raw = np.ascontiguousarray(np.asarray(state, dtype=np.uint8)).ravel()
        if raw.size != 16:
            raise RuntimeError(f"RNG state is wrong size: expected 16 bytes (seed, offset), got {raw.size}")
        seed, offset = raw.view("<u8").tolist()
        self._seed, self._offset = int(seed), int(offset)

    def philox_seed_offset(self, increment: int = 1) -> tuple[int, int]:
        """``(seed, offset)`` for a kernel that draws its own Philox numbers (the
        dropout kernel), reserving ``increment`` offsets of the stream."""
        out = (self._seed, self._offset)
        self._offset += max(1, int(increment))
        return out

    # --- raw draws ------------------------------------------------------------------
    def _words(self, n: int):
        """The next ``n`` uint32 words (one offset of the stream)."""
        seed, offset = self.philox_seed_offset(1)
        chunk = 1 << 15 if self.xp is np else 1 << 20
        return fused._philox_words(self.xp, n, seed, offset, chunk)

    def _u64(self, n: int):
        w = self._words(2 * n).astype(np.uint64).reshape(n, 2)
        return (w[:, 0] << np.uint64(32)) | w[:, 1]

    def _unit24(self, n: int, open_: bool = False):
        """float32 uniforms on [0, 1) (``open_``: on (0, 1)) from 24 bits."""
        v = (self._words(n) >> np.uint32(8)).astype(np.float32)
        if open_:
            v += np.float32(0.5)
        return v * np.float32(2.0 ** -24)

    def _unit53(self, n: int, open_: bool = False):
        """float64 uniforms on [0, 1) (``open_``: on (0, 1)) from 53 bits."""
        v = (self._u64(n) >> np.uint64(11)).astype(np.float64)
        if open_:
            v += 0.5
        return v * 2.0 ** -53

    @_on_device
    def random_u32(self, n: int):
        return self._words(int(n))

    @_on_device
    def random_u64(self, n: int):
        return self._u64(int(n))

    # --- uniform / normal ------------------------------------------------------------
    @_on_device
    def uniform(self, shape, dtype=np.float32, low: float = 0.0, high: float = 1.0):
        """``empty(shape, dtype).uniform_(low, high)`` on this device."""
        from .._rng import _FLOAT_RANGE, _float_dtype, _shape_of, _to_float_scalar

        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "uniform_")
        low, high = float(low), float(high)
        unit = low == 0.0 and high == 1.0
        if not unit:
            lowest, top = _FLOAT_RANGE[dt]
            if not (lowest <= low <= top and lowest <= high <= top):
                raise RuntimeError(f"uniform_ bounds out of range for {dt}")
            if low > high:
                raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
            if high - low > top:
                raise RuntimeError("uniform_ expects to-from <= max of the dtype")
        n = math.prod(shape)
        if n == 0:
            return self.xp.empty(shape, dt)
        if dt == np.float64:
            v = self._unit53(n)
            if not unit:
                v = v * (high - low) + low
        else:
            v = self._unit24(n)
            if not unit:
                v = v * np.float32(high - low) + np.float32(low)
            v = v.astype(dt, copy=False)
        if not unit or dt == np.float16:   # a value that rounded up to `high` becomes `low`
            hi = _to_float_scalar(high, dt)
            v = self.xp.where(v == dt.type(hi), dt.type(_to_float_scalar(low, dt)), v)
        return v.reshape(shape)

    def _std_normal(self, n: int, dt):
        """``n`` standard normals (Box-Muller on pairs, both branches used)."""
        xp = self.xp
        pairs = (n + 1) // 2
        if dt == np.float64:
            u = self._unit53(2 * pairs, open_=True)
            two_pi = 2.0 * math.pi
        else:
            u = self._unit24(2 * pairs, open_=True)
            two_pi = np.float32(2.0 * math.pi)
        u1, u2 = u[0::2], u[1::2]
        r = xp.sqrt(-2 * xp.log(u1))
        theta = two_pi * u2
        z = xp.stack([r * xp.cos(theta), r * xp.sin(theta)], axis=1).reshape(-1)
        return z[:n]

    @_on_device
    def normal(self, shape=None, dtype=np.float32, mean=0.0, std=1.0, contiguous: bool = True):
        """``empty(shape, dtype).normal_(mean, std)``; ``mean``/``std`` may be
        arrays (broadcast, as in ``torch.normal(mean, std)``)."""
        from .._rng import _cast, _float_dtype, _shape_of

        xp = self.xp
        dt = _float_dtype(dtype, "normal_")
        if not _is_number(mean) or not _is_number(std):
            m = mean if _is_number(mean) else xp.asarray(mean)
            s = std if _is_number(std) else xp.asarray(std)
            if not _is_number(std) and s.size and not bool((s >= 0).all()):
                raise RuntimeError("normal expects all elements of std >= 0.0")
            full = np.broadcast_shapes(np.shape(m) if _is_number(m) else m.shape,
                                       np.shape(s) if _is_number(s) else s.shape)
            if shape is not None and _shape_of(shape) != full:
                raise RuntimeError(f"shape {shape} does not match broadcast of mean/std {full}")
            z = self._std_normal(math.prod(full), dt).reshape(full).astype(dt, copy=False)
            return (z * s + m).astype(dt, copy=False)
        shape = _shape_of(shape)
        mean, std = float(mean), float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        n = math.prod(shape)
        if n == 0:
            return xp.empty(shape, dt)
        z = self._std_normal(n, dt)
        if mean != 0.0 or std != 1.0:
            z = z * (np.float32(std) if z.dtype == np.float32 else std) + (
                np.float32(mean) if z.dtype == np.float32 else mean)
        return _cast(z, dt).reshape(shape)

    # --- integers ---------------------------------------------------------------------
    def randint(self, low: int, high: int, shape, dtype=np.int64):
        """``randint(low, high, shape, dtype=dtype)`` on this device."""
        return self.random_(shape, dtype, low, high)

    @_on_device
    def random_(self, shape, dtype=np.int64, low=None, high=None):
        """``Tensor.random_()`` / ``random_(to)`` / ``random_(from, to)`` (ranges as on the CPU)."""
        from .._rng import _cast, _dtype, _random_range, _shape_of

        shape = _shape_of(shape)
        dt = _dtype(dtype)
        n = math.prod(shape)
        if low is None and high is None:
            return self._random_default(n, dt).reshape(shape)
        bounds = _random_range(low, high, dt)
        if bounds is not None:
            return self._random_from_to(n, bounds[0], bounds[1], dt).reshape(shape)
        return _cast(self._u64(n).view(np.int64), dt).reshape(shape)

    def _random_from_to(self, n, rng, base, dt):
        from .._rng import _cast

        v = self._words(n).astype(np.uint64) if rng < 1 << 32 else self._u64(n)
        v = v % np.uint64(rng) if rng else v
        v = (v + np.uint64(base & _U64_MASK)).view(np.int64)
        return _cast(v, dt)

    def _random_default(self, n, dt):
        from .._rng import _DIGITS, _FLOATS, _cast

        if dt == np.bool_:
            return (self._words(n) & np.uint32(1)).astype(np.bool_)
        if dt == np.float64:
            return (self._u64(n) % np.uint64((1 << 53) + 1)).astype(np.float64)
        if dt in _FLOATS:
            return _cast(self._words(n).astype(np.uint64) % np.uint64((1 << _DIGITS[dt]) + 1), dt)
        if dt == np.int64:
            return (self._u64(n) % np.uint64(1 << 63)).astype(np.int64)
        if dt in (np.dtype(np.int32), np.dtype(np.int16), np.dtype(np.int8), np.dtype(np.uint8)):
            return (self._words(n).astype(np.uint64) % np.uint64(int(np.iinfo(dt).max) + 1)).astype(dt)
        raise NotImplementedError(f"random_ does not support dtype {dt}")

    @_on_device
    def randperm(self, n: int, dtype=np.int64):
        """A random permutation of ``0..n-1``: the order that sorts ``n`` random 64-bit keys."""
        from .._rng import _DIGITS, _FLOATS, _cast, _dtype

        n = int(n)
        if n < 0:
            raise RuntimeError(f"n must be non-negative, got {n}")
        dt = _dtype(dtype)
        if dt in _FLOATS and n > (1 << _DIGITS[dt]) + 1:
            raise RuntimeError(f"n cannot be greater than 2**{_DIGITS[dt]}+1 for {dt}")
        if n == 0:
            return self.xp.empty((0,), dt)
        return _cast(self.xp.argsort(self._u64(n)).astype(np.int64, copy=False), dt)

    # --- other distributions ------------------------------------------------------------------
    @_on_device
    def bernoulli(self, p, shape, dtype=np.float32):
        """``empty(shape, dtype).bernoulli_(p)``: a number ``p`` against 53-bit
        uniforms, an array ``p`` (NumPy or device, broadcast to ``shape``)
        against 24-bit ones unless it is float64."""
        from .._rng import _FLOATS, _dtype, _shape_of

        xp = self.xp
        shape = _shape_of(shape)
        dt = _dtype(dtype)
        n = math.prod(shape)
        if _is_number(p):
            p = float(p)
            if not 0.0 <= p <= 1.0:
                raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
            if n == 0:
                return xp.empty(shape, dt)
            return (self._unit53(n) < p).astype(dt).reshape(shape)
        p = xp.asarray(p)
        if p.dtype not in _FLOATS:
            raise NotImplementedError(f"bernoulli_ expects a floating point p, got {p.dtype}")
        pb = xp.broadcast_to(p, shape)
        if n == 0:
            return xp.empty(shape, dt)
        if not bool(((pb >= 0) & (pb <= 1)).all()):
            raise RuntimeError("bernoulli_ expects all elements of p to be in [0, 1]")
        u = self._unit53(n) if p.dtype == np.float64 else self._unit24(n)
        return (u.reshape(shape) < pb.astype(u.dtype)).astype(dt)

    def _finish(self, v, dt, shape):
        from .._rng import _cast

        return _cast(v, dt).reshape(shape)

    @_on_device
    def exponential(self, shape, dtype=np.float32, lambd: float = 1.0):
        from .._rng import _float_dtype, _shape_of

        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "exponential_")
        lambd = float(lambd)
        if not lambd > 0.0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        u = self._unit53(math.prod(shape))
        return self._finish((-1.0 / lambd) * self.xp.log1p(-u), dt, shape)

    @_on_device
    def geometric(self, shape, dtype=np.float32, p: float = 0.5):
        from .._rng import _dtype, _shape_of

        shape = _shape_of(shape)
        dt = _dtype(dtype)
        p = float(p)
        if not 0.0 < p < 1.0:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        u = self._unit53(math.prod(shape), open_=True)
        return self._finish(self.xp.ceil(self.xp.log(u) / math.log1p(-p)), dt, shape)

    @_on_device
    def log_normal(self, shape, dtype=np.float32, mean: float = 1.0, std: float = 2.0):
        from .._rng import _float_dtype, _shape_of

        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "log_normal_")
        mean, std = float(mean), float(std)
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        z = self._std_normal(math.prod(shape), np.dtype(np.float64))
        return self._finish(self.xp.exp(z * std + mean), dt, shape)

    @_on_device
    def cauchy(self, shape, dtype=np.float32, median: float = 0.0, sigma: float = 1.0):
        from .._rng import _float_dtype, _shape_of

        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "cauchy_")
        median, sigma = float(median), float(sigma)
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        u = self._unit53(math.prod(shape), open_=True)
        return self._finish(median + sigma * self.xp.tan(math.pi * (u - 0.5)), dt, shape)

    @_on_device
    def multinomial(self, probs, num_samples: int, replacement: bool = False):
        """``multinomial(probs, num_samples, replacement)`` (int64), ``probs``
        NumPy or device: without replacement the top ``probs / Exp(1)`` (as
        PyTorch), with replacement the inverse of each row's normalised
        cumulative sum at uniform points."""
        from .._rng import _FLOATS

        xp = self.xp
        p = xp.asarray(probs)
        if p.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if p.dtype not in _FLOATS:
            raise NotImplementedError(f"multinomial only supports floating-point dtypes for input, got: {p.dtype}")
        num_samples = int(num_samples)
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        n_cat = p.shape[-1]
        if not replacement and num_samples > n_cat:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        if n_cat > 1 << 24:
            raise RuntimeError("number of categories cannot exceed 2^24")
        out_shape = p.shape[:-1] + (num_samples,)
        if math.prod(out_shape) == 0:
            return xp.empty(out_shape, np.int64)
        rows = p.reshape(-1, n_cat).astype(np.float64)
        if not bool((xp.isfinite(rows) & (rows >= 0)).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        total = rows.sum(axis=1, keepdims=True)
        if not bool((total > 0).all()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        n_rows = rows.shape[0]
        if not replacement or num_samples == 1:
            q = rows / -xp.log1p(-self._unit53(rows.size).reshape(rows.shape))
            if num_samples == 1:
                idx = xp.argmax(q, axis=1)[:, None]
            else:
                idx = xp.argsort(-q, axis=1)[:, :num_samples]
            return idx.astype(np.int64).reshape(out_shape)
        cum = xp.cumsum(rows / total, axis=1)
        cum[:, -1] = 1.0
        # one sorted array: row r's cumulative sums shifted by r
        offs = xp.arange(n_rows, dtype=np.float64)[:, None]
        u = self._unit53(n_rows * num_samples, open_=True).reshape(n_rows, num_samples)
        flat = xp.searchsorted((cum + offs).reshape(-1), (u + offs).reshape(-1), side="left")
        idx = flat.reshape(n_rows, num_samples) - (xp.arange(n_rows) * n_cat)[:, None]
        return xp.minimum(idx, n_cat - 1).astype(np.int64).reshape(out_shape)

    @_on_device
    def poisson(self, rates):
        """``poisson(rates)``: same shape and dtype as ``rates`` (NumPy or device).
        Inversion by sequential search for rates below 10, Hormann's PTRS
        transformed rejection above, both vectorised over all elements."""
        from .._rng import _cast, _float_dtype

        xp = self.xp
        lam = xp.asarray(rates)
        dt = _float_dtype(lam.dtype, "poisson")
        flat = lam.astype(np.float64).reshape(-1)
        if bool((flat < 0).any()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        out = xp.zeros(flat.shape, np.float64)
        small = xp.flatnonzero((flat > 0) & (flat < 10))
        if small.size:
            out[small] = self._poisson_inversion(flat[small])
        big = xp.flatnonzero(flat >= 10)
        if big.size:
            out[big] = self._poisson_ptrs(flat[big])
        return _cast(out, dt).reshape(lam.shape)

    def _poisson_inversion(self, lam):
        xp = self.xp
        u = self._unit53(lam.size)
        k = xp.zeros(lam.shape, np.float64)
        pk = xp.exp(-lam)
        cdf = pk.copy()
        active = u > cdf
        for _ in range(1000):      # P(k > 1000) is zero in float64 for lam < 10
            if not bool(active.any()):
                break
            k = xp.where(active, k + 1, k)
            pk = xp.where(active, pk * lam / xp.maximum(k, 1), pk)
            cdf = xp.where(active, cdf + pk, cdf)
            active &= u > cdf
        return k

    def _poisson_ptrs(self, lam):
        xp = self.xp
        slam, loglam = xp.sqrt(lam), xp.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        out = xp.empty(lam.shape, np.float64)
        todo = xp.arange(lam.size)
        while todo.size:
            m = todo.size
            U = self._unit53(m) - 0.5
            V = self._unit53(m, open_=True)
            us = 0.5 - xp.abs(U)
            a_, b_, lam_ = a[todo], b[todo], lam[todo]
            k = xp.floor((2 * a_ / us + b_) * U + lam_ + 0.43)
            fast = (us >= 0.07) & (vr[todo] >= V)
            bad = (k < 0) | ((us < 0.013) & (us < V))
            with np.errstate(divide="ignore", invalid="ignore"):
                slow = (xp.log(V) + xp.log(inv_alpha[todo]) - xp.log(a_ / (us * us) + b_)
                        <= -lam_ + k * loglam[todo] - _lgamma(xp, k + 1))
            ok = fast | (~bad & slow)
            out[todo[ok]] = k[ok]
            todo = todo[~ok]
        return out


def _lgamma(xp, x):
    if xp is np:  # fabric's own NumPy kernel (+inf at the poles, like SciPy's gammaln)
        return _sf.lgamma(np, np.asarray(x, np.float64))
    import cupyx.scipy.special

    return cupyx.scipy.special.gammaln(x)
