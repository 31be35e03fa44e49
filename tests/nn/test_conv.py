"""Convolutions: F.conv*/conv_transpose* and the Conv modules against PyTorch
(values and gradients, float64 and float32), gradcheck / gradgradcheck, the
three-Function double-backward closure, errors and messages."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric import nn
from fabric.autograd import gradcheck, gradgradcheck


def _rng(seed=0):
    return np.random.default_rng(seed)


def _t(a, grad=False):
    return fabric.tensor(np.array(a), requires_grad=grad)


def _conv_args(nd, transposed, cin, cout, size, k, groups, batch=2, dtype=np.float64, seed=0):
    rng = _rng(seed)
    x = rng.standard_normal((batch, cin) + (size,) * nd).astype(dtype)
    if transposed:
        w = rng.standard_normal((cin, cout // groups) + (k,) * nd).astype(dtype)
    else:
        w = rng.standard_normal((cout, cin // groups) + (k,) * nd).astype(dtype)
    b = rng.standard_normal(cout).astype(dtype)
    return x, w, b


CONV_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(stride=3, padding=2, dilation=2),
    dict(groups=2),
    dict(groups=4, padding=1),                 # depthwise (cin == groups)
    dict(dilation=2, padding=1, stride=2, groups=2),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid", stride=(1, 2, 1)),
]
TCONV_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(stride=2, output_padding=1),
    dict(stride=3, padding=1, output_padding=2, dilation=2),
    dict(groups=2),
    dict(dilation=3, output_padding=2),        # output_padding < dilation (not < stride)
    dict(stride=(2, 1, 3), padding=(0, 1, 1), output_padding=(1, 0, 2)),
]


def _fit(kw, nd):
    out = {}
    for k, v in kw.items():
        out[k] = tuple(v[:nd]) if isinstance(v, tuple) else v
    return out


def _compare(nd, transposed, kw, k=3, dtype=np.float64, bias=True, rtol=1e-10, atol=1e-10):
    import torch

    kw = _fit(kw, nd)
    groups = kw.get("groups", 1)
    cin, cout = 4, (4 if groups == 4 else 6)
    size = 6 if nd < 3 else 5
    x, w, b = _conv_args(nd, transposed, cin, cout, size, k, groups, dtype=dtype)
    name = f"conv_transpose{nd}d" if transposed else f"conv{nd}d"
    ff, tf = getattr(F, name), getattr(torch.nn.functional, name)
    fx, fw, fb = (fabric.tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    fy = ff(fx, fw, fb if bias else None, **kw)
    ty = tf(tx, tw, tb if bias else None, **kw)
    assert tuple(fy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=atol)
    g = _rng(1).standard_normal(tuple(ty.shape)).astype(dtype)
    fy.backward(fabric.tensor(g))
    ty.backward(torch.tensor(g))
    pairs = [(fx, tx), (fw, tw)] + ([(fb, tb)] if bias else [])
    for a, t in pairs:
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=rtol * 10, atol=atol * 10)
    if not bias:
        assert fb.grad is None


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", CONV_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_conv_matches_torch(nd, kw):
    _compare(nd, False, kw)


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", TCONV_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_conv_transpose_matches_torch(nd, kw):
    _compare(nd, True, kw)


@pytest.mark.torch
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_kernel_sizes_float32_no_bias(transposed, k):
    _compare(2, transposed, dict(stride=2, padding=k // 2), k=k, dtype=np.float32, bias=False, rtol=1e-5,
             atol=1e-5)


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_padding_modes_module(mode, nd):
    import torch

    cls = f"Conv{nd}d"
    for padding in (1, "same", (2, 1, 1)[:nd] if nd > 1 else 2):
        fabric.manual_seed(3)
        torch.manual_seed(3)
        kernel = 3 if padding != "same" else (2, 3, 4)[:nd]
        fm = getattr(nn, cls)(2, 3, kernel, padding=padding, padding_mode=mode)
        tm = getattr(torch.nn, cls)(2, 3, kernel, padding=padding, padding_mode=mode)
        x = _rng().standard_normal((2, 2) + (5,) * nd)
        fx, tx = fabric.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        fy, ty = fm.double()(fx), tm.double()(tx)
        np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
        fy.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(fm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.torch
def test_unbatched_and_empty_batch():
    import torch

    x = _rng().standard_normal((3, 5, 5))
    w = _rng(1).standard_normal((4, 3, 3, 3))
    np.testing.assert_allclose(F.conv2d(_t(x), _t(w), padding=1).numpy(),
                               torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy(),
                               rtol=1e-12, atol=1e-12)
    wt = _rng(2).standard_normal((3, 2, 3, 3))
    want = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(wt), stride=2)
    np.testing.assert_allclose(F.conv_transpose2d(_t(x), _t(wt), stride=2).numpy(), want.numpy(), rtol=1e-12,
                               atol=1e-12)
    e = fabric.zeros(0, 3, 5, 5, dtype=fabric.float64, requires_grad=True)
    y = F.conv2d(e, _t(w, True), padding=1)
    assert tuple(y.shape) == (0, 4, 5, 5)
    y.sum().backward()
    assert tuple(e.grad.shape) == (0, 3, 5, 5)


@pytest.mark.torch
def test_integer_conv():
    import torch

    x = _rng().integers(-5, 5, (2, 3, 5, 5))
    w = _rng(1).integers(-3, 3, (4, 3, 3, 3))
    got = F.conv2d(fabric.tensor(x), fabric.tensor(w), stride=2)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), stride=2)
    assert got.dtype == fabric.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# --- gradients of every order -------------------------------------------------------------

@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("nd,kw", [(1, dict(stride=2, padding=1, dilation=2)), (2, dict(stride=2, groups=2)),
                                   (2, dict(padding="same")), (3, dict(padding=1))])
def test_gradcheck_gradgradcheck(transposed, nd, kw):
    if transposed:
        kw = {k: v for k, v in kw.items() if k != "padding" or v != "same"}
        if kw.get("stride", 1) > 1:
            kw["output_padding"] = 1
    groups = kw.get("groups", 1)
    x, w, b = _conv_args(nd, transposed, 2, 2, 4 if nd < 3 else 3, 2 if nd == 3 else 3, groups, batch=1)
    fn = getattr(F, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    ins = tuple(fabric.tensor(a, requires_grad=True) for a in (x, w, b))

    def f(x, w, b):
        return fn(x, w, b, **kw)

    assert gradcheck(f, ins)
    assert gradgradcheck(f, ins)


@pytest.mark.torch
@pytest.mark.parametrize("transposed", [False, True])
def test_double_backward_matches_torch(transposed):
    import torch

    x, w, b = _conv_args(2, transposed, 2, 4, 5, 3, 2)
    name = "conv_transpose2d" if transposed else "conv2d"
    kw = dict(stride=2, padding=1, groups=2)
    res = []
    for lib, fn in ((fabric, getattr(F, name)), (torch, getattr(torch.nn.functional, name))):
        tx, tw, tb = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = fn(tx, tw, tb, **kw)
        gx, gw = (lib.autograd.grad((y * y).sum(), [tx, tw], create_graph=True))
        (gx.pow(2).sum() + (gw * gw).sum()).backward()
        res.append([t.grad.detach().numpy() for t in (tx, tw, tb)])
    for a, t in zip(*res):
        np.testing.assert_allclose(a, t, rtol=1e-9, atol=1e-9)


def test_weight_gradient_reuses_columns_but_checks_versions():
    x = fabric.randn(1, 2, 5, 5, requires_grad=True)
    w = fabric.randn(3, 2, 3, 3, requires_grad=True)
    y = F.conv2d(x * 1, w)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
    z = x * 1
    y = F.conv2d(z, w)
    with fabric.no_grad():
        z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# --- modules --------------------------------------------------------------------------------------

@pytest.mark.torch
def test_conv_transpose_output_size_and_errors():
    import torch

    fabric.manual_seed(0)
    torch.manual_seed(0)
    fm, tm = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    x = _rng().standard_normal((1, 3, 4, 4)).astype(np.float32)
    for size in ([7, 7], [8, 8], (1, 2, 8, 7)):
        np.testing.assert_allclose(fm(fabric.tensor(x), output_size=size).detach().numpy(),
                                   tm(torch.tensor(x), output_size=size).detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="requested an output size of"):
        fm(fabric.tensor(x), output_size=[9, 9])
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(3, 2, 3, padding_mode="reflect")


@pytest.mark.torch
@pytest.mark.parametrize("cls", ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
                                 "LazyConvTranspose2d", "LazyConvTranspose3d"])
def test_lazy_conv(cls):
    import torch

    nd = int(cls[-2])
    x = _rng().standard_normal((2, 4) + (4,) * nd).astype(np.float32)
    fabric.manual_seed(0)
    torch.manual_seed(0)
    fm, tm = getattr(nn, cls)(6, 3, groups=2), getattr(torch.nn, cls)(6, 3, groups=2)
    fy, ty = fm(fabric.tensor(x)), tm(torch.tensor(x))
    assert type(fm).__name__ == type(tm).__name__ and repr(fm) == repr(tm)
    np.testing.assert_array_equal(fm.weight.detach().numpy(), tm.weight.detach().numpy())
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.torch
@pytest.mark.parametrize("args,kwargs", [
    ((3, 8, 3), {}),
    ((4, 8, (3, 5)), {"stride": (2, 1), "padding": (1, 2), "dilation": 2, "groups": 2, "bias": False}),
    ((4, 4, 3), {"padding": "same", "padding_mode": "circular"}),
    ((2, 4, 2), {"padding": "valid"}),
])
def test_module_state_and_repr(args, kwargs):
    import torch

    fabric.manual_seed(5)
    torch.manual_seed(5)
    fm, tm = nn.Conv2d(*args, **kwargs), torch.nn.Conv2d(*args, **kwargs)
    assert repr(fm) == repr(tm)
    assert list(fm.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(fm.state_dict()[k].numpy(), v.numpy())
    for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "transposed",
                 "output_padding", "groups", "padding_mode", "_reversed_padding_repeated_twice"):
        assert tuple(np.atleast_1d(getattr(fm, attr))) == tuple(np.atleast_1d(getattr(tm, attr))), attr


@pytest.mark.parametrize("kwargs,exc,msg", [
    ({"groups": 0}, ValueError, "groups must be a positive integer"),
    ({"groups": 2}, ValueError, "in_channels must be divisible by groups"),
    ({"padding": "full"}, ValueError, "Invalid padding string 'full'"),
    ({"padding": "same", "stride": 2}, ValueError, "padding='same' is not supported for strided convolutions"),
    ({"padding_mode": "edge"}, ValueError, "padding_mode must be one of"),
])
def test_module_constructor_errors(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        nn.Conv2d(3, 4, 3, **kwargs)


# --- errors: PyTorch's types and messages ---------------------------------------------------------------

def _errors(lib):
    fn = lib.nn.functional
    r = np.random.default_rng(0)

    def t(*s, dt=np.float32):
        return lib.tensor(r.standard_normal(s).astype(dt))

    x, w = t(2, 3, 5, 5), t(4, 3, 3, 3)
    return [
        lambda: fn.conv2d(t(2, 2, 3, 5, 5), w),
        lambda: fn.conv2d(t(5, 5), w),
        lambda: fn.conv1d(t(2, 3), t(4, 3, 3)),
        lambda: fn.conv3d(t(3, 5, 5), t(4, 3, 3, 3, 3)),
        lambda: fn.conv2d(x, t(4, 2, 3, 3)),
        lambda: fn.conv2d(t(2, 3, 5, 5, dt=np.float64), w),
        lambda: fn.conv2d(x, t(4, 3, 3, 3, dt=np.float64)),
        lambda: fn.conv2d(x, w, t(4, dt=np.float64)),
        lambda: fn.conv2d(x, w, t(3)),
        lambda: fn.conv2d(x, t(4, 3, 7, 7)),
        lambda: fn.conv2d(x, t(4, 3, 3, 3), dilation=3),
        lambda: fn.conv2d(x, w, stride=0),
        lambda: fn.conv2d(x, w, padding=-1),
        lambda: fn.conv2d(x, w, dilation=0),
        lambda: fn.conv2d(x, w, groups=2),
        lambda: fn.conv2d(x, t(4, 1, 3, 3), groups=3),
        lambda: fn.conv2d(x, w, padding="same", stride=2),
        lambda: fn.conv2d(x, w, padding="foo"),
        lambda: fn.conv2d(x, w, stride=(1, 1, 1)),
        lambda: fn.conv2d(x, t(4, 3, 3)),
        lambda: fn.conv_transpose2d(t(2, 5, 5), t(4, 3, 3, 3)),
        lambda: fn.conv_transpose2d(t(2, 3, 5, 5), t(4, 3, 3, 3)),
        lambda: fn.conv_transpose2d(t(2, 4, 5, 5), t(4, 3, 3, 3), output_padding=1),
        lambda: fn.conv_transpose2d(t(2, 4, 5, 5), t(4, 3, 3, 3), stride=2, output_padding=2),
        lambda: fn.conv_transpose2d(t(2, 4, 5, 5), t(4, 3, 3, 3), output_padding=-1),
        lambda: fn.conv_transpose2d(t(2, 4, 5, 5), t(4, 3, 3, 3), t(4)),
        lambda: fn.conv_transpose2d(t(2, 4, 5, 5), t(4, 3, 3, 3), groups=3),
        lambda: fn.conv_transpose2d(t(2, 4, 1, 1, dt=np.float64), t(4, 3, 3, 3, dt=np.float64), padding=2),
        lambda: fn.conv_transpose1d(t(2, 4, 5), t(4, 3, 3), stride=2, output_padding=3),
        lambda: fn.conv_transpose3d(t(1, 4, 3, 3, 3), t(4, 2, 3, 3, 3), stride=2, output_padding=2),
        lambda: fn.conv2d(t(1, 4, 3, 3), t(0, 2, 3, 3), groups=2),
    ]


@pytest.mark.torch
@pytest.mark.parametrize("i", range(len(_errors(fabric))))
def test_errors_match_torch(i):
    import torch

    with pytest.raises(Exception) as want:
        _errors(torch)[i]()
    with pytest.raises(type(want.value)) as got:
        _errors(fabric)[i]()
    if "MKLDNN" in str(want.value) or "memory descriptor" in str(want.value):
        return
    assert str(got.value) == str(want.value)


def test_conv_transpose_padding_string_rejected():
    with pytest.raises(TypeError, match="must be tuple of ints, not str"):
        F.conv_transpose2d(fabric.randn(1, 2, 3, 3), fabric.randn(2, 1, 3, 3), padding="same")


def test_im2col_paths_agree():
    """The backend's im2col/col2im (symmetric 1-D/2-D windows) and the
    generic N-d path give the same convolution."""
    from fabric.nn.functional import _conv as C

    rng = _rng()
    for nd, k, s, p, d in itertools.product((1, 2), (2, 3), (1, 2), (0, 1), (1, 2)):
        x = rng.standard_normal((2, 3) + (7,) * nd)
        out = tuple((7 + 2 * p - d * (k - 1) - 1) // s + 1 for _ in range(nd))
        geom = C._Geom((7,) * nd, out, (k,) * nd, (s,) * nd, (d,) * nd, (p,) * nd, 1)
        assert geom.backend_ok
        generic = C._Geom((7,) * nd, out, (k,) * nd, (s,) * nd, (d,) * nd, (p,) * nd, 1)
        generic.backend_ok = False
        np.testing.assert_array_equal(C._im2col(x, geom), C._im2col(x, generic))
        cols = rng.standard_normal(C._im2col(x, geom).shape)
        np.testing.assert_allclose(C._col2im(cols, 2, 3, geom), C._col2im(cols, 2, 3, generic), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.torch
def test_small_cnn_matches_torch():
    """A CNN written against ``torch.nn`` runs unchanged on fabric with the
    same weights, outputs and gradients."""
    import torch

    def build(lib):
        m = lib.nn
        return m.Sequential(
            m.Conv2d(3, 8, 3, padding=1, padding_mode="reflect"), m.BatchNorm2d(8), m.ReLU(), m.MaxPool2d(2),
            m.Conv2d(8, 8, 3, groups=2, dilation=2, padding="same"), m.ReLU(), m.AvgPool2d(2, ceil_mode=True),
            m.ConvTranspose2d(8, 4, 2, stride=2), m.Upsample(scale_factor=2, mode="bilinear"),
            m.AdaptiveAvgPool2d((2, 3)), m.Flatten(), m.Linear(24, 5)).double()

    tm, fm = build(torch), build(fabric)
    fm.load_state_dict({k: fabric.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    x = _rng().standard_normal((4, 3, 10, 10))
    tx, fx = torch.tensor(x, requires_grad=True), fabric.tensor(x, requires_grad=True)
    tl, fl = tm(tx).logsumexp(1).sum(), fm(fx).logsumexp(1).sum()
    np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-12)
    tl.backward()
    fl.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    tp = dict(tm.named_parameters())
    for n, p in fm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[n].grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=n)
