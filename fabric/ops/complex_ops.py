"""Complex tensors: parts and views (``real``, ``imag``, ``view_as_real``,
``view_as_complex``), construction (``complex``, ``polar``) and conjugation.

Gradients follow PyTorch's convention: for a real loss ``L`` the gradient of a
complex input ``z = x + iy`` is ``dL/dx + i dL/dy``.  Holomorphic ops need no
complex formula of their own (the engine conjugates around their real formula,
see ``autograd/engine.py``); the ops here are not holomorphic and set
``_complex_native`` because their backward is written for complex gradients.

fabric conjugates physically: ``conj()`` is a copy, not a lazy view with a
conjugate bit, so ``is_conj()`` is always False and writing into the result of
``conj()`` does not change its input (in PyTorch it does).

Example::

    >>> import fabric
    >>> z = fabric.complex(fabric.tensor([1.0, 3.0]), fabric.tensor([2.0, -1.0]))
    >>> z
    tensor([1.+2.j, 3.-1.j])
    >>> z.imag
    tensor([ 2., -1.])
    >>> fabric.view_as_real(z.conj())
    tensor([[1., -2.],
            [3.,  1.]])
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.function import Function, _apply, _apply1
from ._registry import declare
from ._registry import public_names as declared_names
from ._util import xp_of

__all__: list[str] = []  # the declared ops, added at the end of the module

_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble", "float32": "Float", "float64": "Double",
          "float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
          "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def scalar_name(np_dtype) -> str:
    """PyTorch's C++ scalar-type name of a dtype (``ComplexFloat``), as its messages print it."""
    return _NAMES.get(str(np_dtype), str(np_dtype))


def _tensor_arg(t, name, arg="input", pos=1):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(t).__name__}")
    return t._data


# --- real and imaginary parts: views ------------------------------------------------

class Real(Function):
    _array_forward = True
    _is_view = True
    _complex_native = True

    @staticmethod
    def forward(ctx, x):
        return x.real

    @staticmethod
    def backward(ctx, gy):
        return gy  # the engine casts it to the complex input: gy + 0j


class Imag(Function):
    _array_forward = True
    _is_view = True
    _complex_native = True

    @staticmethod
    def forward(ctx, x):
        return x.imag

    @staticmethod
    def backward(ctx, gy):
        return gy * 1j


def real(input):
    """The real parts of a complex tensor, as a view sharing its memory
    (writes go through); a real tensor is returned itself.

    Example::

        >>> import fabric
        >>> fabric.real(fabric.tensor([1 + 2j]))
        tensor([1.])
    """
    x = _tensor_arg(input, "real")
    if x.dtype.kind != "c":
        return input
    return _apply1(Real, input, (x,))


def imag(input):
    """The imaginary parts of a complex tensor, as a view sharing its memory.

    Example::

        >>> import fabric
        >>> fabric.imag(fabric.tensor([1 + 2j]))
        tensor([2.])
    """
    x = _tensor_arg(input, "imag")
    if x.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _apply1(Imag, input, (x,))


def _set_real(self, value):
    real(self).copy_(value)


def _set_imag(self, value):
    imag(self).copy_(value)


class ViewAsReal(Function):
    _array_forward = True
    _is_view = True
    _complex_native = True

    @staticmethod
    def forward(ctx, x):
        return x[..., None].view(x.real.dtype)

    @staticmethod
    def backward(ctx, gy):
        return view_as_complex(gy.contiguous())


class ViewAsComplex(Function):
    _array_forward = True
    _is_view = True
    _complex_native = True

    @staticmethod
    def forward(ctx, x):
        return x.view(D.to_complex(D.from_numpy_dtype(x.dtype)).np).reshape(x.shape[:-1])

    @staticmethod
    def backward(ctx, gy):
        return view_as_real(gy)


def view_as_real(input):
    """A real view of a complex tensor with a last dimension of size 2 (real, imaginary).

    Example::

        >>> fabric.view_as_real(fabric.tensor([1 + 2j, 3 - 1j]))
        tensor([[ 1.,  2.],
                [ 3., -1.]])
    """
    x = _tensor_arg(input, "view_as_real")
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _apply1(ViewAsReal, input, (x,))


def view_as_complex(input):
    """A complex view of a float tensor whose last dimension (size 2, stride 1) holds (real, imaginary).

    Example::

        >>> fabric.view_as_complex(fabric.tensor([[1.0, 2.0]]))
        tensor([1.+2.j])
    """
    x = _tensor_arg(input, "view_as_complex")
    if x.dtype != np.float32 and x.dtype != np.float64:
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {scalar_name(x.dtype)}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    st = input.stride()
    if st[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in st[:-1]) or input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    return _apply1(ViewAsComplex, input, (x,))


# --- construction -----------------------------------------------------------------------

class Complex(Function):
    _array_forward = True
    _complex_native = True

    @staticmethod
    def forward(ctx, re, im):
        xp = xp_of(re)
        out = xp.empty(xp.broadcast_shapes(re.shape, im.shape), D.to_complex(D.from_numpy_dtype(re.dtype)).np)
        out.real = re
        out.imag = im
        return out

    @staticmethod
    def backward(ctx, gy):
        return real(gy), imag(gy)


