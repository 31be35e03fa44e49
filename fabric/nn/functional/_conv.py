"""Convolutions: ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d``.

A convolution is im2col (the input's sliding windows gathered into columns by
a strided view, ``backend.im2col`` for 1-D and 2-D) followed by one batched
GEMM over the ``(N, groups, C/groups * prod(kernel), L)`` layout, so the
weight multiplies every image's columns in BLAS with no loop over the batch
or the output pixels.  Three ``Function``s share one geometry (:class:`_Geom`)
and are each other's derivatives, which is what makes double backward work
(PyTorch does the same with ``convolution`` / ``convolution_backward``):

* ``_Convolution``   ``y = C(x, w)``          the convolution;
* ``_ConvTranspose`` ``x = T(y, w)``          its adjoint in ``x`` (col2im of
  ``w^T y``), which is also the transposed convolution;
* ``_ConvWeight``    ``w = W(x, y)``          its adjoint in ``w``.

``<C(x, w), y> = <x, T(y, w)> = <w, W(x, y)>``, so every gradient of each of
them is one of the three again.  col2im is a loop over the kernel offsets
adding strided slices (never ``numpy.add.at``).

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> F.conv2d(fabric.ones(1, 1, 3, 3), fabric.ones(1, 1, 2, 2))
    tensor([[[[4., 4.],
              [4., 4.]]]])
"""
from __future__ import annotations

import builtins
import itertools

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...backends import backend_of
from ...backends.fused import conv_output_size
from ...ops._registry import declare_op
from ...ops._util import device_mismatch, xp_of

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

_TYPE_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "bfloat16": "BFloat16", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


class _Geom:
    """The geometry of one convolution: input spatial size ``in_size``,
    output size ``out_size``, ``kernel``, ``stride``, ``dilation``, the
    low-side padding ``pad`` (the high side is whatever makes the windows fit
    ``out_size``: 'same' with an even kernel and transposed convolutions with
    ``output_padding`` need it asymmetric) and ``groups``."""

    __slots__ = ("nd", "in_size", "out_size", "kernel", "stride", "dilation", "pad", "groups", "backend_ok", "_flat")

    def __init__(self, in_size, out_size, kernel, stride, dilation, pad, groups):
        self.nd = len(kernel)
        self.in_size, self.out_size = tuple(in_size), tuple(out_size)
        self.kernel, self.stride, self.dilation, self.pad = tuple(kernel), tuple(stride), tuple(dilation), tuple(pad)
        self.groups = groups
        # backend.im2col/col2im take 1-D/2-D windows with symmetric padding
        self.backend_ok = self.nd <= 2 and all(
            conv_output_size(i, k, s, p, d) == o
            for i, o, k, s, p, d in zip(self.in_size, self.out_size, self.kernel, self.stride, self.pad,
                                        self.dilation))
        self._flat = None

    def flat(self):
        """The "flat shift" layout of a stride-1 convolution (see
        :func:`_im2col_flat`), computed once: ``(padded, plane, wide, extra,
        offsets, wide_shape, crop)`` - the padded spatial extent, its element
        count, the number of wide output columns per image, the tail the last
        window reads past the last plane, each kernel offset's element offset
        in a padded plane, the spatial shape of the wide output and the index
        that crops it to ``out_size``."""
        if self._flat is None:
            padded = tuple(max(o + d * (k - 1), i + p) for o, d, k, i, p in zip(
                self.out_size, self.dilation, self.kernel, self.in_size, self.pad))
            pstr = [_prod(padded[i + 1:]) for i in range(self.nd)]
            offsets = [sum(k * d * s for k, d, s in zip(offs, self.dilation, pstr))
                       for offs in itertools.product(*(range(k) for k in self.kernel))]
            extra = sum((k - 1) * d * s for k, d, s in zip(self.kernel[1:], self.dilation[1:], pstr[1:]))
            wide_shape = self.out_size[:1] + padded[1:]
            crop = (slice(None), slice(None)) + tuple(slice(0, o) for o in self.out_size)
            self._flat = (padded, _prod(padded), _prod(wide_shape), extra, offsets, wide_shape, crop)
        return self._flat

    def __repr__(self):
        return (f"_Geom(in={self.in_size}, out={self.out_size}, k={self.kernel}, s={self.stride}, "
                f"d={self.dilation}, p={self.pad}, g={self.groups})")


