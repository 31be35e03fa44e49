"""OpInfo entries for the core ops (arith, sum/mean, views, cat/stack)."""
from __future__ import annotations

import numpy as np

from . import COMPLEX, FLOATS, INTS, OpInfo, SampleInput, binary_samples, make, unary_samples


def _reduce_samples(dtype, rng):
    return [
        SampleInput(make(rng, (3, 4), dtype)),
        SampleInput(make(rng, (3, 4), dtype), (1,)),
        SampleInput(make(rng, (3, 4), dtype), (-1,), {"keepdim": True}),
        SampleInput(make(rng, (2, 3, 4), dtype), ((0, 2),)),
        SampleInput(make(rng, (), dtype), name="0d"),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), (0,), name="noncontig"),
        SampleInput(make(rng, (0, 3), dtype), (1,), name="empty"),
    ]


def _matmul_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(3, 4), (m(4, 5),), name="mm"),
        SampleInput(m(4), (m(4),), name="dot"),
        SampleInput(m(4), (m(4, 3),), name="vm"),
        SampleInput(m(3, 4), (m(4),), name="mv"),
        SampleInput(m(2, 3, 4), (m(4, 2),), name="bmm_broadcast"),
        SampleInput(m(2, 1, 3, 4), (m(5, 4, 2),), name="batch_broadcast"),
        SampleInput(m(4), (m(2, 4, 3),), name="v_batched"),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), (make(rng, (3, 2), dtype, noncontig=True),),
                    name="noncontig"),
    ]


def _reshape_samples(dtype, rng):
    return [
        SampleInput(make(rng, (3, 4), dtype), ((2, 6),)),
        SampleInput(make(rng, (3, 4), dtype), ((-1,),)),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), ((12,),), name="noncontig"),
        SampleInput(make(rng, (), dtype), ((1, 1),), name="0d"),
        SampleInput(make(rng, (0, 3), dtype), ((3, 0),), name="empty"),
    ]


def _getitem_samples(dtype, rng):
    x = lambda: make(rng, (4, 5, 3), dtype)
    return [
        SampleInput(x(), ((1,),), name="int"),
        SampleInput(x(), ((slice(1, 3), slice(None, None, 2)),), name="slices"),
        SampleInput(x(), ((Ellipsis, 1),), name="ellipsis"),
        SampleInput(x(), ((None, 0, slice(None), None),), name="none"),
        SampleInput(x(), ((np.array([0, 2, 2]),),), name="int_array_dup"),
        SampleInput(x(), ((slice(None), np.array([[0, 1], [4, 4]])),), name="int_array_2d"),
        SampleInput(x(), ((np.array([True, False, True, True]),),), name="bool_mask"),
        SampleInput(x(), ((np.array([0, 1]), slice(None), np.array([2, 0])),), name="mixed"),
        SampleInput(x(), ((-1, -2),), name="negative"),
    ]


def _cat_samples(dtype, rng):
    return [
        SampleInput([make(rng, (2, 3), dtype), make(rng, (4, 3), dtype)], (0,)),
        SampleInput([make(rng, (2, 3), dtype), make(rng, (2, 1), dtype), make(rng, (2, 0), dtype)], (-1,)),
        SampleInput([make(rng, (3, 2), dtype, noncontig=True), make(rng, (3, 2), dtype)], (1,), name="noncontig"),
    ]


def _stack_samples(dtype, rng):
    return [
        SampleInput([make(rng, (2, 3), dtype), make(rng, (2, 3), dtype)], (0,)),
        SampleInput([make(rng, (2, 3), dtype), make(rng, (2, 3), dtype)], (2,)),
        SampleInput([make(rng, (), dtype), make(rng, (), dtype)], (0,), name="0d"),
    ]


def _np_sum(x, dim=None, keepdim=False):
    return np.sum(x, axis=dim, keepdims=keepdim, dtype=np.int64 if x.dtype.kind in "biu" else None)


