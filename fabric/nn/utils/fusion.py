"""``nn.utils`` module surgery: fold an eval-mode BatchNorm into the
preceding convolution or linear layer (``fuse_conv_bn_eval`` ...),
``skip_init`` and the ``convert_conv*d_weight_memory_format`` helpers.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> conv, bn = nn.Conv2d(2, 3, 3).eval(), nn.BatchNorm2d(3).eval()
    >>> fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    >>> x = fabric.randn(1, 2, 5, 5)
    >>> bool(fabric.allclose(fused(x), bn(conv(x)), atol=1e-6))
    True
"""
from __future__ import annotations

import copy
import inspect

from ... import _creation
from ..._device import device as _device
from ..._tensor import Tensor
from ...ops import rsqrt
from ...random import fork_rng
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "skip_init",
]


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` whose weight and bias absorb the eval-mode
    BatchNorm ``bn`` that follows it (``transpose=True`` for ConvTranspose).
    Both modules must be in eval mode.

    Example::

        >>> import fabric
        >>> from fabric import nn
        >>> nn.utils.fuse_conv_bn_eval(nn.Conv1d(2, 3, 1).eval(), nn.BatchNorm1d(3).eval()).bias.shape
        fabric.Size([3])
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None, transpose: bool = False):
    """The fused ``(weight, bias)`` Parameters of a convolution followed by a
    BatchNorm with running statistics ``bn_rm``/``bn_rv`` and affine
    ``bn_w``/``bn_b`` (None: identity).

    Example::

        >>> import fabric
        >>> w, b = fabric.nn.utils.fuse_conv_bn_weights(fabric.ones(2, 1, 1), None, fabric.zeros(2),
        ...                                             fabric.ones(2), 0.0, None, None)
        >>> w.flatten().tolist(), b.tolist()
        ([1.0, 1.0], [0.0, 0.0])
    """
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = _creation.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = _creation.ones_like(bn_rm)
    if bn_b is None:
        bn_b = _creation.zeros_like(bn_rm)
    bn_var_rsqrt = rsqrt(bn_rv + bn_eps)
    if transpose:
        shape = [1, -1] + [1] * (len(conv_w.shape) - 2)
    else:
        shape = [-1, 1] + [1] * (len(conv_w.shape) - 2)
    fused_conv_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_conv_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return Parameter(fused_conv_w, conv_w.requires_grad), Parameter(fused_conv_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose weight and bias absorb the eval-mode
    BatchNorm ``bn`` that follows it (``bn.num_features`` must equal
    ``linear.out_features`` or be 1).

    Example::

        >>> import fabric
        >>> from fabric import nn
        >>> nn.utils.fuse_linear_bn_eval(nn.Linear(4, 3).eval(), nn.BatchNorm1d(3).eval()).weight.shape
        fabric.Size([3, 4])
    """
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                           bn_w: Tensor, bn_b: Tensor):
    """The fused ``(weight, bias)`` Parameters of a linear layer followed by
    a BatchNorm.

    Example::

        >>> import fabric
        >>> w, b = fabric.nn.utils.fuse_linear_bn_weights(fabric.ones(2, 3), None, fabric.zeros(2),
        ...                                               fabric.ones(2), 0.0, 2 * fabric.ones(2), fabric.ones(2))
        >>> w[0].tolist(), b.tolist()
        ([2.0, 2.0, 2.0], [1.0, 1.0])
    """
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = _creation.zeros_like(bn_rm)
    bn_scale = bn_w * rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


def skip_init(module_cls, *args, **kwargs):
    """Construct ``module_cls(*args, **kwargs)`` without meaningful
    initialization: parameter values are unspecified and must be set by the
    caller.  The class must take a ``device`` argument.

    fabric has no ``meta`` device, so the initialization still runs, but on
    a forked RNG: the global random streams are left exactly where PyTorch
    leaves them (it draws nothing).

    Example::

        >>> import fabric
        >>> fabric.nn.utils.skip_init(fabric.nn.Linear, 5, 1).weight.shape
        fabric.Size([1, 5])
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = _device(kwargs.pop("device", "cpu"))
    kwargs["device"] = final_device
    with fork_rng(devices=[] if final_device.type == "cpu" else [final_device.index or 0]):
        return module_cls(*args, **kwargs)


def convert_conv2d_weight_memory_format(module, memory_format):
    """PyTorch converts the weights of every ``Conv2d``/``ConvTranspose2d``
    in ``module`` to ``memory_format`` (e.g. ``channels_last``).  fabric's
    tensors have no memory formats (arrays are laid out as NumPy/CuPy
    choose, results never depend on it), so ``module`` is returned
    unchanged.

    Example::

        >>> import fabric
        >>> m = fabric.nn.Conv2d(2, 2, 1)
        >>> fabric.nn.utils.convert_conv2d_weight_memory_format(m, None) is m
        True
    """
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """The 3-d counterpart of :func:`convert_conv2d_weight_memory_format`;
    likewise returns ``module`` unchanged (fabric has no memory formats).

    Example::

        >>> import fabric
        >>> m = fabric.nn.Conv3d(2, 2, 1)
        >>> fabric.nn.utils.convert_conv3d_weight_memory_format(m, None) is m
        True
    """
    return module
