"""Activation functions and the softmax family (fabric.nn.functional):
forward vs NumPy formulas, gradcheck / gradgradcheck in float64, the fused
(plain backward) and differentiable (create_graph) gradients agree, in-place
variants, errors, and - marked ``torch`` - values and gradients vs PyTorch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F

_erf = np.vectorize(math.erf, otypes=[np.float64])  # the reference (no SciPy needed)

SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _softmax(x, d):
    if x.size == 0:
        return x.copy()
    z = np.atleast_1d(x)
    e = np.exp(z - z.max(axis=d, keepdims=True))
    return (e / e.sum(axis=d, keepdims=True)).reshape(x.shape)


# name -> (kwargs, NumPy reference, kinks to keep away from)
CASES = {
    "relu": ({}, lambda x: np.maximum(x, 0), (0,)),
    "relu6": ({}, lambda x: np.clip(x, 0, 6), (0, 6)),
    "hardtanh": ({"min_val": -2.0, "max_val": 1.5}, lambda x: np.clip(x, -2, 1.5), (-2, 1.5)),
    "leaky_relu": ({"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x), (0,)),
    "elu": ({"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)), (0,)),
    "selu": ({}, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x)), (0,)),
    "celu": ({"alpha": 1.5}, lambda x: np.maximum(x, 0) + np.minimum(0, 1.5 * np.expm1(x / 1.5)), (0,)),
    "gelu": ({}, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), ()),
    "gelu_tanh": ({"approximate": "tanh"},
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), ()),
    "silu": ({}, lambda x: x * _sig(x), ()),
    "mish": ({}, lambda x: x * np.tanh(_softplus(x)), ()),
    "sigmoid": ({}, _sig, ()),
    "tanh": ({}, np.tanh, ()),
    "hardsigmoid": ({}, lambda x: np.clip(x / 6 + 0.5, 0, 1), (-3, 3)),
    "hardswish": ({}, lambda x: x * np.clip(x + 3, 0, 6) / 6, (-3, 3)),
    "hardshrink": ({"lambd": 0.7}, lambda x: np.where(np.abs(x) > 0.7, x, 0), (-0.7, 0.7)),
    "softshrink": ({"lambd": 0.7}, lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0)), (-0.7, 0.7)),
    "tanhshrink": ({}, lambda x: x - np.tanh(x), ()),
    "softplus": ({"beta": 2.0, "threshold": 3.0}, lambda x: np.where(2 * x > 3, x, _softplus(2 * x) / 2), (1.5,)),
    "softsign": ({}, lambda x: x / (1 + np.abs(x)), ()),
    "threshold": ({"threshold": 0.5, "value": -1.0}, lambda x: np.where(x > 0.5, x, -1.0), (0.5,)),
    "logsigmoid": ({}, lambda x: -_softplus(-x), ()),
    "rrelu": ({"lower": 0.1, "upper": 0.3}, lambda x: np.where(x > 0, x, 0.2 * x), (0,)),
    "glu": ({"dim": -1}, lambda x: x[..., :x.shape[-1] // 2] * _sig(x[..., x.shape[-1] // 2:]), ()),
    "softmax": ({"dim": -1}, lambda x: _softmax(x, -1), ()),
    "softmin": ({"dim": 0}, lambda x: _softmax(-x, 0), ()),
    "log_softmax": ({"dim": -1}, lambda x: np.log(_softmax(x, -1)), ()),
}

# second derivatives that are identically zero (piecewise linear) still pass gradgradcheck
INPLACE = ["relu", "relu6", "hardtanh", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardsigmoid",
           "hardswish", "threshold", "rrelu"]


def _fn(name):
    return getattr(F, "gelu" if name == "gelu_tanh" else name)


def away(rng, shape, kinks, dtype=np.float64, low=-4.0, high=4.0):
    a = rng.uniform(low, high, size=shape)
    for k in kinks:
        close = np.abs(a - k) < 0.1
        a = np.where(close, k + np.where(a >= k, 0.15, -0.15), a)
    return np.asarray(a, dtype=dtype)


SHAPES = [(), (0,), (5,), (3, 4), (2, 3, 2)]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_numpy(name, dtype):
    kwargs, ref, kinks = CASES[name]
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        if name == "glu" and (not shape or shape[-1] % 2):
            continue
        x = away(rng, shape, kinks, dtype)
        got = _fn(name)(fabric.from_numpy(x.copy()), **kwargs)
        exp = ref(x.astype(np.float64))
        assert got.dtype == fabric.from_numpy(x).dtype
        assert tuple(got.shape) == np.shape(exp)
        np.testing.assert_allclose(got.numpy(), exp, rtol=1e-6 if dtype == np.float64 else 2e-6,
                                   atol=1e-12 if dtype == np.float64 else 1e-6, err_msg=f"{name} {shape}")


def test_forward_noncontiguous():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6))
    t = fabric.from_numpy(x.copy()).t()
    for name in ("elu", "gelu", "softmax", "log_softmax", "silu", "hardswish"):
        kwargs, ref, _ = CASES[name]
        np.testing.assert_allclose(_fn(name)(t, **kwargs).numpy(), ref(x.T), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    kwargs, _, kinks = CASES[name]
    x = fabric.from_numpy(away(np.random.default_rng(2), (2, 4), kinks)).requires_grad_()
    assert fabric.autograd.gradcheck(lambda t: _fn(name)(t, **kwargs), (x,))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradgradcheck(name):
    kwargs, _, kinks = CASES[name]
    x = fabric.from_numpy(away(np.random.default_rng(3), (2, 4), kinks)).requires_grad_()
    assert fabric.autograd.gradgradcheck(lambda t: _fn(name)(t, **kwargs), (x,))


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_and_differentiable_backward_agree(name):
    """Plain backward (fused array gradients) equals the create_graph path
    (Tensor-op gradients)."""
    kwargs, _, kinks = CASES[name]
    rng = np.random.default_rng(4)
    x = fabric.from_numpy(away(rng, (3, 6), kinks)).requires_grad_()
    y = _fn(name)(x, **kwargs)
    g = fabric.from_numpy(rng.standard_normal(tuple(y.shape)))
    fast, = fabric.autograd.grad(y, x, g, retain_graph=True)
    graph, = fabric.autograd.grad(y, x, g, create_graph=True)
    np.testing.assert_allclose(fast.numpy(), graph.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_prelu_gradcheck_and_shapes():
    rng = np.random.default_rng(5)
    x = fabric.from_numpy(away(rng, (2, 3, 2), (0,))).requires_grad_()
    for w in (fabric.tensor([0.3], dtype=fabric.float64), fabric.tensor([0.1, -0.2, 0.5], dtype=fabric.float64),
              fabric.tensor(0.25, dtype=fabric.float64)):
        w.requires_grad_()
        assert fabric.autograd.gradcheck(F.prelu, (x, w))
        assert fabric.autograd.gradgradcheck(F.prelu, (x, w))
    y = F.prelu(fabric.tensor([[-2.0, 1.0], [3.0, -4.0]]), fabric.tensor([0.5, 0.25]))
    np.testing.assert_allclose(y.numpy(), [[-1.0, 1.0], [3.0, -1.0]])
    assert F.prelu(fabric.tensor(-2.0), fabric.tensor([0.5])).shape == ()
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(fabric.ones(2, 3), fabric.ones(2))
    with pytest.raises(RuntimeError, match="scalar or 1D"):
        F.prelu(fabric.ones(2, 3), fabric.ones(1, 3))
    with pytest.raises(RuntimeError, match="Type promoting not supported"):
        F.prelu(fabric.ones(2, 3, dtype=fabric.float64), fabric.ones(3))


def test_rrelu_training_and_eval():
    x = fabric.tensor([[-1.0, 2.0, -3.0, 0.0], [4.0, -0.5, -2.0, 1.0]])
    y = F.rrelu(x, 0.1, 0.3, training=False)
    np.testing.assert_allclose(y.numpy(), np.where(x.numpy() > 0, x.numpy(), 0.2 * x.numpy()), rtol=1e-6)
    fabric.manual_seed(0)
    a = F.rrelu(x, 0.1, 0.3, training=True)
    fabric.manual_seed(0)
    b = F.rrelu(x, 0.1, 0.3, training=True)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    xs, ys = x.numpy(), a.numpy()
    pos = xs > 0
    np.testing.assert_array_equal(ys[pos], xs[pos])
    slopes = ys[xs < 0] / xs[xs < 0]
    assert ((slopes >= 0.1) & (slopes <= 0.3)).all() and len(set(slopes.tolist())) > 1
    # the gradient is the sampled slope
    t = x.clone().requires_grad_()
    fabric.manual_seed(0)
    F.rrelu(t, 0.1, 0.3, training=True).sum().backward()
    np.testing.assert_allclose(t.grad.numpy()[xs < 0], slopes, rtol=1e-6)
    np.testing.assert_array_equal(t.grad.numpy()[pos], 1.0)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace(name):
    kwargs, _, kinks = CASES[name]
    if name == "rrelu":
        kwargs = dict(kwargs, training=False)
    rng = np.random.default_rng(6)
    data = away(rng, (3, 4), kinks)
    expected = _fn(name)(fabric.from_numpy(data.copy()), **kwargs)
    x = fabric.from_numpy(data.copy())
    v0 = x._version
    r = _fn(name)(x, inplace=True, **kwargs)
    assert r is x and x._version > v0
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    # the *_ functions
    if hasattr(F, name + "_"):
        x2 = fabric.from_numpy(data.copy())
        assert getattr(F, name + "_")(x2, **kwargs) is x2
        np.testing.assert_array_equal(x2.numpy(), expected.numpy())
    # on a non-leaf: same gradient as out of place, differentiable again
    leaf = fabric.from_numpy(data.copy()).requires_grad_()
    out = _fn(name)(leaf * 1.0, inplace=True, **kwargs)
    g = fabric.from_numpy(rng.standard_normal((3, 4)))
    gi, = fabric.autograd.grad(out, leaf, g, create_graph=True)
    leaf2 = fabric.from_numpy(data.copy()).requires_grad_()
    go, = fabric.autograd.grad(_fn(name)(leaf2, **kwargs), leaf2, g)
    np.testing.assert_allclose(gi.detach().numpy(), go.numpy(), rtol=1e-12, atol=1e-14)
    # in place on a leaf that requires grad is an error (and changes nothing)
    leaf3 = fabric.from_numpy(data.copy()).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        _fn(name)(leaf3, inplace=True, **kwargs)
    np.testing.assert_array_equal(leaf3.detach().numpy(), data)
    with fabric.no_grad():
        _fn(name)(leaf3, inplace=True, **kwargs)
    np.testing.assert_array_equal(leaf3.detach().numpy(), expected.numpy())


def test_inplace_through_view_writes_base():
    base = fabric.tensor([[-1.0, 2.0], [3.0, -4.0]])
    F.relu(base[0], inplace=True)
    np.testing.assert_array_equal(base.numpy(), [[0.0, 2.0], [3.0, -4.0]])


def test_integer_inputs():
    x = fabric.tensor([-2, 0, 3])
    assert F.relu(x).tolist() == [0, 0, 3] and F.relu(x).dtype == fabric.int64
    assert F.relu6(fabric.tensor([-2, 3, 9])).tolist() == [0, 3, 6]
    assert F.hardtanh(x).tolist() == [-1, 0, 1]
    assert F.threshold(x, 1, 5).tolist() == [5, 5, 3]
    for name, kernel in [("elu", "elu_cpu"), ("selu", "elu_cpu"), ("celu", "elu_cpu"),
                         ("leaky_relu", "leaky_relu_cpu"), ("gelu", "GeluKernelImpl"), ("silu", "silu_cpu"),
                         ("mish", "mish_cpu"), ("hardswish", "hardswish_cpu"), ("hardsigmoid", "hardsigmoid_cpu"),
                         ("softplus", "softplus_cpu"), ("logsigmoid", "log_sigmoid_cpu"),
                         ("hardshrink", "hardshrink_cpu")]:
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Long\''):
            getattr(F, name)(x)
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        F.softmax(x, 0)
    with pytest.raises(NotImplementedError, match="log_softmax_lastdim_kernel_impl"):
        F.log_softmax(x, 0)
    # dtype= casts first
    assert F.softmax(x, 0, dtype=fabric.float64).dtype == fabric.float64


def test_errors():
    x = fabric.randn(3, 4)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="foo")
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 0 is size 3"):
        F.glu(x, 0)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(fabric.tensor(1.0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(x, 2)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.relu([1.0, 2.0])
    with pytest.raises(AssertionError, match="must be greater than min_val"):
        fabric.nn.Hardtanh(1.0, 1.0)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        fabric.nn.Softmax2d()(x)


@pytest.mark.parametrize("ndim,dim", [(0, 0), (1, 0), (2, 1), (3, 0), (4, 1)])
def test_implicit_softmax_dim(ndim, dim):
    x = fabric.randn(*([3] * ndim))
    for fn in (F.softmax, F.log_softmax, F.softmin):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            y = fn(x)
        np.testing.assert_allclose(y.numpy(), fn(x, dim).numpy())
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        fabric.nn.Softmax()(x)


def test_softmax_top_level_and_methods():
    x = fabric.randn(2, 3)
    np.testing.assert_array_equal(fabric.softmax(x, 1).numpy(), F.softmax(x, 1).numpy())
    np.testing.assert_array_equal(x.softmax(1).numpy(), F.softmax(x, 1).numpy())
    np.testing.assert_array_equal(x.log_softmax(dim=0).numpy(), F.log_softmax(x, 0).numpy())
    y = fabric.log_softmax(x, -1, dtype=fabric.float64)
    assert y.dtype == fabric.float64
    # a dtype cast stays differentiable; the gradient comes back in the input's dtype
    t = x.clone().requires_grad_()
    fabric.softmax(t, 1, dtype=fabric.float64)[:, 0].sum().backward()
    assert t.grad.dtype == fabric.float32
    # 0-d input: softmax is 1, log_softmax 0
    assert fabric.softmax(fabric.tensor(3.0), 0).item() == 1.0
    assert fabric.log_softmax(fabric.tensor(3.0), -1).item() == 0.0
    assert fabric.softmax(fabric.empty(0, 3), 1).shape == (0, 3)


def test_softmax_grad_fn_names():
    x = fabric.randn(2, 3, requires_grad=True)
    assert type(F.softmax(x, 1).grad_fn).__name__ == "SoftmaxBackward0"
    assert type(F.log_softmax(x, 1).grad_fn).__name__ == "LogSoftmaxBackward0"
    assert type(F.gelu(x).grad_fn).__name__ == "GeluBackward0"
    assert type(F.elu(x).grad_fn).__name__ == "EluBackward0"


def test_gumbel_softmax():
    x = fabric.randn(4, 5, dtype=fabric.float64)
    fabric.manual_seed(1)
    soft = F.gumbel_softmax(x, tau=0.5, dim=1)
    np.testing.assert_allclose(soft.numpy().sum(1), 1.0)
    fabric.manual_seed(1)
    t = x.clone().requires_grad_()
    hard = F.gumbel_softmax(t, tau=0.5, hard=True, dim=1)
    h = hard.detach().numpy()
    assert set(np.unique(h).tolist()) <= {0.0, 1.0} and (h.sum(1) == 1).all()
    np.testing.assert_array_equal(h.argmax(1), soft.numpy().argmax(1))  # same draw under the same seed
    w = fabric.randn(4, 5, dtype=fabric.float64)
    (hard * w).sum().backward()   # straight-through: the soft sample's gradient
    t2 = x.clone().requires_grad_()
    fabric.manual_seed(1)
    (F.gumbel_softmax(t2, tau=0.5, dim=1) * w).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), t2.grad.numpy(), rtol=1e-12)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(x, eps=1e-3)


def test_prelu_module():
    m = fabric.nn.PReLU(3, init=0.1)
    assert list(m.state_dict()) == ["weight"] and m.weight.shape == (3,)
    np.testing.assert_allclose(m.weight.detach().numpy(), 0.1)
    assert repr(m) == "PReLU(num_parameters=3)"


# --- PyTorch parity -------------------------------------------------------------------------

def _torch_fn(name):
    import torch.nn.functional as TF

    return getattr(TF, "gelu" if name == "gelu_tanh" else name)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch(name, dtype):
    import torch

    kwargs, _, kinks = CASES[name]
    rng = np.random.default_rng(7)
    for shape in [(3, 4), (2, 3, 2), ()] if name != "glu" else [(3, 4), (2, 3, 2)]:
        data = away(rng, shape, kinks, dtype, -6, 6)
        x = fabric.from_numpy(data.copy()).requires_grad_()
        t = torch.from_numpy(data.copy()).requires_grad_()
        y, ty = _fn(name)(x, **kwargs), _torch_fn(name)(t, **kwargs)
        tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-13}
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol, err_msg=name)
        assert str(y.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1]
        g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
        y.backward(fabric.from_numpy(g.copy()))
        ty.backward(torch.from_numpy(g.copy()))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **tol, err_msg=f"grad {name}")


@pytest.mark.torch
@pytest.mark.parametrize("name", ["elu", "selu", "celu", "gelu", "gelu_tanh", "silu", "mish", "softplus",
                                  "logsigmoid", "softmax", "log_softmax", "softmin", "glu", "tanhshrink",
                                  "softsign", "hardswish"])
def test_double_backward_matches_torch(name):
    import torch

    kwargs, _, kinks = CASES[name]
    rng = np.random.default_rng(8)
    data = away(rng, (3, 4), kinks)
    g, v = rng.standard_normal((3, 4 if name != "glu" else 2)), rng.standard_normal((3, 4))
    x = fabric.from_numpy(data.copy()).requires_grad_()
    gx, = fabric.autograd.grad(_fn(name)(x, **kwargs), x, fabric.from_numpy(g), create_graph=True)
    h, = fabric.autograd.grad((gx * fabric.from_numpy(v)).sum(), x)
    t = torch.from_numpy(data.copy()).requires_grad_()
    tg, = torch.autograd.grad(_torch_fn(name)(t, **kwargs), t, torch.from_numpy(g), create_graph=True)
    th, = torch.autograd.grad((tg * torch.from_numpy(v)).sum(), t)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rrelu_stream_matches_torch(dtype):
    import torch
    import torch.nn.functional as TF

    data = np.random.default_rng(9).standard_normal((20, 30)).astype(dtype)
    for seed in (0, 1):
        fabric.manual_seed(seed)
        torch.manual_seed(seed)
        x = fabric.from_numpy(data.copy()).requires_grad_()
        t = torch.from_numpy(data.copy()).requires_grad_()
        y, ty = F.rrelu(x, 0.05, 0.4, training=True), TF.rrelu(t, 0.05, 0.4, training=True)
        np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.torch
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_matches_torch(name):
    import torch

    kwargs, _, kinks = CASES[name]
    if name == "rrelu":
        kwargs = dict(kwargs, training=False)
    data = away(np.random.default_rng(10), (3, 4), kinks)
    x = fabric.from_numpy(data.copy()).requires_grad_()
    t = torch.from_numpy(data.copy()).requires_grad_()
    y = _fn(name)(x * 2.0, inplace=True, **kwargs)
    ty = _torch_fn(name)(t * 2.0, inplace=True, **kwargs)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-14)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.torch
def test_prelu_matches_torch():
    import torch
    import torch.nn.functional as TF

    rng = np.random.default_rng(11)
    for shape, wn in [((4, 3, 5), 3), ((4, 3), 1), ((5,), 1), ((), 1), ((2, 4, 2, 2), 4)]:
        data, w = rng.standard_normal(shape), rng.standard_normal(wn)
        x, wf = fabric.from_numpy(data.copy()).requires_grad_(), fabric.from_numpy(w.copy()).requires_grad_()
        t, wt = torch.from_numpy(data.copy()).requires_grad_(), torch.from_numpy(w.copy()).requires_grad_()
        y, ty = F.prelu(x, wf), TF.prelu(t, wt)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(wf.grad.numpy(), wt.grad.numpy(), rtol=1e-12)


@pytest.mark.torch
def test_module_constants_match_torch():
    import torch

    names = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Hardsigmoid", "SiLU", "Mish", "Hardswish", "ELU",
             "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "Softplus", "Softshrink", "PReLU", "Softmin",
             "Softmax", "LogSoftmax"]
    for n in names:
        assert list(getattr(fabric.nn, n).__constants__) == list(getattr(torch.nn, n).__constants__), n
    for args, n in [((0.1, 20.0, True), "Threshold"), ((True,), "ReLU"), ((0.1, 0.2, True), "RReLU"),
                    ((True,), "ReLU6"), ((True,), "SELU"), ((0.3, True), "LeakyReLU"), ((True,), "SiLU"),
                    ((2.0, True), "CELU"), ((True,), "Hardswish"), ((), "Softmax2d"), ((), "Tanh")]:
        assert repr(getattr(fabric.nn, n)(*args)) == repr(getattr(torch.nn, n)(*args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(fabric.nn.Hardtanh(min_value=-2.0)) == repr(torch.nn.Hardtanh(min_value=-2.0))


@pytest.mark.torch
@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_matches_torch(hard):
    import torch
    import torch.nn.functional as TF

    data = np.random.default_rng(12).standard_normal((4, 5))
    fabric.manual_seed(3)
    torch.manual_seed(3)
    x = fabric.from_numpy(data.copy()).requires_grad_()
    t = torch.from_numpy(data.copy()).requires_grad_()
    y, ty = F.gumbel_softmax(x, tau=0.5, hard=hard, dim=0), TF.gumbel_softmax(t, tau=0.5, hard=hard, dim=0)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-14)
    w = np.random.default_rng(13).standard_normal((4, 5))
    (y * fabric.from_numpy(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["gelu", "silu"])
def test_float32_fast_path_on_transposed_input(name):
    """The float32 chunked NumPy passes (>= 2048 elements) on a non-contiguous input: their
    output buffer is C-ordered (bug: ``empty_like`` of a transposed array was F-ordered, the
    chunks wrote into a reshape copy and the result was uninitialised memory); forward and
    backward equal those of the contiguous copy."""
    base = np.random.default_rng(0).standard_normal((300, 40)).astype(np.float32)
    fn = getattr(F, name)
    x = fabric.tensor(base, requires_grad=True)
    xc = fabric.tensor(np.ascontiguousarray(base.T), requires_grad=True)
    y, yc = fn(x.T), fn(xc)
    np.testing.assert_allclose(y.detach().numpy(), yc.detach().numpy(), rtol=1e-6, atol=1e-7)
    g = np.random.default_rng(1).standard_normal((40, 300)).astype(np.float32)
    y.backward(fabric.tensor(g))
    yc.backward(fabric.tensor(g))
    np.testing.assert_allclose(x.grad.numpy().T, xc.grad.numpy(), rtol=1e-6, atol=1e-7)
