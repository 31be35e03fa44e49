"""Padding modules: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``,
``ReplicationPad`` and ``CircularPad`` in 1, 2 and 3 dimensions (each
``F.pad`` with its mode); ``padding`` is an int or a tuple
(left, right[, top, bottom[, front, back]]) as in PyTorch.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.ReflectionPad1d(2)(fabric.arange(4.0).reshape(1, 1, 4))
    tensor([[[2., 1., 0., 1., 2., 3., 2., 1.]]])
    >>> nn.ZeroPad2d((1, 1, 2, 0))
    ZeroPad2d((1, 1, 2, 0))
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _ntuple(n):
    def parse(x):
        return tuple(x) if isinstance(x, (list, tuple)) else (x,) * n
    return parse


_pair, _quadruple, _sextuple = _ntuple(2), _ntuple(4), _ntuple(6)
_PARSE = {1: _pair, 2: _quadruple, 3: _sextuple}


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``.

    Example::

        >>> import fabric
        >>> fabric.nn.ConstantPad1d((1, 2), 3.5)(fabric.zeros(1, 2))
        tensor([[3.5000, 0.0000, 0.0000, 3.5000, 3.5000]])
    """

    def __init__(self, padding, value: float) -> None:
        super().__init__(value)
        self.padding = _pair(padding)


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``.

    Example::

        >>> import fabric
        >>> fabric.nn.ConstantPad2d(1, 2.0)(fabric.zeros(1, 1, 1)).shape
        fabric.Size([1, 3, 3])
    """

    def __init__(self, padding, value: float) -> None:
        super().__init__(value)
        self.padding = _quadruple(padding)


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``.

    Example::

        >>> import fabric
        >>> fabric.nn.ConstantPad3d(1, 0.0)(fabric.ones(1, 1, 1, 1)).shape
        fabric.Size([1, 3, 3, 3])
    """

    def __init__(self, padding, value: float) -> None:
        super().__init__(value)
        self.padding = _sextuple(padding)


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros.

    Example::

        >>> import fabric
        >>> fabric.nn.ZeroPad1d(1)(fabric.ones(1, 2))
        tensor([[0., 1., 1., 0.]])
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros.

    Example::

        >>> import fabric
        >>> fabric.nn.ZeroPad2d((1, 0, 0, 1))(fabric.ones(1, 1, 1))
        tensor([[[0., 1.],
                 [0., 0.]]])
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros.

    Example::

        >>> import fabric
        >>> fabric.nn.ZeroPad3d(1)(fabric.ones(1, 1, 1, 1)).sum()
        tensor(1.)
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ModePadNd(Module):
    __constants__ = ["padding"]
    _mode = ""

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _mode_pad(name, mode, nd, example):
    parse = _PARSE[nd]

    def __init__(self, padding) -> None:
        Module.__init__(self)
        self.padding = parse(padding)

    doc = (f"Pad the last {nd} dim{'s' if nd > 1 else ''} of a {nd + 1}-D or {nd + 2}-D input by {mode}ing "
           f"(``F.pad(input, padding, '{mode}')``).\n\n    Example::\n\n{example}")
    return type(name, (_ModePadNd,), {"__init__": __init__, "_mode": mode, "__doc__": doc,
                                       "__module__": __name__, "__qualname__": name})


ReflectionPad1d = _mode_pad("ReflectionPad1d", "reflect", 1, """        >>> import fabric
        >>> fabric.nn.ReflectionPad1d((1, 2))(fabric.tensor([[0.0, 1.0, 2.0]]))
        tensor([[1., 0., 1., 2., 1., 0.]])
""")
ReflectionPad2d = _mode_pad("ReflectionPad2d", "reflect", 2, """        >>> import fabric
        >>> fabric.nn.ReflectionPad2d(1)(fabric.randn(1, 3, 3)).shape
        fabric.Size([1, 5, 5])
""")
ReflectionPad3d = _mode_pad("ReflectionPad3d", "reflect", 3, """        >>> import fabric
        >>> fabric.nn.ReflectionPad3d(1)(fabric.randn(1, 2, 2, 2)).shape
        fabric.Size([1, 4, 4, 4])
""")
ReplicationPad1d = _mode_pad("ReplicationPad1d", "replicate", 1, """        >>> import fabric
        >>> fabric.nn.ReplicationPad1d((2, 1))(fabric.tensor([[0.0, 1.0]]))
        tensor([[0., 0., 0., 1., 1.]])
""")
ReplicationPad2d = _mode_pad("ReplicationPad2d", "replicate", 2, """        >>> import fabric
        >>> fabric.nn.ReplicationPad2d(1)(fabric.randn(1, 3, 3)).shape
        fabric.Size([1, 5, 5])
""")
ReplicationPad3d = _mode_pad("ReplicationPad3d", "replicate", 3, """        >>> import fabric
        >>> fabric.nn.ReplicationPad3d(1)(fabric.randn(1, 2, 2, 2)).shape
        fabric.Size([1, 4, 4, 4])
""")


class _CircularPadNd(_ModePadNd):
    _mode = "circular"
    _nd = 0

    def _check_input_dim(self, input) -> None:
        nd = self._nd
        if input.dim() not in (nd + 1, nd + 2):
            raise ValueError(f"expected {nd + 1}D or {nd + 2}D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim circularly (wrapping around).

    Example::

        >>> import fabric
        >>> fabric.nn.CircularPad1d(1)(fabric.tensor([[0.0, 1.0, 2.0]]))
        tensor([[2., 0., 1., 2., 0.]])
    """

    _nd = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _pair(padding)


class CircularPad2d(_CircularPadNd):
    """Pad the last two dims circularly.

    Example::

        >>> import fabric
        >>> fabric.nn.CircularPad2d(1)(fabric.randn(1, 3, 3)).shape
        fabric.Size([1, 5, 5])
    """

    _nd = 2

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _quadruple(padding)


class CircularPad3d(_CircularPadNd):
    """Pad the last three dims circularly.

    Example::

        >>> import fabric
        >>> fabric.nn.CircularPad3d(1)(fabric.randn(1, 2, 2, 2)).shape
        fabric.Size([1, 4, 4, 4])
    """

    _nd = 3

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _sextuple(padding)
