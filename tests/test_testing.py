"""fabric.testing against torch.testing: outcome, error type and message."""
import collections
import math
import warnings

import numpy as np
import pytest

import fabric
import fabric.testing as FT


def _outcome(fn, actual, expected, **kw):
    try:
        fn(actual, expected, **kw)
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def _convert(value, lib):
    """A nested structure with fabric tensors rebuilt in ``lib`` (fabric or torch)."""
    if isinstance(value, fabric.Tensor):
        return lib.tensor(value.numpy(), requires_grad=False) if lib is not fabric else value
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v, lib) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v, lib) for k, v in value.items()}
    return value


def _norm(text):
    return text.replace("fabric.", "torch.").replace("<class 'torch._tensor.Tensor'>", "<class 'torch.Tensor'>")


T = fabric.tensor
CASES = [
    (T([1.0, 2.0, 3.0]), T([1.0, 2.1, 3.0]), {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 2.0 + 1e-7, 3.0]), {}),
    (T([[1, 2], [3, 4]]), T([[1, 2], [3, 5]]), {}),
    (T([True, False]), T([True, True]), {}),
    (T(1.0), T(1.5), {}),
    (T([1.0, 0.0]), T([1.0, float("nan")]), {}),
    (T([1.0, float("nan")]), T([1.0, float("nan")]), {"equal_nan": True}),
    (T([1.0, float("inf")]), T([1.0, float("inf")]), {}),
    (T([1.0, float("inf")]), T([1.0, -float("inf")]), {}),
    (T([1.0, 0.0]), T([1.0, 0.0], dtype=fabric.float64), {}),
    (T([1.0, 0.0]), T([1.0, 0.5], dtype=fabric.float64), {"check_dtype": False}),
    (T([1, 2]), T([1.0, 2.0]), {"check_dtype": False}),
    (T([1.0, 2.0]), T([1.0, 2.0, 3.0]), {}),
    (T([[1.0, 2.0]]), T([1.0, 2.0]), {}),
    (T([1.0, 2.0]), T([1.1, 2.0]), {"rtol": 0.2, "atol": 0.0}),
    (T([1.0, 2.0]), T([1.1, 2.0]), {"rtol": 0.0, "atol": 0.0}),
    (T([1.0, 2.0]), T([1.1, 2.0]), {"rtol": 0.01}),
    (T([1.0, 2.0]), T([1.1, 2.0]), {"atol": 0.01}),
    (T([1.0, 0.0]), T([1.0, 0.5]), {}),
    (T([0.0, 0.0]), T([1e-6, 0.0]), {}),
    (T([1.0, 2.0], dtype=fabric.float16), T([1.0, 2.01], dtype=fabric.float16), {}),
    (T([1.0, 2.0], dtype=fabric.float64), T([1.0, 2.0 + 1e-6], dtype=fabric.float64), {}),
    (T([[1.0, 2.0], [3.0, 4.0]]).t(), T([[1.0, 3.0], [2.0, 4.0]]), {"check_stride": True}),
    (T([[1.0, 2.0], [3.0, 4.0]]).t(), T([[1.0, 3.0], [2.0, 4.0]]), {}),
    ([T([1.0]), 2.0], (T([1.0]), 2.0), {}),
    ([T([1.0]), 2.0], [T([1.0])], {}),
    ([T([1.0]), T([2.0])], [T([1.0]), T([2.5])], {}),
    ({"a": T([1.0]), "b": 1}, {"b": 1, "a": T([1.0])}, {}),
    ({"a": T([1.0, 0.0])}, {"a": T([1.0, 2.0])}, {}),
    ({"a": 1}, {"b": 1}, {}),
    ([T([1.0])], {"a": 1}, {}),
    (1.0, 1.0 + 1e-9, {}),
    (1.0, 1.1, {}),
    (1.0, 1, {}),
    (1.0, 1, {"check_dtype": False}),
    (1, 2, {}),
    (1e-9, 1e-10, {"rtol": 0, "atol": 0}),
    (float("nan"), float("nan"), {}),
    (float("nan"), float("nan"), {"equal_nan": True}),
    (True, True, {}),
    (True, False, {}),
    (None, None, {}),
    (None, 1, {}),
    (np.array([1.0, 2.0]), np.array([1.0, 2.5]), {}),
    (np.array([1.0, 2.0]), T([1.0, 2.0]), {}),
    (np.float32(1.0), np.float32(1.0), {}),
    (np.bool_(True), True, {}),
    ("a", "a", {}),
    (T([1.0, 2.0]), 1.0, {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 4.0, 5.0]), {"msg": "Argh, the tensors are not close!"}),
]


