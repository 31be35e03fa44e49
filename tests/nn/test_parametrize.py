"""nn.utils parametrize / parametrizations / legacy weight_norm and
spectral_norm / fusion / stateless, compared with torch."""
import copy
import warnings

import numpy as np
import pytest

import fabric
import fabric.nn.utils.parametrize as P
from fabric import nn


def _np(t):
    return t.detach().numpy()


def _make(lib, kind):
    if kind == "linear":
        return lib.nn.Linear(4, 3)
    if kind == "conv":
        return lib.nn.Conv2d(2, 3, 3)
    return lib.nn.ConvTranspose2d(2, 3, 3)


def _input(kind, seed=0):
    rs = np.random.RandomState(seed)
    return (rs.randn(2, 4) if kind == "linear" else rs.randn(1, 2, 5, 5)).astype(np.float32)


def _train_both(a, b, kind, steps=3):
    """A few SGD steps on both modules; returns the last outputs."""
    import torch
    oa = fabric.optim.SGD(a.parameters(), lr=0.05, momentum=0.9)
    ob = torch.optim.SGD(b.parameters(), lr=0.05, momentum=0.9)
    for i in range(steps):
        x = _input(kind, i)
        ya, yb = a(fabric.tensor(x)), b(torch.tensor(x))
        ya.pow(2).sum().backward()
        yb.pow(2).sum().backward()
        oa.step()
        ob.step()
        oa.zero_grad()
        ob.zero_grad()
    return ya, yb


def _assert_state_close(a, b, rtol=1e-4, atol=1e-5):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sb:
        np.testing.assert_allclose(_np(sa[k]), sb[k].detach().numpy(), rtol=rtol, atol=atol, err_msg=k)


class _Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


def _torch_symmetric():
    import torch

    class Symmetric(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)
    return Symmetric()


# --- parametrize ----------------------------------------------------------------------
@pytest.mark.torch
def test_register_parametrization_matches_torch():
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    a, b = nn.Linear(3, 3), torch.nn.Linear(3, 3)
    P.register_parametrization(a, "weight", _Symmetric())
    torch.nn.utils.parametrize.register_parametrization(b, "weight", _torch_symmetric())
    assert type(a).__name__ == type(b).__name__ == "ParametrizedLinear"
    assert isinstance(a, nn.Linear)
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
    np.testing.assert_allclose(_np(a.weight), _np(a.weight).T)
    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    ya, yb = a(fabric.tensor(x)), b(torch.tensor(x))
    np.testing.assert_allclose(_np(ya), yb.detach().numpy(), rtol=1e-6, atol=1e-6)
    ya.sum().backward()
    yb.sum().backward()
    np.testing.assert_allclose(_np(a.parametrizations.weight.original.grad),
                               b.parametrizations.weight.original.grad.numpy(), rtol=1e-6)
    assert P.is_parametrized(a) and P.is_parametrized(a, "weight") and not P.is_parametrized(a, "bias")
    assert P.type_before_parametrizations(a) is nn.Linear


@pytest.mark.torch
def test_parametrization_training_and_removal_matches_torch():
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    a, b = nn.Linear(4, 4), torch.nn.Linear(4, 4)
    P.register_parametrization(a, "weight", _Symmetric())
    torch.nn.utils.parametrize.register_parametrization(b, "weight", _torch_symmetric())
    ya, yb = _train_both(a, b, "linear")
    np.testing.assert_allclose(_np(ya), yb.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert list(a.state_dict()) == ["bias", "parametrizations.weight.original"]
    _assert_state_close(a, b)
    P.remove_parametrizations(a, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(b, "weight")
    assert type(a) is nn.Linear and not hasattr(a, "parametrizations")
    assert isinstance(a.weight, nn.Parameter)
    _assert_state_close(a, b)


def test_remove_leave_parametrized_false_and_errors():
    m = nn.Linear(3, 3)
    w0 = m.weight.detach().clone()
    original = m.weight
    P.register_parametrization(m, "weight", _Symmetric())
    assert m.parametrizations.weight.original is original
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert m.weight is original and bool((m.weight == w0).all())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(m, "weight")
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P.register_parametrization(m, "nope", _Symmetric())


def test_shape_change_needs_unsafe():
    class First(nn.Module):
        def forward(self, X):
            return X[0]
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(3, 3), "weight", First())
    m = P.register_parametrization(nn.Linear(3, 3), "weight", First(), unsafe=True)
    assert m.weight.shape == (3,)


def test_right_inverse_assignment_chaining_and_cached():
    class Double(nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, Y):
            return Y / 2

    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Double())
    P.register_parametrization(m, "weight", Double())
    assert len(m.parametrizations.weight) == 2
    m.weight = fabric.ones(2, 2)
    np.testing.assert_allclose(_np(m.parametrizations.weight.original), np.full((2, 2), 0.25))
    np.testing.assert_allclose(_np(m.weight), np.ones((2, 2)))
    assert m.weight is not m.weight
    with P.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight


