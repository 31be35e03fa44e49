"""Padding and resampling: ``pad``, ``interpolate`` (and the ``upsample*``
aliases), ``pixel_shuffle`` / ``pixel_unshuffle``, ``unfold`` / ``fold``,
``grid_sample`` and ``affine_grid``.

Interpolation is separable: one pass per spatial dimension (the last one
first, the order PyTorch's CPU kernel combines its taps in), each a sum of
``index_select`` gathers times per-output weights whose indices and weights
are computed on the host exactly as PyTorch computes them (in float32 for
float32 input).  Gathers are differentiable Tensor ops, so gradients of any
order come for free; their backward is the backend's scatter-add.
``unfold`` / ``fold`` are im2col / col2im (see ``_conv``), each other's adjoint.

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> F.pad(fabric.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode='reflect')
    tensor([[3., 2., 1., 2., 3., 2.]])
    >>> F.interpolate(fabric.tensor([[[0.0, 1.0]]]), scale_factor=2, mode='linear')
    tensor([[[0.0000, 0.2500, 0.7500, 1.0000]]])
"""
from __future__ import annotations

import builtins
import itertools
import math
import warnings

import numpy as np

from ... import ops as _ops
from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...ops._registry import declare_op
from ...ops._util import xp_of
from ._conv import _TYPE_NAMES, _col2im, _Geom, _im2col, _prod

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle", "unfold", "fold", "grid_sample", "affine_grid"]


def _const(arr):
    return Tensor._make(arr, False)


def _type_word(dt) -> str:
    return _TYPE_NAMES.get(str(dt), str(dt))


# --------------------------------------------------------------------------
# pad
# --------------------------------------------------------------------------
class _ConstantPad(Function):
    """Pad (or, for negative amounts, crop) every dim; ``pads`` is one
    ``(before, after)`` pair per dim.  Its adjoint is itself with the pads
    negated and value 0."""

    _array_forward = True
    _node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads, value):
        xp = xp_of(x)
        shape = tuple(s + a + b for s, (a, b) in zip(x.shape, pads))
        out = xp.full(shape, value, x.dtype) if value != 0 else xp.zeros(shape, x.dtype)
        src = tuple(slice(max(-a, 0), s - max(-b, 0)) for s, (a, b) in zip(x.shape, pads))
        dst = tuple(slice(max(a, 0), max(a, 0) + max(sl.stop - sl.start, 0)) for sl, (a, _) in zip(src, pads))
        if all(sl.stop > sl.start for sl in src):
            out[dst] = x[src]
        ctx.pads = pads
        return out

    @staticmethod
    def backward(ctx, gy):
        neg = tuple((-a, -b) for a, b in ctx.pads)
        return _apply(_ConstantPad, (gy, neg, 0), (gy._data, neg, 0)), None, None


