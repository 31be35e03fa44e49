"""The public transforms of ``fabric.fft``: argument checks (PyTorch's order,
classes and messages), dtype promotion, then a composition of the primitives in
``_core`` exactly as PyTorch composes its ``_fft_c2c`` / ``_fft_r2c`` /
``_fft_c2r``, so gradients follow PyTorch's formulas.  The 2-D forms and
``ifftn`` name themselves in error messages as PyTorch does (``fftn``,
``rfftn`` ...).
"""
from __future__ import annotations

import builtins
import numbers

from .. import _dtype as D
from ..ops.inplace import copy_into_out
from ._core import c2c, c2r, norm_from_string, r2c, resize

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]


def _is_complex(x):
    return x._data.dtype.kind == "c"


def _dtype_name(x):
    return {"complex64": "ComplexFloat", "complex128": "ComplexDouble", "float32": "Float", "float64": "Double",
            "float16": "Half", "bfloat16": "BFloat16"}.get(str(x._data.dtype), str(x._data.dtype))


def _promote(x, require_complex=False):
    """PyTorch's ``promote_tensor_fft``: integers to the default float dtype; float32/float64 only (CPU);
    to the matching complex dtype when ``require_complex``."""
    kind = x._data.dtype.kind
    if kind == "c":
        return x
    dt = D.from_numpy_dtype(x._data.dtype) if kind == "f" else D.get_default_dtype()
    if dt is not D.float32 and dt is not D.float64:
        raise RuntimeError(f"Unsupported dtype {'Half' if dt is D.float16 else 'BFloat16'}")
    if require_complex:
        dt = D.to_dtype("complex64" if dt is D.float32 else "complex128")
    return x if x._data.dtype == dt.to_numpy() else x.to(dt)


def _wrap(dim, ndim):
    """``maybe_wrap_dim`` without wrapping scalars (a 0-d tensor has no dim to transform)."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}")
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return builtins.int(dim) % ndim


def _check_n(n, name):
    if n is not None and (isinstance(n, bool) or not isinstance(n, numbers.Integral)):
        raise TypeError(f"fft_{name}(): argument 'n' must be int, not {type(n).__name__}")


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _check_out(name, out, want_complex):
    """PyTorch's check of an ``out=`` tensor's kind, made before any work."""
    if out is None or _is_complex(out) == want_complex:
        return
    kind = "complex" if want_complex else "floating point"
    raise RuntimeError(f"{name} expects a {kind} output tensor, but got {_dtype_name(out)}")


def _out(out, result):
    return result if out is None else copy_into_out(out, result)


# --- one-dimensional -------------------------------------------------------------------------------------------

def _c2c_1d(name, out, x, n, dim, norm, forward):
    _check_out(name, out, True)
    dim = _wrap(dim, x.ndim)
    size = x.shape[dim] if n is None else n
    _check_points(size)
    if n is not None:
        x = resize(x, (dim,), (n,))
    return _out(out, c2c(x, (dim,), norm_from_string(norm, forward), forward))


def _r2c_1d(name, out, x, n, dim, norm, forward, onesided):
    if _is_complex(x):
        raise RuntimeError(f"{name} expects a real input tensor, but got {_dtype_name(x)}")
    _check_out(name, out, True)
    x = _promote(x)
    dim = _wrap(dim, x.ndim)
    size = x.shape[dim] if n is None else n
    _check_points(size)
    if n is not None:
        x = resize(x, (dim,), (n,))
    y = r2c(x, (dim,), norm_from_string(norm, forward), onesided)
    return _out(out, y if forward else y.conj())


def _c2r_1d(name, out, x, n, dim, norm, forward):
    _check_out(name, out, False)
    x = _promote(x, require_complex=True)
    dim = _wrap(dim, x.ndim)
    size = 2 * (x.shape[dim] - 1) if n is None else n
    _check_points(size)
    if n is not None:
        x = resize(x, (dim,), (n // 2 + 1,))
    mode = norm_from_string(norm, forward)
    if forward:
        x = x.conj()
    return _out(out, c2r(x, (dim,), mode, size))


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """One-dimensional discrete Fourier transform of ``input`` along ``dim``.

    ``n`` zero-pads or truncates the signal first; ``norm`` is ``"backward"`` (no scaling, the default),
    ``"forward"`` (scale by ``1/n``) or ``"ortho"`` (``1/sqrt(n)``).  Real inputs give the full (two-sided)
    spectrum.

    Example::

        >>> fabric.fft.fft(fabric.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    _check_n(n, "fft")
    if _is_complex(input):
        return _c2c_1d("fft", out, input, n, dim, norm, True)
    return _r2c_1d("fft", out, input, n, dim, norm, True, False)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of :func:`fft` (scaled by ``1/n`` by default).

    Example::

        >>> fabric.fft.ifft(fabric.fft.fft(fabric.tensor([1.0, 2.0, 3.0])))
        tensor([1.+0.j, 2.+0.j, 3.+0.j])
    """
    _check_n(n, "ifft")
    if _is_complex(input):
        return _c2c_1d("ifft", out, input, n, dim, norm, False)
    return _r2c_1d("ifft", out, input, n, dim, norm, False, False)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Fourier transform of a real signal: the ``n // 2 + 1`` non-negative frequencies.

    Example::

        >>> fabric.fft.rfft(fabric.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    _check_n(n, "rfft")
    return _r2c_1d("rfft", out, input, n, dim, norm, True, True)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (input.size(dim) - 1)``).

    Example::

        >>> fabric.fft.irfft(fabric.fft.rfft(fabric.tensor([1.0, 2.0, 3.0])), n=3)
        tensor([1., 2., 3.])
    """
    _check_n(n, "irfft")
    return _c2r_1d("irfft", out, input, n, dim, norm, False)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Fourier transform of a Hermitian-symmetric signal given by its first half: a real spectrum.

    Example::

        >>> fabric.fft.hfft(fabric.fft.ihfft(fabric.tensor([1.0, 2.0, 3.0, 4.0])), n=4)
        tensor([1., 2., 3., 4.])
    """
    _check_n(n, "hfft")
    return _c2r_1d("hfft", out, input, n, dim, norm, True)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of :func:`hfft`: the one-sided inverse transform of a real signal.

    Example::

        >>> fabric.fft.ihfft(fabric.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([ 2.5000-0.0000j, -0.5000-0.5000j, -0.5000-0.0000j])
    """
    _check_n(n, "ihfft")
    return _r2c_1d("ihfft", out, input, n, dim, norm, False, True)


# --- n-dimensional ---------------------------------------------------------------------------------------------

def _int_list(value, what):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [builtins.int(value)]
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"argument '{what}' must be tuple of ints, not {type(value).__name__}") from None
    for v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"argument '{what}' must be tuple of ints, but found element of type "
                            f"{type(v).__name__}")
    return [builtins.int(v) for v in items]


