"""Tests of the less common Tensor methods and torch functions (once ops/more.py, now in their family
modules: pointwise, reduce, indexing, shape, join, inplace, convert, attributes, linalg); the
differentiable ones also have OpInfo entries in tests/opinfo/more.py."""
from __future__ import annotations

import doctest
import multiprocessing
import sys

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck, gradgradcheck
from fabric.ops import pointwise

METHODS = ("cumsum_ cumprod_ divide_ multiply_ subtract_ fill_diagonal_ is_inference is_nonzero is_same_size "
           "get_device is_shared share_memory_ sum_to_size narrow_copy hardshrink prelu resize_ resize_as_ "
           "unsafe_chunk unsafe_split unsafe_split_with_sizes apply_ map_ gcd gcd_ lcm lcm_ heaviside heaviside_ "
           "ldexp ldexp_ frexp i0 i0_ mvlgamma mvlgamma_ slice_scatter select_scatter diagonal_scatter "
           "index_reduce index_reduce_ new").split()


def f64(*shape, seed=0, low=-2.0, high=2.0):
    return fabric.from_numpy(np.random.default_rng(seed).uniform(low, high, shape)).requires_grad_()


# The names torch also has at the top level (``torch.frexp`` ...); the rest are Tensor methods only.
TOP_LEVEL = ["is_inference", "get_device", "narrow_copy", "resize_as_", "unsafe_chunk", "unsafe_split",
             "unsafe_split_with_sizes", "gcd_", "lcm_", "ldexp", "ldexp_", "frexp", "i0", "i0_", "mvlgamma",
             "index_reduce", "gcd", "lcm", "slice_scatter", "select_scatter", "diagonal_scatter",
             "triangular_solve", "is_nonzero", "is_same_size", "heaviside"]


def test_docstring_examples():
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=flags)
    for name in sorted(set(METHODS + TOP_LEVEL) - {"hardshrink", "prelu"}):
        fn = getattr(fabric.ops, name)
        for test in finder.find(fn, name, globs={"fabric": fabric}):
            runner.run(test)
    assert runner.failures == 0


def test_all_names_are_methods_and_torch_top_level_names_exist():
    missing = [n for n in METHODS if not hasattr(fabric.Tensor, n)]
    assert not missing
    for name in TOP_LEVEL:
        assert hasattr(fabric, name), name
    assert not hasattr(fabric, "apply_") and not hasattr(fabric, "new")


@pytest.mark.torch
def test_method_names_exist_in_torch():
    import torch

    assert all(hasattr(torch.Tensor, n) for n in METHODS + ["output_nr"])
    assert all(hasattr(torch, n) for n in TOP_LEVEL)


# --- in-place aliases and scans ------------------------------------------------------------

@pytest.mark.torch
def test_inplace_aliases_and_scans_match_torch():
    import torch

    for name, args, kw in [("divide_", (2.0,), {}), ("divide_", (2.0,), {"rounding_mode": "floor"}),
                           ("multiply_", (3,), {}), ("subtract_", (np.full(3, 2.0),), {"alpha": 3}), ("cumsum_", (1,), {}),
                           ("cumprod_", (0,), {})]:
        a = np.arange(1.0, 7.0).reshape(2, 3)
        x, t = fabric.from_numpy(a.copy()), torch.from_numpy(a.copy())
        assert getattr(x, name)(*[fabric.from_numpy(v) if isinstance(v, np.ndarray) else v for v in args], **kw) is x
        getattr(t, name)(*[torch.from_numpy(v) if isinstance(v, np.ndarray) else v for v in args], **kw)
        np.testing.assert_allclose(x.numpy(), t.numpy())
        assert x._version == 1
    xi = fabric.tensor([1, 2, 3], dtype=fabric.int32)
    assert xi.cumsum_(0).tolist() == [1, 3, 6] and xi.dtype is fabric.int32
    with pytest.raises(RuntimeError, match="Bad in-place call"):
        fabric.tensor([1, 2]).cumsum_(0, dtype=fabric.float32)
    with pytest.raises(NotImplementedError):
        fabric.tensor([True]).cumsum_(0)
    with pytest.raises(TypeError):
        fabric.tensor([1.0]).cumsum_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        fabric.tensor([1, 2]).divide_(2)