_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_pairs(pad, ndim):
    """F.pad's flat (last dim first) list as (before, after) per dim of an ndim tensor."""
    pairs = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        pairs[ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return tuple(pairs)


def _pad_index(mode, size, before, after):
    """Source indices along one dim for a non-constant pad."""
    j = np.arange(-before, size + after, dtype=np.int64)
    if mode == "reflect":
        j = np.abs(j)
        return np.where(j >= size, 2 * (size - 1) - j, j)
    if mode == "replicate":
        return np.clip(j, 0, size - 1)
    # circular: a negative amount crops first; the wrap-around reads the cropped tensor
    lo, hi = max(-before, 0), size - max(-after, 0)
    j = np.arange(-max(before, 0), (hi - lo) + max(after, 0), dtype=np.int64)
    return lo + np.mod(j, hi - lo)


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims of ``input``: ``pad`` lists
    ``(left, right)`` for the last dim, then the one before, ...; negative
    amounts crop.  ``mode`` is 'constant' (with ``value``, any number of
    dims), or 'reflect', 'replicate', 'circular' (the last 1 to 3 dims of a
    batched or unbatched input).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.pad(fabric.ones(1, 2), (1, 1), value=0.5)
        tensor([[0.5000, 1.0000, 1.0000, 0.5000]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}")
    for i, p in enumerate(pad):
        if not isinstance(p, (builtins.int, np.integer)) or isinstance(p, builtins.bool):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
    pad = tuple(builtins.int(p) for p in pad)
    x = input._data
    nd = x.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * nd:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {nd}")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pairs = _pad_pairs(pad, nd)
    if mode == "constant":
        for s, (a, b) in zip(x.shape, pairs):
            if s + a + b < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        v = 0 if value is None else value
        if x.dtype.kind in "iu":
            v = builtins.int(v)
        elif x.dtype.kind == "b":
            v = builtins.bool(v)
        return _apply(_ConstantPad, (input, pairs, v), (x, pairs, v))
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    k = len(pad) // 2
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode in ("reflect", "replicate"):
        if x.dtype.kind == "b" and mode == "replicate":
            raise NotImplementedError(f"\"replication_pad{k}d\" not implemented for 'Bool'")
        first = 1 if nd == k + 2 else 0
        if any(s == 0 for s in x.shape[first:]):
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                               f"other non-zero dimensions for input, but got: {list(x.shape)}")
    y = input
    for i in range(k):
        d = nd - 1 - i
        a, b = pairs[d]
        size = x.shape[d]
        if mode == "reflect" and (a >= size or b >= size):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({a}, {b}) at dimension {d} of input {list(x.shape)}")
        if mode == "circular" and (a > size or b > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + a + b < 0:
            raise RuntimeError(f"input tensor is too small for the padding ({a}, {b}) at dimension {d}")
    for i in range(k):
        d = nd - 1 - i
        a, b = pairs[d]
        if a == 0 and b == 0:
            continue
        idx = _pad_index(mode, x.shape[d], a, b)
        y = y.index_select(d, _const(xp_of(x).asarray(idx)))
    return y if y is not input else input.clone()


# --------------------------------------------------------------------------
# interpolate
# --------------------------------------------------------------------------
def _opmath(dtype):
    """PyTorch's opmath type: index/weight arithmetic is float32 except for float64."""
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _compute_scale(in_size, out_size, align_corners, scale, ot):
    """``area_pixel_compute_scale``: the source step per output element."""
    if align_corners:
        return ot(in_size - 1) / ot(out_size - 1) if out_size > 1 else ot(0)
    if scale is not None and scale > 0:
        return ot(1.0 / scale)
    return ot(in_size) / ot(out_size)


def _source_index(scale, out_size, align_corners, cubic, ot):
    """``area_pixel_compute_source_index`` for every output position."""
    i = np.arange(out_size).astype(ot)
    if align_corners:
        return scale * i
    src = scale * (i + ot(0.5)) - ot(0.5)
    return src if cubic else np.maximum(src, ot(0))


def _nearest_taps(in_size, out_size, scale, exact, ot, shortcuts):
    """Source indices of 'nearest' ('nearest-exact' when ``exact``).  The 2-D
    kernel (``shortcuts``) follows PyTorch's ``nearest_idx`` /
    ``nearest_exact_idx``: a float32 scale, and for 'nearest' a copy of equal
    sizes and halved indices for an exact 2x output whatever ``scale`` says;
    1-D and 3-D follow PyTorch's generic kernel (opmath precision, no shortcuts)."""
    if shortcuts:
        s = _compute_scale(in_size, out_size, False, scale, np.float32)
        if exact:    # floorf((i + 0.5) * scale), the product in double
            idx = np.floor(((np.arange(out_size) + 0.5) * np.float64(s)).astype(np.float32))
            return [np.minimum(idx.astype(np.int64), in_size - 1)], None
        if out_size == in_size:
            return [np.arange(out_size, dtype=np.int64)], None
        if out_size == 2 * in_size:
            return [np.arange(out_size, dtype=np.int64) >> 1], None
        ot = np.float32
    s = _compute_scale(in_size, out_size, False, scale, ot)
    if exact:
        real = _source_index(s, out_size, False, False, ot)
        idx = np.floor((real.astype(np.float64) + 0.5).astype(np.float32))
    else:
        real = s * np.arange(out_size).astype(ot)
        idx = np.floor(real.astype(np.float32))
    return [np.minimum(idx.astype(np.int64), in_size - 1)], None


def _linear_taps(in_size, out_size, align_corners, scale, ot, dtype):
    if out_size == in_size:
        i = np.arange(out_size, dtype=np.int64)
        return [i, i], [np.ones(out_size, dtype), np.zeros(out_size, dtype)]
    s = _compute_scale(in_size, out_size, align_corners, scale, ot)
    real = _source_index(s, out_size, align_corners, False, ot)
    i0 = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), in_size - 1)
    l1 = np.clip(real - i0.astype(ot), ot(0), ot(1)).astype(ot)
    i1 = i0 + (i0 < in_size - 1)
    l0 = (ot(1) - l1).astype(dtype)
    return [i0, i1], [l0, l1.astype(dtype)]