# --------------------------------------------------------------------------
# im2col / col2im
# --------------------------------------------------------------------------
def _im2col(x, geom):
    """``x`` (N, C, *in_size) -> columns (N, C * prod(kernel), prod(out_size)),
    row ``c * prod(kernel) + kernel offset``, the layout of ``F.unfold``."""
    if geom.backend_ok:
        return backend_of(x).im2col(x, geom.kernel, geom.stride, geom.pad, geom.dilation)
    xp = xp_of(x)
    n, c = x.shape[:2]
    ext = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(geom.out_size, geom.stride, geom.dilation, geom.kernel)]
    hi = [max(e - i - p, 0) for e, i, p in zip(ext, geom.in_size, geom.pad)]
    if any(geom.pad) or any(hi):
        xpad = xp.zeros((n, c) + tuple(i + p + h for i, p, h in zip(geom.in_size, geom.pad, hi)), x.dtype)
        xpad[(slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(geom.pad, geom.in_size))] = x
    else:
        xpad = x
    st = xpad.strides
    kernel_strides = tuple(d * s for d, s in zip(geom.dilation, st[2:]))
    window_strides = tuple(s * t for s, t in zip(geom.stride, st[2:]))
    view = xp.lib.stride_tricks.as_strided(xpad, (n, c) + geom.kernel + geom.out_size,
                                           st[:2] + kernel_strides + window_strides)
    return view.reshape(n, c * _prod(geom.kernel), _prod(geom.out_size))


def _col2im(cols, n, c, geom):
    """The adjoint of :func:`_im2col`: column entries summed back into
    (N, C, *in_size), one strided-slice addition per kernel offset."""
    if geom.backend_ok:
        return backend_of(cols).col2im(cols, (n, c) + geom.in_size, geom.kernel, geom.stride, geom.pad,
                                       geom.dilation)
    xp = xp_of(cols)
    ext = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(geom.out_size, geom.stride, geom.dilation, geom.kernel)]
    padded = tuple(max(e, i + p) for e, i, p in zip(ext, geom.in_size, geom.pad))
    xpad = xp.zeros((n, c) + padded, cols.dtype)
    cols = cols.reshape((n, c) + geom.kernel + geom.out_size)
    full = (slice(None), slice(None))
    for offs in itertools.product(*(range(k) for k in geom.kernel)):
        dst = full + tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                           for o, d, s, m in zip(offs, geom.dilation, geom.stride, geom.out_size))
        xpad[dst] += cols[full + offs]
    if padded == geom.in_size and not any(geom.pad):
        return xpad
    return xp.ascontiguousarray(xpad[full + tuple(slice(p, p + i) for p, i in zip(geom.pad, geom.in_size))])


# --------------------------------------------------------------------------
# the "flat shift" layout (NumPy, stride 1)
# --------------------------------------------------------------------------
# With each (n, c) plane zero-padded and flattened, the window element at
# kernel offset ``(i, j)`` of every output position is the contiguous run of
# ``wide = oh * Wp`` elements starting at ``i * dh * Wp + j * dw``: the output
# computed "wide" (``Wp`` columns per output row, the last ``Wp - ow`` of them
# garbage, cropped after the GEMM).  im2col is then one copy and col2im
# ``prod(kernel)`` additions whose inner loops are ``wide`` long instead of
# ``ow``.  The columns are laid out (C * prod(kernel), N * wide) - the batch
# folded into the GEMM's long side - so each of the three products is one
# GEMM (batched over groups only).  Garbage columns never reach a result:
# they are cropped from ``y``, and the wide ``gy`` that meets them in the
# two gradients is zero there (the garbage is zeroed explicitly when a
# non-finite input or weight would make ``0 * x`` NaN).

def _use_flat(x, geom) -> bool:
    return (x.__class__ is np.ndarray and x.size > 0 and all(s == 1 for s in geom.stride)
            and all(k > 0 for k in geom.kernel) and all(i > 0 for i in geom.in_size))


def _finite(a) -> bool:
    # one pass, no temporary; a sum that overflows only costs the slow path
    return a.dtype.kind not in "fc" or bool(np.isfinite(a.sum()))


