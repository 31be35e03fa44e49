"""Bad input and scalar-meets-tensor probes (the reliability review's classes).

Each case is an expression evaluated with ``L`` bound to a library module
(``fabric``, or ``torch`` in the comparison tests).  A case either gives
values, or raises: the expected exception class and a piece of PyTorch's
message.  The same table runs against PyTorch where it is installed, so a
case whose expectation drifts from PyTorch fails there.
"""
from __future__ import annotations

import numpy as np
import pytest

import fabric

# (expression, expected values) — scalars and 0-d tensors of a wider type meet narrow integer tensors
VALUE_CASES = [
    ("L.tensor([3, 200], dtype=L.uint8) / 256", [3 / 256, 200 / 256]),
    ("L.tensor([6], dtype=L.int16) / 65538", [6 / 65538]),
    ("234 / L.tensor(33, dtype=L.int8)", 234 / 33),
    ("L.tensor([3], dtype=L.int8) / L.tensor(300)", [0.01]),
    ("L.tensor([3], dtype=L.int8).div(L.tensor(300))", [0.01]),
    ("L.true_divide(L.tensor([7], dtype=L.uint8), 512)", [7 / 512]),
    ("L.atan2(L.tensor([3], dtype=L.int8), L.tensor(300))", [float(np.arctan2(3, 300))]),
    ("L.tensor([True, False]) / 2", [0.5, 0.0]),
    # binary arithmetic keeps the tensor's type and wraps, as PyTorch does
    ("L.tensor([1, 2], dtype=L.int8) + 1000", [-23, -22]),
    ("L.tensor([1, 2], dtype=L.int8) + L.tensor(1000)", [-23, -22]),
    ("L.tensor([5], dtype=L.uint8) - 1000", [29]),
    ("L.tensor([5], dtype=L.int8) == 1000", [False]),
    ("L.where(L.tensor([True, False]), L.tensor([1, 2], dtype=L.int8), 100)", [1, 100]),
    ("L.zeros(2, dtype=L.uint8).fill_(-1)", [255, 255]),
    ("L.clamp(L.tensor([5, 250], dtype=L.uint8), min=-1)", [255, 255]),
    ("L.tensor([-1], dtype=L.uint8)", [255]),
    ("L.tensor([1.5], dtype=L.int8)", [1]),
    ("L.tensor([1e10], dtype=L.float16)", [float("inf")]),
    ("L.add(L.ones(3, dtype=L.long), 1, out=L.zeros(3, dtype=L.float16))", [2.0, 2.0, 2.0]),
    ("L.zeros(1).expand(3).fill_(2.0)", [2.0, 2.0, 2.0]),
    ("_setitem(L.zeros(1).expand(3), 0, 5.0)", [5.0, 5.0, 5.0]),
    ("_self_add(L.arange(4.0))", [0.0, 2.0, 4.0, 6.0]),
    ("L.tensor([True]) ** 2", [1]),
]

OVERFLOW = "value cannot be converted to type"
OVERLAP_INTERNAL = "more than one element of the written-to tensor refers to a single memory location"
OVERLAP_PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"