def _cubic_taps(in_size, out_size, align_corners, scale, ot, dtype):
    s = _compute_scale(in_size, out_size, align_corners, scale, ot)
    real = _source_index(s, out_size, align_corners, True, ot)
    i0 = np.floor(real.astype(np.float32)).astype(np.int64)
    t = (real - i0.astype(ot)).astype(ot)
    a = ot(-0.75)

    def conv1(x):   # |x| <= 1
        return ((a + ot(2)) * x - (a + ot(3))) * x * x + ot(1)

    def conv2(x):   # 1 < |x| < 2
        return ((a * x - ot(5) * a) * x + ot(8) * a) * x - ot(4) * a

    x2 = ot(1) - t
    weights = [conv2((t + 1.0).astype(ot)), conv1(t), conv1(x2), conv2((x2 + 1.0).astype(ot))]
    idx = [np.clip(i0 - 1 + j, 0, in_size - 1) for j in range(4)]
    return idx, [w.astype(dtype) for w in weights]


def _aa_filter(x, cubic, ft):
    """PyTorch's antialias filters: the triangle (bilinear) or Keys' cubic with a = -0.5 (bicubic)."""
    x = np.abs(x)
    if not cubic:
        return np.where(x < 1, ft(1) - x, ft(0)).astype(ft)
    a = ft(-0.5)
    near = ((a + ft(2)) * x - (a + ft(3))) * x * x + ft(1)
    far = ((a * x - ft(5) * a) * x + ft(8) * a) * x - ft(4) * a
    return np.where(x < 1, near, np.where(x < 2, far, ft(0))).astype(ft)