def _im2col_flat(x, geom):
    """``x`` (N, C, *in_size) -> columns (C * prod(kernel), N * wide), row
    ``c * prod(kernel) + kernel offset``."""
    n, c = x.shape[:2]
    padded, plane, wide, extra, offsets, _, _ = geom.flat()
    body = n * c * plane
    if padded == geom.in_size:
        buf = np.empty(body + extra, x.dtype)
        buf[:body].reshape(x.shape)[...] = x
        buf[body:] = 0
    else:
        buf = np.zeros(body + extra, x.dtype)
        buf[:body].reshape((n, c) + padded)[_interior(geom)] = x
    it = buf.itemsize
    pstr = [_prod(padded[i + 1:]) * it for i in range(geom.nd)]
    view = np.lib.stride_tricks.as_strided(
        buf, (c,) + geom.kernel + (n, wide),
        (plane * it,) + tuple(d * s for d, s in zip(geom.dilation, pstr)) + (c * plane * it, it), writeable=False)
    return view.reshape(c * len(offsets), n * wide)


def _col2im_flat(cols, n, c, geom):
    """The adjoint of :func:`_im2col_flat` (garbage columns must be zero), in
    two passes so that most additions run over long rows: first the kernel
    offsets along the inner dims are summed into one wide row set per
    offset along dim 0 (shifts of ``(C, N * wide)`` runs - a shifted window
    of a valid column stays inside its own output row, garbage adds zeros),
    then those ``kernel[0]`` row sets are added into the padded planes."""
    padded, plane, wide, extra, offsets, _, _ = geom.flat()
    k0 = geom.kernel[0]
    rest = len(offsets) // k0
    nw = n * wide
    cols = cols.reshape(c, k0, rest, nw)
    rows = np.empty((c, k0, nw + extra), cols.dtype)
    rows[:, :, :nw] = cols[:, :, 0]
    rows[:, :, nw:] = 0
    for j in range(1, rest):
        s = offsets[j]
        dst = rows[:, :, s:s + nw]
        dst += cols[:, :, j]
    body = n * c * plane
    buf = np.zeros(body + extra, cols.dtype)
    it = buf.itemsize
    step = offsets[rest] if k0 > 1 else 0
    for i in range(k0):
        dst = np.lib.stride_tricks.as_strided(buf[i * step:], (c, n, wide), (plane * it, c * plane * it, it))
        dst += rows[:, i, :nw].reshape(c, n, wide)
    out = buf[:body].reshape((n, c) + padded)
    if padded == geom.in_size:
        return out
    return np.ascontiguousarray(out[_interior(geom)])


def _interior(geom):
    return (slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(geom.pad, geom.in_size))


def _wide_gy(gy, geom):
    """``gy`` (N, O, *out_size) -> (O, N * wide), zero in the garbage columns."""
    n, o = gy.shape[:2]
    _, _, wide, _, _, wide_shape, crop = geom.flat()
    out = np.zeros((o, n) + wide_shape, gy.dtype)
    out[crop] = gy.swapaxes(0, 1)
    return out.reshape(o, n * wide)


def _zero_garbage(cols, n, geom):
    """``cols`` (rows, N * wide) with its garbage columns zeroed, in place."""
    _, _, _, _, _, wide_shape, _ = geom.flat()
    v = cols.reshape((cols.shape[0], n) + wide_shape)
    for i in range(1, geom.nd):
        v[(slice(None), slice(None)) + (slice(None),) * i + (slice(geom.out_size[i], None),)] = 0
    return cols


