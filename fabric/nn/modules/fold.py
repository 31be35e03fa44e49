"""``Fold`` (col2im) and ``Unfold`` (im2col).

Example::

    >>> import fabric
    >>> x = fabric.randn(2, 3, 5, 5)
    >>> cols = fabric.nn.Unfold(kernel_size=2)(x)
    >>> cols.shape, fabric.nn.Fold((5, 5), 2)(cols).shape
    (fabric.Size([2, 12, 16]), fabric.Size([2, 3, 5, 5]))
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sum sliding blocks (N, C * prod(kernel_size), L) into (N, C, *output_size).

    Example::

        >>> import fabric
        >>> fabric.nn.Fold(output_size=(4, 5), kernel_size=2)
        Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)
    """

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))


class Unfold(Module):
    """Extract sliding blocks: (N, C, H, W) -> (N, C * prod(kernel_size), L).

    Example::

        >>> import fabric
        >>> fabric.nn.Unfold(kernel_size=(2, 3))(fabric.randn(2, 5, 3, 4)).shape
        fabric.Size([2, 30, 4])
    """

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}".format(
            **self.__dict__)