def test_inplace_scans_are_differentiable():
    for name in ("cumsum_", "cumprod_"):
        def f(x, _n=name):
            return getattr(x * 1, _n)(1)
        x = f64(2, 3)
        assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    leaf = f64(3)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.cumsum_(0)


# --- fill_diagonal_ ------------------------------------------------------------------------

@pytest.mark.torch
def test_fill_diagonal_matches_torch():
    import torch

    for shape, wrap in [((3, 4), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False), ((4, 3), True),
                        ((2, 0), True)]:
        x, t = fabric.zeros(*shape), torch.zeros(*shape)
        assert x.fill_diagonal_(5, wrap=wrap) is x
        t.fill_diagonal_(5, wrap=wrap)
        np.testing.assert_array_equal(x.numpy(), t.numpy())
    x = fabric.zeros(3, 4).t()
    np.testing.assert_array_equal(x.fill_diagonal_(2).numpy(), torch.zeros(3, 4).t().fill_diagonal_(2).numpy())
    xi = fabric.zeros(2, 2, dtype=fabric.int64).fill_diagonal_(fabric.tensor(2.7))
    assert xi.tolist() == [[2, 0], [0, 2]]
    with pytest.raises(RuntimeError, match="equal length"):
        fabric.zeros(3, 3, 4).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="larger than 1"):
        fabric.zeros(3).fill_diagonal_(1)
    with pytest.raises(TypeError):
        fabric.zeros(2, 2).fill_diagonal_(fabric.tensor([1.0]))


def test_fill_diagonal_gradient():
    def f(x):
        return (x * 1).fill_diagonal_(3.0, wrap=True)
    x = f64(5, 2)
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    y = f(x)
    y.sum().backward()
    assert x.grad.tolist() == [[0, 1], [1, 0], [1, 1], [0, 1], [1, 0]]


# --- predicates and attributes --------------------------------------------------------------

def test_predicates_and_attributes():
    x = fabric.ones(2, 3)
    assert x.is_inference() is False and fabric.is_inference(x) is False
    assert fabric.tensor([0.0]).is_nonzero() is False and fabric.tensor(3).is_nonzero() is True
    with pytest.raises(RuntimeError, match="no values"):
        fabric.tensor([]).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value"):
        x.is_nonzero()
    assert x.is_same_size(fabric.zeros(2, 3)) and not x.is_same_size(fabric.zeros(3, 2))
    assert x.get_device() == -1 and fabric.get_device(x) == -1
    a = f64(3)
    parts = a.unbind()
    assert [p.output_nr for p in parts] == [0, 1, 2] and a.output_nr == 0
    with pytest.raises(AttributeError):
        x.output_nr = 1


def test_share_memory_moves_data_into_shared_memory():
    x = fabric.arange(6.0)
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert x.share_memory_() is x
    with pytest.raises(RuntimeError, match="view"):
        fabric.arange(4.0)[1:].share_memory_()
    if sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("fork")
        p = ctx.Process(target=_write_first, args=(x,))
        p.start()
        p.join(30)
        assert p.exitcode == 0 and x[0].item() == 42.0
    m = fabric.nn.Linear(2, 2).share_memory()
    assert all(p.is_shared() for p in m.parameters())


def _write_first(t):
    t[0] = 42.0


# --- sum_to_size / narrow_copy / activations --------------------------------------------------

