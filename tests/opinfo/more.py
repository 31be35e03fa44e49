"""OpInfo entries for less common ops (once ``fabric/ops/more.py``, now in their family modules)
(``ldexp``, ``frexp``, ``i0``, ``mvlgamma``, ``sum_to_size``, ``narrow_copy``,
the ``*_scatter`` functions, ``index_reduce``)."""
from __future__ import annotations

import numpy as np

from . import FLOATS, INTS, OpInfo, SampleInput, make, unary_samples


def _ldexp_samples(dtype, rng):
    def e(shape):
        # non-negative: PyTorch 2.13's gradient for an integer exponent computes 2 ** other in integers
        # (0 for negative exponents); fabric's is 2 ** other (tests/test_more_ops.py checks it)
        return rng.integers(0, 4, size=shape).astype(np.int64)
    return [
        SampleInput(make(rng, (3, 4), dtype), (e((3, 4)),), name="same"),
        SampleInput(make(rng, (3, 4), dtype), (e((4,)),), name="broadcast"),
        SampleInput(make(rng, (), dtype), (e(()),), name="0d"),
        SampleInput(make(rng, (0, 3), dtype), (e((3,)),), name="empty"),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), (e((4, 3)),), name="noncontig"),
        SampleInput(make(rng, (2, 3), dtype), (make(rng, (2, 3), dtype, low=-2, high=2),), name="float_exponent"),
    ]


def _np_ldexp(x, e):
    dt = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    return (x.astype(np.float64) * np.exp2(np.asarray(e, np.float64))).astype(dt)


def _np_i0(x):
    return np.i0(x.astype(np.float64)).astype(x.dtype if x.dtype.kind == "f" else np.float32)


def _np_mvlgamma(x, p):
    import math

    xf = x.astype(np.float64)
    lg = np.vectorize(math.lgamma, otypes=[np.float64])
    r = sum(lg(xf - j / 2) if xf.size else xf for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)
    return np.asarray(r).astype(x.dtype if x.dtype.kind == "f" else np.float32)


def _mvlgamma_samples(dtype, rng):
    return [SampleInput(s.input, (p,), name=f"{s.name}_p{p}")
            for s, p in zip(unary_samples(low=2.0, high=4.0)(dtype, rng), (1, 2, 3, 2, 3, 4))]


def _np_sum_to_size(x, *size):
    if len(size) == 1 and isinstance(size[0], tuple):
        size = size[0]
    lead = x.ndim - len(size)
    r = x.sum(axis=tuple(range(lead))) if lead else x
    keep = tuple(i for i, s in enumerate(size) if s == 1 and r.shape[i] != 1)
    return r.sum(axis=keep, keepdims=True) if keep else r


def _sum_to_size_samples(dtype, rng):
    return [
        SampleInput(make(rng, (2, 3), dtype), (1, 3)),
        SampleInput(make(rng, (2, 3), dtype), (2, 1)),
        SampleInput(make(rng, (2, 3, 4), dtype), (3, 1), name="leading"),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), ((1,),), name="noncontig"),
        SampleInput(make(rng, (2, 3), dtype), ((),), name="to_0d"),
        SampleInput(make(rng, (0, 3), dtype), (1, 3), name="empty"),
    ]


def _slice_scatter_samples(dtype, rng):
    return [
        SampleInput(make(rng, (3, 4), dtype), (make(rng, (3, 2), dtype), 1, 0, None, 2)),
        SampleInput(make(rng, (3, 4), dtype), (make(rng, (1, 4), dtype),), {"start": -1}, name="start_kw"),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), (make(rng, (2, 3), dtype), 0, 1, 3), name="noncontig"),
        SampleInput(make(rng, (2, 3), dtype), (make(rng, (2, 0), dtype), 1, 3), name="empty_slice"),
    ]


def _select_scatter_samples(dtype, rng):
    return [
        SampleInput(make(rng, (3, 4), dtype), (make(rng, (4,), dtype), 0, -1)),
        SampleInput(make(rng, (2, 3, 4), dtype), (make(rng, (2, 4), dtype), 1, 1)),
        SampleInput(make(rng, (3,), dtype), (make(rng, (), dtype), 0, 2), name="to_0d"),
    ]


def _diagonal_scatter_samples(dtype, rng):
    return [
        SampleInput(make(rng, (3, 4), dtype), (make(rng, (3,), dtype),)),
        SampleInput(make(rng, (3, 4), dtype), (make(rng, (3,), dtype), 1)),
        SampleInput(make(rng, (3, 4), dtype), (make(rng, (2,), dtype), -1)),
        SampleInput(make(rng, (2, 3, 3), dtype), (make(rng, (3, 2), dtype), 0, 0, 2), name="batched"),
        SampleInput(make(rng, (3, 4), dtype), (make(rng, (0,), dtype), 5), name="empty"),
    ]


