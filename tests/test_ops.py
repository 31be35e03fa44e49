"""Generic op tests driven by the OpInfo registry (tests/opinfo)."""
from __future__ import annotations

import numpy as np
import pytest
from opinfo import ALL_OPS

import fabric

np_rng = np.random.default_rng


def _ids(op):
    return op.name


def _to_fabric(v, requires_grad=False):
    if isinstance(v, np.ndarray):
        t = fabric.from_numpy(v.copy() if not v.flags.writeable else v)
        if requires_grad and v.dtype.kind in "fc":
            t = fabric.from_numpy(v.copy()).requires_grad_(True) if not v.flags.c_contiguous else t.requires_grad_(True)
        return t
    if isinstance(v, list):
        return [_to_fabric(x, requires_grad) for x in v]
    if isinstance(v, tuple):
        return tuple(_to_fabric(x, requires_grad) for x in v)
    return v


def _to_torch(v, requires_grad=False):
    import torch

    if isinstance(v, np.ndarray):
        t = torch.from_numpy(v.copy())
        if requires_grad and v.dtype.kind in "fc":
            t.requires_grad_(True)
        return t
    if isinstance(v, list):
        return [_to_torch(x, requires_grad) for x in v]
    if isinstance(v, tuple):
        return tuple(_to_torch(x, requires_grad) for x in v)
    return v


def _call(op, fn, sample, conv, requires_grad=False):
    x = conv(sample.input, requires_grad)
    args = conv(sample.args, requires_grad)
    out = fn(x, *args, **sample.kwargs)
    if op.output_index is not None:
        out = out[op.output_index]
    return x, args, out


def _fn(op):
    if op.name == "getitem":
        return lambda x, k: x[k]
    return op.resolve(fabric)


def _np(t):
    if isinstance(t, fabric.Tensor):
        return t.detach().numpy()
    return np.asarray(t)


def _leaves(x, args):
    out = []
    for v in [x, *args]:
        if isinstance(v, fabric.Tensor) and v.requires_grad:
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, fabric.Tensor) and t.requires_grad)
    return out


def _samples(op, dtype, seed=0):
    return op.sample_inputs(dtype, np_rng(seed))


def _grad_samples(op, limit=None):
    """The float64 samples (and complex128 ones for ops with complex dtypes), ``limit`` of each."""
    out = _samples(op, np.float64)[:limit]
    if np.complex128 in op.complex_dtypes:
        out += _samples(op, np.complex128)[:limit]
    return out


@pytest.mark.parametrize("op", ALL_OPS, ids=_ids)
def test_forward_matches_reference(op):
    if op.ref is None:
        pytest.skip("no NumPy reference (compared with torch instead)")
    fn = _fn(op)
    for dtype in op.dtypes + op.complex_dtypes:
        for s in _samples(op, dtype):
            _, _, out = _call(op, fn, s, _to_fabric)
            args = [s.input, *s.args]
            expected = op.ref(*args, **s.kwargs)
            if op.output_index is not None and isinstance(expected, tuple):
                expected = expected[op.output_index]
            got = _np(out)
            np.testing.assert_allclose(got, np.asarray(expected), rtol=op.rtol * (100 if dtype in (np.float32, np.complex64) else 1),
                                       atol=op.atol, err_msg=f"{op.name} {s}", equal_nan=True)
            assert got.shape == np.shape(expected), f"{op.name} {s}: shape {got.shape} vs {np.shape(expected)}"


@pytest.mark.parametrize("op", [o for o in ALL_OPS if o.method], ids=_ids)
def test_method_matches_function(op):
    fn = _fn(op)
    dtype = op.dtypes[0]
    for s in _samples(op, dtype):
        _, _, a = _call(op, fn, s, _to_fabric)
        x = _to_fabric(s.input)
        b = getattr(x, op.method)(*_to_fabric(s.args), **s.kwargs)
        if op.output_index is not None:
            b = b[op.output_index]
        np.testing.assert_array_equal(_np(a), _np(b), err_msg=f"{op.name} {s}")


@pytest.mark.parametrize("op", [o for o in ALL_OPS if o.inplace], ids=_ids)
def test_inplace_matches_out_of_place(op):
    fn = _fn(op)
    for dtype in op.dtypes:
        for s in _samples(op, dtype):
            _, _, expected = _call(op, fn, s, _to_fabric)
            if tuple(expected.shape) != np.shape(s.input) or expected.dtype != fabric.from_numpy(
                    np.asarray(s.input)).dtype:
                continue  # in-place cannot change the shape or dtype of self
            x = fabric.from_numpy(np.array(s.input))
            v0 = x._version
            r = getattr(x, op.inplace)(*_to_fabric(s.args), **s.kwargs)
            assert r is x
            assert x._version > v0
            np.testing.assert_allclose(_np(x), _np(expected), rtol=1e-6, atol=1e-6, err_msg=f"{op.name} {s}")