@pytest.mark.torch
def test_sum_to_size_and_narrow_copy_errors_match_torch():
    import torch

    x = fabric.ones(2, 3)
    assert x.sum_to_size(2, 3) is x and x.sum_to_size(fabric.Size([2, 3])) is x
    assert x.sum_to_size([]).item() == 6.0
    for bad in [(4,), (1, 1, 3)]:
        with pytest.raises(RuntimeError) as ours:
            x.sum_to_size(*bad)
        with pytest.raises(RuntimeError) as theirs:
            torch.ones(2, 3).sum_to_size(*bad)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        fabric.narrow_copy(x, 1, 2, 2)
    y = x.narrow_copy(1, 0, 2)
    y.add_(1)
    assert x.sum().item() == 6.0  # a copy, not a view
    assert torch.narrow_copy(torch.arange(5), 0, -2, 2).tolist() == fabric.narrow_copy(fabric.arange(5), 0, -2,
                                                                                        2).tolist()


def test_narrow_copy_gradient_negative_start():
    # (PyTorch 2.13's NarrowCopyBackward fails for a negative start; fabric's is narrow's gradient)
    x = f64(4, 3)
    assert gradcheck(lambda t: fabric.narrow_copy(t, 0, -2, 2), (x,))


@pytest.mark.torch
def test_hardshrink_and_prelu_methods_match_torch():
    import torch

    a = np.array([-1.0, -0.3, 0.2, 0.7])
    np.testing.assert_allclose(fabric.from_numpy(a).hardshrink(0.25).numpy(),
                               torch.from_numpy(a).hardshrink(0.25).numpy())
    w = np.array([0.25])
    np.testing.assert_allclose(fabric.from_numpy(a).prelu(fabric.from_numpy(w)).numpy(),
                               torch.from_numpy(a).prelu(torch.from_numpy(w)).numpy())


# --- resize_ --------------------------------------------------------------------------------------

@pytest.mark.torch
def test_resize_matches_torch():
    import torch

    x, t = fabric.arange(6.0), torch.arange(6.0)
    x.resize_(2, 2)
    t.resize_(2, 2)
    assert x.tolist() == t.tolist() and x._version == 1
    assert x.resize_((2, 2))._version == 1  # same size: no-op, as in PyTorch
    x = fabric.arange(6.0)
    base_view = x[:3]
    x.resize_(3)
    x[0] = 9.0
    assert base_view[0].item() == 9.0  # shrinking keeps the memory
    x.resize_(2, 3)
    assert x.tolist() == [[9.0, 1.0, 2.0], [0.0, 0.0, 0.0]]  # new elements: zeros (PyTorch: uninitialised)
    y = fabric.arange(6.0).resize_as_(fabric.zeros(2, 2, dtype=fabric.int64))
    assert y.shape == (2, 2) and y.dtype is fabric.float32
    assert fabric.resize_as_(fabric.arange(4.0), fabric.zeros(3)).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        f64(3).resize_(2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        (f64(3) * 1).resize_(3)
    with pytest.raises(RuntimeError, match="view"):
        fabric.arange(6.0).view(2, 3).resize_(2)
    with pytest.raises(RuntimeError):
        fabric.arange(6.0).resize_(2, -1)
    nc = fabric.from_numpy(np.arange(6.0).reshape(2, 3).T)  # non-contiguous, not a view
    assert nc.resize_(4).tolist() == [0.0, 3.0, 1.0, 4.0]  # logical order


# --- unsafe splits --------------------------------------------------------------------------------

@pytest.mark.torch
def test_unsafe_splits_match_torch_and_share_memory():
    import torch

    a = np.arange(12.0).reshape(3, 4)
    for name, args in [("unsafe_chunk", (2, 1)), ("unsafe_split", (3, 1)), ("unsafe_split_with_sizes", ([1, 3], 1)),
                       ("unsafe_split", (2,))]:
        ours = getattr(fabric, name)(fabric.from_numpy(a.copy()), *args)
        theirs = getattr(torch, name)(torch.from_numpy(a.copy()), *args)
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), t.numpy())
    x = fabric.arange(6.0)
    p, q = x.unsafe_split(3)
    p.add_(1)  # allowed (not a tracked view), and it shares memory, as in PyTorch
    assert x.tolist() == [1.0, 2.0, 3.0, 3.0, 4.0, 5.0]
    g = f64(3, 4)
    assert gradcheck(lambda t: fabric.unsafe_split_with_sizes(t, [1, 3], 1)[1], (g,))
    pieces = fabric.unsafe_chunk(g * 1, 2, 1)
    assert type(pieces[0].grad_fn).__name__ == "UnsafeSplitBackward0"
    pieces[0].mul_(2)  # in place on an output requiring grad is allowed
    with pytest.raises(RuntimeError):
        fabric.unsafe_split(fabric.ones(3), 0)


