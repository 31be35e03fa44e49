"""``SyncBatchNorm``: batch normalisation whose training statistics are taken
over the whole process group (PyTorch's ``torch.nn.SyncBatchNorm``).

When it synchronises: in training mode, with batch statistics, while
``fabric.distributed`` is initialised and the group (``process_group``, else
the world) has more than one process.  Otherwise — eval mode, no process
group, a world of one — it is exactly ``BatchNorm``.

Synchronised forward: each rank sums its per-channel values, squares and
count (float64); one ``all_reduce`` (SUM) gives the global mean and biased
variance, which normalise the local batch; running statistics take the
global mean and the unbiased global variance.  Backward all-reduces the two
per-channel sums the input gradient needs (sum of ``dy`` and of
``dy * x_hat``); weight and bias gradients stay local, as in PyTorch (DDP
averages them).  The synchronised backward is not itself differentiable.

Differences from PyTorch: PyTorch raises ``ValueError("SyncBatchNorm
expected input tensor to be on GPU ...")`` for CPU input in training mode
whenever ``torch.distributed`` is initialised (even a world of one); fabric
normalises CPU input — plainly for a world of one, synchronised across
ranks otherwise — so that CPU (gloo) training scripts run.

Example::

    >>> import fabric
    >>> model = fabric.nn.Sequential(fabric.nn.Conv2d(1, 2, 1), fabric.nn.BatchNorm2d(2))
    >>> model = fabric.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    >>> model[1]
    SyncBatchNorm(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> model(fabric.randn(4, 1, 3, 3)).shape
    fabric.Size([4, 2, 3, 3])
"""
from __future__ import annotations

from ... import distributed as dist
from ..._tensor import Tensor
from ...autograd.function import Function, once_differentiable
from ...autograd.grad_mode import no_grad
from ...ops._util import xp_of
from .batchnorm import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _channel_view(x):
    """``x`` (N, C, *) as (C, N * prod(*)) axes to reduce and a broadcast shape for per-channel values."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    return axes, shape


def _all_reduce_sum(buf, group):
    t = Tensor._make(buf, False)
    dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
    return t._data


def _global_stats(x, group):
    """Per-channel mean, biased variance (float64) and value count of ``x`` over every rank of ``group``."""
    xp = xp_of(x)
    axes, _ = _channel_view(x)
    c = x.shape[1]
    x64 = x.astype(xp.float64, copy=False)
    buf = xp.concatenate([x64.sum(axis=axes), (x64 * x64).sum(axis=axes),
                          xp.asarray([x.size // c], dtype=xp.float64)])
    buf = _all_reduce_sum(buf, group)
    n = float(buf[2 * c])
    mean = buf[:c] / n
    return mean, xp.maximum(buf[c:2 * c] / n - mean * mean, 0.0), n


class _SyncBatchNormFn(Function):
    """Normalise with given global statistics; backward all-reduces the two
    per-channel sums the input gradient needs."""

    _array_forward = True
    _node_name = "SyncBatchNormBackward"

    @staticmethod
    def forward(ctx, x, weight, bias, mean, invstd, n, group):
        _, shape = _channel_view(x)
        xhat = ((x - mean.reshape(shape)) * invstd.reshape(shape)).astype(x.dtype, copy=False)
        y = xhat
        if weight is not None:
            y = y * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        ctx.stats = (xhat, invstd.astype(x.dtype), n, weight, bias is not None, group)
        return y.astype(x.dtype, copy=False)

    @staticmethod
    @once_differentiable
    def backward(ctx, gy):
        xhat, invstd, n, weight, has_bias, group = ctx.stats
        dy = gy._data
        xp = xp_of(dy)
        axes, shape = _channel_view(dy)
        c = dy.shape[1]
        sum_dy = dy.sum(axis=axes)
        sum_dy_xhat = (dy * xhat).sum(axis=axes)
        both = _all_reduce_sum(xp.concatenate([sum_dy, sum_dy_xhat]).astype(xp.float64), group)
        g_sum_dy, g_sum_dy_xhat = both[:c].astype(dy.dtype), both[c:].astype(dy.dtype)
        scale = invstd if weight is None else invstd * weight
        gx = scale.reshape(shape) * (dy - g_sum_dy.reshape(shape) / n - xhat * (g_sum_dy_xhat.reshape(shape) / n))
        # weight and bias gradients stay local, as in PyTorch (DDP averages them)
        gw = None if weight is None else Tensor._make(sum_dy_xhat, False)
        gb = Tensor._make(sum_dy, False) if has_bias else None
        return Tensor._make(gx.astype(dy.dtype, copy=False), False), gw, gb, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over (N, C, *) input whose training statistics span the
    process group (see the module docstring for when it synchronises).

    Example::

        >>> import fabric
        >>> bn = fabric.nn.SyncBatchNorm(3)
        >>> bn(fabric.randn(4, 3, 2)).shape
        fabric.Size([4, 3, 2])
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        if not (self.training and dist.is_available() and dist.is_initialized()):
            return super().forward(input)
        group = self.process_group if self.process_group else dist.group.WORLD
        if dist.get_world_size(group) <= 1:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        x = input._data
        mean, var, n = _global_stats(x, group)
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got {n:.0f} values per "
                             "channel across the process group")
        if self.track_running_stats:
            with no_grad():
                for buf, new in ((self.running_mean, mean), (self.running_var, var * (n / (n - 1)))):
                    upd = factor * new + (1 - factor) * buf._data
                    buf.copy_(Tensor._make(upd.astype(buf._data.dtype, copy=False), False))
        invstd = (1.0 / xp_of(x).sqrt(var + self.eps)).astype(x.dtype)
        return _SyncBatchNormFn.apply(input, self.weight, self.bias, mean.astype(x.dtype), invstd, n, group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every ``BatchNorm*d`` in ``module`` (recursively) by a
        ``SyncBatchNorm`` sharing its parameters and buffers; a BatchNorm
        ``module`` itself comes back as a new ``SyncBatchNorm``.

        Example::

            >>> import fabric
            >>> fabric.nn.SyncBatchNorm.convert_sync_batchnorm(fabric.nn.BatchNorm1d(2, momentum=None))
            SyncBatchNorm(2, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)
        """
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                          module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