def _np_scatter(x, src, spec):
    out = x.copy()
    if spec[0] == "key":
        out[spec[1]] = src
    else:
        offset, d1, d2 = spec[1]
        moved = np.moveaxis(out, (d1, d2), (-2, -1))
        n1, n2 = moved.shape[-2:]
        n = max(min(n1, n2 - offset), 0) if offset >= 0 else max(min(n1 + offset, n2), 0)
        r = np.arange(n) + max(-offset, 0)
        moved[..., r, r + offset] = src
    return out


def _np_slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    return _np_scatter(x, src, ("key", (slice(None),) * (dim % x.ndim) + (slice(start, end, step),)))


def _np_select_scatter(x, src, dim, index):
    return _np_scatter(x, src, ("key", (slice(None),) * (dim % x.ndim) + (index,)))


def _np_diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    return _np_scatter(x, src, ("diag", (offset, dim1 % x.ndim, dim2 % x.ndim)))


def _index_reduce_samples(dtype, rng):
    idx = np.array([0, 2, 0, 3])
    out = []
    for reduce in ("prod", "mean", "amax", "amin"):
        out.append(SampleInput(make(rng, (4, 3), dtype, low=0.5, high=2.0), (0, idx, make(rng, (4, 3), dtype, low=0.5,
                               high=2.0), reduce), name=reduce))
        out.append(SampleInput(make(rng, (3, 5), dtype, low=0.5, high=2.0), (1, idx, make(rng, (3, 4), dtype,
                               low=0.5, high=2.0), reduce), {"include_self": False}, name=reduce + "_exclude"))
    return out


def _np_index_reduce(x, dim, index, src, reduce, include_self=True):
    out = np.moveaxis(x.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    lo, hi = (-np.inf, np.inf) if x.dtype.kind == "f" else (np.iinfo(x.dtype).min, np.iinfo(x.dtype).max)
    ident = {"prod": 1, "mean": 0, "amax": lo, "amin": hi}[reduce]
    acc = out.copy()
    if not include_self:
        acc[np.unique(index)] = ident
    count = np.ones(out.shape[0]) if include_self else np.zeros(out.shape[0])
    for i, j in enumerate(index):
        if reduce == "prod":
            acc[j] = acc[j] * s[i]
        elif reduce == "mean":
            acc[j] = acc[j] + s[i]
        elif reduce == "amax":
            acc[j] = np.maximum(acc[j], s[i])
        else:
            acc[j] = np.minimum(acc[j], s[i])
        count[j] += 1
    if reduce == "mean":
        c = np.maximum(count, 1).reshape((-1,) + (1,) * (acc.ndim - 1))
        acc = acc / c if acc.dtype.kind == "f" else acc // c
    return np.moveaxis(acc.astype(x.dtype), 0, dim)


OPS = [
    OpInfo("ldexp", _np_ldexp, _ldexp_samples, dtypes=FLOATS + INTS, inplace="ldexp_", rtol=1e-6,
           notes="`other` must be a Tensor (as in PyTorch); computed as `input * exp2(other)` in the result dtype. "
                 "The gradient for an integer `other` < 0 is `2 ** other` (PyTorch 2.13 gives 0 there)"),
    OpInfo("frexp", lambda x: np.frexp(x)[0], unary_samples(), output_index=0,
           notes="returns `(mantissa, exponent)`, exponent int32; gradient flows through the mantissa"),
    OpInfo("i0", _np_i0, unary_samples(low=-5.0, high=5.0), dtypes=FLOATS + INTS, inplace="i0_",
           notes="float64 power series / asymptotic expansion (CPU and GPU); the gradient uses I1, computed the "
                 "same way"),
    OpInfo("mvlgamma", _np_mvlgamma, _mvlgamma_samples, dtypes=FLOATS + INTS, inplace="mvlgamma_", rtol=1e-5,
           notes="composite of `lgamma`; no domain check (PyTorch 2.13 has none either)"),
    OpInfo("Tensor.sum_to_size", _np_sum_to_size, _sum_to_size_samples, dtypes=FLOATS + INTS,
           method="sum_to_size", notes="returns `self` when the size already matches"),
    OpInfo("narrow_copy", lambda x, d, s, n: np.take(x, range(s, s + n), axis=d),
           lambda d, r: [SampleInput(make(r, (4, 5), d), (1, 1, 3)), SampleInput(make(r, (4, 5), d), (0, 2, 2)),
                         SampleInput(make(r, (4, 3), d, noncontig=True), (0, 1, 2), name="noncontig")],
           dtypes=FLOATS + INTS),
    OpInfo("slice_scatter", _np_slice_scatter, _slice_scatter_samples, dtypes=FLOATS + INTS,
           notes="differentiable in `input` and `src`"),
    OpInfo("select_scatter", _np_select_scatter, _select_scatter_samples, dtypes=FLOATS + INTS),
    OpInfo("diagonal_scatter", _np_diagonal_scatter, _diagonal_scatter_samples, dtypes=FLOATS + INTS),
    OpInfo("index_reduce", _np_index_reduce, _index_reduce_samples, dtypes=FLOATS + INTS, inplace="index_reduce_",
           notes="`scatter_reduce`'s forward and gradient with the index broadcast along `dim`"),
]