# --- apply_ / map_ ---------------------------------------------------------------------------------

@pytest.mark.torch
def test_apply_and_map_match_torch():
    import torch

    x = fabric.arange(4.0)
    assert x.apply_(lambda v: v * 2) is x and x.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert fabric.arange(4).apply_(lambda v: v * 2.7).tolist() == torch.arange(4).apply_(lambda v: v * 2.7).tolist()
    seen = []
    fabric.arange(2).apply_(lambda v: seen.append(type(v)) or v)
    fabric.tensor([True]).apply_(lambda v: seen.append(type(v)) or v)
    assert seen == [int, int, bool]
    with pytest.raises(TypeError):
        fabric.arange(3).apply_(lambda v: None)
    nc = fabric.zeros(2, 3).t()
    nc.apply_(lambda v: v + 1)
    assert nc.sum().item() == 6.0
    x = fabric.arange(4.0)
    x.map_(fabric.ones(1), lambda a, b: a + b)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(TypeError, match="expected"):
        fabric.arange(4.0).map_(fabric.ones(4, dtype=fabric.float64), lambda a, b: a)
    with pytest.raises(TypeError):
        fabric.arange(4.0).map_(3, lambda a, b: a)
    with pytest.raises(RuntimeError):
        fabric.arange(4.0).map_(fabric.ones(2, 4), lambda a, b: a)
    with pytest.raises(RuntimeError, match="requires grad"):
        f64(2).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match="requires grad"):
        (f64(2) * 1).map_(fabric.ones(2, dtype=fabric.float64), lambda a, b: a)


# --- gcd / lcm / heaviside_ -------------------------------------------------------------------------

@pytest.mark.torch
def test_gcd_lcm_match_torch():
    import torch

    a, b = np.array([-4, 0, 12, 7, 9]), np.array([6, 0, -18, 0, 6])
    for name in ("gcd", "lcm"):
        for da, db in [(np.int64, np.int64), (np.int32, np.int64), (np.int16, np.int16)]:
            x, y = fabric.from_numpy(a.astype(da)), fabric.from_numpy(b.astype(db))
            r = getattr(x, name)(y)
            t = getattr(torch.from_numpy(a.astype(da)), name)(torch.from_numpy(b.astype(db)))
            assert r.tolist() == t.tolist() and str(r.dtype) .split(".")[-1] == str(t.dtype).split(".")[-1]
        x = fabric.from_numpy(a.astype(np.int32))
        getattr(x, name + "_")(fabric.from_numpy(b))
        t = torch.from_numpy(a.astype(np.int32))
        getattr(t, name + "_")(torch.from_numpy(b))
        assert x.tolist() == t.tolist() and x.dtype is fabric.int32
        assert getattr(fabric, name + "_")(fabric.tensor([4]), fabric.tensor([6])).tolist() == \
            getattr(torch, name + "_")(torch.tensor([4]), torch.tensor([6])).tolist()
        with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
            getattr(fabric.tensor([1.0]), name)(fabric.tensor([2.0]))
        with pytest.raises(NotImplementedError, match="'Bool'"):
            getattr(fabric.tensor([True]), name)(fabric.tensor([True]))
        with pytest.raises(TypeError):
            getattr(fabric.tensor([4]), name)(3)