def _conv_flat(x, w, geom, cols):
    n = x.shape[0]
    o, g = w.shape[0], geom.groups
    if cols is None:
        cols = _im2col_flat(x, geom)
    kk = _prod(w.shape[1:])
    if g == 1:
        y = np.matmul(w.reshape(o, kk), cols)
    else:
        y = np.matmul(w.reshape(g, o // g, kk), cols.reshape(g, kk, cols.shape[-1]))
    _, _, _, _, _, wide_shape, crop = geom.flat()
    y = y.reshape((o, n) + wide_shape)[crop].swapaxes(0, 1)
    return np.ascontiguousarray(y), cols


def _conv_transpose_flat(gy, w, geom):
    n, o = gy.shape[:2]
    g = geom.groups
    c = w.shape[1] * g
    kk = _prod(w.shape[1:])
    gyw = _wide_gy(gy, geom)
    if g == 1:
        cols = np.matmul(w.reshape(o, kk).T, gyw)
    else:
        cols = np.matmul(w.reshape(g, o // g, kk).transpose(0, 2, 1), gyw.reshape(g, o // g, gyw.shape[-1]))
        cols = cols.reshape(g * kk, gyw.shape[-1])
    if not _finite(w):
        _zero_garbage(cols, n, geom)
    return _col2im_flat(cols, n, c, geom)


def _conv_weight_flat(x, gy, w_shape, geom, cols):
    n, o = gy.shape[:2]
    g = geom.groups
    if cols is None:
        cols = _im2col_flat(x, geom)
    if not _finite(x):
        cols = _zero_garbage(cols.copy(), n, geom)
    gyw = _wide_gy(gy, geom)
    if g == 1:
        kk, nw = cols.shape
        # OpenBLAS is slow on (small x huge) @ (huge x small); measured choices
        if o * kk <= 256:
            wide = nw // n
            gw = np.matmul(gyw.reshape(o, n, wide).transpose(1, 0, 2),
                           cols.reshape(kk, n, wide).transpose(1, 2, 0)).sum(0)
        elif kk > o:
            gw = np.matmul(cols, gyw.T).T
        else:
            gw = np.matmul(gyw, cols.T)
    else:
        kk = _prod(w_shape[1:])
        gw = np.matmul(gyw.reshape(g, o // g, gyw.shape[-1]), cols.reshape(g, kk, cols.shape[-1]).transpose(0, 2, 1))
    return gw.reshape(w_shape)


# --------------------------------------------------------------------------
# the three GEMMs
# --------------------------------------------------------------------------
def _conv_arrays(x, w, geom, cols=None):
    """C(x, w): (N, O, *out_size) without bias; also returns the columns
    (in the flat layout where :func:`_use_flat`)."""
    if _use_flat(x, geom):
        return _conv_flat(x, w, geom, cols)
    n = x.shape[0]
    o, g = w.shape[0], geom.groups
    if cols is None:
        cols = _im2col(x, geom)
    xp = xp_of(x)
    kk = _prod(w.shape[1:])          # (C / groups) * prod(kernel); explicit sizes: any may be 0
    if g == 1:
        y = xp.matmul(w.reshape(o, kk), cols)
    else:
        y = xp.matmul(w.reshape(g, o // g, kk), cols.reshape(n, g, kk, cols.shape[-1]))
    return y.reshape((n, o) + geom.out_size), cols


def _conv_transpose_arrays(gy, w, geom):
    """T(gy, w): col2im(w^T gy), shape (N, C, *in_size)."""
    if _use_flat(gy, geom) and w.size:
        return _conv_transpose_flat(gy, w, geom)
    xp = xp_of(gy)
    n, o = gy.shape[:2]
    g = geom.groups
    c = w.shape[1] * g
    lo = _prod(geom.out_size)
    kk = _prod(w.shape[1:])
    if g == 1:
        cols = xp.matmul(w.reshape(o, kk).T, gy.reshape(n, o, lo))
    else:
        cols = xp.matmul(w.reshape(g, o // g, kk).transpose(0, 2, 1), gy.reshape(n, g, o // g, lo))
    return _col2im(cols.reshape(n, g * kk, lo), n, c, geom)


def _conv_weight_arrays(x, gy, w_shape, geom, cols=None):
    """W(x, gy): the weight-shaped contraction of gy with x's columns."""
    if _use_flat(x, geom):
        return _conv_weight_flat(x, gy, w_shape, geom, cols)
    xp = xp_of(x)
    n, o = gy.shape[:2]
    g = geom.groups
    if cols is None:
        cols = _im2col(x, geom)
    lo = cols.shape[-1]
    if n == 0:
        return xp.zeros(w_shape, gy.dtype)
    if g == 1:
        gw = xp.matmul(gy.reshape(n, o, lo), cols.transpose(0, 2, 1))
    else:
        kk = _prod(w_shape[1:])
        gw = xp.matmul(gy.reshape(n, g, o // g, lo), cols.reshape(n, g, kk, lo).transpose(0, 1, 3, 2))
    return gw.sum(0).reshape(w_shape)


def _bias_shape(b, nd):
    return b.reshape((b.shape[0],) + (1,) * nd)


class _Convolution(Function):
    """``y = C(x, w) + b``."""

    _array_forward = True
    _node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, w, b, geom):
        y, cols = _conv_arrays(x, w, geom)
        if b is not None:
            y += _bias_shape(b, geom.nd)
        need = ctx.needs_input_grad
        if need and need[1]:
            ctx.cols = cols  # the weight gradient reuses the columns
        ctx.geom = geom
        ctx.save_for_backward(x, w)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        geom = ctx.geom
        gx = gw = gb = None
        if need_x:
            gx = _apply(_ConvTranspose, (gy, w, None, geom), (gy._data, w._data, None, geom))
        if need_w:
            cols = ctx.__dict__.get("cols")
            gw = _apply(_ConvWeight, (x, gy, w.shape, geom, cols), (x._data, gy._data, w.shape, geom, cols))
        if need_b:
            gb = gy.sum((0,) + tuple(range(2, gy.ndim)))
        return gx, gw, gb, None


class _ConvTranspose(Function):
    """``x = T(y, w) + b``: the transposed convolution."""

    _array_forward = True
    _node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, gy, w, b, geom):
        out = _conv_transpose_arrays(gy, w, geom)
        if b is not None:
            out += _bias_shape(b, geom.nd)
        ctx.geom = geom
        ctx.save_for_backward(gy, w)
        return out

    @staticmethod
    def backward(ctx, gz):
        gy, w = ctx.saved_tensors
        need_y, need_w, need_b = ctx.needs_input_grad[:3]
        geom = ctx.geom
        g_y = g_w = g_b = None
        if need_y:
            g_y = _apply(_Convolution, (gz, w, None, geom), (gz._data, w._data, None, geom))
        if need_w:
            g_w = _apply(_ConvWeight, (gz, gy, w.shape, geom, None), (gz._data, gy._data, w.shape, geom, None))
        if need_b:
            g_b = gz.sum((0,) + tuple(range(2, gz.ndim)))
        return g_y, g_w, g_b, None


class _ConvWeight(Function):
    """``w = W(x, y)``: the weight gradient of a convolution."""

    _array_forward = True
    _node_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, x, gy, w_shape, geom, cols):
        ctx.geom = geom
        ctx.save_for_backward(x, gy)
        return _conv_weight_arrays(x, gy, tuple(w_shape), geom, cols)

    @staticmethod
    def backward(ctx, gw):
        x, gy = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        geom = ctx.geom
        g_x = g_y = None
        if need_x:
            g_x = _apply(_ConvTranspose, (gy, gw, None, geom), (gy._data, gw._data, None, geom))
        if need_y:
            g_y = _apply(_Convolution, (x, gw, None, geom), (x._data, gw._data, None, geom))
        return g_x, g_y, None, None, None


# --------------------------------------------------------------------------
# argument parsing and checks (PyTorch's messages)
# --------------------------------------------------------------------------
def _int_tuple(v, nd, name, fn):
    if isinstance(v, (builtins.int, np.integer)) and not isinstance(v, builtins.bool):
        return (builtins.int(v),) * nd
    if isinstance(v, (tuple, list)):
        out = []
        for e in v:
            if not isinstance(e, (builtins.int, np.integer)) or isinstance(e, builtins.bool):
                raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but found element of type "
                                f"{type(e).__name__} at pos {len(out)}")
            out.append(builtins.int(e))
        if len(out) == 1:
            return tuple(out) * nd
        return tuple(out)
    raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")


def _dims_match(v, nd, name):
    if len(v) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match the "
                           f"convolution dimensions, but got {name}={list(v)}")


def _type_word(dt) -> str:
    return _TYPE_NAMES.get(str(dt), str(dt))


def _check_tensors(fn, input, weight, bias, nd, transposed):
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' (position {1 if name == 'input' else 2}) must be Tensor, "
                            f"not {type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{fn}(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")
    x, w = input._data, weight._data
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fn}, but got input of "
                           f"size: {list(x.shape)}")
    if x.__class__ is not w.__class__:
        device_mismatch(input, weight)
    if bias is not None and bias._data.__class__ is not x.__class__:
        device_mismatch(input, bias)
    if x.dtype != w.dtype:
        if x.dtype == np.float32:
            raise RuntimeError(f"Input type (torch.{_type_word(x.dtype)}Tensor) and weight type "
                               f"(torch.{_type_word(w.dtype)}Tensor) should be the same or input should be a MKLDNN "
                               "tensor and weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {_type_word(x.dtype)} but found {_type_word(w.dtype)}")
    if bias is not None and bias._data.dtype != x.dtype:
        raise RuntimeError(f"Input type ({_type_word(x.dtype).lower()}) and bias type "
                           f"({_type_word(bias._data.dtype).lower()}) should be the same")
    if x.dtype.kind == "b":
        raise RuntimeError(f"\"{'slow_conv_transpose' if transposed else 'slow_conv'}{nd}d_cpu\" not implemented "
                           "for 'Bool'")


def _check_shapes(x_shape, w_shape, bias, groups, transposed):
    """x_shape is batched.  Channel / groups / bias checks, as PyTorch words them."""
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    c = x_shape[1]
    if w_shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(w_shape)} instead")
    if w_shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(w_shape)}] instead")
    if transposed:
        if c != w_shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(w_shape)}, expected input{list(x_shape)} to "
                               f"have {w_shape[0]} channels, but got {c} channels instead")
        out_c = w_shape[1] * groups
    else:
        if c != w_shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(w_shape)}, expected input{list(x_shape)} "
                               f"to have {w_shape[1] * groups} channels, but got {c} channels instead")
        out_c = w_shape[0]
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != out_c):
        what = "transposed=1" if transposed else ""
        prefix = f"Given {what}, weight" if transposed else "Given weight"
        raise RuntimeError(f"{prefix} of size {list(w_shape)}, expected bias to be 1-dimensional with {out_c} "
                           f"elements, but got bias of size {list(bias._data.shape)} instead")