def _shape_and_dims(x, s, dim):
    """PyTorch's ``canonicalize_fft_shape_and_dim_args``: the transformed dims and their signal sizes."""
    ndim = x.ndim
    dims = None
    if dim is not None:
        dims = [_wrap(d, ndim) for d in _int_list(dim, "dim")]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        shape = _int_list(s, "s")
        if dims is not None and len(dims) != len(shape):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(shape) > ndim:
            raise RuntimeError(f"Got shape with {len(shape)} values but input tensor only has {ndim} dimensions.")
        if dims is None:
            dims = list(range(ndim - len(shape), ndim))
        shape = [x.shape[d] if n == -1 else n for d, n in zip(dims, shape)]
    elif dims is None:
        dims = list(range(ndim))
        shape = list(x.shape)
    else:
        shape = [x.shape[d] for d in dims]
    for n in shape:
        _check_points(n)
    return dims, shape


def _c2r_shape_and_dims(name, x, s, dim):
    """``canonicalize_fft_c2r_shape_and_dim_args``: dims, the complex input's sizes, the last output size."""
    dims, shape = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    s_last = None if s is None else _int_list(s, "s")[-1]
    last_size = 2 * (x.shape[dims[-1]] - 1) if s_last is None or s_last == -1 else shape[-1]
    _check_points(last_size)
    shape[-1] = last_size // 2 + 1
    return dims, shape, last_size


def _fftn(name, out, x, s, dim, norm, forward):
    _check_out(name, out, True)
    dims, shape = _shape_and_dims(x, s, dim)
    x = resize(_promote(x, require_complex=True), dims, shape)
    return _out(out, c2c(x, dims, norm_from_string(norm, forward), forward))


