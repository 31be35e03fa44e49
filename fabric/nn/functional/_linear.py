"""``F.linear`` and ``F.bilinear``.

``linear`` is one Function: the input is flattened to 2-D so that forward
and each gradient are a single GEMM, whatever the number of leading dims.

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> F.linear(fabric.ones(2, 3), fabric.ones(4, 3), fabric.zeros(4)).shape
    fabric.Size([2, 4])
"""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...ops._registry import declare_op
from ...ops._util import device_mismatch

__all__ = ["linear", "bilinear"]

_TORCH_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _dtype_word(dt) -> str:
    return _TORCH_NAMES.get(str(dt), str(dt))


class Linear(Function):
    """``y = x @ w.T + b`` over the last dim of ``x`` (any leading dims)."""

    _array_forward = True
    _node_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, x, w, b):
        lead = x.shape[:-1]
        x2 = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
        y = x2 @ w.T
        if b is not None:
            y += b
        ctx.lead = lead
        ctx.save_for_backward(x, w)
        return y.reshape(lead + (w.shape[0],)) if x.ndim != 2 else y

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        out_f = w.shape[0]
        g2 = gy.reshape(-1, out_f) if gy.ndim != 2 else gy
        gx = gw = gb = None
        if need_x:
            gx = g2.matmul(w)
            if x.ndim != 2:
                gx = gx.reshape(x.shape)
        if need_w:
            x2 = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
            gw = g2.mT.matmul(x2)
        if need_b:
            gb = g2.sum(0)
        return gx, gw, gb

    @staticmethod
    def jvp(ctx, tx, tw, tb):
        x, w = ctx.saved_tensors
        terms = [None if tx is None else tx.matmul(w.mT if w.ndim == 2 else w),
                 None if tw is None else x.matmul(tw.mT if tw.ndim == 2 else tw), tb]
        out = None
        for term in terms:
            if term is not None:
                out = term if out is None else out + term
        shape = tuple(x.shape[:-1]) + tuple(w.shape[:-1])
        return out if tuple(out.shape) == shape else out.expand(shape)


def _check_linear(input, weight, bias):
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        bad = input if not isinstance(input, Tensor) else weight
        raise TypeError(f"linear(): argument '{'input' if bad is input else 'weight'}' must be Tensor, "
                        f"not {type(bad).__name__}")
    x, w = input._data, weight._data
    if x.__class__ is not w.__class__:
        device_mismatch(input, weight)
    if w.ndim > 2 or w.ndim == 0:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {w.ndim}D" if w.ndim > 2
                           else "both arguments to linear need to be at least 1D, but they are "
                                f"{x.ndim}D and {w.ndim}D")
    if x.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are 0D and {w.ndim}D")
    if x.dtype != w.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype_word(x.dtype)} != "
                           f"{_dtype_word(w.dtype)}")
    in_w = w.shape[-1]
    if x.shape[-1] != in_w:
        rows = 1
        for s in x.shape[:-1]:
            rows *= s
        mat2 = f"{w.shape[1]}x{w.shape[0]}" if w.ndim == 2 else f"{w.shape[0]}x1"
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and {mat2})")
    if bias is not None:
        if not isinstance(bias, Tensor):
            raise TypeError(f"linear(): argument 'bias' must be Tensor, not {type(bias).__name__}")
        out_shape = x.shape[:-1] + ((w.shape[0],) if w.ndim == 2 else ())
        b = bias._data
        ok = b.ndim <= len(out_shape) and all(
            s == 1 or s == o for s, o in zip(b.shape[::-1], out_shape[::-1]))
        if not ok:
            raise RuntimeError(f"The expanded size of the tensor ({out_shape[-1] if out_shape else 1}) must match "
                               f"the existing size ({b.shape[-1] if b.ndim else 1}) at non-singleton dimension "
                               f"{max(len(out_shape) - 1, 0)}.  Target sizes: {list(out_shape)}.  Tensor sizes: "
                               f"{list(b.shape)}")
        if b.dtype != x.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype_word(b.dtype)} != "
                               f"{_dtype_word(x.dtype)}")


@declare_op(method=False)
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: input ``(*, in)``, weight ``(out, in)``
    (or ``(in,)``), bias ``(out,)``; returns ``(*, out)``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.linear(fabric.ones(3), fabric.eye(3) * 2)
        tensor([2., 2., 2.])
    """
    _check_linear(input, weight, bias)
    if weight._data.ndim == 1:  # (in,) weight: a dot product over the last dim
        out = input.matmul(weight)
        return out + bias if bias is not None else out
    b = None if bias is None else bias._data
    return _apply(Linear, (input, weight, bias), (input._data, weight._data, b))


@declare_op(method=False)
def bilinear(input1, input2, weight, bias=None):
    """``y[..., k] = input1 @ weight[k] @ input2 + bias[k]``: inputs
    ``(*, in1)`` and ``(*, in2)`` with equal leading dims, weight
    ``(out, in1, in2)``; returns ``(*, out)``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.bilinear(fabric.ones(2, 3), fabric.ones(2, 4), fabric.ones(5, 3, 4)).shape
        fabric.Size([2, 5])
    """
    x1, x2, w = input1._data, input2._data, weight._data
    if x1.ndim != x2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {x1.ndim} and {x2.ndim}")
    for i in range(x1.ndim - 1):
        if x1.shape[i] != x2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got {x1.shape[i]} and "
                               f"{x2.shape[i]}")
    if w.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {w.ndim}")
    if x1.shape[-1] != w.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {x1.shape[-1]} but expected "
                           f"{w.shape[1]}")
    if x2.shape[-1] != w.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {x2.shape[-1]} but expected "
                           f"{w.shape[2]}")
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != w.shape[0]):
        got = bias._data.shape[-1] if bias._data.ndim else 1
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but expected {w.shape[0]}")
    out_f, in1, in2 = w.shape
    lead = x1.shape[:-1]
    a = input1.reshape(-1, in1)
    c = input2.reshape(-1, in2)
    # (B, in1) @ (in1, out*in2) -> (B, out, in2); then contract with input2
    t = a.matmul(weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    y = (t * c.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (out_f,))
