"""Activation functions and the softmax family (``torch.nn.functional``).

Each activation is one ``Function``: forward on raw arrays (NumPy or CuPy,
through ``xp``), backward with Tensor ops so that double backward works.
Where the backend has a fused kernel (softmax, log_softmax, gelu, silu) the
forward calls it, and a plain ``backward()`` (grad mode off inside backward)
calls the fused array backward; with ``create_graph=True`` the backward is
built from differentiable Tensor ops instead.  Gradients that are "``gy``
where a mask holds" use :class:`_MaskScale`, which is linear in ``gy`` and its
own adjoint, so they are differentiable to any order.

``inplace=True`` (and the ``*_`` functions) write the result into the input;
when autograd records, the op runs on a clone and the result is copied back,
so the graph stays exact (``x.grad_fn`` is then ``CopyBackwards``).

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> F.softmax(fabric.tensor([1e4, 0.0]), dim=0)
    tensor([1., 0.])
    >>> F.leaky_relu(fabric.tensor([-2.0, 3.0]), 0.5)
    tensor([-1.,  3.])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as D
from ... import ops as _ops
from ..._tensor import Tensor, _wrap_dim
from ...autograd.function import Function, _apply, _check_inplace
from ...autograd.grad_mode import no_grad
from ...autograd.grad_mode import state as _grad_state
from ...backends import backend_of
from ...ops._registry import declare_op
from ...ops._util import xp_of

__all__ = [
    "threshold", "threshold_", "relu", "relu_", "relu6", "hardtanh", "hardtanh_", "elu", "elu_", "selu", "selu_",
    "celu", "celu_", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_", "glu", "gelu", "logsigmoid",
    "hardshrink", "tanhshrink", "softsign", "softplus", "softmin", "softmax", "log_softmax", "softshrink",
    "gumbel_softmax",
    "tanh", "sigmoid", "hardsigmoid", "silu", "mish", "hardswish",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_HALF = 0.7071067811865476      # 1/sqrt(2)
_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2/pi)
_INV_SQRT_2PI = 0.3989422804014327    # 1/sqrt(2*pi)
_GELU_C = 0.044715
_ONE_SIXTH_F32 = float(np.float32(1.0) / np.float32(6.0))

_TORCH_TYPE = {"float16": "Half", "float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
               "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "bfloat16": "BFloat16",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _type_name(np_dtype) -> str:
    return _TORCH_TYPE.get(str(np_dtype), str(np_dtype))


def _check_tensor(input, name, arg="input"):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not {type(input).__name__}")


def _float_input(input, name, kernel):
    """The input array; non-floating dtypes raise like PyTorch's CPU kernels."""
    _check_tensor(input, name)
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_type_name(x.dtype)}\'')
    return x


def _const(array) -> Tensor:
    """A Tensor that does not require grad around ``array`` (NumPy scalars,
    which 0-d arithmetic returns, become 0-d arrays)."""
    if array.__class__ is not np.ndarray and isinstance(array, np.generic):
        array = np.asarray(array)
    return Tensor._make(array, False)


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _where(mask, a, b):
    """``where(mask, a, b)`` for a boolean array ``mask`` and arrays or numbers
    ``a``, ``b`` of one dtype (that of the array among them).

    NumPy's ``where`` branches per element: with an unpredictable mask it runs
    about 10x slower than a multiply.  On the CPU the choice is therefore made
    on the bits (``a & m | b & ~m`` with ``m`` all ones where ``mask``), which is
    exact for every value including inf and nan; CuPy uses ``cupy.where``.
    """
    if mask.__class__ is not np.ndarray:
        return backend_of(mask).xp.where(mask, a, b)
    dt = a.dtype if hasattr(a, "dtype") else np.asarray(b).dtype
    u = _UINT[dt.itemsize]
    m = mask.view(np.uint8).astype(u)
    np.negative(m, out=m)                               # 1 -> all ones, 0 -> 0
    out = np.bitwise_and(np.asarray(a, dt).view(u), m)
    bb = np.asarray(b, dt).view(u)
    if bb.ndim or bb != 0:                              # b == +0.0 (all bits 0) needs no second term
        np.invert(m, out=m)
        out = np.bitwise_or(out, np.bitwise_and(bb, m))
    return out.view(dt)