def _rfftn(name, out, x, s, dim, norm):
    if _is_complex(x):
        raise RuntimeError(f"{name} expects a real-valued input tensor, but got {_dtype_name(x)}")
    _check_out(name, out, True)
    dims, shape = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = resize(_promote(x), dims, shape)
    return _out(out, r2c(x, dims, norm_from_string(norm, True), True))


def _irfftn(name, out, x, s, dim, norm):
    _check_out(name, out, False)
    dims, shape, last_size = _c2r_shape_and_dims(name, x, s, dim)
    x = resize(_promote(x, require_complex=True), dims, shape)
    return _out(out, c2r(x, dims, norm_from_string(norm, False), last_size))


def _hfftn(name, out, x, s, dim, norm):
    _check_out(name, out, False)
    dims, shape, last_size = _c2r_shape_and_dims(name, x, s, dim)
    x = resize(_promote(x, require_complex=True), dims, shape)
    mode = norm_from_string(norm, True)
    if len(dims) > 1:
        x = c2c(x, dims[:-1], mode, True)
    return _out(out, c2r(x.conj(), dims[-1:], mode, last_size))


def _ihfftn(name, out, x, s, dim, norm):
    if _is_complex(x):
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {_dtype_name(x)}")
    _check_out(name, out, True)
    dims, shape = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = resize(_promote(x), dims, shape)
    mode = norm_from_string(norm, False)
    y = r2c(x, dims[-1:], mode, True).conj()
    if len(dims) > 1:
        y = c2c(y, dims[:-1], mode, False)
    return _out(out, y)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional Fourier transform over ``dim`` (default: all dims, or the last ``len(s)``).

    Example::

        >>> fabric.fft.fftn(fabric.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return _fftn("fftn", out, input, s, dim, norm, True)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of :func:`fftn`.

    Example::

        >>> fabric.fft.ifftn(fabric.fft.fftn(fabric.ones(2, 2))).real
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _fftn("fftn", out, input, s, dim, norm, False)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional Fourier transform of a real signal; the last of ``dim`` keeps ``n // 2 + 1`` bins.

    Example::

        >>> fabric.fft.rfftn(fabric.ones(2, 4)).shape
        fabric.Size([2, 3])
    """
    return _rfftn("rfftn", out, input, s, dim, norm)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of :func:`rfftn`.

    Example::

        >>> fabric.fft.irfftn(fabric.fft.rfftn(fabric.ones(2, 4)), s=(2, 4))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]])
    """
    return _irfftn("irfftn", out, input, s, dim, norm)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional :func:`hfft`: the real transform of a Hermitian signal given by its half.

    Example::

        >>> fabric.fft.hfftn(fabric.fft.ihfftn(fabric.ones(2, 4)), s=(2, 4))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]])
    """
    return _hfftn("hfftn", out, input, s, dim, norm)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional :func:`ihfft`.

    Example::

        >>> fabric.fft.ihfftn(fabric.ones(2, 4)).shape
        fabric.Size([2, 3])
    """
    return _ihfftn("ihfftn", out, input, s, dim, norm)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional :func:`fftn` (over the last two dims by default).

    Example::

        >>> fabric.fft.fft2(fabric.ones(2, 2)).real
        tensor([[4., 0.],
                [0., 0.]])
    """
    return _fftn("fftn", out, input, s, dim, norm, True)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional :func:`ifftn`.

    Example::

        >>> fabric.fft.ifft2(fabric.fft.fft2(fabric.ones(2, 2))).real
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _fftn("fftn", out, input, s, dim, norm, False)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional :func:`rfftn`.

    Example::

        >>> fabric.fft.rfft2(fabric.ones(2, 4)).shape
        fabric.Size([2, 3])
    """
    return _rfftn("rfftn", out, input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional :func:`irfftn`.

    Example::

        >>> fabric.fft.irfft2(fabric.fft.rfft2(fabric.ones(2, 4))).shape
        fabric.Size([2, 4])
    """
    return _irfftn("irfftn", out, input, s, dim, norm)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional :func:`hfftn`.

    Example::

        >>> fabric.fft.hfft2(fabric.fft.ihfft2(fabric.ones(2, 4))).shape
        fabric.Size([2, 4])
    """
    return _hfftn("hfftn", out, input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional :func:`ihfftn`.

    Example::

        >>> fabric.fft.ihfft2(fabric.ones(2, 4)).shape
        fabric.Size([2, 3])
    """
    return _ihfftn("ihfftn", out, input, s, dim, norm)