@pytest.mark.torch
def test_heaviside_inplace_matches_torch():
    import torch

    for a, v in [([-1.0, 0.0, 2.0], [5.0]), ([-1, 0, 2], [5])]:
        x = fabric.tensor(a)
        assert x.heaviside_(fabric.tensor(v)) is x
        assert x.tolist() == torch.tensor(a).heaviside_(torch.tensor(v)).tolist()
    with pytest.raises(RuntimeError, match="different dtypes"):
        fabric.tensor([1.0]).heaviside_(fabric.tensor([1]))
    with pytest.raises(TypeError):
        fabric.tensor([1.0]).heaviside_(0.5)
    y = f64(3) * 1
    y.heaviside_(fabric.tensor([0.5], dtype=fabric.float64))
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        y.sum().backward()


# --- ldexp / frexp / i0 / mvlgamma ------------------------------------------------------------------

@pytest.mark.torch
def test_ldexp_frexp_match_torch():
    import torch

    for a, e in [([1.0, 2.0], [3, 4]), ([1, 2], [3, 4]), ([1.0], [200]), ([1.5, -3.0], [-2.0, 1.5])]:
        for dt in (torch.float32, torch.float64) if isinstance(a[0], float) else (torch.int64,):
            r = fabric.ldexp(fabric.tensor(a, dtype=getattr(fabric, str(dt).split(".")[1])), fabric.tensor(e))
            t = torch.ldexp(torch.tensor(a, dtype=dt), torch.tensor(e))
            np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-6)
            assert str(r.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    with pytest.raises(TypeError):
        fabric.ldexp(fabric.tensor([1.0]), 3)
    with pytest.raises(RuntimeError, match="can't be cast"):
        fabric.tensor([1, 2]).ldexp_(fabric.tensor([1, 1]))
    a = [1.0, 2.5, 0.0, -3.0, float("inf"), float("nan"), 1e-40]
    m, e = fabric.frexp(fabric.tensor(a))
    tm, te = torch.frexp(torch.tensor(a))
    np.testing.assert_array_equal(m.numpy(), tm.numpy())
    np.testing.assert_array_equal(e.numpy(), te.numpy())
    assert e.dtype is fabric.int32 and not e.requires_grad
    with pytest.raises(RuntimeError, match="floating-point"):
        fabric.frexp(fabric.tensor([1, 2]))
    r = fabric.tensor([1.0, 2.0, 3.0]).frexp()
    assert r.mantissa.tolist() == [0.5, 0.5, 0.75] and r.exponent.tolist() == [1, 2, 2]


def test_ldexp_gradient_with_negative_integer_exponent():
    # PyTorch 2.13 gives 0 here (it computes 2 ** other in integers); the true derivative is 2 ** other
    x = fabric.tensor([1.0, 3.0], requires_grad=True)
    fabric.ldexp(x, fabric.tensor([-1, 2])).sum().backward()
    assert x.grad.tolist() == [0.5, 4.0]
    e = f64(3)
    assert gradcheck(lambda a, b: fabric.ldexp(a, b), (f64(3, seed=1), e))


@pytest.mark.torch
def test_i0_and_internal_i1_accuracy():
    import torch

    a = np.concatenate([np.linspace(-60, 60, 601), [0.0, 1e-12, 700.0, -705.0, 800.0]])
    ours = fabric.from_numpy(a).i0().numpy()
    theirs = torch.from_numpy(a).i0().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    i1 = pointwise._i1(fabric.from_numpy(a)).numpy()
    np.testing.assert_allclose(i1, torch.special.i1(torch.from_numpy(a)).numpy(), rtol=1e-13, atol=1e-300)
    x = fabric.from_numpy(np.array([-3.0, 0.0, 0.5, 40.0])).requires_grad_()
    x.i0().sum().backward()
    t = torch.tensor([-3.0, 0.0, 0.5, 40.0], dtype=torch.float64, requires_grad=True)
    t.i0().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-13)
    assert fabric.tensor([0, 1]).i0().dtype is fabric.float32
    with pytest.raises(RuntimeError, match="can't be cast"):
        fabric.tensor([0, 1]).i0_()