def _check_geometry(stride, padding, dilation):
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")


def _sizes(values) -> str:
    return " x ".join(str(v) for v in values)


def _unbatch(input, nd):
    """(input, unbatched?) with a batch dim added to an unbatched input."""
    if input._data.ndim == nd + 1:
        return input.unsqueeze(0), True
    return input, False


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd):
    fn = f"conv{nd}d"
    _check_tensors(fn, input, weight, bias, nd, False)
    w = weight._data
    if isinstance(groups, builtins.bool) or not isinstance(groups, (builtins.int, np.integer)):
        raise TypeError(f"{fn}(): argument 'groups' must be int, not {type(groups).__name__}")
    stride = _int_tuple(stride, nd, "stride", fn)
    dilation = _int_tuple(dilation, nd, "dilation", fn)
    pad_mode = None
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        pad_mode = padding
        padding = (0,) * nd
    else:
        padding = _int_tuple(padding, nd, "padding", fn)
    wnd = w.ndim - 2
    if wnd < 1:
        raise RuntimeError(f"weight should have at least three dimensions, but got weight of size {list(w.shape)}")
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation)):
        _dims_match(v, wnd, name)
    _check_geometry(stride, padding, dilation)
    input, unbatched = _unbatch(input, nd)
    x = input._data
    _check_shapes(x.shape, w.shape, bias, groups, False)
    kernel = w.shape[2:]
    in_size = x.shape[2:]
    if pad_mode == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        lo = tuple(t // 2 for t in total)
        hi = tuple(t - t // 2 for t in total)
    else:
        lo = hi = padding
    padded = [i + a + b for i, a, b in zip(in_size, lo, hi)]
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_sizes(padded)}). Kernel size: "
                           f"({_sizes(eff)}). Kernel size can't be greater than actual input size")
    out_size = tuple((p - e) // s + 1 for p, e, s in zip(padded, eff, stride))
    geom = _Geom(in_size, out_size, kernel, stride, dilation, lo, builtins.int(groups))
    b = None if bias is None else bias._data
    y = _apply(_Convolution, (input, weight, bias, geom), (x, w, b, geom))
    return y.squeeze(0) if unbatched else y


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, output_size=None):
    fn = f"conv_transpose{nd}d"
    _check_tensors(fn, input, weight, bias, nd, True)
    w = weight._data
    if isinstance(padding, str):
        raise TypeError(f"{fn}(): argument 'padding' must be tuple of ints, not str")
    stride = _int_tuple(stride, nd, "stride", fn)
    padding = _int_tuple(padding, nd, "padding", fn)
    output_padding = _int_tuple(output_padding, nd, "output_padding", fn)
    dilation = _int_tuple(dilation, nd, "dilation", fn)
    wnd = w.ndim - 2
    if wnd < 1:
        raise RuntimeError(f"weight should have at least three dimensions, but got weight of size {list(w.shape)}")
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation),
                    ("output_padding", output_padding)):
        _dims_match(v, wnd, name)
    _check_geometry(stride, padding, dilation)
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        # PyTorch runs 1-D as 2-D (height 1), and says so
        op, st, dl = output_padding, stride, dilation
        if nd == 1:
            op, st, dl = (0,) + op, (1,) + st, (1,) + dl
        names = ("depth", "height", "width")[3 - len(op):]
        parts = " ".join(f"output_padding_{n}: {v}" for n, v in zip(names, op))
        parts += " " + " ".join(f"stride_{n}: {v}" for n, v in zip(names, st))
        parts += " " + " ".join(f"dilation_{n}: {v}" for n, v in zip(names, dl))
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got {parts}")
    input, unbatched = _unbatch(input, nd)
    x = input._data
    _check_shapes(x.shape, w.shape, bias, groups, True)
    kernel = w.shape[2:]
    in_size = x.shape[2:]
    out_size = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                     for i, s, p, d, k, op in zip(in_size, stride, padding, dilation, kernel, output_padding))
    if any(o <= 0 for o in out_size):
        raise RuntimeError(f"Given input size per channel: ({_sizes(in_size)}). Calculated output size per channel: "
                           f"({_sizes(out_size)}). Output size is too small")
    # the adjoint of a convolution of an out_size input whose output is in_size
    geom = _Geom(out_size, in_size, kernel, stride, dilation, padding, builtins.int(groups))
    b = None if bias is None else bias._data
    y = _apply(_ConvTranspose, (input, weight, bias, geom), (x, w, b, geom))
    return y.squeeze(0) if unbatched else y