def complex(real, imag, *, out=None):
    """The complex tensor ``real + i imag`` (both float tensors of one dtype, broadcast).

    Example::

        >>> fabric.complex(fabric.tensor([1.0]), fabric.tensor([2.0]))
        tensor([1.+2.j])
    """
    re = _tensor_arg(real, "complex", "real", 1)
    im = _tensor_arg(imag, "complex", "imag", 2)
    floats = (np.float16, np.float32, np.float64)
    if re.dtype not in floats or im.dtype not in floats:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{scalar_name(re.dtype)} and {scalar_name(im.dtype)}")
    if re.dtype != im.dtype:
        raise RuntimeError(f"Expected object of scalar type {scalar_name(re.dtype)} but got scalar type "
                           f"{scalar_name(im.dtype)} for second argument")
    return _finish(_apply(Complex, (real, imag), (re, im)), out)


class Polar(Function):
    _array_forward = True
    _complex_native = True

    @staticmethod
    def forward(ctx, r, theta):
        xp = xp_of(r)
        ctx.save_for_backward(r, theta)
        out = xp.empty(xp.broadcast_shapes(r.shape, theta.shape), D.to_complex(D.from_numpy_dtype(r.dtype)).np)
        out.real = r * xp.cos(theta)
        out.imag = r * xp.sin(theta)
        return out

    @staticmethod
    def backward(ctx, gy):
        r, theta = ctx.saved_tensors
        from .pointwise import cos, sin

        unit = complex(cos(theta), sin(theta))
        gyc = gy.conj()
        g_abs = (gyc * unit).real if ctx.needs_input_grad[0] else None
        g_angle = (gyc * unit * r * 1j).real if ctx.needs_input_grad[1] else None
        return g_abs, g_angle


def polar(abs, angle, *, out=None):
    """The complex tensor with modulus ``abs`` and argument ``angle``: ``abs * (cos(angle) + i sin(angle))``.

    Example::

        >>> fabric.polar(fabric.tensor([2.0]), fabric.tensor([0.0]))
        tensor([2.+0.j])
    """
    r = _tensor_arg(abs, "polar", "abs", 1)
    theta = _tensor_arg(angle, "polar", "angle", 2)
    if r.dtype not in (np.float32, np.float64) or theta.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"Expected both inputs to be Float or Double tensors but got {scalar_name(r.dtype)} "
                           f"and {scalar_name(theta.dtype)}")
    if r.dtype != theta.dtype:
        raise RuntimeError(f"Expected object of scalar type {scalar_name(r.dtype)} but got scalar type "
                           f"{scalar_name(theta.dtype)} for second argument")
    return _finish(_apply(Polar, (abs, angle), (r, theta)), out)


def _finish(result, out):
    if out is None:
        return result
    from .inplace import copy_into_out

    return copy_into_out(out, result)


# --- conjugation ----------------------------------------------------------------------

class Conj(Function):
    _array_forward = True
    _complex_native = True
    _node_name = "ConjPhysicalBackward0"

    @staticmethod
    def forward(ctx, x):
        return xp_of(x).conj(x)

    @staticmethod
    def backward(ctx, gy):
        return conj_physical(gy)


def conj_physical(input, *, out=None):
    """The complex conjugate, computed into new memory (a real tensor is returned itself).

    Example::

        >>> fabric.conj_physical(fabric.tensor([1 + 2j]))
        tensor([1.-2.j])
    """
    x = _tensor_arg(input, "conj_physical")
    if x.dtype.kind != "c":
        return _finish(input, out)
    return _finish(_apply1(Conj, input, (x,)), out)


def conj(input):
    """The complex conjugate (a real tensor is returned itself).  fabric
    conjugates physically: the result is a new tensor, not PyTorch's lazy
    conjugate view, so ``is_conj()`` is False and writes into it stay there.

    Example::

        >>> fabric.conj(fabric.tensor([1 + 2j]))
        tensor([1.-2.j])
    """
    x = _tensor_arg(input, "conj")
    if x.dtype.kind != "c":
        return input
    return _apply1(Conj, input, (x,))


def resolve_conj(input):
    """``input`` itself: fabric has no lazy conjugate bit to materialise."""
    _tensor_arg(input, "resolve_conj")
    return input


def resolve_neg(input):
    """``input`` itself: fabric has no lazy negative bit to materialise."""
    _tensor_arg(input, "resolve_neg")
    return input


def is_conj(input) -> bool:
    """False: fabric conjugates physically, never through a conjugate bit."""
    _tensor_arg(input, "is_conj")
    return False


def is_neg(input) -> bool:
    """False: fabric has no lazy negative bit."""
    _tensor_arg(input, "is_neg")
    return False


declare(real, method=False)
declare(imag, method=False)
for _fn in (view_as_real, view_as_complex, conj, conj_physical, resolve_conj, resolve_neg, is_conj,
            is_neg):
    declare(_fn)
declare(complex, method=False)
declare(polar, method=False)
__all__ += declared_names(__name__)

# ``z.real`` / ``z.imag`` are properties (assignable, as in PyTorch), not methods.
Tensor.real = property(real, _set_real)
Tensor.imag = property(imag, _set_imag)