def test_i0_higher_derivatives():
    x = fabric.from_numpy(np.array([-3.0, 0.0, 0.5, 35.0])).requires_grad_()
    assert gradcheck(fabric.i0, (x,)) and gradgradcheck(fabric.i0, (x,))
    assert gradgradcheck(pointwise._i1, (x,))


@pytest.mark.torch
def test_mvlgamma_matches_torch():
    import torch

    a = np.array([0.2, 2.0, 3.0, 5.5])
    for p in (1, 2, 3):
        np.testing.assert_allclose(fabric.from_numpy(a).mvlgamma(p).numpy(), torch.from_numpy(a).mvlgamma(p).numpy(),
                                   rtol=1e-12, atol=1e-13)
    assert fabric.tensor([2, 3]).mvlgamma(2).dtype is fabric.float32
    x = fabric.tensor([2.0, 3.0])
    assert x.mvlgamma_(2) is x
    np.testing.assert_allclose(x.numpy(), torch.tensor([2.0, 3.0]).mvlgamma_(2).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="greater than or equal to 1"):
        fabric.mvlgamma(x, 0)
    with pytest.raises(RuntimeError, match="result type Long can't be cast"):
        fabric.tensor([2, 3]).mvlgamma_(2)
    g = f64(3, low=2.0, high=4.0)
    t = torch.from_numpy(g.detach().numpy().copy()).requires_grad_()
    g.mvlgamma(3).sum().backward()
    t.mvlgamma(3).sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-10)


# --- *_scatter and index_reduce ------------------------------------------------------------------------

@pytest.mark.torch
def test_scatter_errors_and_dtypes_match_torch():
    import torch

    x = fabric.zeros(3, 4)
    assert x.slice_scatter(fabric.ones(3, 2, dtype=fabric.int64), 1, 0, 4, 2).dtype is fabric.float32
    with pytest.raises(RuntimeError, match="src size = \\[3, 1\\], slice size = \\[3, 2\\]"):
        x.slice_scatter(fabric.ones(3, 1), 1, 0, 4, 2)
    with pytest.raises(RuntimeError, match="step must be positive"):
        x.slice_scatter(fabric.ones(3, 2), 1, 0, 4, 0)
    with pytest.raises(IndexError, match="out of range"):
        x.select_scatter(fabric.ones(4), 0, 3)
    with pytest.raises(RuntimeError, match="slice size"):
        x.diagonal_scatter(fabric.ones(2), 1)
    np.testing.assert_array_equal(x.diagonal_scatter(fabric.ones(3), -1, 1, 0).numpy(),
                                  torch.zeros(3, 4).diagonal_scatter(torch.ones(3), -1, 1, 0).numpy())


def test_scatter_methods_are_differentiable_in_both_inputs():
    x, s = f64(3, 4), f64(3, 2, seed=1)
    assert gradcheck(lambda a, b: a.slice_scatter(b, 1, 0, None, 2), (x, s))
    assert gradgradcheck(lambda a, b: a.slice_scatter(b, 1, 0, None, 2), (x, s))
    assert gradcheck(lambda a, b: a.select_scatter(b, 1, -1), (x, f64(3, seed=2)))
    assert gradcheck(lambda a, b: a.diagonal_scatter(b, 1), (x, f64(3, seed=3)))
    assert gradgradcheck(lambda a, b: a.diagonal_scatter(b, -1), (x, f64(2, seed=3)))
    s32 = fabric.ones(3, 2, requires_grad=True)
    x.slice_scatter(s32, 1, 0, None, 2).sum().backward()
    assert s32.grad.dtype is fabric.float32 and s32.grad.tolist() == [[1.0, 1.0]] * 3


