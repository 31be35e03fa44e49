"""The Backend interface shared by the NumPy and CuPy backends."""
from __future__ import annotations

from typing import Any

import numpy as np

from . import fused


class Backend:
    """Array namespace plus the primitives where NumPy and CuPy differ.

    Subclasses set ``name`` / ``xp`` and override what differs.  Fused ops
    (softmax, norms, optimizer steps, ...) are added as methods whose NumPy
    composition is the reference the CUDA kernels are tested against.
    """

    name: str = ""
    xp: Any = None
    #: whether the fused ops run compiled kernels (CuPy RawKernels, numba), so callers
    #: prefer them over NumPy-specific compositions that beat the NumPy references
    kernels_enabled: bool = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # --- primitives that differ between NumPy and CuPy -------------------
    def scatter_add(self, target, index, values) -> None:
        """``target[index] += values`` with repeated indices accumulating."""
        raise NotImplementedError

    def to_numpy(self, array):
        """A host (NumPy) copy or view of ``array``."""
        raise NotImplementedError

    def from_numpy(self, array, device_index: int = 0):
        """Move a NumPy array onto this backend's device."""
        raise NotImplementedError

    def device_context(self, index: int):
        """Context manager making device ``index`` current (a no-op on CPU)."""
        import contextlib

        return contextlib.nullcontext()

    def sliding_window_view(self, array, window_shape, axis):
        return self.xp.lib.stride_tricks.sliding_window_view(array, window_shape, axis=axis)

    def as_strided(self, array, shape, strides):
        return self.xp.lib.stride_tricks.as_strided(array, shape, strides)

    # --- fused ops ----------------------------------------------------------
    # The reference twins in fused.py, run with this backend's ``xp``; the
    # CuPy backend overrides them with RawKernels (see fused.py for contracts).
    def softmax(self, x, axis=-1):
        return fused.softmax(self.xp, x, axis)

    def safe_softmax_(self, s):
        """Softmax over the last axis of ``s`` in place; rows of all ``-inf`` give zeros
        (attention rows that every key is masked out of).  Returns ``s``."""
        xp = self.xp
        m = s.max(-1, keepdims=True)
        m[m == -np.inf] = 0
        xp.subtract(s, m, out=s)
        xp.exp(s, out=s)
        total = s.sum(-1, keepdims=True)
        total[total == 0] = 1
        s /= total
        return s

    def softmax_backward(self, y, gy, axis=-1):
        return fused.softmax_backward(self.xp, y, gy, axis)

    def log_softmax(self, x, axis=-1):
        return fused.log_softmax(self.xp, x, axis)

    def log_softmax_backward(self, y, gy, axis=-1):
        return fused.log_softmax_backward(self.xp, y, gy, axis)

    def cross_entropy(self, logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
        return fused.cross_entropy(self.xp, logits, target, weight, ignore_index, label_smoothing)

    def cross_entropy_backward(self, saved, target, weight, ignore_index, label_smoothing, g_loss):
        return fused.cross_entropy_backward(self.xp, saved, target, weight, ignore_index,
                                            label_smoothing, g_loss)

    def layer_norm(self, x, weight=None, bias=None, eps=1e-5):
        return fused.layer_norm(self.xp, x, weight, bias, eps)

    def layer_norm_backward(self, gy, x, weight, mean, rstd, has_bias=True):
        return fused.layer_norm_backward(self.xp, gy, x, weight, mean, rstd, has_bias)

    def rms_norm(self, x, weight=None, eps=1e-6):
        return fused.rms_norm(self.xp, x, weight, eps)

    def rms_norm_backward(self, gy, x, weight, rstd):
        return fused.rms_norm_backward(self.xp, gy, x, weight, rstd)

    def gelu(self, x, approximate="none"):
        return fused.gelu(self.xp, x, approximate)

    def gelu_backward(self, x, gy, approximate="none"):
        return fused.gelu_backward(self.xp, x, gy, approximate)

    def silu(self, x):
        return fused.silu(self.xp, x)

    def silu_backward(self, x, gy):
        return fused.silu_backward(self.xp, x, gy)

    def bias_act(self, x, bias, act):
        return fused.bias_act(self.xp, x, bias, act)

    def bias_act_backward(self, x, bias, gy, act):
        return fused.bias_act_backward(self.xp, x, bias, gy, act)

    def dropout(self, x, p, seed, offset):
        return fused.dropout(self.xp, x, p, seed, offset)

    def embedding_backward(self, indices, gy, num_weights, padding_idx=None):
        return fused.embedding_backward(self.xp, indices, gy, num_weights, padding_idx)

    def im2col(self, x, kernel_size, stride=1, padding=0, dilation=1):
        return fused.im2col(self.xp, x, kernel_size, stride, padding, dilation)

    def col2im(self, cols, input_shape, kernel_size, stride=1, padding=0, dilation=1):
        return fused.col2im(self.xp, cols, input_shape, kernel_size, stride, padding, dilation)

    def max_pool2d(self, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        return fused.max_pool2d(self.xp, x, kernel_size, stride, padding, dilation, ceil_mode)

    def max_pool2d_backward(self, gy, indices, input_shape):
        return fused.max_pool2d_backward(self.xp, gy, indices, input_shape)

    def sgd_step(self, params, grads, momentum_bufs, lr, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, maximize=False, first_step=False):
        return fused.sgd_step(self.xp, params, grads, momentum_bufs, lr, momentum, dampening,
                              weight_decay, nesterov, maximize, first_step)

    def adam_step(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr=1e-3,
                  beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False,
                  maximize=False, decoupled_weight_decay=False):
        return fused.adam_step(self.xp, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                               step, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize,
                               decoupled_weight_decay)
