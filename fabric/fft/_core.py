"""The four primitives every transform of ``fabric.fft`` is built from, as in
PyTorch: ``C2C`` (complex to complex), ``R2C`` (real to complex, one-sided or
full), ``C2R`` (one-sided Hermitian complex to real) and ``Resize`` (zero-pad
or truncate the transformed dims to the requested sizes).

Each forward runs ``xp.fft`` of the input's backend (NumPy's pocketfft on CPU,
cuFFT through CuPy), so both devices share this code.  Each backward is written
with these same primitives, so double backward works, and follows PyTorch's
``derivatives.yaml``:

* ``C2C``: the transform in the other direction with the same normalization
  (the adjoint of an unnormalized DFT is the unnormalized inverse DFT);
* ``R2C``: zero-pad a one-sided gradient back to the full length, take the
  inverse ``C2C`` and keep the real part;
* ``C2R``: ``R2C`` of the gradient with the bins ``1 .. n - n//2 - 1`` doubled
  (each of them stands for itself and its mirrored conjugate).

A normalization is one of ``NONE``, ``BY_ROOT_N``, ``BY_N`` (which scaling this
transform applies), independent of its direction, as PyTorch's
``fft_norm_mode``.

Example::

    >>> import fabric
    >>> r2c(fabric.tensor([1.0, 2.0, 3.0, 4.0]), (0,), NONE, onesided=True)
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.function import Function, _apply1
from ..ops._util import xp_of

NONE, BY_ROOT_N, BY_N = 0, 1, 2

# numpy.fft's ``norm`` argument that applies a normalization, for a forward / an inverse transform
_NP_NORM = {True: {NONE: "backward", BY_N: "forward", BY_ROOT_N: "ortho"},
            False: {NONE: "forward", BY_N: "backward", BY_ROOT_N: "ortho"}}


def norm_from_string(norm, forward):
    """PyTorch's ``norm=`` string as the normalization a transform of direction ``forward`` applies."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _complex_of(np_dtype):
    return (np_dtype.type(0) + 0j).dtype if np_dtype.kind != "c" else np_dtype


def resize_array(x, dims, sizes):
    """``x`` truncated or zero-padded at the end of each of ``dims`` to ``sizes`` (a new array)."""
    shape = list(x.shape)
    for d, n in zip(dims, sizes):
        shape[d] = n
    out = xp_of(x).zeros(shape, x.dtype)
    common = [slice(None)] * x.ndim
    for d, n in zip(dims, sizes):
        common[d] = slice(0, min(n, x.shape[d]))
    common = tuple(common)
    out[common] = x[common]
    return out


class Resize(Function):
    """Truncate or zero-pad ``dims`` to ``sizes``; its adjoint is the resize back."""

    _array_forward = True
    _complex_native = True  # the backward below is PyTorch's complex formula itself

    @staticmethod
    def forward(ctx, x, dims, sizes):
        ctx.dims, ctx.in_sizes = dims, tuple(x.shape[d] for d in dims)
        return resize_array(x, dims, sizes)

    @staticmethod
    def backward(ctx, gy):
        return resize(gy, ctx.dims, ctx.in_sizes), None, None


class C2C(Function):
    _array_forward = True
    _complex_native = True  # the backward below is PyTorch's complex formula itself

    @staticmethod
    def forward(ctx, x, dims, norm, forward):
        ctx.dims, ctx.norm, ctx.forward_ = dims, norm, forward
        if not dims:
            return x.copy()
        xp = xp_of(x)
        fn = xp.fft.fftn if forward else xp.fft.ifftn
        return fn(x, axes=dims, norm=_NP_NORM[forward][norm]).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, gy):
        return c2c(gy, ctx.dims, ctx.norm, not ctx.forward_), None, None, None


class R2C(Function):
    _array_forward = True
    _complex_native = True  # the backward below is PyTorch's complex formula itself

    @staticmethod
    def forward(ctx, x, dims, norm, onesided):
        ctx.dims, ctx.norm, ctx.onesided, ctx.last_size = dims, norm, onesided, x.shape[dims[-1]]
        xp = xp_of(x)
        fn = xp.fft.rfftn if onesided else xp.fft.fftn
        return fn(x, axes=dims, norm=_NP_NORM[True][norm]).astype(_complex_of(x.dtype), copy=False)

    @staticmethod
    def backward(ctx, gy):
        if ctx.onesided:
            sizes = tuple(gy.shape[d] for d in ctx.dims[:-1]) + (ctx.last_size,)
            gy = resize(gy, ctx.dims, sizes)
        return c2c(gy, ctx.dims, ctx.norm, False).real, None, None, None


class C2R(Function):
    _array_forward = True
    _complex_native = True  # the backward below is PyTorch's complex formula itself

    @staticmethod
    def forward(ctx, x, dims, norm, last_size):
        ctx.dims, ctx.norm = dims, norm
        sizes = tuple(x.shape[d] for d in dims[:-1]) + (last_size,)
        y = xp_of(x).fft.irfftn(x, s=sizes, axes=dims, norm=_NP_NORM[False][norm])
        return y.astype(x.real.dtype, copy=False)

    @staticmethod
    def backward(ctx, gy):
        gx = r2c(gy, ctx.dims, ctx.norm, True)
        last = ctx.dims[-1]
        doubled = gy.shape[last] - gx.shape[last]
        if doubled > 0:
            xp = xp_of(gy._data)
            weight = xp.ones(gx.shape[last], gy._data.dtype)
            weight[1:1 + doubled] = 2
            weight = weight.reshape((-1,) + (1,) * (gx.ndim - 1 - last))
            gx = gx * Tensor._make(weight, False)
        return gx, None, None, None


def resize(x, dims, sizes):
    if tuple(x.shape[d] for d in dims) == tuple(sizes):
        return x
    return _apply1(Resize, x, (x._data, tuple(dims), tuple(sizes)))


def c2c(x, dims, norm, forward):
    return _apply1(C2C, x, (x._data, tuple(dims), norm, forward))


def r2c(x, dims, norm, onesided):
    return _apply1(R2C, x, (x._data, tuple(dims), norm, onesided))


def c2r(x, dims, norm, last_size):
    return _apply1(C2R, x, (x._data, tuple(dims), norm, last_size))