@pytest.mark.torch
def test_index_reduce_matches_torch():
    import torch

    rng = np.random.default_rng(0)
    a, s = rng.uniform(0.5, 2, (5, 3)), rng.uniform(0.5, 2, (4, 3))
    idx = np.array([0, 4, 2, 0])
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            x, src = fabric.from_numpy(a.copy()).requires_grad_(), fabric.from_numpy(s.copy()).requires_grad_()
            tx, tsrc = torch.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(s.copy()).requires_grad_()
            r = x.index_reduce(0, fabric.from_numpy(idx), src, reduce, include_self=include_self)
            t = tx.index_reduce(0, torch.from_numpy(idx), tsrc, reduce, include_self=include_self)
            np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-12)
            assert type(r.grad_fn).__name__ == "IndexReduceBackward0"
            g = rng.standard_normal(r.shape)
            r.backward(fabric.from_numpy(g))
            t.backward(torch.from_numpy(g))
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
            np.testing.assert_allclose(src.grad.numpy(), tsrc.grad.numpy(), rtol=1e-10)
    xi = fabric.full((4, 3), 2).index_reduce_(0, fabric.tensor([0, 2, 0], dtype=fabric.int32),
                                              fabric.arange(1, 10).reshape(3, 3), "mean")
    ti = torch.full((4, 3), 2).index_reduce_(0, torch.tensor([0, 2, 0], dtype=torch.int32),
                                             torch.arange(1, 10).reshape(3, 3), "mean")
    assert xi.tolist() == ti.tolist()
    x = fabric.full((4, 3), 2.0)
    src = fabric.ones(3, 3)
    for args, exc, msg in [((0, fabric.tensor([0, 2, 0]), src, "sum"), RuntimeError, "Expected reduce"),
                           ((0, fabric.tensor([0, 2, 0]), src.double(), "prod"), RuntimeError, "same scalar type"),
                           ((0, fabric.tensor([0.0, 2, 0]), src, "prod"), RuntimeError, "int32/int64"),
                           ((0, fabric.tensor([0, 2]), src, "prod"), RuntimeError, "Number of indices"),
                           ((0, fabric.tensor([0, 5, 0]), src, "prod"), IndexError, "out of"),
                           ((0, fabric.tensor([[0, 2, 0]]), src, "prod"), IndexError, "vector"),
                           ((1, fabric.tensor([0, 2, 0]), src, "amin"), RuntimeError, "shape must match")]:
        with pytest.raises(exc, match=msg):
            x.index_reduce(*args)


def test_index_reduce_gradcheck():
    idx = fabric.tensor([0, 2, 0, 3])
    for reduce in ("prod", "mean", "amax", "amin"):
        x, s = f64(4, 3, low=0.5), f64(4, 3, seed=1, low=0.5)
        assert gradcheck(lambda a, b, _r=reduce: fabric.index_reduce(a, 0, idx, b, _r), (x, s)), reduce
    x, s = f64(4, 3, low=0.5), f64(4, 3, seed=1, low=0.5)
    assert gradgradcheck(lambda a, b: fabric.index_reduce(a, 0, idx, b, "mean", include_self=False), (x, s))


# --- Tensor.new -------------------------------------------------------------------------------------------

@pytest.mark.torch
def test_new_matches_torch():
    import torch

    x, t = fabric.zeros(1, dtype=fabric.float64), torch.zeros(1, dtype=torch.float64)
    for args in [(2, 3), ((2, 3),), ([1, 2],), ()]:
        r, tr = x.new(*args), t.new(*args)
        assert tuple(r.shape) == tuple(tr.shape) and r.dtype is fabric.float64 and not r.requires_grad
        if args and isinstance(args[0], (list, tuple)):
            assert r.tolist() == tr.tolist()
    assert x.new(2, 3).sum().item() == 0.0
    assert x.new(fabric.Size([2, 3])).shape == (2, 3)
    src = fabric.ones(3, dtype=fabric.float64)
    alias = x.new(src)
    alias[0] = 5.0
    assert src[0].item() == 5.0
    with pytest.raises(TypeError):
        x.new(fabric.ones(2, dtype=fabric.int64))