@declare_op(method=False)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over ``input`` (N, C_in, L) or (C_in, L) with
    ``weight`` (C_out, C_in / groups, k); ``padding`` may be an int, a tuple,
    ``'valid'`` or ``'same'``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.conv1d(fabric.ones(1, 2, 5), fabric.ones(3, 2, 3), padding='same').shape
        fabric.Size([1, 3, 5])
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1)


@declare_op(method=False)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over ``input`` (N, C_in, H, W) or (C_in, H, W) with
    ``weight`` (C_out, C_in / groups, kH, kW).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.conv2d(fabric.ones(2, 4, 8, 8), fabric.ones(6, 2, 3, 3), stride=2, groups=2).shape
        fabric.Size([2, 6, 3, 3])
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2)


@declare_op(method=False)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over ``input`` (N, C_in, D, H, W) or (C_in, D, H, W)
    with ``weight`` (C_out, C_in / groups, kD, kH, kW).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.conv3d(fabric.ones(1, 1, 4, 4, 4), fabric.ones(2, 1, 3, 3, 3)).shape
        fabric.Size([1, 2, 2, 2, 2])
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3)


@declare_op(method=False)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution ("deconvolution"): ``weight`` is
    (C_in, C_out / groups, k); the output length is
    ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.conv_transpose1d(fabric.ones(1, 1, 3), fabric.ones(1, 1, 2), stride=2)
        tensor([[[1., 1., 1., 1., 1., 1.]]])
    """
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


@declare_op(method=False)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution: ``weight`` is (C_in, C_out / groups, kH, kW).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.conv_transpose2d(fabric.ones(1, 4, 5, 5), fabric.ones(4, 2, 3, 3), stride=2,
        ...                                       padding=1, output_padding=1).shape
        fabric.Size([1, 2, 10, 10])
    """
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


@declare_op(method=False)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution: ``weight`` is (C_in, C_out / groups, kD, kH, kW).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.conv_transpose3d(fabric.ones(1, 2, 2, 2, 2), fabric.ones(2, 1, 2, 2, 2),
        ...                                       stride=2).shape
        fabric.Size([1, 1, 4, 4, 4])
    """
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)