def _np_mean(x, dim=None, keepdim=False):
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.mean(x, axis=dim, keepdims=keepdim)


OPS = [
    OpInfo("add", np.add, binary_samples(), dtypes=FLOATS + INTS, inplace="add_", complex_dtypes=COMPLEX),
    OpInfo("sub", np.subtract, binary_samples(), dtypes=FLOATS + INTS, inplace="sub_", complex_dtypes=COMPLEX),
    OpInfo("mul", np.multiply, binary_samples(), dtypes=FLOATS + INTS, inplace="mul_", complex_dtypes=COMPLEX),
    OpInfo("div", lambda a, b: np.true_divide(a, b).astype(np.result_type(a, np.float32) if np.asarray(a).dtype.kind in "fc" else np.float32),
           binary_samples(away_from=0.0), inplace="div_", complex_dtypes=COMPLEX),
    OpInfo("neg", np.negative, unary_samples(), dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    OpInfo("exp", np.exp, unary_samples(), complex_dtypes=COMPLEX),
    OpInfo("log", np.log, unary_samples(positive=True), complex_dtypes=COMPLEX),
    OpInfo("pow", lambda a, b: np.power(a, b), binary_samples(low=0.5, high=2.0), rtol=1e-5, complex_dtypes=COMPLEX),
    OpInfo("matmul", np.matmul, _matmul_samples, rtol=1e-5, atol=1e-5, complex_dtypes=COMPLEX),
    OpInfo("sum", _np_sum, _reduce_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    OpInfo("mean", _np_mean, _reduce_samples, complex_dtypes=COMPLEX),
    OpInfo("reshape", lambda x, s: np.reshape(x, s), _reshape_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    OpInfo("transpose", lambda x, a, b: np.swapaxes(x, a, b),
           lambda d, r: [SampleInput(make(r, (2, 3, 4), d), (0, 2)), SampleInput(make(r, (3, 4), d), (-1, 0))], complex_dtypes=COMPLEX),
    OpInfo("permute", lambda x, p: np.transpose(x, p),
           lambda d, r: [SampleInput(make(r, (2, 3, 4), d), ((2, 0, 1),)),
                         SampleInput(make(r, (4, 3), d, noncontig=True), ((1, 0),))], complex_dtypes=COMPLEX),
    OpInfo("expand", lambda x, s: np.broadcast_to(x, s), torch_name="Tensor.expand", sample_inputs=
           lambda d, r: [SampleInput(make(r, (3, 1), d), ((2, 3, 4),)), SampleInput(make(r, (), d), ((3,),))], complex_dtypes=COMPLEX),
    OpInfo("squeeze", lambda x, *a: np.squeeze(x, *a),
           lambda d, r: [SampleInput(make(r, (3, 1, 2, 1), d)), SampleInput(make(r, (3, 1, 2), d), (1,))], complex_dtypes=COMPLEX),
    OpInfo("unsqueeze", np.expand_dims,
           lambda d, r: [SampleInput(make(r, (3, 2), d), (1,)), SampleInput(make(r, (3, 2), d), (-1,)),
                         SampleInput(make(r, (), d), (0,))], complex_dtypes=COMPLEX),
    OpInfo("getitem", lambda x, k: x[k], _getitem_samples, method="__getitem__", torch_name="__getitem__", complex_dtypes=COMPLEX),
    OpInfo("cat", lambda xs, d: np.concatenate(xs, axis=d), _cat_samples, method="", complex_dtypes=COMPLEX),
    OpInfo("stack", lambda xs, d: np.stack(xs, axis=d), _stack_samples, method="", complex_dtypes=COMPLEX),
    OpInfo("clone", np.copy, unary_samples(), complex_dtypes=COMPLEX),
    OpInfo("narrow", lambda x, d, s, n: np.take(x, range(s, s + n), axis=d),
           lambda d, r: [SampleInput(make(r, (4, 5), d), (1, 1, 3)), SampleInput(make(r, (4, 5), d), (0, 0, 0))], complex_dtypes=COMPLEX),
]