def _sigmoid_array(xp, x):
    """Numerically stable logistic function on an array (no overflow)."""
    e = xp.exp(-xp.abs(x))
    return _where(x >= 0, e.dtype.type(1), e) / (1 + e)


def _softplus_array(xp, z):
    """``log(1 + exp(z))`` without overflow."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


class _MaskScale(Function):
    """``where(mask, g * a, g * b)`` for a constant boolean ``mask`` and
    numbers ``a``, ``b`` (``g`` and ``mask`` broadcast): linear in ``g`` and
    its own adjoint, so gradients built from it are differentiable to any
    order."""

    _array_forward = True
    _node_name = "MaskedScaleBackward0"

    @staticmethod
    def forward(ctx, g, mask, a, b):
        ctx.mask, ctx.a, ctx.b = mask, a, b
        xp = xp_of(g)
        zero = g.dtype.type(0)
        ga = g if a == 1 else (g * g.dtype.type(a) if a != 0 else zero)
        gb = g if b == 1 else (g * g.dtype.type(b) if b != 0 else zero)
        out = _where(mask, ga, gb)
        shape = g.shape if mask.shape == g.shape else np.broadcast_shapes(g.shape, mask.shape)
        if out.shape != shape:  # both choices scalar (a == b == 0)
            out = xp.broadcast_to(out, shape).copy()
        return out.astype(g.dtype, copy=False)

    @staticmethod
    def backward(ctx, gg):
        return _mask_scale(gg, ctx.mask, ctx.a, ctx.b), None, None, None


def _mask_scale(g, mask, a=1.0, b=0.0):
    return _apply(_MaskScale, (g, mask, a, b), (g._data, mask, a, b))


def _grad_mode() -> bool:
    """True inside a ``create_graph=True`` backward (the engine turns grad
    mode on exactly then)."""
    return _grad_state.enabled


def _inplace(fn, input, *args):
    """Run the out-of-place ``fn(input, *args)`` and write the result into
    ``input``; with autograd recording, ``fn`` runs on a clone and the result
    is copied back (CopyBackwards), which keeps every saved value intact."""
    if _grad_state.enabled and input._requires_grad:
        _check_inplace(input)
        return _ops.copy_(input, fn(input.clone(), *args))
    with no_grad():
        y = fn(input, *args)
    x = input._data
    yd = y._data
    if yd.dtype != x.dtype:
        yd = yd.astype(x.dtype)
    x[...] = yd
    input._bump_version()
    return input


class _Elementwise(Function):
    """Base of the elementwise activations: ``forward`` saves ``x`` (and the
    output where the gradient uses it) and stores the parameters on ``ctx``;
    subclasses define ``_fwd(xp, x, *params)`` and ``_grad(ctx, x, y, gy)``."""

    _array_forward = True
    _save_output = False

    @classmethod
    def forward(cls, ctx, x, *params):
        if x.dtype == np.float16:  # float16 storage, float32 arithmetic (PyTorch's opmath)
            y = cls._fwd(xp_of(x), x.astype(np.float32), *params).astype(np.float16)
        else:
            y = cls._fwd(xp_of(x), x, *params)
        ctx.params = params
        ctx.save_for_backward(x, y if cls._save_output else None)
        return y

    @classmethod
    def backward(cls, ctx, gy):
        x, y = ctx.saved_tensors
        if x._data.dtype == np.float16 and not _grad_state.enabled:
            up = [None if t is None else _const(t._data.astype(np.float32)) for t in (x, y, gy)]
            gx = _const(cls._grad(ctx, *up)._data.astype(np.float16))
        else:
            gx = cls._grad(ctx, x, y, gy)
        return (gx,) + (None,) * len(ctx.params)


def _unary(cls, input, *params):
    return _apply(cls, (input,) + params, (input._data,) + params)


# --------------------------------------------------------------------------
# piecewise-linear activations
# --------------------------------------------------------------------------
class Threshold(_Elementwise):
    @staticmethod
    def _fwd(xp, x, th, value):
        return _where(x <= th, x.dtype.type(value), x)

    @staticmethod
    def _grad(ctx, x, y, gy):
        return _mask_scale(gy, ~(x._data <= ctx.params[0]))


def _threshold(input, th, value):
    return _unary(Threshold, input, th, value)


def threshold(input, threshold, value, inplace=False):
    """``value`` where ``input <= threshold``, else ``input``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.threshold(fabric.tensor([0.5, 2.0]), 1.0, -1.0)
    tensor([-1.,  2.])
    """
    _check_tensor(input, "threshold")
    if inplace:
        return _inplace(_threshold, input, threshold, value)
    return _threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """In-place :func:`threshold`."""
    _check_tensor(input, "threshold_")
    return _inplace(_threshold, input, threshold, value)


def relu(input, inplace=False):
    """``max(input, 0)`` (``fabric.relu``).

    >>> import fabric, fabric.nn.functional as F
    >>> F.relu(fabric.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """
    _check_tensor(input, "relu")
    if inplace:
        return _inplace(_ops.relu, input)
    return _ops.relu(input)


def relu_(input):
    """In-place :func:`relu`."""
    return relu(input, inplace=True)


class Hardtanh(_Elementwise):
    @staticmethod
    def _fwd(xp, x, lo, hi):
        if x.dtype.kind in "iu":
            lo, hi = math.ceil(lo), math.floor(hi)
        return xp.clip(x, x.dtype.type(lo), x.dtype.type(hi))

    @staticmethod
    def _grad(ctx, x, y, gy):
        lo, hi = ctx.params
        xd = x._data
        return _mask_scale(gy, ~((xd <= lo) | (xd >= hi)))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to ``[min_val, max_val]``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.hardtanh(fabric.tensor([-3.0, 0.5, 3.0]))
    tensor([-1.0000,  0.5000,  1.0000])
    """
    _check_tensor(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input._data.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if inplace:
        return _inplace(hardtanh, input, min_val, max_val)
    return _unary(Hardtanh, input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """``min(max(input, 0), 6)``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.relu6(fabric.tensor([-1.0, 7.0]))
    tensor([0., 6.])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


class LeakyRelu(_Elementwise):
    @staticmethod
    def _fwd(xp, x, slope):
        return _where(x > 0, x, x * x.dtype.type(slope))

    @staticmethod
    def _grad(ctx, x, y, gy):
        return _mask_scale(gy, x._data > 0, 1.0, ctx.params[0])


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, else ``negative_slope * input``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.leaky_relu(fabric.tensor([-2.0, 1.0]), 0.1)
    tensor([-0.2000,  1.0000])
    """
    _float_input(input, "leaky_relu", "leaky_relu_cpu")
    if inplace:
        return _inplace(leaky_relu, input, negative_slope)
    return _unary(LeakyRelu, input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


class Hardshrink(_Elementwise):
    @staticmethod
    def _fwd(xp, x, lambd):
        return _where((x >= -lambd) & (x <= lambd), x.dtype.type(0), x)

    @staticmethod
    def _grad(ctx, x, y, gy):
        lambd = ctx.params[0]
        xd = x._data
        return _mask_scale(gy, ~((xd >= -lambd) & (xd <= lambd)))


@declare_op()
def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0.

    >>> import fabric, fabric.nn.functional as F
    >>> F.hardshrink(fabric.tensor([-1.0, 0.2, 0.7]))
    tensor([-1.0000,  0.0000,  0.7000])
    """
    _float_input(input, "hardshrink", "hardshrink_cpu")
    return _unary(Hardshrink, input, lambd)


class Softshrink(_Elementwise):
    @staticmethod
    def _fwd(xp, x, lambd):
        lam = x.dtype.type(lambd)
        return x - xp.clip(x, -lam, lam)    # x -+ lambd outside [-lambd, lambd], 0 inside

    @staticmethod
    def _grad(ctx, x, y, gy):
        lambd = ctx.params[0]
        xd = x._data
        return _mask_scale(gy, ~((xd >= -lambd) & (xd <= lambd)))


def softshrink(input, lambd=0.5):
    """Shrink towards 0 by ``lambd``: ``x - lambd``, ``x + lambd`` or 0.

    >>> import fabric, fabric.nn.functional as F
    >>> F.softshrink(fabric.tensor([-1.0, 0.2, 1.5]))
    tensor([-0.5000,  0.0000,  1.0000])
    """
    x = _float_input(input, "softshrink", "softshrink_check")
    if lambd < 0:
        top = float(np.finfo(x.dtype).max)
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype {_type_name(x.dtype)}, but found "
                           f"to be {lambd:g}")
    return _unary(Softshrink, input, lambd)


class Hardsigmoid(_Elementwise):
    @staticmethod
    def _fwd(xp, x):
        t = x.dtype.type
        return xp.minimum(xp.maximum(x + t(3), t(0)), t(6)) / t(6)

    @staticmethod
    def _grad(ctx, x, y, gy):
        xd = x._data
        # PyTorch's kernel multiplies by the float literal 1.0f / 6.0f, also for float64
        return _mask_scale(gy, (xd > -3) & (xd < 3), _ONE_SIXTH_F32)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.hardsigmoid(fabric.tensor([-4.0, 0.0, 4.0]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    _float_input(input, "hardsigmoid", "hardsigmoid_cpu")
    if inplace:
        return _inplace(hardsigmoid, input)
    return _unary(Hardsigmoid, input)


class Hardswish(_Elementwise):
    @staticmethod
    def _fwd(xp, x):
        t = x.dtype.type
        return x * xp.minimum(xp.maximum(x + t(3), t(0)), t(6)) / t(6)

    @staticmethod
    def _grad(ctx, x, y, gy):
        xd = x._data
        mid = (xd >= -3) & (xd <= 3)
        if not _grad_mode():
            t = xd.dtype.type
            d = _where(mid, xd / t(3) + t(0.5), (xd > 3).astype(xd.dtype))
            return _const(gy._data * d)
        # d/dx = x/3 + 1/2 in [-3, 3], 1 above, 0 below
        d = _mask_scale(x, mid, 1.0 / 3.0) + _const((0.5 * mid + (xd > 3)).astype(xd.dtype))
        return gy * d


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.hardswish(fabric.tensor([-4.0, 1.0, 4.0]))
    tensor([-0.0000,  0.6667,  4.0000])
    """
    _float_input(input, "hardswish", "hardswish_cpu")
    if inplace:
        return _inplace(hardswish, input)
    return _unary(Hardswish, input)


# --------------------------------------------------------------------------
# exponential-linear family
# --------------------------------------------------------------------------
class Elu(_Elementwise):
    """``scale * x`` for x > 0, else ``scale * alpha * (exp(x * input_scale) - 1)``
    (PyTorch's one kernel behind elu, selu and celu)."""

    @staticmethod
    def _fwd(xp, x, alpha, scale, input_scale):
        t = x.dtype.type
        neg = xp.expm1(xp.minimum(x, t(0)) * t(input_scale)) * t(alpha * scale)
        return _where(x > 0, x * t(scale), neg)

    @staticmethod
    def _grad(ctx, x, y, gy):
        alpha, scale, input_scale = ctx.params
        xd = x._data
        pos = xd > 0
        if not _grad_mode():
            xp = xp_of(xd)
            t = xd.dtype.type
            d = _where(pos, t(scale), xp.exp(xp.minimum(xd, t(0)) * t(input_scale)) * t(input_scale * alpha * scale))
            return _const(gy._data * d)
        # exp of the masked input: never overflows where the branch is unused
        e = _ops.exp(_mask_scale(x, ~pos) * input_scale)
        d = e * (input_scale * alpha * scale)
        d = _mask_scale(d, ~pos) + _const((pos * scale).astype(xd.dtype))
        return gy * d


def elu(input, alpha=1.0, inplace=False):
    """``x`` for x > 0, else ``alpha * (exp(x) - 1)``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.elu(fabric.tensor([-1.0, 2.0]))
    tensor([-0.6321,  2.0000])
    """
    _float_input(input, "elu", "elu_cpu")
    if inplace:
        return _inplace(elu, input, alpha)
    return _unary(Elu, input, float(alpha), 1.0, 1.0)


def elu_(input, alpha=1.0):
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """Scaled ELU with the self-normalising constants.

    >>> import fabric, fabric.nn.functional as F
    >>> F.selu(fabric.tensor([1.0]))
    tensor([1.0507])
    """
    _float_input(input, "selu", "elu_cpu")
    if inplace:
        return _inplace(selu, input)
    return _unary(Elu, input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def selu_(input):
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.celu(fabric.tensor([-1.0, 1.0]), 2.0)
    tensor([-0.7869,  1.0000])
    """
    _float_input(input, "celu", "elu_cpu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return _inplace(celu, input, alpha)
    return _unary(Elu, input, float(alpha), 1.0, 1.0 / alpha)


def celu_(input, alpha=1.0):
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


# --------------------------------------------------------------------------
# smooth activations
# --------------------------------------------------------------------------
class Gelu(_Elementwise):
    @staticmethod
    def _fwd(xp, x, approximate):
        return backend_of(x).gelu(x, approximate)

    @staticmethod
    def _grad(ctx, x, y, gy):
        approximate = ctx.params[0]
        if not _grad_mode():
            return _const(backend_of(x._data).gelu_backward(x._data, gy._data, approximate))
        if approximate == "tanh":
            x2 = x * x
            t = _ops.tanh((x + x2 * x * _GELU_C) * _SQRT_2_OVER_PI)
            d = (t + 1.0) * 0.5 + x * (1.0 - t * t) * ((x2 * (3.0 * _GELU_C) + 1.0) * (0.5 * _SQRT_2_OVER_PI))
        else:
            cdf = (_ops.erf(x * _SQRT_HALF) + 1.0) * 0.5
            d = cdf + x * _ops.exp(x * x * -0.5) * _INV_SQRT_2PI
        return gy * d


def gelu(input, approximate="none"):
    """``x * Phi(x)`` (``approximate='none'``) or its tanh approximation.

    >>> import fabric, fabric.nn.functional as F
    >>> F.gelu(fabric.tensor([1.0]))
    tensor([0.8413])
    """
    _float_input(input, "gelu", "GeluKernelImpl")
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _unary(Gelu, input, approximate)


class Silu(_Elementwise):
    @staticmethod
    def _fwd(xp, x):
        return backend_of(x).silu(x)

    @staticmethod
    def _grad(ctx, x, y, gy):
        if not _grad_mode():
            return _const(backend_of(x._data).silu_backward(x._data, gy._data))
        s = _ops.sigmoid(x)
        return gy * (s * (x * (1.0 - s) + 1.0))


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (swish).

    >>> import fabric, fabric.nn.functional as F
    >>> F.silu(fabric.tensor([1.0]))
    tensor([0.7311])
    """
    _float_input(input, "silu", "silu_cpu")
    if inplace:
        return _inplace(silu, input)
    return _unary(Silu, input)


class Mish(_Elementwise):
    @staticmethod
    def _fwd(xp, x):
        return x * xp.tanh(_softplus_array(xp, x))

    @staticmethod
    def _grad(ctx, x, y, gy):
        xd = x._data
        if not _grad_mode():
            xp = xp_of(xd)
            t = xp.tanh(_softplus_array(xp, xd))
            return _const(gy._data * (t + xd * _sigmoid_array(xp, xd) * (1 - t * t)))
        t = _ops.tanh(softplus(x))
        return gy * (t + x * _ops.sigmoid(x) * (1.0 - t * t))


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.mish(fabric.tensor([1.0]))
    tensor([0.8651])
    """
    _float_input(input, "mish", "mish_cpu")
    if inplace:
        return _inplace(mish, input)
    return _unary(Mish, input)


class Softplus(_Elementwise):
    @staticmethod
    def _fwd(xp, x, beta, threshold):
        t = x.dtype.type
        z = x * t(beta)
        return _where(z > threshold, x, _softplus_array(xp, z) / t(beta))

    @staticmethod
    def _grad(ctx, x, y, gy):
        beta, th = ctx.params
        xd = x._data
        lin = xd * xd.dtype.type(beta) > th
        if not _grad_mode():
            xp = xp_of(xd)
            s = _sigmoid_array(xp, xd * xd.dtype.type(beta))
            return _const(gy._data * _where(lin, xd.dtype.type(1), s.astype(xd.dtype, copy=False)))
        d = _mask_scale(_ops.sigmoid(x * beta), ~lin) + _const(lin.astype(xd.dtype))
        return gy * d


@declare_op(method=False)
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.softplus(fabric.tensor([0.0, 30.0]))
    tensor([ 0.6931, 30.0000])
    """
    _float_input(input, "softplus", "softplus_cpu")
    return _unary(Softplus, input, beta, threshold)


class LogSigmoid(_Elementwise):
    _node_name = "LogSigmoidBackward0"

    @staticmethod
    def _fwd(xp, x):
        return xp.minimum(x, x.dtype.type(0)) - xp.log1p(xp.exp(-xp.abs(x)))

    @staticmethod
    def _grad(ctx, x, y, gy):
        if not _grad_mode():
            xd = x._data
            return _const(gy._data * _sigmoid_array(xp_of(xd), -xd).astype(xd.dtype, copy=False))
        return gy * _ops.sigmoid(-x)


def logsigmoid(input):
    """``log(sigmoid(x))``, stable for large ``|x|``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.logsigmoid(fabric.tensor([-1e4, 0.0]))
    tensor([-1.0000e+04, -6.9315e-01])
    """
    _float_input(input, "logsigmoid", "log_sigmoid_cpu")
    return _unary(LogSigmoid, input)


def sigmoid(input):
    """``1 / (1 + exp(-x))`` (``fabric.sigmoid``)."""
    return _ops.sigmoid(input)


def tanh(input):
    """Hyperbolic tangent (``fabric.tanh``)."""
    return _ops.tanh(input)


def tanhshrink(input):
    """``x - tanh(x)``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.tanhshrink(fabric.tensor([1.0]))
    tensor([0.2384])
    """
    return input - _ops.tanh(input)


def softsign(input):
    """``x / (1 + |x|)``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.softsign(fabric.tensor([-3.0, 1.0]))
    tensor([-0.7500,  0.5000])
    """
    return input / (_ops.abs(input) + 1)


def glu(input, dim=-1):
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of ``dim``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.glu(fabric.tensor([2.0, 0.0]))
    tensor([1.])
    """
    _float_input(input, "glu", "glu_cpu")
    if input._data.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    h = n // 2
    return _ops.narrow(input, d, 0, h) * _ops.sigmoid(_ops.narrow(input, d, h, h))


# --------------------------------------------------------------------------
# parametric and randomised ReLUs
# --------------------------------------------------------------------------
class Prelu(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x if x.size == 0 else _where(x > 0, x, w * x)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        pos = x._data > 0
        need_x, need_w = ctx.needs_input_grad
        gx = _mask_scale(gy, pos) + _mask_scale(gy * w, ~pos) if need_x else None
        gw = _mask_scale(gy * x, ~pos) if need_w else None
        return gx, gw


@declare_op()
def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``, ``weight`` per channel (dim 1).

    >>> import fabric, fabric.nn.functional as F
    >>> F.prelu(fabric.tensor([[-2.0, 1.0]]), fabric.tensor([0.25]))
    tensor([[-0.5000,  1.0000]])
    """
    _check_tensor(input, "prelu")
    _check_tensor(weight, "prelu", "weight")
    x, w = input._data, weight._data
    if x.dtype != w.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_type_name(x.dtype)} and "
                           f"{_type_name(w.dtype)}")
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.size != 1 and w.size != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{w.size} and channel size = {channels}.")
    if x.ndim >= 2 and w.size != 1:
        wv = weight.reshape((1, channels) + (1,) * (x.ndim - 2))
    elif w.ndim != 0:
        wv = weight.reshape(())
    else:
        wv = weight
    return _apply(Prelu, (input, wv), (x, wv._data))


class RreluWithNoise(Function):
    """Training-mode RReLU: slopes drawn from ``U(lower, upper)`` for the
    non-positive elements, one double each in element order (PyTorch's CPU
    stream); the gradient is ``gy * noise``."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, noise):
        ctx.save_for_backward(noise)
        return x * noise

    @staticmethod
    def backward(ctx, gy):
        noise, = ctx.saved_tensors
        return gy * noise, None


def _rrelu_noise(x, lower, upper, generator=None):
    from ..._device import as_device
    from ...random import generator_for

    xp = xp_of(x)
    neg = x <= 0
    n = int(neg.sum())
    dev = None if x.__class__ is np.ndarray else as_device(f"cuda:{x.device.id}")
    noise = xp.ones(x.shape, x.dtype)
    if n:
        # PyTorch's CPU stream: one uniform_real_distribution<double> draw per element,
        # u * (upper - lower) + lower (no FMA) with the bounds first rounded to x's dtype
        lo, hi = float(x.dtype.type(lower)), float(x.dtype.type(upper))
        u = xp.asarray(generator_for(generator, dev).uniform((n,), np.float64, 0.0, 1.0))
        noise[neg] = (u * (hi - lo) + lo).astype(x.dtype)
    return noise


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomised leaky ReLU: in training the negative slope of each element
    is drawn from ``U(lower, upper)`` with fabric's RNG; in eval it is the
    mean ``(lower + upper) / 2``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.rrelu(fabric.tensor([-3.0, 1.0]), 0.1, 0.3)
    tensor([-0.6000,  1.0000])
    """
    x = _float_input(input, "rrelu", "leaky_relu_cpu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if inplace:
        return _inplace(rrelu, input, lower, upper, training)
    if not training:
        return _unary(LeakyRelu, input, (lower + upper) / 2)
    noise = _rrelu_noise(x, lower, upper)
    return _apply(RreluWithNoise, (input, noise), (x, noise))


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


# --------------------------------------------------------------------------
# softmax family
# --------------------------------------------------------------------------
def _softmax_axis(x, dim):
    return _wrap_dim(dim, x.ndim)


class Softmax(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        if x.ndim == 0:
            y = backend_of(x).softmax(x.reshape(1), 0).reshape(())
        else:
            y = backend_of(x).softmax(x, axis)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, gy):
        y, = ctx.saved_tensors
        axis = ctx.axis if y._data.ndim else None
        if not _grad_mode():
            yd, gd = y._data, gy._data
            if yd.ndim == 0:
                return _const(gd * 0), None
            return _const(backend_of(yd).softmax_backward(yd, gd, axis)), None
        gyy = gy * y
        return gyy - y * gyy.sum(axis, keepdim=True), None

    @staticmethod
    def jvp(ctx, t, _):
        y, = ctx.saved_tensors
        if y.dim() == 0:
            return t * 0
        ty = t * y
        return ty - y * ty.sum(ctx.axis, keepdim=True)


class LogSoftmax(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        if x.ndim == 0:
            y = backend_of(x).log_softmax(x.reshape(1), 0).reshape(())
        else:
            y = backend_of(x).log_softmax(x, axis)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, gy):
        y, = ctx.saved_tensors
        axis = ctx.axis if y._data.ndim else None
        if not _grad_mode():
            yd, gd = y._data, gy._data
            if yd.ndim == 0:
                return _const(gd * 0), None
            return _const(backend_of(yd).log_softmax_backward(yd, gd, axis)), None
        return gy - _ops.exp(y) * gy.sum(axis, keepdim=True), None

    @staticmethod
    def jvp(ctx, t, _):
        y, = ctx.saved_tensors
        if y.dim() == 0:
            return t * 0
        return t - (_ops.exp(y) * t).sum(ctx.axis, keepdim=True)


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(input, name, kernel, dtype):
    _check_tensor(input, name)
    if dtype is not None:
        input = input.to(D.to_dtype(dtype))
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_type_name(x.dtype)}\'')
    return input, x


@declare_op(name="softmax", namespace="")
def _softmax(input, dim, dtype=None):
    """``fabric.softmax(input, dim, dtype=None)`` / ``Tensor.softmax``."""
    input, x = _softmax_input(input, "softmax", "softmax_lastdim_kernel_impl", dtype)
    axis = _softmax_axis(x, dim)
    return _apply(Softmax, (input, axis), (x, axis))


@declare_op(name="log_softmax", namespace="")
def _log_softmax(input, dim, dtype=None):
    """``fabric.log_softmax(input, dim, dtype=None)`` / ``Tensor.log_softmax``."""
    input, x = _softmax_input(input, "log_softmax", "log_softmax_lastdim_kernel_impl", dtype)
    axis = _softmax_axis(x, dim)
    return _apply(LogSoftmax, (input, axis), (x, axis))


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``; stable for large inputs
    (the row maximum is subtracted first).

    >>> import fabric, fabric.nn.functional as F
    >>> F.softmax(fabric.tensor([0.0, 0.6931472]), dim=0)
    tensor([0.3333, 0.6667])
    """
    _check_tensor(input, "softmax")
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x)`` along ``dim``.

    >>> import fabric, fabric.nn.functional as F
    >>> F.softmin(fabric.tensor([0.0, 0.6931472]), dim=0)
    tensor([0.6667, 0.3333])
    """
    _check_tensor(input, "softmin")
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return _softmax(-input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` along ``dim``, computed stably.

    >>> import fabric, fabric.nn.functional as F
    >>> F.log_softmax(fabric.tensor([1e4, 0.0]), dim=0)
    tensor([     0., -10000.])
    """
    _check_tensor(input, "log_softmax")
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _log_softmax(input, dim, dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Sample from the Gumbel-softmax distribution: ``softmax((logits + g) / tau)``
    with ``g = -log(Exponential(1))`` drawn from fabric's RNG (PyTorch's
    stream); ``hard=True`` returns the one-hot of the sample's argmax with the
    soft sample's gradient (straight-through).

    >>> import fabric, fabric.nn.functional as F
    >>> _ = fabric.manual_seed(0)
    >>> F.gumbel_softmax(fabric.zeros(2, 3), hard=True).sum(-1)
    tensor([1., 1.])
    """
    _check_tensor(logits, "gumbel_softmax", "logits")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    from ..._creation import empty_like

    gumbels = -empty_like(logits).exponential_().log()
    y_soft = _softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    y = y_soft._data
    d = _wrap_dim(dim, y.ndim)
    xp = xp_of(y)
    index = xp.expand_dims(y.argmax(axis=d), d) if y.ndim else xp.asarray(0)
    classes = xp.arange(y.shape[d] if y.ndim else 1).reshape([-1 if i == d else 1 for i in range(y.ndim)])
    y_hard = _const((classes == index).astype(y.dtype))
    return y_hard - y_soft.detach() + y_soft

