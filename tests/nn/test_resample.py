"""Padding and resampling against PyTorch: F.pad (4 modes, negative pads),
interpolate (every mode, size / scale_factor / recompute_scale_factor /
align_corners), pixel_(un)shuffle, unfold / fold, grid_sample, affine_grid;
gradcheck / gradgradcheck; errors and messages."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric.autograd import gradcheck, gradgradcheck


def _rand(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _check(name, x, *args, grad=True, exact=False, rtol=1e-10, atol=1e-12, **kwargs):
    import torch

    fx, tx = fabric.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fy = getattr(F, name)(fx, *args, **kwargs)
    ty = getattr(torch.nn.functional, name)(tx, *args, **kwargs)
    assert tuple(fy.shape) == tuple(ty.shape), (fy.shape, ty.shape)
    if exact:
        np.testing.assert_array_equal(fy.detach().numpy(), ty.detach().numpy())
    else:
        np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=atol)
    if grad:
        g = _rand(tuple(ty.shape), 1, x.dtype)
        fy.backward(fabric.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=rtol * 10, atol=atol * 10)


# --- pad ---------------------------------------------------------------------------------------

PADS = [(1, 2), (-1, 2), (0, 3), (2, -1), (2, 0, 1, 1), (1, -1, 0, 2), (1, 1, 2, 0, 1, 2), (0, 1, -1, 1, 1, 0)]


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", PADS, ids=str)
def test_pad(mode, pad):
    k = len(pad) // 2
    _check("pad", _rand((2, 3, 4, 5, 4)[:k + 2]), pad, mode=mode)
    _check("pad", _rand((3, 4, 5, 4)[:k + 1]), pad, mode=mode)


@pytest.mark.torch
def test_constant_pad_any_dims_and_dtypes():
    import torch

    _check("pad", _rand((2, 3, 4)), (1, 2, -1, 1, 1, 0), value=3.5)
    _check("pad", _rand((2, 3)), (1, 2, 0, 0), value=-1.0)
    x = np.arange(12).reshape(1, 3, 4)
    u = np.arange(48, dtype=np.uint8).reshape(1, 3, 4, 4)
    for mode in ("nearest", "nearest-exact"):
        np.testing.assert_array_equal(F.interpolate(fabric.tensor(u), size=(5, 7), mode=mode).numpy(),
                                      torch.nn.functional.interpolate(torch.tensor(u), size=(5, 7), mode=mode).numpy())
    for v in (2.7, -1):
        np.testing.assert_array_equal(F.pad(fabric.tensor(x), (1, 1), value=v).numpy(),
                                      torch.nn.functional.pad(torch.tensor(x), (1, 1), value=v).numpy())
    np.testing.assert_array_equal(F.pad(fabric.tensor(x), (1, 1), mode="reflect").numpy(),
                                  torch.nn.functional.pad(torch.tensor(x), (1, 1), mode="reflect").numpy())


# --- interpolate -------------------------------------------------------------------------------

MODES = {1: ["nearest", "nearest-exact", "linear", "area"],
         2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
         3: ["nearest", "nearest-exact", "trilinear", "area"]}


def _interp_kwargs(mode, align):
    return {} if mode in ("nearest", "nearest-exact", "area") else {"align_corners": align}


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_sizes(nd, size, dtype):
    in_sp = (7, 4, 3)[:nd]
    x = _rand((2, 2) + in_sp, dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for mode in MODES[nd]:
        for align in (False, True) if _interp_kwargs(mode, True) else (None,):
            _check("interpolate", x, size=size, mode=mode, exact=mode.startswith("nearest"),
                   **_interp_kwargs(mode, align), **tol)


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("scale", [0.5, 1.5, 2, 3, 0.7, 2.5, (2, 0.5, 1.5)])
@pytest.mark.parametrize("recompute", [None, True])
def test_interpolate_scale_factor(nd, scale, recompute):
    x = _rand((1, 2) + (5, 4, 3)[:nd])
    if isinstance(scale, tuple):
        scale = scale[:nd]
    for mode in MODES[nd]:
        if mode == "area" and not recompute:
            continue
        for align in (False, True) if _interp_kwargs(mode, True) else (None,):
            # the gradient of 'nearest' with a scale_factor whose output is 1x / 2x the input is
            # PyTorch's own inconsistency (see docs/nn.md): compare values only there
            sizes = [int(i * s) for i, s in zip(x.shape[2:], scale if isinstance(scale, tuple) else (scale,) * nd)]
            odd = mode.startswith("nearest") and not recompute and any(
                o in (i, 2 * i) and s != o / i for o, i, s in
                zip(sizes, x.shape[2:], scale if isinstance(scale, tuple) else (scale,) * nd))
            _check("interpolate", x, scale_factor=scale, mode=mode, recompute_scale_factor=recompute,
                   exact=mode.startswith("nearest"), grad=not odd, **_interp_kwargs(mode, align))


@pytest.mark.torch
def test_upsample_aliases_and_modules():
    import torch

    x = _rand((1, 2, 3, 4), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, kw in [("upsample", dict(scale_factor=2, mode="bilinear")), ("upsample_nearest", dict(size=(5, 7))),
                         ("upsample_bilinear", dict(scale_factor=2))]:
            np.testing.assert_allclose(getattr(F, name)(fabric.tensor(x), **kw).numpy(),
                                       getattr(torch.nn.functional, name)(torch.tensor(x), **kw).numpy(), rtol=1e-6,
                                       atol=1e-6)
    for cls, kw in [("Upsample", dict(scale_factor=(2, 3), mode="bicubic", align_corners=True)),
                    ("UpsamplingNearest2d", dict(size=5)), ("UpsamplingBilinear2d", dict(scale_factor=1.5))]:
        fm, tm = getattr(fabric.nn, cls)(**kw), getattr(torch.nn, cls)(**kw)
        assert repr(fm) == repr(tm)
        np.testing.assert_allclose(fm(fabric.tensor(x)).numpy(), tm(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,shape,kw", [
    ("linear", (1, 2, 5), dict(size=8, align_corners=False)),
    ("bilinear", (1, 1, 3, 4), dict(scale_factor=1.5, align_corners=True)),
    ("bicubic", (1, 1, 4, 3), dict(size=(5, 2), align_corners=False)),
    ("trilinear", (1, 1, 2, 3, 2), dict(scale_factor=2, align_corners=False)),
    ("nearest", (1, 2, 3, 4), dict(size=(7, 3))),
    ("nearest-exact", (1, 2, 5), dict(scale_factor=0.6)),
    ("area", (1, 2, 5, 4), dict(size=(3, 6))),
])
def test_interpolate_gradcheck(mode, shape, kw):
    x = fabric.tensor(_rand(shape), requires_grad=True)

    def f(x):
        return F.interpolate(x, mode=mode, **kw)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


# --- pixel shuffle, unfold / fold ----------------------------------------------------------------

@pytest.mark.torch
def test_pixel_shuffle_unshuffle():
    _check("pixel_shuffle", _rand((2, 8, 3, 3)), 2)
    _check("pixel_shuffle", _rand((3, 2, 9, 3, 2)), 3)
    _check("pixel_shuffle", _rand((9, 2, 2)), 3)
    _check("pixel_unshuffle", _rand((2, 2, 4, 6)), 2)
    _check("pixel_unshuffle", _rand((2, 1, 2, 6, 3)), 3)
    x = fabric.tensor(_rand((1, 8, 2, 3)))
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).numpy(), x.numpy())


@pytest.mark.torch
@pytest.mark.parametrize("k,d,p,s", [(2, 1, 0, 1), ((2, 3), 2, 1, (2, 1)), (3, (1, 2), (0, 2), 2), (1, 1, 0, 1)])
def test_unfold_fold(k, d, p, s):
    import torch

    x = _rand((2, 3, 6, 7))
    _check("unfold", x, k, d, p, s)
    _check("unfold", x[0], k, d, p, s)
    cols = torch.nn.functional.unfold(torch.tensor(x), k, d, p, s)
    _check("fold", _rand(tuple(cols.shape), 2), (6, 7), k, d, p, s)
    _check("fold", _rand(tuple(cols.shape[1:]), 3), (6, 7), k, d, p, s)


def test_fold_unfold_gradgradcheck():
    x = fabric.tensor(_rand((1, 2, 4, 3)), requires_grad=True)
    assert gradgradcheck(lambda x: F.unfold(x, 2, 1, 1, 2), (x,))
    c = fabric.tensor(_rand((1, 8, 8)), requires_grad=True)
    assert gradgradcheck(lambda c: F.fold(c, (3, 4), 2, padding=(1, 0), stride=(1, 2)), (c,))


# --- grid_sample / affine_grid -------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample(mode, padding_mode, align_corners, nd):
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + (5, 6, 4)[:nd])
    g = rng.uniform(-1.4, 1.4, (2,) + (3, 4, 2)[:nd] + (nd,))
    fx, fg = fabric.tensor(x, requires_grad=True), fabric.tensor(g, requires_grad=True)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    fy = F.grid_sample(fx, fg, mode, padding_mode, align_corners)
    ty = torch.nn.functional.grid_sample(tx, tg, mode, padding_mode, align_corners)
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    gy = rng.standard_normal(tuple(ty.shape))
    fy.backward(fabric.tensor(gy))
    ty.backward(torch.tensor(gy))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fg.grad.numpy(), tg.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_gradcheck(padding_mode):
    rng = np.random.default_rng(1)
    x = fabric.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
    # keep sample points away from integer pixel positions (the kinks of bilinear sampling)
    g = fabric.tensor(rng.uniform(-1.2, 1.2, (1, 2, 3, 2)), requires_grad=True)

    def f(x, g):
        return F.grid_sample(x, g, "bilinear", padding_mode, False)

    assert gradcheck(f, (x, g))
    assert gradgradcheck(f, (x, g), atol=1e-4)


@pytest.mark.torch
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 5), (1, 1, 1, 3)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(size, align_corners):
    import torch

    th = np.random.default_rng(0).standard_normal((size[0], 2, 3) if len(size) == 4 else (size[0], 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dt in (np.float32, np.float64):
            ft, tt = fabric.tensor(th.astype(dt), requires_grad=True), torch.tensor(th.astype(dt), requires_grad=True)
            fy, ty = F.affine_grid(ft, size, align_corners), torch.nn.functional.affine_grid(tt, size, align_corners)
            tol = 1e-6 if dt == np.float32 else 1e-12
            np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
            g = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(dt)
            fy.backward(fabric.tensor(g))
            ty.backward(torch.tensor(g))
            np.testing.assert_allclose(ft.grad.numpy(), tt.grad.numpy(), rtol=tol * 100, atol=tol * 100)


def test_grid_sample_default_align_corners_warns():
    x, g = fabric.randn(1, 1, 3, 3), fabric.zeros(1, 1, 1, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.grid_sample(x, g, mode="bicubic", align_corners=False)


# --- errors: PyTorch's types and messages ---------------------------------------------------------------

def _errors(lib):
    fn = lib.nn.functional
    r = np.random.default_rng(0)

    def t(*s, dt=np.float32):
        return lib.tensor(r.standard_normal(s).astype(dt))

    x = t(1, 2, 3, 4)
    return [
        lambda: fn.pad(x, (1, 2, 3)),
        lambda: fn.pad(x, (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)),
        lambda: fn.pad(x, (-3, -2)),
        lambda: fn.pad(x, (1, 2), mode="reflect"),
        lambda: fn.pad(t(1, 3, 4), (4, 2), mode="reflect"),
        lambda: fn.pad(t(1, 3, 4), (1, 1, 3, 1), mode="reflect"),
        lambda: fn.pad(t(1, 3, 4), (5, 2), mode="circular"),
        lambda: fn.pad(x, (1, 2), mode="foo"),
        lambda: fn.pad(x, (1, 2), mode="reflect", value=1.0),
        lambda: fn.pad(t(2, 0, 3), (1, 1), mode="reflect"),
        lambda: fn.pad(t(2, 3, 0), (1, 1), mode="replicate"),
        lambda: fn.pad(x, (1.5, 2)),
        lambda: fn.interpolate(t(2, 3, 4), scale_factor=2, mode="bilinear"),
        lambda: fn.interpolate(t(2, 3, 4, 4), size=(3,), mode="bilinear"),
        lambda: fn.interpolate(t(2, 3, 4, 4), size=3, scale_factor=2),
        lambda: fn.interpolate(t(2, 3, 4, 4)),
        lambda: fn.interpolate(t(2, 3, 4, 4), size=3, align_corners=True),
        lambda: fn.interpolate(t(2, 3), size=3),
        lambda: fn.interpolate(t(2, 3, 4, 4), size=3, mode="foo"),
        lambda: fn.interpolate(t(2, 3, 4, 4), size=0),
        lambda: fn.interpolate(t(2, 3, 4, 4), scale_factor=0.1),
        lambda: fn.interpolate(t(2, 3, 4, 4), size=3, recompute_scale_factor=True),
        lambda: fn.interpolate(t(2, 3, 4, 4), size=(3, 2.0)),
        lambda: fn.interpolate(t(2, 3, 4, 4).int(), size=3, mode="bilinear"),
        lambda: fn.interpolate(t(2, 3, 0, 4), size=3, mode="bilinear"),
        lambda: fn.interpolate(t(2, 3, 4, 4, 4), size=3, mode="bicubic"),
        lambda: fn.pixel_shuffle(t(2, 3), 2),
        lambda: fn.pixel_shuffle(t(5, 3, 3), 2),
        lambda: fn.pixel_shuffle(t(4, 3, 3), 0),
        lambda: fn.pixel_unshuffle(t(4, 5, 6), 2),
        lambda: fn.pixel_unshuffle(t(4, 6, 5), 2),
        lambda: fn.unfold(t(2, 3, 4, 4, 4), 2),
        lambda: fn.unfold(t(1, 3, 4, 4), 5),
        lambda: fn.unfold(t(1, 3, 4, 4), 2, padding=-1),
        lambda: fn.unfold(t(1, 3, 4, 4), 2, stride=0),
        lambda: fn.unfold(t(1, 3, 4, 4), 2, dilation=0),
        lambda: fn.unfold(t(1, 0, 4, 4), 2),
        lambda: fn.fold(t(1, 5, 9), 4, 2),
        lambda: fn.fold(t(1, 12, 8), 4, 2),
        lambda: fn.fold(t(2, 1, 12, 9), 4, 2),
        lambda: fn.fold(t(1, 12, 9), (4, 4, 4), 2),
        lambda: fn.grid_sample(x, t(1, 2, 2, 3), align_corners=False),
        lambda: fn.grid_sample(x, t(2, 2, 2, 2), align_corners=False),
        lambda: fn.grid_sample(x, t(1, 2, 2, 2, dt=np.float64), align_corners=False),
        lambda: fn.grid_sample(x, t(1, 2, 2, 2), mode="cubic", align_corners=False),
        lambda: fn.grid_sample(x, t(1, 2, 2, 2), padding_mode="wrap", align_corners=False),
        lambda: fn.affine_grid(t(1, 2, 3), (1, 1, 2, 2, 2), align_corners=False),
        lambda: fn.affine_grid(t(1, 2, 3), (1, 1, 2), align_corners=False),
        lambda: fn.affine_grid(t(1, 2, 3), (1, 1, 0, 2), align_corners=False),
    ]


@pytest.mark.torch
@pytest.mark.parametrize("i", range(len(_errors(fabric))))
def test_errors_match_torch(i):
    import torch

    with pytest.raises(Exception) as want:
        _errors(torch)[i]()
    with pytest.raises(type(want.value)) as got:
        _errors(fabric)[i]()
    assert str(got.value).replace("fabric.", "torch.") == str(want.value)


@pytest.mark.parametrize("module", [
    "fabric.nn.functional._conv", "fabric.nn.functional._pooling", "fabric.nn.functional._resample",
    "fabric.nn.modules.conv", "fabric.nn.modules.pooling", "fabric.nn.modules.padding",
    "fabric.nn.modules.pixelshuffle", "fabric.nn.modules.upsampling", "fabric.nn.modules.fold"])
def test_doctests(module):
    import doctest
    import importlib

    fabric.manual_seed(0)
    res = doctest.testmod(importlib.import_module(module), extraglobs={"fabric": fabric},
                          optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted > 0


# --- interpolate(antialias=True) ----------------------------------------------------------------

_AA_CASES = [((9, 7), (4, 3), None, False), ((20, 31), (7, 5), None, False), ((8, 8), (16, 3), None, True),
             ((13, 17), None, (0.37, 0.61), False), ((5, 6), (5, 2), None, False), ((6, 6), (17, 19), None, False)]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_gradcheck(mode):
    x = fabric.rand(1, 2, 7, 9, dtype=fabric.float64, requires_grad=True)

    def f(t):
        return F.interpolate(t, size=(3, 12), mode=mode, antialias=True)

    assert fabric.autograd.gradcheck(f, (x,)) and fabric.autograd.gradgradcheck(f, (x,))


def test_antialias_preserves_constants_and_errors():
    for mode in ("bilinear", "bicubic"):
        y = F.interpolate(fabric.full((1, 1, 23, 11), 2.5, dtype=fabric.float64), size=(4, 5), mode=mode,
                          antialias=True)
        np.testing.assert_allclose(y.numpy(), 2.5, rtol=1e-14)  # normalised weights
    with pytest.raises(NotImplementedError, match="\"compute_index_ranges_weights\" not implemented for 'Half'"):
        F.interpolate(fabric.ones(1, 1, 4, 4, dtype=fabric.float16), size=(2, 2), mode="bilinear", antialias=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic"):
        F.interpolate(fabric.ones(1, 1, 4), size=2, mode="linear", antialias=True)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_matches_torch(mode, dtype):
    import torch
    rng = np.random.default_rng(0)
    for (h, w), size, scale, align in _AA_CASES:
        x = rng.random((2, 3, h, w)).astype(dtype)
        kw = dict(size=size, scale_factor=scale, mode=mode, align_corners=align, antialias=True)
        xt = torch.tensor(x, requires_grad=True)
        yt = torch.nn.functional.interpolate(xt, **kw)
        xf = fabric.tensor(x, requires_grad=True)
        yf = F.interpolate(xf, **kw)
        tol = 1e-6 if dtype == "float32" else 1e-13
        np.testing.assert_allclose(yf.detach().numpy(), yt.detach().numpy(), rtol=tol, atol=tol)
        gy = rng.random(yt.shape).astype(dtype)
        yt.backward(torch.tensor(gy))
        yf.backward(fabric.tensor(gy))
        np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
