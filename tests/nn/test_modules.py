"""Generic module tests driven by the ModuleInfo registry (tests/nn/moduleinfo.py)."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from moduleinfo import ALL_MODULES, Const

import fabric
from fabric import nn

# Dropout2d on a 3-D input warns by design (PyTorch does too)
pytestmark = pytest.mark.filterwarnings("ignore:dropout2d. Received a 3D input")

def _sample(info, idx, dtype=np.float32, seed=0):
    return info.module_inputs(dtype, np.random.default_rng(seed))[idx]


CASES = []
for _info in ALL_MODULES:
    for _i, _s in enumerate(_info.module_inputs(np.float32, np.random.default_rng(0))):
        CASES.append(pytest.param(_info, _i, id=f"{_info.name}-{_i}{'-' + _s.desc if _s.desc else ''}"))

TORCH_CASES = [c for c in CASES if c.values[0].torch_name and _sample(c.values[0], c.values[1]).torch]


def _seed(s=0):
    fabric.manual_seed(s)
    try:
        import torch

        torch.manual_seed(s)
    except ImportError:
        pass


def _convert(lib, v, grad=False):
    """NumPy arrays (anywhere in v) to ``lib`` tensors; float ones require grad when asked."""
    if isinstance(v, Const):
        return _convert(lib, v.array, False)
    if isinstance(v, np.ndarray):
        t = lib.from_numpy(np.array(v, order="C", copy=True))
        if grad and v.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    if isinstance(v, tuple):
        return tuple(_convert(lib, x, grad) for x in v)
    if isinstance(v, list):
        return [_convert(lib, x, grad) for x in v]
    if isinstance(v, dict):
        return {k: _convert(lib, x, grad) for k, x in v.items()}
    return v


def _leaves(v):
    if hasattr(v, "requires_grad") and not isinstance(v, (list, tuple, dict)):
        return [v] if v.requires_grad else []
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _leaves(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in _leaves(x)]
    return []


def _build(lib, info, sample, seed=0):
    _seed(seed)
    return info.build(lib.nn, sample)


def _call(info, module, args, kwargs):
    out = module(*args, **kwargs)
    if info.output_index is not None:
        out = out[info.output_index]
    return out


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


# --- shape / dtype -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("info,idx", CASES)
def test_output_shape_and_dtype(info, idx, dtype):
    sample = _sample(info, idx, dtype)
    m = _build(fabric, info, sample)
    if dtype == np.float64:
        assert m.double() is m
    args, kwargs = _convert(fabric, sample.forward_args), _convert(fabric, sample.forward_kwargs)
    for mode in (True, False):
        m.train(mode)
        out = _call(info, m, args, kwargs)
        if sample.output_shape is not None:
            assert tuple(out.shape) == tuple(sample.output_shape)
        assert out.dtype == fabric.from_numpy(np.zeros(1, dtype)).dtype


# --- gradients ---------------------------------------------------------------------------

def _grad_setup(info, idx, train=True):
    sample = _sample(info, idx, np.float64)
    m = _build(fabric, info, sample).double().train(train)
    args = _convert(fabric, sample.forward_args, grad=True)
    kwargs = _convert(fabric, sample.forward_kwargs, grad=True)
    inputs = _leaves(args) + _leaves(kwargs)
    params = [p for p in m.parameters() if p.requires_grad]
    # gradcheck perturbs the inputs and parameters in place; func re-runs the module
    ins = inputs + params

    def func(*_):
        if info.random:
            fabric.manual_seed(1)
        return _call(info, m, args, kwargs)

    return sample, m, ins, func


@pytest.mark.parametrize("info,idx", CASES)
def test_gradcheck(info, idx):
    for train in (True, False) if info.train_eval_differ else (True,):
        sample, m, ins, func = _grad_setup(info, idx, train)
        if not sample.gradcheck or not ins:
            pytest.skip("no differentiable inputs or parameters in this variant")
        assert fabric.autograd.gradcheck(func, tuple(ins), atol=info.gradcheck_atol, rtol=info.gradcheck_rtol)


@pytest.mark.parametrize("info,idx", [c for c in CASES if c.values[0].gradgrad])
def test_gradgradcheck(info, idx):
    sample, m, ins, func = _grad_setup(info, idx)
    if not sample.gradcheck or not ins:
        pytest.skip("no differentiable inputs or parameters in this variant")
    assert fabric.autograd.gradgradcheck(func, tuple(ins), atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("info,idx", CASES)
def test_create_graph_gradients_agree(info, idx):
    """The fast backward (plain backward) and the differentiable backward
    (create_graph=True) give the same gradients, in both modes."""
    for train in (True, False) if info.train_eval_differ else (True,):
        sample, m, ins, func = _grad_setup(info, idx, train)
        if not ins:
            pytest.skip("nothing differentiable")
        out = func()
        if not out.requires_grad:
            continue
        g = fabric.from_numpy(np.random.default_rng(3).standard_normal(tuple(out.shape)))
        fast = fabric.autograd.grad(out, ins, g, retain_graph=True, allow_unused=True)
        graph = fabric.autograd.grad(out, ins, g, create_graph=True, allow_unused=True)
        for a, b in zip(fast, graph):
            if a is None:
                assert b is None
                continue
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


# --- modes, state, copies -----------------------------------------------------------------

@pytest.mark.parametrize("info,idx", CASES)
def test_train_eval(info, idx):
    sample = _sample(info, idx)
    m = _build(fabric, info, sample)
    args, kwargs = _convert(fabric, sample.forward_args), _convert(fabric, sample.forward_kwargs)
    assert m.training and all(s.training for s in m.modules())
    assert m.eval() is m and not any(s.training for s in m.modules())
    a = _np(_call(info, m, args, kwargs))
    b = _np(_call(info, m, args, kwargs))
    np.testing.assert_array_equal(a, b)  # eval mode is deterministic
    m.train()
    assert all(s.training for s in m.modules())
    fabric.manual_seed(5)
    c = _np(_call(info, m, args, kwargs))
    fabric.manual_seed(5)
    d = _np(_call(info, m, args, kwargs))
    if not info.train_eval_differ or not [n for n, _ in m.named_buffers()]:
        np.testing.assert_array_equal(c, d)  # training mode is deterministic under manual_seed


@pytest.mark.parametrize("info,idx", CASES)
def test_state_dict_round_trip(info, idx):
    sample = _sample(info, idx)
    args, kwargs = _convert(fabric, sample.forward_args), _convert(fabric, sample.forward_kwargs)
    m1 = _build(fabric, info, sample, seed=0)
    _call(info, m1, args, kwargs)  # update any running statistics
    m2 = _build(fabric, info, sample, seed=1)
    sd = m1.state_dict()
    assert list(sd) == list(m2.state_dict())
    res = m2.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    for k, v in m2.state_dict().items():
        np.testing.assert_array_equal(_np(v), _np(sd[k]))
    m1.eval(), m2.eval()
    np.testing.assert_array_equal(_np(_call(info, m1, args, kwargs)), _np(_call(info, m2, args, kwargs)))
    for name, p in m2.state_dict(keep_vars=True).items():
        if name in dict(m2.named_parameters()):
            assert isinstance(p, nn.Parameter)


@pytest.mark.parametrize("info,idx", CASES)
def test_deepcopy_and_pickle(info, idx):
    sample = _sample(info, idx)
    args, kwargs = _convert(fabric, sample.forward_args), _convert(fabric, sample.forward_kwargs)
    m = _build(fabric, info, sample).eval()
    ref = _np(_call(info, m, args, kwargs))
    copies = [copy.deepcopy(m)]
    if "<locals>" not in type(m).__qualname__:
        copies.append(pickle.loads(pickle.dumps(m)))
    for c in copies:
        assert type(c) is type(m) and not c.training
        np.testing.assert_array_equal(_np(_call(info, c, args, kwargs)), ref)
        for (n1, p1), (n2, p2) in zip(m.named_parameters(), c.named_parameters()):
            assert n1 == n2 and p1 is not p2 and type(p2) is nn.Parameter
            assert p1.requires_grad == p2.requires_grad


# --- PyTorch parity --------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("info,idx", [c for c in TORCH_CASES if c.values[0].check_repr])
def test_repr_matches_torch(info, idx):
    import torch

    sample = _sample(info, idx)
    expected = repr(_build(torch, info, sample)).replace("torch.float", "fabric.float")
    assert repr(_build(fabric, info, sample)) == expected


@pytest.mark.torch
@pytest.mark.parametrize("info,idx", TORCH_CASES)
def test_default_init_matches_torch(info, idx):
    """Same seed, same constructor: the same parameters and buffers, in the same order."""
    import torch

    sample = _sample(info, idx)
    fm, tm = _build(fabric, info, sample), _build(torch, info, sample)
    fsd, tsd = fm.state_dict(), tm.state_dict()
    assert list(fsd) == list(tsd)
    for k in tsd:
        assert tuple(fsd[k].shape) == tuple(tsd[k].shape), k
        np.testing.assert_array_equal(_np(fsd[k]), _np(tsd[k]), err_msg=k)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in fm.named_buffers()] == [n for n, _ in tm.named_buffers()]


@pytest.mark.torch
@pytest.mark.parametrize("info,idx", TORCH_CASES)
def test_matches_torch(info, idx):
    """Outputs, input and parameter gradients, and buffers equal PyTorch's
    (float32, torch weights copied in by state_dict name), in training and
    then eval mode."""
    import torch

    sample = _sample(info, idx)
    fm, tm = _build(fabric, info, sample), _build(torch, info, sample)
    fm.load_state_dict({k: fabric.from_numpy(_np(v).copy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(7)
    for train in (True, False):
        fm.train(train), tm.train(train)
        fm.zero_grad(), tm.zero_grad()
        fa = _convert(fabric, sample.forward_args, grad=True)
        fk = _convert(fabric, sample.forward_kwargs, grad=True)
        ta = _convert(torch, sample.forward_args, grad=True)
        tk = _convert(torch, sample.forward_kwargs, grad=True)
        _seed(11)
        fo = _call(info, fm, fa, fk)
        _seed(11)
        to = _call(info, tm, ta, tk)
        np.testing.assert_allclose(_np(fo), _np(to), rtol=info.rtol, atol=info.atol, err_msg=f"output train={train}")
        for (n, b), (n2, b2) in zip(fm.named_buffers(), tm.named_buffers()):
            assert n == n2
            np.testing.assert_allclose(_np(b).astype(float), _np(b2).astype(float), rtol=1e-5, atol=1e-6, err_msg=n)
        if not to.requires_grad:
            continue
        g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
        fo.backward(fabric.from_numpy(g.copy()))
        to.backward(torch.from_numpy(g.copy()))
        for a, b in zip(_leaves(fa) + _leaves(fk), _leaves(ta) + _leaves(tk)):
            np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=info.grad_rtol, atol=info.grad_atol,
                                       err_msg="input grad")
        tparams = dict(tm.named_parameters())
        for n, p in fm.named_parameters():
            tp = tparams[n]
            if tp.grad is None:
                assert p.grad is None or not _np(p.grad).any(), n
                continue
            np.testing.assert_allclose(_np(p.grad), _np(tp.grad), rtol=info.grad_rtol, atol=info.grad_atol,
                                       err_msg=f"grad of {n}")