@pytest.mark.torch
@pytest.mark.parametrize("case", range(len(CASES)))
def test_assert_close_matches_torch(case):
    import torch

    actual, expected, kw = CASES[case]
    ours = _outcome(FT.assert_close, actual, expected, **kw)
    ref = _outcome(torch.testing.assert_close, _convert(actual, torch), _convert(expected, torch), **kw)
    if ref is None:
        assert ours is None
        return
    assert ours is not None, ref
    assert ours[0] == ref[0]
    assert _norm(ours[1]) == ref[1]


@pytest.mark.torch
def test_msg_callable_and_item_suffix():
    import torch

    fmt = lambda m: f"Header\n\n{m}\n\nFooter"
    a, e = [T([1.0]), {"k": T([1.0, 2.0, 3.0])}], [T([1.0]), {"k": T([1.0, 4.0, 5.0])}]
    ours = _outcome(FT.assert_close, a, e, msg=fmt)
    ref = _outcome(torch.testing.assert_close, _convert(a, torch), _convert(e, torch), msg=fmt)
    assert ours == ref
    assert ours[1].endswith("The failure occurred for item [1]['k']\n\nFooter")


@pytest.mark.torch
def test_random_value_reports_match_torch():
    import torch

    rng = np.random.default_rng(0)
    for dtype in ("float32", "float64", "int64"):
        for shape in ((5,), (3, 4), (2, 3, 2)):
            a = rng.normal(size=shape) * 3
            e = a + rng.normal(size=shape) * (rng.random(shape) < 0.3) * 1e-3
            a, e = a.astype(dtype), e.astype(dtype)
            ours = _outcome(FT.assert_close, fabric.tensor(a), fabric.tensor(e))
            ref = _outcome(torch.testing.assert_close, torch.tensor(a), torch.tensor(e))
            assert (ours is None) == (ref is None)
            if ref is not None:
                assert _norm(ours[1]) == ref[1]


def test_parameter_subclass_and_allow_subclasses():
    p = fabric.nn.Parameter(T([1.0, 2.0]))
    FT.assert_close(p, T([1.0, 2.0]))
    with pytest.raises(TypeError, match="No comparison pair"):
        FT.assert_close(p, T([1.0, 2.0]), allow_subclasses=False)


def test_ordered_dict_and_default_message():
    FT.assert_close(collections.OrderedDict([("x", T(1.0)), ("y", 2.0)]), {"y": 2.0, "x": T(1.0)})
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 3 \(33.3%\)"):
        FT.assert_close(T([1.0, 2.0, 3.0]), T([1.0, 2.1, 3.0]))
    FT.assert_close(math.sqrt(2.0), 2.0 / math.sqrt(2.0))


def test_assert_allclose():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        FT.assert_allclose(T([1.0, float("nan")]), [1.00001, float("nan")])
        with pytest.raises(AssertionError):
            FT.assert_allclose(T([1.0]), [1.1])
    with pytest.warns(FutureWarning):
        FT.assert_allclose(T([1.0]), [1.0])


def test_make_tensor():
    t = FT.make_tensor(3, 4, dtype=fabric.float32, device="cpu", low=-1, high=1)
    assert t.shape == (3, 4) and t.dtype == fabric.float32
    assert bool(((t >= -1) & (t < 1)).all())
    t = FT.make_tensor((2, 5), dtype=fabric.int64, device="cpu")
    assert bool(((t >= -9) & (t < 10)).all())
    t = FT.make_tensor(4, 3, dtype=fabric.float64, device="cpu", noncontiguous=True, requires_grad=True)
    assert t.shape == (4, 3) and not t.is_contiguous() and t.requires_grad
    t = FT.make_tensor(50, dtype=fabric.int8, device="cpu", low=-1, high=2, exclude_zero=True)
    assert not bool((t == 0).any())
    t = FT.make_tensor(8, dtype=fabric.bool, device="cpu")
    assert t.dtype == fabric.bool
    with pytest.raises(ValueError, match="`low` must be less than `high`"):
        FT.make_tensor(2, dtype=fabric.float32, device="cpu", low=2, high=1)
    with pytest.raises(ValueError, match="requires_grad=True"):
        FT.make_tensor(2, dtype=fabric.int32, device="cpu", requires_grad=True)
    with pytest.raises(ValueError, match="cannot be NaN"):
        FT.make_tensor(2, dtype=fabric.float32, device="cpu", low=float("nan"))


def test_docstring_examples():
    import doctest

    import fabric.testing as mod

    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             extraglobs={"fabric": fabric})
    assert result.failed == 0 and result.attempted > 0