def _aa_taps(in_size, out_size, align_corners, scale, dtype, cubic):
    """Source indices and weights of an antialiased pass (PyTorch's ``_compute_weights_aa``):
    output ``i`` averages the inputs within ``support`` of its centre, the filter stretched by the
    downscale factor, its weights normalised to sum to 1.  The arithmetic follows PyTorch's types:
    ``scalar_t`` (the input's float type) with the intermediate double steps of its C++ expressions."""
    ft = np.dtype(dtype).type
    interp = 4 if cubic else 2
    s = _compute_scale(in_size, out_size, align_corners, scale, ft)
    support = ft(np.float64(interp * 0.5) * np.float64(s)) if s >= 1.0 else ft(interp * 0.5)
    width = int(np.ceil(support)) * 2 + 1
    invscale = ft(1.0 / np.float64(s)) if s >= 1.0 else ft(1.0)
    i = np.arange(out_size, dtype=np.float64)
    center = (np.float64(s) * (i + 0.5)).astype(ft)
    xmin = np.maximum(np.trunc((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    xend = np.minimum(np.trunc((center + support).astype(np.float64) + 0.5).astype(np.int64), in_size)
    xsize = np.clip(xend - xmin, 0, width)
    j = np.arange(width)
    pos = (xmin[:, None] + j).astype(ft)
    w = _aa_filter(((pos - center[:, None]).astype(np.float64) + 0.5) * np.float64(invscale), cubic, ft)
    w = np.where(j < xsize[:, None], w, ft(0)).astype(ft)
    total = np.zeros(out_size, ft)
    for k in range(width):  # accumulated in order, in scalar_t
        total = (total + w[:, k]).astype(ft)
    w = np.where(total[:, None] != 0, w / np.where(total == 0, ft(1), total)[:, None], w).astype(ft)
    idx = [np.minimum(xmin + k, in_size - 1) for k in range(width)]
    return idx, [w[:, k].astype(dtype) for k in range(width)]


def _axis_gather(x, axis, taps):
    xp = xp_of(x)
    out = None
    for idx, w in taps:
        v = xp.take(x, xp.asarray(idx), axis=axis)
        if w is not None:
            v *= xp.asarray(w)
        if out is None:
            out = v
        else:
            out += v
    return out


def _axis_scatter(gy, axis, taps, in_size):
    """The adjoint of :func:`_axis_gather`.  Tap indices are non-decreasing,
    so the outputs reading one input element form a run; the r-th elements
    of all runs are gathered at once and summed over r (as many gathers as
    the longest run, no scatter with repeated indices)."""
    xp = xp_of(gy)
    shape = gy.shape[:axis] + (in_size,) + gy.shape[axis + 1:]
    lead = (slice(None),) * axis
    gx = None
    for idx, w in taps:
        g = gy * xp.asarray(w) if w is not None else gy
        starts = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
        counts = np.diff(np.append(starts, idx.size))
        acc = None
        for r in range(int(counts.max())):
            have = counts > r
            if have.all() or have.mean() > 0.5:
                # the r-th element of (nearly) every run: one gather, zeroed where a run is shorter
                v = xp.take(g, xp.asarray(starts + np.minimum(r, counts - 1)), axis=axis)
                if not have.all():
                    v *= xp.asarray(have.astype(gy.dtype).reshape((-1,) + (1,) * (gy.ndim - 1 - axis)))
                if acc is None:
                    acc = v
                else:
                    acc += v
            else:                    # only a few longer runs: a small gather and add
                sel = np.flatnonzero(have)
                part = xp.take(g, xp.asarray(starts[sel] + r), axis=axis)
                if sel[-1] - sel[0] + 1 == sel.size:     # a contiguous block: basic slicing
                    acc[lead + (slice(int(sel[0]), int(sel[-1]) + 1),)] += part
                else:
                    acc[lead + (xp.asarray(sel),)] += part
        uniq = idx[starts]
        if uniq.size == in_size:      # every input element is read (uniq is then arange)
            if gx is None:
                gx = acc
            else:
                gx += acc
        else:
            if gx is None:
                gx = xp.zeros(shape, gy.dtype)
            gx[lead + (xp.asarray(uniq),)] += acc
    return gx


class _AxisResample(Function):
    """One separable interpolation pass: ``y = sum_j w_j * x.take(idx_j, axis)``."""

    _array_forward = True
    _node_name = "UpsampleBackward0"

    @staticmethod
    def forward(ctx, x, axis, taps):
        ctx.args = (axis, taps, x.shape[axis])
        return _axis_gather(x, axis, taps)

    @staticmethod
    def backward(ctx, gy):
        axis, taps, size = ctx.args
        return _apply(_AxisResampleAdjoint, (gy, axis, taps, size), (gy._data, axis, taps, size)), None, None


class _AxisResampleAdjoint(Function):
    _array_forward = True
    _node_name = "UpsampleBackwardBackward0"

    @staticmethod
    def forward(ctx, gy, axis, taps, size):
        ctx.args = (axis, taps)
        return _axis_scatter(gy, axis, taps, size)

    @staticmethod
    def backward(ctx, gg):
        axis, taps = ctx.args
        return _apply(_AxisResample, (gg, axis, taps), (gg._data, axis, taps)), None, None, None


def _resample_dim(y, d, idx, weights):
    """One separable pass along dim ``d``: ``sum_j weights[j] * y[..., idx[j], ...]``."""
    nd_after = y.ndim - 1 - d
    taps = tuple((ix, None if weights is None else weights[j].reshape((-1,) + (1,) * nd_after))
                 for j, ix in enumerate(idx))
    return _apply(_AxisResample, (y, d, taps), (y._data, d, taps))


def _interp_size_error(in_spatial, out_spatial):
    names = ("D", "H", "W")[3 - len(in_spatial):]
    a = ", ".join(f"{n}: {v}" for n, v in zip(names, in_spatial))
    b = ", ".join(f"{n}: {v}" for n, v in zip(names, out_spatial))
    return RuntimeError(f"Input and output sizes should be greater than 0, but got input ({a}) output ({b})")


_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODE_NAMES = {1: "linear", 2: "bilinear", 3: "trilinear"}


def _is_integer(v) -> bool:
    return isinstance(v, (builtins.int, np.integer)) and not isinstance(v, builtins.bool)


@declare_op(method=False)
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize ``input`` (N, C, *spatial) with 1 to 3 spatial dims to ``size``
    or by ``scale_factor``.  Modes: 'nearest', 'nearest-exact', 'linear'
    (3-D input), 'bilinear' / 'bicubic' (4-D), 'trilinear' (5-D), 'area'
    (adaptive average pooling).  Source positions, indices and weights are
    PyTorch's, ``align_corners`` and ``recompute_scale_factor`` included.

    Example::

        >>> import fabric
        >>> x = fabric.arange(4.0).reshape(1, 1, 2, 2)
        >>> fabric.nn.functional.interpolate(x, scale_factor=2, mode='nearest')[0, 0]
        tensor([[0., 0., 1., 1.],
                [0., 0., 1., 1.],
                [2., 2., 3., 3.],
                [2., 2., 3., 3.]])
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    x = input._data
    dim = x.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {list(x.shape[2:])} and output size of {size}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(v) for v in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(v) for v in size]}")
            output_size = [builtins.int(v) for v in size]
        else:
            output_size = [builtins.int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(x.shape[2:])} and scale_factor of shape {scale_factor}. Please "
                    "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                    "format.")
            scale_factors = [builtins.float(s) for s in scale_factor]
        else:
            scale_factors = [builtins.float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [math.floor(builtins.float(x.shape[i + 2]) * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and x.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if antialias and x.dtype not in (np.float32, np.float64):
        if x.dtype == np.uint8:
            raise NotImplementedError("interpolate(antialias=True) of uint8 tensors (PyTorch's integer kernel) is "
                                      "not implemented in fabric; convert to float first")
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for '{_type_word(x.dtype)}'")
    valid = ("nearest", "nearest-exact", "area", "linear", "bilinear", "bicubic", "trilinear")
    if mode not in valid or x.ndim not in (3, 4, 5) or (mode == "bicubic" and x.ndim != 4):
        if mode in ("linear", "bilinear", "trilinear") and x.ndim in (3, 4, 5):
            want = _MODE_DIMS[mode] + 2
            raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {want}D input")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the modes: nearest | linear "
            f"| bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != dim:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {_MODE_DIMS[mode] + 2}D input")
    in_spatial = tuple(x.shape[2:])
    if output_size is None:
        output_size = [builtins.int(i * s) for i, s in zip(in_spatial, scale_factors)]
    if mode == "area":
        from ._pooling import _adaptive_avg

        return _adaptive_avg(input, tuple(output_size), dim)
    if x.dtype.kind != "f" and not (x.dtype == np.uint8 and mode in ("nearest", "nearest-exact")):
        if x.dtype == np.uint8 and mode == "bilinear":
            raise NotImplementedError("interpolate(mode='bilinear') of uint8 tensors (PyTorch's integer kernel) is "
                                      "not implemented in fabric; convert to float first")
        if dim == 2 and mode in ("nearest", "nearest-exact", "bilinear"):
            kname = f"upsample_{'bilinear' if mode == 'bilinear' else 'nearest'}2d_channels_last"
        else:
            kname = "compute_indices_weights_" + {"bicubic": "cubic", "nearest": "nearest",
                                                  "nearest-exact": "nearest"}.get(mode, "linear")
        raise NotImplementedError(f"\"{kname}\" not implemented for '{_type_word(x.dtype)}'")
    if any(i <= 0 for i in in_spatial) or any(o <= 0 for o in output_size):
        raise _interp_size_error(in_spatial, output_size)
    if mode not in ("nearest", "nearest-exact") and (x.shape[1] == 0 and x.size == 0 and x.shape[0] != 0):
        raise RuntimeError(f"Non-empty {x.ndim}D data tensor expected but got a tensor with sizes {list(x.shape)}")
    ot = _opmath(x.dtype)
    scales = scale_factors or [None] * dim
    y = input
    for d in range(dim - 1, -1, -1):
        i_n, o_n, sc = in_spatial[d], output_size[d], scales[d]
        if mode in ("nearest", "nearest-exact"):
            if i_n == o_n and (sc is None or (dim == 2 and mode == "nearest")):
                continue
            idx, w = _nearest_taps(i_n, o_n, sc, mode == "nearest-exact", ot, dim == 2)
        elif antialias:
            if i_n == o_n:
                continue
            idx, w = _aa_taps(i_n, o_n, align_corners, sc, x.dtype, mode == "bicubic")
        elif mode == "bicubic":
            idx, w = _cubic_taps(i_n, o_n, align_corners, sc, ot, x.dtype)
        else:
            if i_n == o_n:
                continue
            idx, w = _linear_taps(i_n, o_n, align_corners, sc, ot, x.dtype)
        y = _resample_dim(y, d + 2, idx, w)
    return y if y is not input else input.clone()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate` (warns, as PyTorch does)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --------------------------------------------------------------------------
# pixel shuffle
# --------------------------------------------------------------------------
def _check_factor(input, factor, fn, what):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not _is_integer(factor):
        raise TypeError(f"{fn}(): argument '{what}' (position 2) must be int, not {type(factor).__name__}")
    x = input._data
    if x.ndim < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input with {x.ndim} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {what}, but got {factor}")
    return x


def pixel_shuffle(input, upscale_factor):
    """Rearrange (*, C * r**2, H, W) into (*, C, H * r, W * r).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.pixel_shuffle(fabric.arange(4.0).reshape(1, 4, 1, 1), 2)
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    x = _check_factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    r = builtins.int(upscale_factor)
    c, h, w = x.shape[-3:]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    lead = tuple(x.shape[:-3])
    n = len(lead)
    y = input.reshape(lead + (c // (r * r), r, r, h, w))
    y = y.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return y.reshape(lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """Rearrange (*, C, H * r, W * r) into (*, C * r**2, H, W) (the inverse
    of :func:`pixel_shuffle`).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.pixel_unshuffle(fabric.ones(1, 1, 4, 4), 2).shape
        fabric.Size([1, 4, 2, 2])
    """
    x = _check_factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    r = builtins.int(downscale_factor)
    c, h, w = x.shape[-3:]
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    lead = tuple(x.shape[:-3])
    n = len(lead)
    y = input.reshape(lead + (c, h // r, r, w // r, r))
    y = y.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return y.reshape(lead + (c * r * r, h // r, w // r))


# --------------------------------------------------------------------------
# unfold / fold
# --------------------------------------------------------------------------
class _Im2Col(Function):
    _array_forward = True
    _node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, x, geom):
        ctx.geom = geom
        ctx.nc = x.shape[:2]
        return xp_of(x).ascontiguousarray(_im2col(x, geom))

    @staticmethod
    def backward(ctx, gy):
        n, c = ctx.nc
        return _apply(_Col2Im, (gy, n, c, ctx.geom), (gy._data, n, c, ctx.geom)), None


class _Col2Im(Function):
    _array_forward = True
    _node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, cols, n, c, geom):
        ctx.geom = geom
        return _col2im(xp_of(cols).ascontiguousarray(cols), n, c, geom)

    @staticmethod
    def backward(ctx, gx):
        return _apply(_Im2Col, (gx, ctx.geom), (gx._data, ctx.geom)), None, None, None


def _pair_arg(v, fn, name):
    if _is_integer(v):
        return (builtins.int(v),) * 2
    if isinstance(v, (tuple, list)) and all(_is_integer(e) for e in v):
        if len(v) == 1:
            return (builtins.int(v[0]),) * 2
        return tuple(builtins.int(e) for e in v)
    raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")


def _window_checks(k, d, p, s, fn):
    for name, v in (("kernel_size", k), ("dilation", d), ("padding", p), ("stride", s)):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    if k[0] <= 0 or k[1] <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {k[0]} kernel_width: "
                           f"{k[1]}")
    if d[0] <= 0 or d[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {d[0]} dilation_width: "
                           f"{d[1]}")
    if p[0] < 0 or p[1] < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} pad_width: {p[1]}")
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} stride_width: {s[1]}")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C * kh * kw, L).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.unfold(fabric.ones(2, 3, 4, 4), 2).shape
        fabric.Size([2, 12, 9])
    """
    k = _pair_arg(kernel_size, "unfold", "kernel_size")
    d = _pair_arg(dilation, "unfold", "dilation")
    p = _pair_arg(padding, "unfold", "padding")
    s = _pair_arg(stride, "unfold", "stride")
    _window_checks(k, d, p, s, "unfold")
    x = input._data
    if x.ndim not in (3, 4) or any(v == 0 for v in x.shape[x.ndim - 3:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(x.shape)}")
    unbatched = x.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
        x = input._data
    in_size = x.shape[2:]
    out = tuple((i + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for i, pp, dd, kk, ss in zip(in_size, p, d, k, s))
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input with spatial size ({in_size[0]}, {in_size[1]}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of "
                           f"sliding blocks as ({out[0]}, {out[1]}), but its components must be at least one.")
    geom = _Geom(in_size, out, k, s, d, p, 1)
    y = _apply(_Im2Col, (input, geom), (x, geom))
    return y.squeeze(0) if unbatched else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks into a tensor (col2im, summing
    overlaps): (N, C * kh * kw, L) -> (N, C, *output_size).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.fold(fabric.ones(1, 4, 4), (3, 3), 2)
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """
    o = _pair_arg(output_size, "fold", "output_size")
    k = _pair_arg(kernel_size, "fold", "kernel_size")
    d = _pair_arg(dilation, "fold", "dilation")
    p = _pair_arg(padding, "fold", "padding")
    s = _pair_arg(stride, "fold", "stride")
    if len(o) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(o)}")
    _window_checks(k, d, p, s, "fold")
    x = input._data
    if x.ndim not in (2, 3) or any(v == 0 for v in x.shape[x.ndim - 2:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(x.shape)}")
    ck = x.shape[-2]
    if ck % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={ck} and kernel_size=({k[0]}, {k[1]}).")
    blocks = tuple((oo + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for oo, pp, dd, kk, ss in zip(o, p, d, k, s))
    if blocks[0] < 1 or blocks[1] < 1 or x.shape[-1] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size=({o[0]}, {o[1]}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, "
                           f"{d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected size of input's "
                           f"dimension 2 to match the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={x.shape[-1]}.")
    unbatched = x.ndim == 2
    if unbatched:
        input = input.unsqueeze(0)
        x = input._data
    geom = _Geom(o, blocks, k, s, d, p, 1)
    n, c = x.shape[0], ck // (k[0] * k[1])
    y = _apply(_Col2Im, (input, n, c, geom), (x, n, c, geom))
    return y.squeeze(0) if unbatched else y


# --------------------------------------------------------------------------
# grid_sample / affine_grid
# --------------------------------------------------------------------------
def _clip(c, size):
    """``min(size - 1, max(c, 0))`` with PyTorch's gradient (zero at and beyond the bounds)."""
    low = (c <= 0).detach()
    high = (c >= size - 1).detach()
    return _ops.where(low, c * 0, _ops.where(high, c * 0 + (size - 1), c))


def _reflect(c, twice_low, twice_high):
    """Reflect ``c`` into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates)."""
    if twice_low == twice_high:
        return c * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    t = c - lo
    a = _ops.where((t < 0).detach(), -t, t)
    extra = _ops.fmod(a, span)
    flips = _ops.floor((a / span).detach())
    even = (_ops.remainder(flips, 2) == 0).detach()
    return _ops.where(even, extra + lo, (span - extra) + lo)


def _grid_source(coord, size, padding_mode, align_corners):
    if align_corners:
        c = (coord + 1) / 2 * (size - 1)
    else:
        c = ((coord + 1) * size - 1) / 2
    if padding_mode == "border":
        c = _clip(c, size)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = _clip(c, size)
    return c


def _gather_points(flat, lin):
    """``flat`` (N, C, P) read at ``lin`` (N, L) for every channel: (N, C, L)."""
    xp = xp_of(flat._data)
    n, c = flat.shape[0], flat.shape[1]
    idx = xp.ascontiguousarray(xp.broadcast_to(lin[:, None, :], (n, c, lin.shape[-1])))
    return flat.gather(2, _const(idx))


@declare_op(autocast="grid_sampler", method=False)
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) [or (N, C, D, H, W)] at the normalised
    positions ``grid`` (N, H_out, W_out, 2) [(N, D, H, W, 3)] in [-1, 1],
    ``x`` (width) first; ``mode`` 'bilinear' or 'nearest', ``padding_mode``
    'zeros', 'border' or 'reflection'.  Differentiable in both arguments.

    Example::

        >>> import fabric
        >>> x = fabric.arange(4.0).reshape(1, 1, 2, 2)
        >>> g = fabric.zeros(1, 1, 1, 2)
        >>> fabric.nn.functional.grid_sample(x, g, align_corners=True)
        tensor([[[[1.5000]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    x, g = input._data, grid._data
    if x.__class__ is not g.__class__:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if x.dtype != g.dtype:
        raise RuntimeError(f"expected scalar type {_type_word(x.dtype)} but found {_type_word(g.dtype)}")
    if x.ndim not in (4, 5) or g.ndim != x.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(x.shape)} and grid with sizes {list(g.shape)}")
    if x.shape[0] != g.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(x.shape)} and grid with sizes {list(g.shape)}")
    nd = x.ndim - 2
    if g.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(g.shape)}")
    for i in range(2, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {i} being empty")
    if mode == "bicubic":
        if nd == 3:
            raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
        raise NotImplementedError("grid_sample(mode='bicubic') is not implemented in fabric; use 'bilinear' or "
                                  "'nearest'")
    if x.dtype.kind != "f":
        raise RuntimeError(f"\"grid_sampler_{nd}d_cpu\" not implemented for '{_type_word(x.dtype)}'")
    xp = xp_of(x)
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    out_sp = g.shape[1:-1]
    lpts = _prod(out_sp)
    flat = input.reshape(n, c, _prod(spatial))
    gflat = grid.reshape(n, lpts, nd)
    # source coordinate along spatial dim d (D, H, W order); grid[..., 0] is x (width)
    src = [_grid_source(gflat[:, :, nd - 1 - d], spatial[d], padding_mode, align_corners) for d in range(nd)]
    strides = [_prod(spatial[d + 1:]) for d in range(nd)]
    if mode == "nearest":
        lin = None
        valid = None
        for d in range(nd):
            i = xp.rint(src[d]._data).astype(np.int64)
            ok = (i >= 0) & (i < spatial[d])
            valid = ok if valid is None else valid & ok
            part = xp.clip(i, 0, spatial[d] - 1) * strides[d]
            lin = part if lin is None else lin + part
        # rounding has a zero derivative: the grid gets a zero gradient, as in PyTorch
        w = _ops.round(src[0]) * 0 + _const(valid.astype(x.dtype))
        out = _gather_points(flat, lin) * w.unsqueeze(1)
        return out.reshape((n, c) + tuple(out_sp))
    floors = [xp.floor(s._data).astype(np.int64) for s in src]
    out = None
    for bits in itertools.product((0, 1), repeat=nd):
        w = None
        valid = None
        lin = None
        for d in range(nd - 1, -1, -1):   # x factor first, then y, then z
            f = floors[d]
            i = f + bits[d]
            fac = (src[d] - _const(f.astype(x.dtype))) if bits[d] else (_const((f + 1).astype(x.dtype)) - src[d])
            w = fac if w is None else w * fac
            ok = (i >= 0) & (i < spatial[d])
            valid = ok if valid is None else valid & ok
            part = xp.clip(i, 0, spatial[d] - 1) * strides[d]
            lin = part if lin is None else lin + part
        w = w * _const(valid.astype(x.dtype))
        term = _gather_points(flat, lin) * w.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape((n, c) + tuple(out_sp))


def _linspace_from_neg_one(n, align_corners, dtype, xp):
    """PyTorch's ``linspace(-1, 1, n)`` (scaled by (n - 1) / n unless align_corners)."""
    if n <= 1:
        return xp.zeros((1,), dtype)
    ot = np.dtype(dtype).type
    step = (ot(1) - ot(-1)) / ot(n - 1)
    i = np.arange(n)
    half = n // 2
    r = np.where(i < half, ot(-1) + step * i.astype(dtype), ot(1) - step * (n - 1 - i).astype(dtype)).astype(dtype)
    if not align_corners:
        r = (r * ot(n - 1) / ot(n)).astype(dtype)
    return xp.asarray(r)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) [(N, D, H, W, 3)] of the affine maps
    ``theta`` (N, 2, 3) [(N, 3, 4)] for an output of ``size``
    (N, C, H, W) [(N, C, D, H, W)]; differentiable in ``theta``.

    Example::

        >>> import fabric
        >>> theta = fabric.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> fabric.nn.functional.affine_grid(theta, (1, 1, 2, 2), align_corners=True)[0, :, :, 0]
        tensor([[-1.,  1.],
                [-1.,  1.]])
    """
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    t = theta._data
    if t.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    shown = size
    size = [builtins.int(s) for s in size]
    if len(size) == 4:
        if t.ndim != 3 or t.shape[-2] != 2 or t.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {shown}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if t.ndim != 3 or t.shape[-2] != 3 or t.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {shown}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {shown}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation of "
                      "affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {shown}")
    xp = xp_of(t)
    nd = len(spatial)
    n = size[0]
    base = xp.ones(tuple(spatial) + (nd + 1,), t.dtype)
    for k in range(nd):          # column k is the coordinate along spatial dim nd - 1 - k (x = width first)
        d = nd - 1 - k
        r = _linspace_from_neg_one(spatial[d], align_corners, t.dtype, xp)
        base[..., k] = r.reshape((-1,) + (1,) * (nd - 1 - d))
    base = _const(xp.broadcast_to(base.reshape(1, -1, nd + 1), (n, _prod(spatial), nd + 1)))
    grid = base.matmul(theta.transpose(1, 2))
    return grid.reshape([n] + list(spatial) + [nd])

