"""dtype objects and PyTorch's type promotion."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fabric
from fabric import _dtype as D

DTYPES = [fabric.bool, fabric.uint8, fabric.int8, fabric.int16, fabric.int32, fabric.int64, fabric.float16,
          fabric.float32, fabric.float64]


def test_dtype_objects():
    assert fabric.float32 is fabric.float
    assert fabric.float64 is fabric.double
    assert fabric.int64 is fabric.long
    assert fabric.float32.is_floating_point and not fabric.int32.is_floating_point
    assert fabric.float32.itemsize == 4
    assert repr(fabric.int8) == "fabric.int8"
    assert fabric.tensor([1.0]).dtype == fabric.float32
    assert fabric.tensor([1]).dtype == fabric.int64
    assert fabric.tensor([True]).dtype == fabric.bool
    assert fabric.tensor(np.array([1.0])).dtype == fabric.float64


def test_default_dtype():
    assert fabric.get_default_dtype() is fabric.float32
    fabric.set_default_dtype(fabric.float64)
    assert fabric.tensor([1.5]).dtype == fabric.float64
    assert (fabric.tensor([1]) / 2).dtype == fabric.float64
    with pytest.raises(TypeError):
        fabric.set_default_dtype(fabric.int64)


def test_bfloat16_without_ml_dtypes_is_a_clear_error():
    if D._BF16 is not None:
        pytest.skip("ml_dtypes installed")
    with pytest.raises(TypeError, match="ml_dtypes"):
        fabric.zeros(2, dtype=fabric.bfloat16)


@pytest.mark.parametrize("a,b", [(fabric.int64, fabric.float16), (fabric.uint8, fabric.int8), (fabric.bool, fabric.uint8),
                                 (fabric.int32, fabric.float32), (fabric.float16, fabric.float32)])
def test_promote_types_examples(a, b):
    expected = {(fabric.int64, fabric.float16): fabric.float16, (fabric.uint8, fabric.int8): fabric.int16,
                (fabric.bool, fabric.uint8): fabric.uint8, (fabric.int32, fabric.float32): fabric.float32,
                (fabric.float16, fabric.float32): fabric.float32}[(a, b)]
    assert fabric.promote_types(a, b) is expected
    assert fabric.promote_types(b, a) is expected


def test_python_scalars_do_not_upcast_category():
    x16 = fabric.ones(2, dtype=fabric.float16)
    assert (x16 + 2.5).dtype == fabric.float16
    assert (fabric.ones(2, dtype=fabric.int32) + 2).dtype == fabric.int32
    assert (fabric.ones(2, dtype=fabric.int32) + 2.5).dtype == fabric.float32
    assert (fabric.tensor([True]) + 1).dtype == fabric.int64
    assert (fabric.tensor([True]) + True).dtype == fabric.bool
    assert (fabric.tensor([1, 2]) / fabric.tensor([2, 2])).dtype == fabric.float32
    u = fabric.ones(2, dtype=fabric.uint8) * -1
    assert u.dtype == fabric.uint8 and u.tolist() == [255, 255]


def test_zero_dim_tensors_rank_below_dim_tensors():
    a = fabric.ones(2, dtype=fabric.int32)
    assert (a + fabric.tensor(1, dtype=fabric.int64)).dtype == fabric.int32
    assert (a + fabric.tensor(1.0, dtype=fabric.float64)).dtype == fabric.float64
    f = fabric.ones(2)
    assert (f + fabric.tensor(1.0, dtype=fabric.float64)).dtype == fabric.float32
    assert (fabric.tensor(1.0, dtype=fabric.float64) + fabric.tensor(1, dtype=fabric.int32)).dtype == fabric.float64


@pytest.mark.torch
def test_promotion_matches_torch_exhaustively():
    import torch

    for a, b in itertools.product(DTYPES, DTYPES):
        for shape_a, shape_b in [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())]:
            x = fabric.zeros(shape_a, dtype=a)
            y = fabric.zeros(shape_b, dtype=b)
            tx = torch.zeros(shape_a, dtype=getattr(torch, a.name))
            ty = torch.zeros(shape_b, dtype=getattr(torch, b.name))
            expected = torch.result_type(tx, ty)
            got = fabric.result_type(x, y)
            assert got.name == str(expected).split(".")[1], (a, b, shape_a, shape_b)
        for scalar in (True, 2, 2.5):
            x = fabric.zeros(2, dtype=a)
            tx = torch.zeros(2, dtype=getattr(torch, a.name))
            assert fabric.result_type(x, scalar).name == str(torch.result_type(tx, scalar)).split(".")[1]


@pytest.mark.torch
@pytest.mark.parametrize("op", ["add", "mul", "div"])
def test_binary_result_dtype_matches_torch(op):
    import torch

    for a, b in itertools.product(DTYPES, DTYPES):
        if op in ("add", "mul") and a is fabric.bool and b is fabric.bool:
            pass
        x = fabric.ones(3, dtype=a)
        y = fabric.ones(3, dtype=b)
        tx, ty = torch.ones(3, dtype=getattr(torch, a.name)), torch.ones(3, dtype=getattr(torch, b.name))
        r = getattr(fabric, op)(x, y)
        tr = getattr(torch, op)(tx, ty)
        assert r.dtype.name == str(tr.dtype).split(".")[1], (op, a, b)
        np.testing.assert_allclose(r.numpy().astype(np.float64), tr.numpy().astype(np.float64))


def test_finfo_iinfo():
    assert fabric.finfo(fabric.float32).eps == np.finfo(np.float32).eps
    assert fabric.iinfo(fabric.int8).max == 127
    assert fabric.finfo().bits == 32