def test_parametrized_buffer_deepcopy_and_pickle_error():
    import pickle
    m = nn.BatchNorm1d(3)
    P.register_parametrization(m, "running_var", _Double_noinv())
    assert "parametrizations.running_var.original" in m.state_dict()
    c = copy.deepcopy(m)
    assert type(c).__name__ == "ParametrizedBatchNorm1d"
    assert c.parametrizations.running_var.original is not m.parametrizations.running_var.original
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)


class _Double_noinv(nn.Module):
    def forward(self, X):
        return 2 * X


# --- parametrizations.weight_norm / spectral_norm ----------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm_matches_torch(kind, dim):
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    a, b = _make(fabric, kind), _make(torch, kind)
    nn.utils.parametrizations.weight_norm(a, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(b, dim=dim)
    _assert_state_close(a, b, rtol=1e-6, atol=1e-7)
    ya, yb = _train_both(a, b, kind)
    np.testing.assert_allclose(_np(ya), yb.detach().numpy(), rtol=1e-4, atol=1e-5)
    _assert_state_close(a, b)
    P.remove_parametrizations(a, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(b, "weight")
    _assert_state_close(a, b)


def test_parametrizations_weight_norm_loads_legacy_keys():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = nn.utils.weight_norm(nn.Linear(3, 2))
    new = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    new.load_state_dict(old.state_dict())
    np.testing.assert_allclose(_np(new.weight), _np(old.weight), rtol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_parametrizations_spectral_norm_matches_torch(kind):
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    a, b = _make(fabric, kind), _make(torch, kind)
    nn.utils.parametrizations.spectral_norm(a, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(b, n_power_iterations=2)
    assert list(a.state_dict()) == list(b.state_dict())
    _assert_state_close(a, b, rtol=1e-5, atol=1e-6)
    ya, yb = _train_both(a, b, kind)
    np.testing.assert_allclose(_np(ya), yb.detach().numpy(), rtol=1e-4, atol=1e-5)
    _assert_state_close(a, b)
    a.eval()
    b.eval()
    np.testing.assert_allclose(_np(a.weight), b.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="n_power_iterations"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


# --- legacy hook API ------------------------------------------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("kind", ["linear", "conv"])
@pytest.mark.parametrize("dim", [0, None])
def test_legacy_weight_norm_matches_torch(kind, dim):
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    a, b = _make(fabric, kind), _make(torch, kind)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(a, dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(b, dim=dim)
    assert list(a.state_dict()) == list(b.state_dict())
    ya, yb = _train_both(a, b, kind)
    np.testing.assert_allclose(_np(ya), yb.detach().numpy(), rtol=1e-4, atol=1e-5)
    _assert_state_close(a, b)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(a)
    nn.utils.remove_weight_norm(a)
    torch.nn.utils.remove_weight_norm(b)
    _assert_state_close(a, b)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(a)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_legacy_spectral_norm_matches_torch(kind):
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    a, b = _make(fabric, kind), _make(torch, kind)
    nn.utils.spectral_norm(a)
    torch.nn.utils.spectral_norm(b)
    _assert_state_close(a, b, rtol=1e-6, atol=1e-7)
    ya, yb = _train_both(a, b, kind)
    np.testing.assert_allclose(_np(ya), yb.detach().numpy(), rtol=1e-4, atol=1e-5)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa._metadata[""] == sb._metadata[""]
    _assert_state_close(a, b)
    # a round trip through state_dict keeps the numbers
    c = _make(fabric, kind)
    nn.utils.spectral_norm(c)
    c.load_state_dict(sa)
    a.eval()
    c.eval()
    x = fabric.tensor(_input(kind))
    np.testing.assert_allclose(_np(c(x)), _np(a(x)), rtol=1e-6)
    nn.utils.remove_spectral_norm(a)
    torch.nn.utils.remove_spectral_norm(b)
    assert list(a.state_dict()) == list(b.state_dict())
    np.testing.assert_allclose(_np(a.weight), b.weight.detach().numpy(), rtol=1e-4, atol=1e-5)
    # fabric also drops the load hook (torch leaves it, then rejects its own state dict)
    a.load_state_dict(a.state_dict())


# --- fusion ---------------------------------------------------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_torch(transpose):
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    conv_cls = "ConvTranspose2d" if transpose else "Conv2d"
    ca, cb = getattr(nn, conv_cls)(2, 3, 3).eval(), getattr(torch.nn, conv_cls)(2, 3, 3).eval()
    ba, bb = nn.BatchNorm2d(3).eval(), torch.nn.BatchNorm2d(3).eval()
    rs = np.random.RandomState(1)
    for name, val in [("running_mean", rs.randn(3)), ("running_var", rs.rand(3) + 0.5),
                      ("weight", rs.randn(3)), ("bias", rs.randn(3))]:
        getattr(ba, name).data = fabric.tensor(val.astype(np.float32))
        getattr(bb, name).data = torch.tensor(val.astype(np.float32))
    fa = nn.utils.fuse_conv_bn_eval(ca, ba, transpose=transpose)
    fb = torch.nn.utils.fuse_conv_bn_eval(cb, bb, transpose=transpose)
    assert fa is not ca and isinstance(fa.weight, nn.Parameter)
    np.testing.assert_allclose(_np(fa.weight), fb.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_np(fa.bias), fb.bias.detach().numpy(), rtol=1e-6, atol=1e-7)
    x = fabric.tensor(_input("conv"))
    np.testing.assert_allclose(_np(fa(x)), _np(ba(ca(x))), rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_conv_bn_eval(ca.train(), ba)


@pytest.mark.torch
def test_fuse_linear_bn_eval_matches_torch():
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    la, lb = nn.Linear(4, 3).eval(), torch.nn.Linear(4, 3).eval()
    ba, bb = nn.BatchNorm1d(3).eval(), torch.nn.BatchNorm1d(3).eval()
    rs = np.random.RandomState(2)
    for name, val in [("running_mean", rs.randn(3)), ("running_var", rs.rand(3) + 0.5)]:
        getattr(ba, name).data = fabric.tensor(val.astype(np.float32))
        getattr(bb, name).data = torch.tensor(val.astype(np.float32))
    fa, fb = nn.utils.fuse_linear_bn_eval(la, ba), torch.nn.utils.fuse_linear_bn_eval(lb, bb)
    np.testing.assert_allclose(_np(fa.weight), fb.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(_np(fa.bias), fb.bias.detach().numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(AssertionError, match="out_features"):
        nn.utils.fuse_linear_bn_eval(la, nn.BatchNorm1d(2).eval())


def test_skip_init_leaves_rng_and_memory_format_noop():
    state = fabric.get_rng_state()
    m = nn.utils.skip_init(nn.Linear, 5, 2)
    assert bool((fabric.get_rng_state() == state).all())
    assert type(m) is nn.Linear and m.weight.shape == (2, 5)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)
    conv = nn.Conv2d(2, 2, 1)
    assert nn.utils.convert_conv2d_weight_memory_format(conv, None) is conv
    assert nn.utils.convert_conv3d_weight_memory_format(conv, None) is conv


# --- functional_call --------------------------------------------------------------------
@pytest.mark.torch
def test_functional_call_matches_torch_and_restores():
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    b = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    w = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    x = np.random.RandomState(1).randn(4, 3).astype(np.float32)
    wa, wb = fabric.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    orig = a[0].weight
    ya = fabric.func.functional_call(a, {"0.weight": wa}, (fabric.tensor(x),))
    yb = torch.func.functional_call(b, {"0.weight": wb}, (torch.tensor(x),))
    np.testing.assert_allclose(_np(ya), yb.detach().numpy(), rtol=1e-5, atol=1e-6)
    c = np.random.RandomState(2).randn(4, 2).astype(np.float32)
    (ya * fabric.tensor(c)).sum().backward()
    (yb * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(_np(wa.grad), wb.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert a[0].weight is orig and orig.grad is None
    np.testing.assert_allclose(_np(a[1].running_mean), b[1].running_mean.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError):
        fabric.func.functional_call(a, {"0.weight": wa}, (fabric.randn(4, 5),))
    assert a[0].weight is orig
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        nn.utils.stateless.functional_call(a, ({"0.weight": wa}), fabric.tensor(x))


def test_functional_call_dict_sequence_strict_and_tied():
    m = nn.Linear(2, 2)
    w, bias = fabric.ones(2, 2), fabric.zeros(2)
    out = fabric.func.functional_call(m, ({"weight": w}, {"bias": bias}), fabric.ones(1, 2))
    np.testing.assert_allclose(_np(out), [[2.0, 2.0]])
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        fabric.func.functional_call(m, ({"weight": w}, {"weight": w}), fabric.ones(1, 2))
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        fabric.func.functional_call(m, {"weight": w}, fabric.ones(1, 2), strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
        fabric.func.functional_call(m, {"weight": w, "bias": bias, "nope": w}, fabric.ones(1, 2), strict=True)

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    t = Tied()
    out = fabric.func.functional_call(t, {"a.weight": w}, fabric.ones(1, 2))
    np.testing.assert_allclose(_np(out), [[4.0, 4.0]])
    with pytest.raises(ValueError, match="which are tied"):
        fabric.func.functional_call(t, {"a.weight": w, "b.weight": 2 * w}, fabric.ones(1, 2))
    out = fabric.func.functional_call(t, {"a.weight": w}, fabric.ones(1, 2), tie_weights=False)
    assert t.b.weight is t.a.weight


def test_torch_alias_resolves():
    import importlib
    for name in ("nn.utils.parametrize", "nn.utils.parametrizations", "nn.utils.stateless", "nn.utils.fusion",
                 "func"):
        importlib.import_module(f"fabric.{name}")
    assert fabric.nn.utils.parametrizations.weight_norm is not None
    assert callable(fabric.nn.utils.weight_norm) and callable(fabric.nn.utils.fuse_conv_bn_eval)
    assert fabric.nn.utils.stateless.functional_call is not None


# --- parametrizations.orthogonal ---------------------------------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("shape,orthogonal_map,triv", [
    ((3, 3), None, True), ((3, 3), "cayley", True), ((3, 3), "householder", False),
    ((5, 3), None, True), ((5, 3), "matrix_exp", True), ((3, 5), "householder", True),
    ((3, 5), None, False), ((2, 4, 3), "cayley", True), ((2, 4, 3), "householder", False)])
def test_orthogonal_matches_torch(shape, orthogonal_map, triv):
    import torch
    fabric.manual_seed(0)
    torch.manual_seed(0)
    w = np.random.RandomState(0).randn(*shape).astype(np.float32)
    a, b = nn.Module(), torch.nn.Module()
    a.weight, b.weight = nn.Parameter(fabric.tensor(w)), torch.nn.Parameter(torch.tensor(w))
    nn.utils.parametrizations.orthogonal(a, orthogonal_map=orthogonal_map, use_trivialization=triv)
    torch.nn.utils.parametrizations.orthogonal(b, orthogonal_map=orthogonal_map, use_trivialization=triv)
    _assert_state_close(a, b, rtol=1e-5, atol=1e-6)
    n, k = shape[-2:]
    W = a.weight if n >= k else a.weight.mT
    np.testing.assert_allclose(_np(W.mT @ W), np.broadcast_to(np.eye(min(n, k)), W.shape[:-2] + (min(n, k),) * 2),
                               atol=1e-5)
    opt_a = fabric.optim.SGD(a.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.1)
    for _ in range(2):
        (a.weight ** 3).sum().backward()
        (b.weight ** 3).sum().backward()
        opt_a.step()
        opt_b.step()
        opt_a.zero_grad()
        opt_b.zero_grad()
    _assert_state_close(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(a.weight), b.weight.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_orthogonal_assignment_and_errors():
    m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))
    Q = fabric.linalg.qr(fabric.randn(3, 3))[0]
    m.weight = Q
    np.testing.assert_allclose(_np(m.weight), _np(Q), atol=1e-5)
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix"):
        nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), "bias")
    m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        m.weight = Q


@pytest.mark.parametrize("module", ["fabric.nn.utils.parametrize", "fabric.nn.utils.parametrizations",
                                    "fabric.nn.utils.weight_norm", "fabric.nn.utils.spectral_norm",
                                    "fabric.nn.utils.fusion", "fabric.nn.utils.stateless", "fabric.func"])
def test_docstring_examples(module):
    import doctest
    import importlib
    import sys
    importlib.import_module(module)
    res = doctest.testmod(sys.modules[module], optionflags=doctest.ELLIPSIS)
    assert res.failed == 0
