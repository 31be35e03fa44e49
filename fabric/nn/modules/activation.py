"""Activation modules (PyTorch's ``torch.nn`` activations): thin wrappers
around :mod:`fabric.nn.functional` with PyTorch's constructor arguments,
``__constants__`` and ``repr``.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.LeakyReLU(0.2)
    LeakyReLU(negative_slope=0.2)
    >>> nn.Softmax(dim=-1)(fabric.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
"""
from __future__ import annotations

import warnings

from ... import ops as _ops
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = [
    "Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish", "Hardswish",
    "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "PReLU",
    "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax",
]


def _inplace_str(inplace, lead=", "):
    return f"{lead}inplace=True" if inplace else ""


class Threshold(Module):
    """``value`` where ``input <= threshold``, else ``input``.

    >>> import fabric
    >>> fabric.nn.Threshold(0.1, 20)(fabric.tensor([0.0, 1.0]))
    tensor([20.,  1.])
    """

    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class ReLU(Module):
    """``max(0, x)``.

    >>> import fabric
    >>> fabric.nn.ReLU()(fabric.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class RReLU(Module):
    """Randomised leaky ReLU (random slopes in training, their mean in eval).

    >>> import fabric
    >>> fabric.nn.RReLU(0.1, 0.3).eval()(fabric.tensor([-1.0, 2.0]))
    tensor([-0.2000,  2.0000])
    """

    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """Clamp to ``[min_val, max_val]``.

    >>> import fabric
    >>> fabric.nn.Hardtanh(-2.0, 2.0)(fabric.tensor([-3.0, 3.0]))
    tensor([-2.,  2.])
    """

    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False, min_value=None,
                 max_value=None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)``.

    >>> import fabric
    >>> fabric.nn.ReLU6()(fabric.tensor([-1.0, 8.0]))
    tensor([0., 6.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class Sigmoid(Module):
    """Logistic function ``1 / (1 + exp(-x))``.

    >>> import fabric
    >>> fabric.nn.Sigmoid()(fabric.tensor([0.0]))
    tensor([0.5000])
    """

    def forward(self, input):
        return _ops.sigmoid(input)


class Hardsigmoid(Module):
    """``relu6(x + 3) / 6``.

    >>> import fabric
    >>> fabric.nn.Hardsigmoid()(fabric.tensor([0.0]))
    tensor([0.5000])
    """

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Tanh(Module):
    """Hyperbolic tangent.

    >>> import fabric
    >>> fabric.nn.Tanh()(fabric.tensor([0.0]))
    tensor([0.])
    """

    def forward(self, input):
        return _ops.tanh(input)


class SiLU(Module):
    """``x * sigmoid(x)``.

    >>> import fabric
    >>> fabric.nn.SiLU()(fabric.tensor([0.0]))
    tensor([0.])
    """

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class Mish(Module):
    """``x * tanh(softplus(x))``.

    >>> import fabric
    >>> fabric.nn.Mish()(fabric.tensor([0.0]))
    tensor([0.])
    """

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class Hardswish(Module):
    """``x * relu6(x + 3) / 6``.

    >>> import fabric
    >>> fabric.nn.Hardswish()(fabric.tensor([3.0]))
    tensor([3.])
    """

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class ELU(Module):
    """``x`` for x > 0, else ``alpha * (exp(x) - 1)``.

    >>> import fabric
    >>> fabric.nn.ELU()
    ELU(alpha=1.0)
    """

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    >>> import fabric
    >>> fabric.nn.CELU(2.0)
    CELU(alpha=2.0)
    """

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class SELU(Module):
    """Self-normalising ELU.

    >>> import fabric
    >>> fabric.nn.SELU()(fabric.tensor([0.0]))
    tensor([0.])
    """

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class GLU(Module):
    """Gated linear unit over ``dim``.

    >>> import fabric
    >>> fabric.nn.GLU()(fabric.ones(2, 4)).shape
    fabric.Size([2, 2])
    """

    __constants__ = ["dim"]

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GELU(Module):
    """Gaussian error linear unit (``approximate='none'`` or ``'tanh'``).

    >>> import fabric
    >>> fabric.nn.GELU("tanh")
    GELU(approximate='tanh')
    """

    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0.

    >>> import fabric
    >>> fabric.nn.Hardshrink()
    Hardshrink(0.5)
    """

    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class LeakyReLU(Module):
    """``x`` for x > 0, else ``negative_slope * x``.

    >>> import fabric
    >>> fabric.nn.LeakyReLU()(fabric.tensor([-100.0]))
    tensor([-1.])
    """

    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class LogSigmoid(Module):
    """``log(sigmoid(x))``.

    >>> import fabric
    >>> fabric.nn.LogSigmoid()(fabric.tensor([0.0]))
    tensor([-0.6931])
    """

    def forward(self, input):
        return F.logsigmoid(input)


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta`` (linear above ``threshold``).

    >>> import fabric
    >>> fabric.nn.Softplus()
    Softplus(beta=1.0, threshold=20.0)
    """

    __constants__ = ["beta", "threshold"]

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """Shrink towards 0 by ``lambd``.

    >>> import fabric
    >>> fabric.nn.Softshrink(1.0)
    Softshrink(1.0)
    """

    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class PReLU(Module):
    """Parametric ReLU with ``num_parameters`` learnable slopes (1 or the
    number of channels, dim 1), initialised to ``init``.

    >>> import fabric
    >>> fabric.nn.PReLU(3)
    PReLU(num_parameters=3)
    """

    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        from ..._creation import empty

        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softsign(Module):
    """``x / (1 + |x|)``.

    >>> import fabric
    >>> fabric.nn.Softsign()(fabric.tensor([1.0]))
    tensor([0.5000])
    """

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``.

    >>> import fabric
    >>> fabric.nn.Tanhshrink()(fabric.tensor([0.0]))
    tensor([0.])
    """

    def forward(self, input):
        return F.tanhshrink(input)


class _SoftmaxBase(Module):
    __constants__ = ["dim"]

    def __init__(self, dim=None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(_SoftmaxBase):
    """``softmax(-x)`` along ``dim``.

    >>> import fabric
    >>> fabric.nn.Softmin(dim=0)(fabric.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class Softmax(_SoftmaxBase):
    """Softmax along ``dim`` (stable for large inputs).

    >>> import fabric
    >>> fabric.nn.Softmax(dim=1)
    Softmax(dim=1)
    """

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class Softmax2d(Module):
    """Softmax over the channel dim of (C, H, W) or (N, C, H, W) input.

    >>> import fabric
    >>> fabric.nn.Softmax2d()(fabric.zeros(1, 2, 1, 1)).flatten()
    tensor([0.5000, 0.5000])
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    """Log-softmax along ``dim``.

    >>> import fabric
    >>> fabric.nn.LogSoftmax(dim=0)(fabric.tensor([0.0, 0.0]))
    tensor([-0.6931, -0.6931])
    """

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


def __getattr__(name):
    # PyTorch defines MultiheadAttention in this module; fabric keeps it in
    # attention.py and re-exports it here for ``from torch.nn.modules.activation import ...``.
    if name == "MultiheadAttention":
        from .attention import MultiheadAttention

        return MultiheadAttention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
