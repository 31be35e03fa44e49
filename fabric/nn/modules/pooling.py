"""Pooling modules: max, max-unpool, average, adaptive and power-average
pooling in 1, 2 and 3 dimensions (thin wrappers over ``F``), with PyTorch's
attributes and ``repr``.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.MaxPool2d(2)(fabric.randn(1, 3, 8, 8)).shape
    fabric.Size([1, 3, 4, 4])
    >>> nn.AdaptiveAvgPool2d((1, 1))
    AdaptiveAvgPool2d(output_size=(1, 1))
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d"]


def _ntuple(n):
    def parse(x):
        return tuple(x) if isinstance(x, (list, tuple)) else (x,) * n
    return parse


_single, _pair, _triple = _ntuple(1), _ntuple(2), _ntuple(3)


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling (see :func:`F.max_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.MaxPool1d(3, stride=2)(fabric.randn(2, 4, 9)).shape
        fabric.Size([2, 4, 4])
    """

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling (see :func:`F.max_pool2d`); ``return_indices=True``
    also returns the argmax positions for :class:`MaxUnpool2d`.

    Example::

        >>> import fabric
        >>> y, i = fabric.nn.MaxPool2d(2, return_indices=True)(fabric.randn(1, 1, 4, 4))
        >>> y.shape, i.dtype
        (fabric.Size([1, 1, 2, 2]), fabric.int64)
    """

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling (see :func:`F.max_pool3d`).

    Example::

        >>> import fabric
        >>> fabric.nn.MaxPool3d(2)(fabric.randn(1, 2, 4, 4, 4)).shape
        fabric.Size([1, 2, 2, 2, 2])
    """

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _MaxUnpoolNd(Module):
    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool1d` (see :func:`F.max_unpool1d`).

    Example::

        >>> import fabric
        >>> y, i = fabric.nn.MaxPool1d(2, return_indices=True)(fabric.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
        >>> fabric.nn.MaxUnpool1d(2)(y, i)
        tensor([[[0., 3., 2., 0.]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if (stride is not None) else kernel_size)
        self.padding = _single(padding)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool2d` (see :func:`F.max_unpool2d`).

    Example::

        >>> import fabric
        >>> y, i = fabric.nn.MaxPool2d(2, return_indices=True)(fabric.randn(1, 1, 4, 4))
        >>> fabric.nn.MaxUnpool2d(2)(y, i).shape
        fabric.Size([1, 1, 4, 4])
    """

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride if (stride is not None) else kernel_size)
        self.padding = _pair(padding)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool3d` (see :func:`F.max_unpool3d`).

    Example::

        >>> import fabric
        >>> y, i = fabric.nn.MaxPool3d(2, return_indices=True)(fabric.randn(1, 1, 4, 4, 4))
        >>> fabric.nn.MaxUnpool3d(2)(y, i).shape
        fabric.Size([1, 1, 4, 4, 4])
    """

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _triple(kernel_size)
        self.stride = _triple(stride if (stride is not None) else kernel_size)
        self.padding = _triple(padding)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class _AvgPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling (see :func:`F.avg_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AvgPool1d(2)(fabric.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
        tensor([[[2., 1.]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling (see :func:`F.avg_pool2d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AvgPool2d(3, stride=2, padding=1)(fabric.randn(1, 2, 8, 8)).shape
        fabric.Size([1, 2, 4, 4])
    """

    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling (see :func:`F.avg_pool3d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AvgPool3d(2)(fabric.randn(1, 2, 4, 4, 4)).shape
        fabric.Size([1, 2, 2, 2, 2])
    """

    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptiveAvgPoolNd(Module):
    __constants__ = ["output_size"]

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed length (see :func:`F.adaptive_avg_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AdaptiveAvgPool1d(3)(fabric.randn(2, 4, 10)).shape
        fabric.Size([2, 4, 3])
    """

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (H, W) (see :func:`F.adaptive_avg_pool2d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AdaptiveAvgPool2d((None, 2))(fabric.randn(1, 3, 5, 7)).shape
        fabric.Size([1, 3, 5, 2])
    """

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (D, H, W) (see :func:`F.adaptive_avg_pool3d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AdaptiveAvgPool3d(1)(fabric.randn(1, 3, 4, 5, 6)).shape
        fabric.Size([1, 3, 1, 1, 1])
    """

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed length (see :func:`F.adaptive_max_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AdaptiveMaxPool1d(3)(fabric.randn(2, 4, 10)).shape
        fabric.Size([2, 4, 3])
    """

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W) (see :func:`F.adaptive_max_pool2d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AdaptiveMaxPool2d(2)(fabric.randn(1, 3, 5, 7)).shape
        fabric.Size([1, 3, 2, 2])
    """

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (D, H, W) (see :func:`F.adaptive_max_pool3d`).

    Example::

        >>> import fabric
        >>> fabric.nn.AdaptiveMaxPool3d(2)(fabric.randn(1, 3, 4, 5, 6)).shape
        fabric.Size([1, 3, 2, 2, 2])
    """

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """Power-average pooling (see :func:`F.lp_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.LPPool1d(2, 2)(fabric.tensor([[[3.0, 4.0]]]))
        tensor([[[5.]]])
    """

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling (see :func:`F.lp_pool2d`).

    Example::

        >>> import fabric
        >>> fabric.nn.LPPool2d(2, 3, stride=2)(fabric.randn(1, 2, 7, 7)).shape
        fabric.Size([1, 2, 3, 3])
    """

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling (see :func:`F.lp_pool3d`).

    Example::

        >>> import fabric
        >>> fabric.nn.LPPool3d(1, 2)(fabric.ones(1, 1, 2, 2, 2))
        tensor([[[[[8.]]]]])
    """

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)
