"""fabric.distributions: numbers against PyTorch (log_prob, entropy, moments, cdf/icdf, KL),
identical sample streams where fabric draws PyTorch's samplers, statistical checks of
fabric's own samplers (Gamma, Beta, Dirichlet, Binomial), gradients, validation errors."""
from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import fabric
import fabric.distributions as D
from fabric.autograd import gradcheck

torch_mark = pytest.mark.torch


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, rtol=1e-5, atol=1e-6):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _same(fn, f, t, **tol):
    """fn(f) equals fn(t), or both raise NotImplementedError."""
    try:
        expected = fn(t)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            fn(f)
        return
    _close(fn(f), expected, **tol)


def _params(seed=0):
    """Float64 parameters shared by fabric and torch builders."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(2, 3, 3))
    cov = A @ A.transpose(0, 2, 1) + 3 * np.eye(3)
    return {
        "loc": rng.normal(size=(2, 3)), "scale": rng.uniform(0.5, 2.0, (2, 3)),
        "low": rng.uniform(-2, 0, (2, 3)), "probs": rng.uniform(0.1, 0.9, (2, 3)),
        "logits": rng.normal(size=(2, 3, 4)), "conc": rng.uniform(0.5, 3.0, (2, 3)),
        "rate": rng.uniform(0.5, 3.0, (2, 3)), "cov": cov, "mvloc": rng.normal(size=(2, 3)),
        "dir": rng.uniform(0.5, 3.0, (2, 4)), "count": rng.integers(1, 8, (2, 3)).astype(np.float64),
    }


# (name, builder(lib, p), values(p)) -- ``lib`` is fabric or torch; values are float64 arrays.
CASES = [
    ("Normal", lambda L, p, T: L.distributions.Normal(T(p["loc"]), T(p["scale"])),
     lambda p: p["loc"] + 0.3),
    ("LogNormal", lambda L, p, T: L.distributions.LogNormal(T(p["loc"]), T(p["scale"])),
     lambda p: p["rate"]),
    ("Uniform", lambda L, p, T: L.distributions.Uniform(T(p["low"]), T(p["low"] + p["scale"])),
     lambda p: p["low"] + 0.4 * p["scale"]),
    ("Exponential", lambda L, p, T: L.distributions.Exponential(T(p["rate"])), lambda p: p["conc"]),
    ("Laplace", lambda L, p, T: L.distributions.Laplace(T(p["loc"]), T(p["scale"])), lambda p: p["rate"] - 1),
    ("Gamma", lambda L, p, T: L.distributions.Gamma(T(p["conc"]), T(p["rate"])), lambda p: p["scale"]),
    ("Beta", lambda L, p, T: L.distributions.Beta(T(p["conc"]), T(p["rate"])), lambda p: p["probs"]),
    ("Dirichlet", lambda L, p, T: L.distributions.Dirichlet(T(p["dir"])),
     lambda p: p["dir"] / p["dir"].sum(-1, keepdims=True)),
    ("Bernoulli_probs", lambda L, p, T: L.distributions.Bernoulli(probs=T(p["probs"])),
     lambda p: (p["probs"] > 0.5).astype(np.float64)),
    ("Bernoulli_logits", lambda L, p, T: L.distributions.Bernoulli(logits=T(p["loc"])),
     lambda p: (p["probs"] > 0.5).astype(np.float64)),
    ("Categorical_probs", lambda L, p, T: L.distributions.Categorical(probs=T(np.exp(p["logits"]))),
     lambda p: np.array([[0, 1, 3], [2, 2, 0]])),
    ("Categorical_logits", lambda L, p, T: L.distributions.Categorical(logits=T(p["logits"])),
     lambda p: np.array([[0, 1, 3], [2, 2, 0]])),
    ("OneHotCategorical", lambda L, p, T: L.distributions.OneHotCategorical(logits=T(p["logits"])),
     lambda p: np.eye(4)[np.array([[0, 1, 3], [2, 2, 0]])]),
    ("Poisson", lambda L, p, T: L.distributions.Poisson(T(p["rate"])), lambda p: np.floor(p["count"])),
    ("Binomial_probs", lambda L, p, T: L.distributions.Binomial(T(p["count"]), probs=T(p["probs"])),
     lambda p: np.floor(p["count"] * p["probs"])),
    ("Binomial_logits", lambda L, p, T: L.distributions.Binomial(T(p["count"]), logits=T(p["loc"])),
     lambda p: np.floor(p["count"] * p["probs"])),
    ("MVN_cov", lambda L, p, T: L.distributions.MultivariateNormal(T(p["mvloc"]), covariance_matrix=T(p["cov"])),
     lambda p: p["mvloc"] + 0.5),
    ("MVN_tril", lambda L, p, T: L.distributions.MultivariateNormal(
        T(p["mvloc"]), scale_tril=T(np.linalg.cholesky(p["cov"]))), lambda p: p["mvloc"] - 0.5),
    ("MVN_prec", lambda L, p, T: L.distributions.MultivariateNormal(
        T(p["mvloc"][0]), precision_matrix=T(np.linalg.inv(p["cov"]))), lambda p: p["mvloc"] * 2),
    ("Independent", lambda L, p, T: L.distributions.Independent(
        L.distributions.Normal(T(p["loc"]), T(p["scale"])), 1), lambda p: p["loc"] * 0.5),
]

_STATS = ["mean", "variance", "stddev", "mode"]
_NO_MODE = {"Uniform", "Categorical_probs", "Categorical_logits", "Independent"}


def _fab(a, dtype=fabric.float64):
    return fabric.tensor(np.asarray(a), dtype=dtype if np.asarray(a).dtype.kind == "f" else None)


@torch_mark
@pytest.mark.parametrize("name,build,values", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matches_torch(name, build, values, dtype):
    import torch

    p = _params()
    fd, td = getattr(fabric, dtype), getattr(torch, dtype)
    f = build(fabric, p, lambda a: _fab(a, fd))
    t = build(torch, p, lambda a: torch.tensor(np.asarray(a), dtype=td if np.asarray(a).dtype.kind == "f" else None))
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 2e-5}
    assert tuple(f.batch_shape) == tuple(t.batch_shape) and tuple(f.event_shape) == tuple(t.event_shape)
    v = values(p)
    fv, tv = _fab(v, fd), torch.tensor(v, dtype=td if v.dtype.kind == "f" else None)
    if "MVN" in name:   # triangular solves: BLAS-level differences
        tol = {"rtol": 1e-9, "atol": 1e-9} if dtype == "float64" else {"rtol": 1e-4, "atol": 1e-4}
    _close(f.log_prob(fv), t.log_prob(tv), **tol)
    _same(lambda d: d.entropy(), f, t, **tol)
    for stat in _STATS:
        if stat == "mode" and name in _NO_MODE:
            continue
        _same(lambda d, stat=stat: getattr(d, stat), f, t, **tol)
    for method in ("cdf", "icdf"):
        try:
            expected = getattr(t, method)(tv if method == "cdf" else torch.full_like(tv, 0.3))
        except NotImplementedError:
            continue
        got = getattr(f, method)(fv if method == "cdf" else fabric.full_like(fv, 0.3))
        _close(got, expected, **tol)
    # expand: same numbers on a bigger batch
    fe, te = f.expand((5,) + tuple(f.batch_shape)), t.expand((5,) + tuple(t.batch_shape))
    assert tuple(fe.batch_shape) == tuple(te.batch_shape)
    _close(fe.log_prob(fv), te.log_prob(tv), **tol)
    if name in ("Categorical_probs", "Categorical_logits", "Bernoulli_probs", "Bernoulli_logits"):
        _close(f.probs, t.probs, **tol)
        _close(f.logits, t.logits, **tol)


@torch_mark
@pytest.mark.parametrize("name,build", [
    ("Normal", lambda L, T: L.distributions.Normal(T([[0.0, 1.0, -2.0]]), T([[1.0, 0.5, 2.0]]))),
    ("Normal_scalar", lambda L, T: L.distributions.Normal(0.5, 2.0)),
    ("LogNormal", lambda L, T: L.distributions.LogNormal(T([0.0, 1.0]), T([1.0, 0.5]))),
    ("Uniform", lambda L, T: L.distributions.Uniform(T([0.0, -1.0, 2.0]), T([1.0, 3.0, 2.5]))),
    ("Bernoulli", lambda L, T: L.distributions.Bernoulli(probs=T([0.1, 0.5, 0.9]))),
    ("Bernoulli_logits", lambda L, T: L.distributions.Bernoulli(logits=T([-1.0, 0.0, 2.0]))),
    ("Categorical", lambda L, T: L.distributions.Categorical(probs=T([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]))),
    ("OneHotCategorical", lambda L, T: L.distributions.OneHotCategorical(logits=T([0.1, 0.2, 0.7, -1.0]))),
    ("Exponential", lambda L, T: L.distributions.Exponential(T([0.5, 1.0, 3.0]))),
    ("Laplace", lambda L, T: L.distributions.Laplace(T([0.0, 1.0]), T([1.0, 0.2]))),
    ("Poisson", lambda L, T: L.distributions.Poisson(T([0.5, 4.0, 30.0]))),
    ("MVN", lambda L, T: L.distributions.MultivariateNormal(T([1.0, -1.0]), T([[2.0, 0.5], [0.5, 1.0]]))),
    ("Independent", lambda L, T: L.distributions.Independent(L.distributions.Normal(T([0.0, 1.0]), T([1., 2.])), 1)),
], ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (7,), (5, 4)])
def test_sample_streams_match_torch(name, build, dtype, shape):
    import torch

    fd, td = getattr(fabric, dtype), getattr(torch, dtype)
    f = build(fabric, lambda a: fabric.tensor(a, dtype=fd))
    t = build(torch, lambda a: torch.tensor(a, dtype=td))
    methods = ["sample"] + (["rsample"] if t.has_rsample else [])
    for method in methods:
        fabric.manual_seed(3)
        torch.manual_seed(3)
        fs, ts = getattr(f, method)(shape), getattr(t, method)(shape)
        assert tuple(fs.shape) == tuple(ts.shape) and str(fs.dtype)[7:] == str(ts.dtype)[6:]
        if name == "MVN":   # matmul rounding
            _close(fs, ts, rtol=1e-5, atol=1e-5)
        elif name in ("LogNormal", "Laplace"):
            # identical draws; fabric's exp/log1p may differ from PyTorch's vectorised ones by an ulp
            _close(fs, ts, rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)
        else:
            np.testing.assert_array_equal(_np(fs), ts.numpy())


def _moments(x, axis=0):
    x = _np(x).astype(np.float64)
    return x.mean(axis), x.var(axis)


@pytest.mark.parametrize("conc,rate", [(0.3, 1.0), (1.0, 2.0), (4.5, 0.5), (50.0, 3.0)])
def test_gamma_sampler_moments(conc, rate):
    fabric.manual_seed(0)
    d = D.Gamma(fabric.tensor([conc], dtype=fabric.float64), fabric.tensor([rate], dtype=fabric.float64))
    x = d.sample((20000,))
    assert x.shape == (20000, 1) and x.dtype == fabric.float64 and bool((x > 0).all())
    m, v = _moments(x)
    n = 20000
    assert abs(m[0] - conc / rate) < 5 * np.sqrt(conc / rate ** 2 / n)
    assert abs(v[0] / (conc / rate ** 2) - 1) < 0.08
    fabric.manual_seed(0)
    np.testing.assert_array_equal(_np(d.sample((20000,))), _np(x))   # reproducible under manual_seed


def test_beta_dirichlet_binomial_sampler_moments():
    fabric.manual_seed(1)
    n = 20000
    b = D.Beta(fabric.tensor([2.0, 0.5]), fabric.tensor([3.0, 0.5]))
    x = b.sample((n,))
    assert x.shape == (n, 2) and x.dtype == fabric.float32 and bool(((x >= 0) & (x <= 1)).all())
    m, v = _moments(x)
    np.testing.assert_allclose(m, _np(b.mean), atol=0.01)
    np.testing.assert_allclose(v, _np(b.variance), rtol=0.06)
    alpha = fabric.tensor([[0.5, 1.0, 4.0]], dtype=fabric.float64)
    dd = D.Dirichlet(alpha)
    x = dd.sample((n,))
    assert x.shape == (n, 1, 3)
    np.testing.assert_allclose(_np(x.sum(-1)), 1.0, rtol=1e-12)
    m, v = _moments(x)
    np.testing.assert_allclose(m, _np(dd.mean), atol=0.01)
    np.testing.assert_allclose(v, _np(dd.variance), rtol=0.06)
    bi = D.Binomial(fabric.tensor([5.0, 40.0]), probs=fabric.tensor([0.3, 0.8]))
    x = bi.sample((n,))
    assert x.shape == (n, 2) and x.dtype == fabric.float32
    assert bool((x == x.floor()).all()) and bool((x <= fabric.tensor([5.0, 40.0])).all())
    m, v = _moments(x)
    np.testing.assert_allclose(m, _np(bi.mean), rtol=0.01)
    np.testing.assert_allclose(v, _np(bi.variance), rtol=0.06)


def test_poisson_and_categorical_sample_frequencies():
    fabric.manual_seed(2)
    x = D.Poisson(fabric.tensor([0.7, 12.0])).sample((8000,))
    m, v = _moments(x)
    np.testing.assert_allclose(m, [0.7, 12.0], rtol=0.03)
    np.testing.assert_allclose(v, [0.7, 12.0], rtol=0.08)
    probs = fabric.tensor([0.1, 0.2, 0.7])
    c = D.Categorical(probs=probs.expand(2, 2, 3)).sample((4000,))
    assert c.shape == (4000, 2, 2) and c.dtype == fabric.int64
    freq = np.bincount(_np(c).ravel(), minlength=3) / c.numel()
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.01)


def _gc(fn, *args):
    assert gradcheck(fn, args, eps=1e-6, atol=1e-5, rtol=1e-4)


def test_gradcheck_log_prob_entropy():
    f64 = {"dtype": fabric.float64}
    loc = fabric.tensor([0.3, -1.0], requires_grad=True, **f64)
    scale = fabric.tensor([0.7, 1.5], requires_grad=True, **f64)
    x = fabric.tensor([0.1, 0.4], **f64)
    _gc(lambda m, s: D.Normal(m, s).log_prob(x), loc, scale)
    _gc(lambda m, s: D.Normal(m, s).entropy(), loc, scale)
    _gc(lambda m, s: D.Normal(m, s).cdf(x), loc, scale)
    _gc(lambda m, s: D.LogNormal(m, s).log_prob(x + 1), loc, scale)
    _gc(lambda m, s: D.Laplace(m, s).log_prob(x), loc, scale)
    _gc(lambda s: D.Exponential(s).log_prob(x), scale)
    rate = fabric.tensor([1.4, 0.6], requires_grad=True, **f64)
    _gc(lambda a, b: D.Gamma(a, b).log_prob(x + 0.5), scale, rate)
    _gc(lambda a, b: D.Gamma(a, b).entropy(), scale, rate)
    _gc(lambda a, b: D.Beta(a, b).log_prob(x + 0.2), scale, rate)
    _gc(lambda a, b: D.Beta(a, b).entropy(), scale, rate)
    _gc(lambda a, b: D.Uniform(a - 2, b + 1).log_prob(x), loc, rate)
    _gc(lambda a: D.Dirichlet(a).log_prob(fabric.tensor([0.2, 0.8], **f64)), scale)
    _gc(lambda r: D.Poisson(r).log_prob(fabric.tensor([0.0, 3.0], **f64)), scale)
    _gc(lambda lg: D.Bernoulli(logits=lg).log_prob(fabric.tensor([0.0, 1.0], **f64)), loc)
    _gc(lambda lg: D.Bernoulli(logits=lg).entropy(), loc)
    _gc(lambda lg: D.Binomial(fabric.tensor([3.0, 5.0], **f64), logits=lg).log_prob(
        fabric.tensor([1.0, 4.0], **f64)), loc)
    logits = fabric.tensor([[0.2, -0.3, 1.0], [0.0, 0.5, -1.0]], requires_grad=True, **f64)
    _gc(lambda lg: D.Categorical(logits=lg).log_prob(fabric.tensor([2, 0])), logits)
    _gc(lambda lg: D.Categorical(logits=lg).entropy(), logits)
    _gc(lambda lg: D.OneHotCategorical(logits=lg).log_prob(fabric.tensor([[0., 1., 0.], [1., 0., 0.]], **f64)),
        logits)
    A = fabric.tensor([[2.0, 0.3], [0.3, 1.0]], requires_grad=True, **f64)
    m2 = fabric.tensor([0.5, -0.5], requires_grad=True, **f64)
    y = fabric.tensor([[0.1, 0.2], [1.0, -1.0], [0.0, 0.3]], **f64)
    _gc(lambda m, c: D.MultivariateNormal(m, covariance_matrix=(c + c.mT) / 2).log_prob(y), m2, A)
    _gc(lambda m, c: D.MultivariateNormal(m, scale_tril=c.tril()).log_prob(y), m2, A)
    _gc(lambda c: D.MultivariateNormal(m2, precision_matrix=(c + c.mT) / 2).entropy(), A)


def test_rsample_gradients():
    loc = fabric.tensor([0.5, 1.0], requires_grad=True)
    scale = fabric.tensor([2.0, 3.0], requires_grad=True)
    fabric.manual_seed(0)
    x = D.Normal(loc, scale).rsample((4,))
    x.sum().backward()
    fabric.manual_seed(0)
    eps = fabric.randn(4, 2)
    _close(loc.grad, [4.0, 4.0])
    _close(scale.grad, eps.sum(0), rtol=1e-6)
    assert D.Normal(loc, scale).sample().grad_fn is None
    for d in (D.Uniform(loc - 1, loc), D.Exponential(scale), D.Laplace(loc, scale), D.LogNormal(loc, scale),
              D.MultivariateNormal(loc, scale_tril=fabric.diag(scale))):
        assert d.rsample((3,)).requires_grad
    with pytest.raises(NotImplementedError, match="rsample"):
        D.Gamma(scale, 1.0).rsample()
    assert not D.Gamma(2.0, 1.0).has_rsample and D.Normal(0.0, 1.0).has_rsample


@torch_mark
def test_kl_matches_torch():
    import torch

    p = _params()

    def both(build):
        return build(fabric, lambda a: _fab(a)), build(torch, lambda a: torch.tensor(np.asarray(a)))

    pairs = [
        lambda L, T: (L.distributions.Normal(T(p["loc"]), T(p["scale"])), L.distributions.Normal(T(p["low"]), 1.5)),
        lambda L, T: (L.distributions.Categorical(logits=T(p["logits"])),
                      L.distributions.Categorical(probs=T(np.r_[0.0, 1, 2, 3] * np.ones((2, 3, 4))))),
        lambda L, T: (L.distributions.Bernoulli(probs=T(p["probs"])),
                      L.distributions.Bernoulli(probs=T(np.r_[0.0, 0.3, 1.0] * np.ones((2, 3))))),
        lambda L, T: (L.distributions.Bernoulli(probs=T(np.r_[0.0, 0.3, 1.0])),
                      L.distributions.Bernoulli(logits=T(p["loc"][0]))),
        lambda L, T: (L.distributions.MultivariateNormal(T(p["mvloc"]), T(p["cov"])),
                      L.distributions.MultivariateNormal(T(p["mvloc"][0] * 0), scale_tril=T(np.eye(3) * 2))),
        lambda L, T: (L.distributions.Uniform(T(p["low"]), T(p["low"] + 1)),
                      L.distributions.Uniform(T(p["low"] - 0.5 + p["probs"]), T(p["low"] + 3))),
        lambda L, T: (L.distributions.Independent(L.distributions.Normal(T(p["loc"]), T(p["scale"])), 1),
                      L.distributions.Independent(L.distributions.Normal(T(p["low"]), T(p["rate"])), 1)),
        lambda L, T: (L.distributions.Gamma(T(p["conc"]), T(p["rate"])), L.distributions.Gamma(1.5, T(p["scale"]))),
        lambda L, T: (L.distributions.Beta(T(p["conc"]), T(p["rate"])), L.distributions.Beta(T(p["rate"]), 2.0)),
        lambda L, T: (L.distributions.Dirichlet(T(p["dir"])), L.distributions.Dirichlet(T(p["dir"][::-1].copy()))),
        lambda L, T: (L.distributions.Exponential(T(p["rate"])), L.distributions.Exponential(T(p["conc"]))),
        lambda L, T: (L.distributions.Laplace(T(p["loc"]), T(p["scale"])), L.distributions.Laplace(0.0, 2.0)),
        lambda L, T: (L.distributions.Poisson(T(p["rate"])), L.distributions.Poisson(T(p["conc"]))),
        lambda L, T: (L.distributions.LogNormal(T(p["loc"]), T(p["scale"])), L.distributions.LogNormal(0.0, 2.0)),
        lambda L, T: (L.distributions.OneHotCategorical(logits=T(p["logits"])),
                      L.distributions.OneHotCategorical(logits=T(p["logits"][:, ::-1].copy()))),
        lambda L, T: (L.distributions.Binomial(T(p["count"]), probs=T(p["probs"])),
                      L.distributions.Binomial(T(p["count"]), logits=T(p["loc"]))),
    ]
    for build in pairs:
        (fp, fq), (tp, tq) = both(build)
        _close(D.kl_divergence(fp, fq), torch.distributions.kl_divergence(tp, tq), rtol=1e-9, atol=1e-9)


def test_kl_registry():
    class MyNormal(D.Normal):
        pass

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == pytest.approx(0.5)

    @D.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return fabric.tensor(42.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0))) == 42.0
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Gamma(1.0, 1.0))
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)
    loc = fabric.tensor([0.1, 0.2], dtype=fabric.float64, requires_grad=True)
    _gc(lambda m: D.kl_divergence(D.Normal(m, 1.0), D.Normal(0.0, 2.0)), loc)
    _gc(lambda m: D.kl_divergence(D.MultivariateNormal(m, fabric.eye(2, dtype=fabric.float64)),
                                  D.MultivariateNormal(m * 0, 2 * fabric.eye(2, dtype=fabric.float64))), loc)


def _errors(lib):
    dist = lib.distributions
    t = lib.tensor
    return [
        lambda: dist.Normal(0.0, -1.0),
        lambda: dist.Normal(t([0.0, 1.0]), t([1.0, -1.0])),
        lambda: dist.Normal(0.0, 1.0).log_prob(1.0),
        lambda: dist.Bernoulli(probs=1.5),
        lambda: dist.Bernoulli(),
        lambda: dist.Bernoulli(probs=0.5, logits=0.0),
        lambda: dist.Categorical(t([0.5, -0.2])),
        lambda: dist.Categorical(t(0.5)),
        lambda: dist.Uniform(1.0, 0.0),
        lambda: dist.Uniform(0.0, 1.0).log_prob(t(2.0)),
        lambda: dist.Poisson(t(1.0)).log_prob(t(0.5)),
        lambda: dist.Exponential(t([1.0])).log_prob(t([-1.0])),
        lambda: dist.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])),
        lambda: dist.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 2.0], [2.0, 1.0]])),
        lambda: dist.MultivariateNormal(t([0.0, 0.0])),
        lambda: dist.MultivariateNormal(t(0.0), t([[1.0]])),
        lambda: dist.Normal(t([0.0, 0.0, 0.0]), 1.0).log_prob(t([0.0, 0.0])),
        lambda: dist.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.0], [0.0, 1.0]])).log_prob(t([0.0, 0.0, 0.0])),
        lambda: dist.Dirichlet(t([1.0, -1.0])),
        lambda: dist.Binomial(3, t(0.5)).log_prob(t(4.0)),
        lambda: dist.Gamma(t([1.0]), t([-2.0])),
        lambda: dist.Independent(dist.Normal(0.0, 1.0), 1),
        lambda: dist.Categorical(logits=t([[0.0, 1.0]])).log_prob(t([5])),
        lambda: dist.OneHotCategorical(probs=t([0.5, 0.5])).log_prob(t([0.5, 0.5])),
    ]


@torch_mark
def test_validation_errors_match_torch():
    import torch

    # validation is on by default in both; torch.compile (dynamo) switches torch's off process-wide when it
    # first runs, as other tests in the same process may have done
    saved = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    try:
        for i, (f, tt) in enumerate(zip(_errors(fabric), _errors(torch))):
            with pytest.raises(Exception) as te:
                tt()
            with pytest.raises(Exception) as fe:
                f()
            assert fe.type is te.type, (i, fe.value, te.value)
            assert str(fe.value).replace("fabric.", "torch.") == str(te.value), i
    finally:
        torch.distributions.Distribution.set_default_validate_args(saved)


def test_validate_args_switches():
    D.Normal(0.0, -1.0, validate_args=False)   # no error
    D.Distribution.set_default_validate_args(False)
    try:
        d = D.Normal(0.0, -1.0)
        assert not d._validate_args
        d.log_prob(fabric.tensor(0.0))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


@torch_mark
def test_repr_shapes_and_enumerate_support():
    import torch

    for lib in (fabric, torch):
        lib.distributions.Distribution.set_default_validate_args(True)
    cases = [
        lambda L: L.distributions.Normal(L.tensor([0.0, 1.0]), 1.0),
        lambda L: L.distributions.Normal(0.0, 1.0),
        lambda L: L.distributions.Bernoulli(logits=L.tensor([0.3])),
        lambda L: L.distributions.Categorical(probs=L.ones(3)),
        lambda L: L.distributions.Independent(L.distributions.Normal(L.zeros(2, 3), 1.0), 1),
        lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.eye(2)),
    ]
    for build in cases:
        f, t = build(fabric), build(torch)
        assert repr(f).replace("fabric.", "torch.") == repr(t)
    for build in [lambda L: L.distributions.Bernoulli(L.tensor([0.2, 0.7])),
                  lambda L: L.distributions.Categorical(logits=L.zeros(2, 3)),
                  lambda L: L.distributions.OneHotCategorical(logits=L.zeros(2, 3)),
                  lambda L: L.distributions.Binomial(4, L.tensor([0.2, 0.7]))]:
        f, t = build(fabric), build(torch)
        for expand in (True, False):
            _close(f.enumerate_support(expand), t.enumerate_support(expand).numpy())
    for name in ["real", "positive", "unit_interval", "simplex", "real_vector", "boolean", "nonnegative_integer",
                 "nonnegative", "lower_cholesky", "positive_definite", "one_hot"]:
        assert repr(getattr(D.constraints, name)) == repr(getattr(torch.distributions.constraints, name))
        assert getattr(D.constraints, name).event_dim == getattr(torch.distributions.constraints, name).event_dim
    assert repr(D.constraints.independent(D.constraints.positive, 1)) == \
        repr(torch.distributions.constraints.independent(torch.distributions.constraints.positive, 1))


def test_lazy_params_and_expand():
    d = D.Bernoulli(logits=fabric.tensor([0.0, 2.0]))
    assert "probs" not in d.__dict__
    _close(d.probs, 1 / (1 + np.exp(-np.array([0.0, 2.0]))))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample().shape == (3, 2)
    m = D.MultivariateNormal(fabric.zeros(2), scale_tril=fabric.eye(2) * 2)
    _close(m.covariance_matrix, np.eye(2) * 4)
    _close(m.precision_matrix, np.eye(2) / 4)
    assert m.expand((4,)).sample((5,)).shape == (5, 4, 2)
    b = D.Beta(2.0, 3.0)
    assert b.batch_shape == () and b.sample((3,)).shape == (3,)
    assert D.Categorical(logits=fabric.zeros(2, 3, 4)).sample((5,)).shape == (5, 2, 3)


@pytest.mark.parametrize("module", ["fabric.distributions", "fabric.distributions.distribution",
                                    "fabric.distributions.constraints", "fabric.distributions.utils",
                                    "fabric.distributions.normal", "fabric.distributions.uniform",
                                    "fabric.distributions.discrete", "fabric.distributions.gamma",
                                    "fabric.distributions.multivariate_normal", "fabric.distributions.kl"])
def test_docstring_examples(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_docs_code_runs():
    import os
    import re

    path = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "distributions.md")
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.DOTALL)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/distributions.md", "exec"), {})