@pytest.mark.parametrize("op", [o for o in ALL_OPS if o.differentiable], ids=_ids)
def test_gradcheck(op):
    fn = _fn(op)
    for s in _grad_samples(op):
        if not s.grad:
            continue
        x, args, out = _call(op, fn, s, _to_fabric, requires_grad=True)
        leaves = _leaves(x, args)
        if not leaves or not isinstance(out, fabric.Tensor) or not out.requires_grad:
            continue

        def f(*ls, _s=s, x=x, args=args):
            it = iter(ls)
            def sub(v):
                if isinstance(v, fabric.Tensor) and v.requires_grad:
                    return next(it)
                if isinstance(v, list):
                    return [sub(t) for t in v]
                if isinstance(v, tuple):
                    return tuple(sub(t) for t in v)
                return v
            xx = sub(x)
            aa = sub(args)
            r = fn(xx, *aa, **_s.kwargs)
            return r[op.output_index] if op.output_index is not None else r

        assert fabric.autograd.gradcheck(f, tuple(leaves), atol=op.grad_atol, rtol=op.grad_rtol), f"{op.name} {s}"


@pytest.mark.parametrize("op", [o for o in ALL_OPS if o.differentiable and o.gradgrad], ids=_ids)
def test_gradgradcheck(op):
    fn = _fn(op)
    for s in _grad_samples(op, 4):
        if not s.grad:
            continue
        x, args, out = _call(op, fn, s, _to_fabric, requires_grad=True)
        leaves = _leaves(x, args)
        if not leaves or not isinstance(out, fabric.Tensor) or not out.requires_grad or out.numel() == 0:
            continue

        def f(*ls, _s=s, x=x, args=args):
            it = iter(ls)
            def sub(v):
                if isinstance(v, fabric.Tensor) and v.requires_grad:
                    return next(it)
                if isinstance(v, list):
                    return [sub(t) for t in v]
                if isinstance(v, tuple):
                    return tuple(sub(t) for t in v)
                return v
            r = fn(sub(x), *sub(args), **_s.kwargs)
            return r[op.output_index] if op.output_index is not None else r

        assert fabric.autograd.gradgradcheck(f, tuple(leaves), atol=op.grad_atol, rtol=op.grad_rtol), \
            f"{op.name} {s}"


def _torch_fn(op):
    import torch

    if op.name == "getitem":
        return lambda x, k: x[k]
    obj = torch
    for part in op.torch_name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.torch
@pytest.mark.parametrize("op", [o for o in ALL_OPS if o.torch_name], ids=_ids)
def test_matches_torch(op):
    import torch

    fn, tfn = _fn(op), _torch_fn(op)
    for dtype in op.dtypes + op.complex_dtypes:
        for s in _samples(op, dtype, seed=1):
            diff = op.differentiable and np.dtype(dtype).kind in "fc"
            x, args, out = _call(op, fn, s, _to_fabric, requires_grad=diff)
            tx, targs, tout = _call(op, tfn, s, _to_torch, requires_grad=diff)
            np.testing.assert_allclose(_np(out), tout.detach().resolve_conj().numpy(), rtol=1e-5, atol=1e-5,
                                       err_msg=f"{op.name} {s}", equal_nan=True)
            if op.check_dtype:
                assert str(out.dtype).split(".")[-1] == str(tout.dtype).split(".")[-1], f"{op.name} {s}"
            if not diff or not out.requires_grad or not tout.requires_grad:
                continue
            g = np.random.default_rng(2).standard_normal(tuple(tout.shape))
            if tout.is_complex():
                g = g + 1j * np.random.default_rng(3).standard_normal(tuple(tout.shape))
            g = np.asarray(g, dtype=_np(out).dtype)
            out.backward(fabric.from_numpy(g.copy()))
            tout.backward(torch.from_numpy(g.copy()))
            ours = _leaves(x, args)
            theirs = [t for t in [tx, *[a for v in targs for a in (v if isinstance(v, (list, tuple)) else [v])]]
                      if isinstance(t, torch.Tensor) and t.requires_grad]
            for a, b in zip(ours, theirs):
                if b.grad is None:
                    assert a.grad is None or not np.any(_np(a.grad)), f"{op.name} {s}"
                    continue
                np.testing.assert_allclose(_np(a.grad), b.grad.resolve_conj().numpy(), rtol=1e-4, atol=1e-5,
                                           err_msg=f"grad of {op.name} {s}")