# (expression, exception class, piece of PyTorch's message)
ERROR_CASES = [
    ("L.where(L.tensor([True, False]), L.tensor([1, 2], dtype=L.int8), 1000)", RuntimeError, OVERFLOW),
    ("L.clamp(L.tensor([5], dtype=L.int8), max=1000)", RuntimeError, OVERFLOW),
    ("L.full((2,), 1000, dtype=L.int8)", RuntimeError, "int8_t without overflow"),
    ("L.tensor([5], dtype=L.int8).fill_(1000)", RuntimeError, "int8_t without overflow"),
    ("L.zeros(2, dtype=L.int32).fill_(10**10)", RuntimeError, "type int without overflow"),
    ("L.zeros(2, dtype=L.float16).fill_(1e10)", RuntimeError, "c10::Half without overflow"),
    ("L.zeros(2, dtype=L.float32).fill_(1e300)", RuntimeError, "type float without overflow"),
    ("L.tensor([5], dtype=L.int8).masked_fill(L.tensor([True]), 1000)", RuntimeError, OVERFLOW),
    ("L.zeros(3, dtype=L.int8).index_fill(0, L.tensor([1]), 1000)", RuntimeError, OVERFLOW),
    ("_setitem(L.zeros(3, dtype=L.int8), 0, 1000)", RuntimeError, OVERFLOW),
    ("L.pow(L.tensor([5], dtype=L.int8), 1000)", RuntimeError, OVERFLOW),
    ("L.tensor([300], dtype=L.uint8)", RuntimeError, "type uint8 without overflow"),
    ("L.tensor(300, dtype=L.int8)", RuntimeError, "type int8 without overflow"),
    ("L.tensor([float('nan')], dtype=L.int32)", RuntimeError, "type int32 without overflow"),
    ("L.add(L.ones(3), .5, out=L.zeros(3, dtype=L.long))", RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("L.add(L.ones(3, dtype=L.long), 1, out=L.zeros(3, dtype=L.bool))", RuntimeError,
     "result type Long can't be cast to the desired output type Bool"),
    ("L.zeros(1).expand(3).add_(1)", RuntimeError, OVERLAP_INTERNAL),
    ("L.zeros(1).expand(3).mul_(2)", RuntimeError, OVERLAP_INTERNAL),
    ("L.zeros(1).expand(3).exp_()", RuntimeError, OVERLAP_INTERNAL),
    ("L.zeros(1).expand(3).copy_(L.ones(3))", RuntimeError, OVERLAP_INTERNAL),
    ("_setitem(L.zeros(1).expand(3), slice(None), 7.0)", RuntimeError, OVERLAP_INTERNAL),
    ("_shifted(L.arange(5.0), 'add_')", RuntimeError, OVERLAP_PARTIAL),
    ("_shifted(L.arange(5.0), 'copy_')", RuntimeError, OVERLAP_PARTIAL),
    ("L.tensor([True]) @ L.tensor([True])", NotImplementedError, '"dot" not implemented for \'Bool\''),
    ("L.ones(2, 2, dtype=L.bool) @ L.ones(2, 2, dtype=L.bool)", NotImplementedError, "not implemented for 'Bool'"),
    ("L.ones(2, 2, 2, dtype=L.bool) @ L.ones(2, 2, 2, dtype=L.bool)", NotImplementedError,
     '"bmm" not implemented for \'Bool\''),
    ("L.tensor([True]) ** L.tensor([True])", NotImplementedError, '"pow" not implemented for \'Bool\''),
    ("L.empty(3, -2)", RuntimeError, "Trying to create tensor with negative dimension -2: [3, -2]"),
    ("L.zeros(3, -2)", RuntimeError, "zeros: Dimension size must be non-negative."),
    ("L.ones(3, -2)", RuntimeError, "negative dimension"),
    ("L.full((3, -2), 1.0)", RuntimeError, "negative dimension"),
    ("L.rand(3, -2)", RuntimeError, "Trying to create tensor with negative dimension -2: [3, -2]"),
    ("L.randn(3, -2)", RuntimeError, "Trying to create tensor with negative dimension -2: [3, -2]"),
    ("L.randint(0, 5, (3, -2))", RuntimeError, "Trying to create tensor with negative dimension -2: [3, -2]"),
    ("L.rand(2**40)", RuntimeError, "can't allocate memory"),
    ("L.randn(2**62)", RuntimeError, "Storage size calculation overflowed"),
    ("L.empty(2**62)", RuntimeError, "Storage size calculation overflowed"),
    ("L.empty(2**40)", RuntimeError, "can't allocate memory"),
    ("L.arange(2**40)", RuntimeError, "can't allocate memory"),
    ("L.ones(2).expand(2**40, 2).contiguous()", RuntimeError, "can't allocate memory"),
    ("L.ones(2).repeat(2**40)", RuntimeError, "can't allocate memory"),
    ("L.nn.Linear(2**20, 2**20)", RuntimeError, "can't allocate memory"),
    ("L.arange(-5)", RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    ("L.ones(2, 3, 4) @ L.ones(3, 4, 5)", RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    ("L.ones(2, 2, 3, 4) @ L.ones(3, 4, 5)", RuntimeError, "at non-singleton dimension 1"),
    ("L.ones(2, 3, 4) @ L.ones(2, 5, 6)", RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    ("L.ones(2, 3, 4) @ L.ones(5, 6)", RuntimeError, "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)"),
    ("L.ones(2, 3, 4) @ L.ones(5)", RuntimeError, "size mismatch, got input (6), mat (6x4), vec (5)"),
    ("L.ones(4) @ L.ones(5)", RuntimeError, "inconsistent tensor size"),
    ("L.zeros(3).index_add(0, L.tensor([5]), L.ones(1))", IndexError, "index out of range in self"),
    ("L.zeros(3, 4).index_add(0, L.tensor([5]), L.ones(1, 4))", RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("int(L.ones(2))", ValueError, "only one element tensors can be converted to Python scalars"),
    ("float(L.ones(0))", ValueError, "only one element tensors can be converted to Python scalars"),
    ("L.ones(2).item()", RuntimeError, "a Tensor with 2 elements cannot be converted to Scalar"),
    ("bool(L.ones(2))", RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"),
    ("L.tensor(['a'])", ValueError, "too many dimensions 'str'"),
    ("L.tensor([None])", RuntimeError, "Could not infer dtype of NoneType"),
    ("L.tensor([2**63])", ValueError, "Overflow when unpacking long long"),
    ("L.tensor([2**70])", ValueError, "Overflow when unpacking long long"),
    ("L.cat([])", ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    ("L.stack([])", RuntimeError, "stack expects a non-empty TensorList"),
]


def _setitem(x, key, value):
    x[key] = value
    return x


def _self_add(x):
    return x.add_(x)


def _shifted(x, method):
    return getattr(x[1:], method)(x[:-1])


def _evaluate(lib, expr):
    return eval(expr, {"L": lib, "_setitem": _setitem, "_self_add": _self_add, "_shifted": _shifted})


def _values(t):
    return t.tolist() if hasattr(t, "tolist") else t


@pytest.mark.parametrize("expr,expected", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values(expr, expected):
    got = _values(_evaluate(fabric, expr))
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=1e-6)


@pytest.mark.parametrize("expr,exc,message", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(expr, exc, message):
    with pytest.raises(exc) as info:
        _evaluate(fabric, expr)
    assert type(info.value) is exc or issubclass(type(info.value), exc)
    assert message in str(info.value)


def test_out_of_memory_is_a_runtime_error_subclass():
    with pytest.raises(fabric.OutOfMemoryError):
        fabric.empty(2**40)
    assert issubclass(fabric.OutOfMemoryError, RuntimeError)


def test_failed_writes_change_nothing():
    x = fabric.arange(5.0)
    with pytest.raises(RuntimeError):
        x[1:].add_(x[:-1])
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert x._version == 0
    y = fabric.zeros(3, dtype=fabric.int8)
    with pytest.raises(RuntimeError):
        y.fill_(1000)
    assert y.tolist() == [0, 0, 0] and y._version == 0


def test_non_dense_overlap_is_not_checked():
    """PyTorch compares only dense layouts; strided overlaps pass (as there)."""
    x = fabric.arange(6.0)
    x[0::2].add_(x[1::2])
    assert x.tolist() == [1.0, 1.0, 5.0, 3.0, 9.0, 5.0]


INT_DTYPES = ["uint8", "int8", "int16", "int32"]
SCALARS = [-(2**31) - 1, -40000, -1000, -256, -255, -129, -1, 0, 127, 128, 255, 256, 1000, 65535, 65538, 2**31,
           2**40, 1.5, -3.25, 1e10, float("inf"), float("nan")]
SCALAR_OPS = [
    "L.tensor([3, 100], dtype=L.{dt}) / ({s})",
    "({s}) / L.tensor([3, 100], dtype=L.{dt})",
    "L.atan2(L.tensor([3, 100], dtype=L.{dt}), L.tensor({s}))",
    "L.tensor([3, 100], dtype=L.{dt}) + ({s})",
    "L.tensor([3, 100], dtype=L.{dt}) * ({s})",
    "L.tensor([3, 100], dtype=L.{dt}) < ({s})",
    "L.where(L.tensor([True, False]), L.tensor([3, 100], dtype=L.{dt}), {s})",
    "L.zeros(2, dtype=L.{dt}).fill_({s})",
    "L.full((2,), {s}, dtype=L.{dt})",
    "L.clamp(L.tensor([3, 100], dtype=L.{dt}), max={s})",
    "L.tensor([3, 100], dtype=L.{dt}).masked_fill(L.tensor([True, False]), {s})",
    "L.tensor([{s}], dtype=L.{dt})",
    "L.fmod(L.tensor([3, 100], dtype=L.{dt}), {s})",
    "L.remainder(L.tensor([3, 100], dtype=L.{dt}), {s})",
    "L.floor_divide(L.tensor([3, 100], dtype=L.{dt}), {s})",
    "L.tensor([3, 100], dtype=L.{dt}) - ({s})",
    "L.tensor([3, 100], dtype=L.{dt}) == ({s})",
    "L.zeros(3, dtype=L.{dt}).index_fill(0, L.tensor([1]), {s})",
    "L.tensor([3, 100], dtype=L.{dt}).div({s}, rounding_mode='trunc')",
]


def _outcome(lib, expr):
    try:
        r = _evaluate(lib, expr)
    except Exception as e:
        return type(e).__name__, None
    return None, (str(r.dtype).split(".")[-1], np.asarray(_values(r), dtype=np.float64))


@pytest.mark.torch
@pytest.mark.parametrize("dt", INT_DTYPES)
@pytest.mark.parametrize("op", SCALAR_OPS)
def test_scalar_meets_integer_tensor_matches_torch(op, dt):
    """Every scalar × integer dtype × op gives PyTorch's values, dtype, or
    exception class (the probe class behind the wrap-around bugs)."""
    import torch

    for s in SCALARS:
        expr = op.format(dt=dt, s=repr(s) if not isinstance(s, float) or s == s and abs(s) != float("inf")
                         else f"float('{s}')")
        theirs, ours = _outcome(torch, expr), _outcome(fabric, expr)
        if theirs[0] == "OverflowError" and ours[0] is not None:
            continue  # a Python int beyond 64 bits: refused by both, by the converter that meets it first
        assert theirs[0] == ours[0], (expr, theirs, ours)
        if theirs[0] is None:
            assert theirs[1][0] == ours[1][0], (expr, theirs, ours)
            np.testing.assert_allclose(ours[1][1], theirs[1][1], rtol=1e-6, err_msg=expr)


@pytest.mark.torch
@pytest.mark.parametrize("expr,exc,message", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_error_table_matches_torch(expr, exc, message):
    import torch

    with pytest.raises(Exception) as theirs:
        _evaluate(torch, expr)
    assert issubclass(type(theirs.value), exc) and message in str(theirs.value), (expr, theirs.value)


@pytest.mark.torch
@pytest.mark.parametrize("expr,expected", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_value_table_matches_torch(expr, expected):
    import torch

    got = _values(_evaluate(torch, expr))
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=1e-6)
