"""Memory formats (``channels_last`` ...), layouts, constants, ``size=`` on
factories and the Tensor ``is_*`` flags, against PyTorch's answers."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fabric
from fabric.autograd.gradcheck import gradcheck

CL, CL3, CF, PF = fabric.channels_last, fabric.channels_last_3d, fabric.contiguous_format, fabric.preserve_format


def test_channels_last_strides_values_and_contiguity():
    x = fabric.arange(120.0).reshape(2, 3, 4, 5)
    y = x.contiguous(memory_format=CL)
    assert y.stride() == (60, 1, 15, 3) and y.shape == x.shape
    assert y.is_contiguous(memory_format=CL) and not y.is_contiguous()
    assert fabric.equal(x, y)
    assert y.contiguous(memory_format=CL) is y
    z = y.contiguous()
    assert z.stride() == (60, 20, 5, 1) and fabric.equal(z, x)
    assert x.contiguous(memory_format=CF) is x


def test_channels_last_with_size_one_dims_keeps_pytorch_strides():
    assert fabric.zeros(1, 3, 4, 5).contiguous(memory_format=CL).stride() == (60, 1, 15, 3)
    one_channel = fabric.zeros(2, 1, 4, 5)
    assert one_channel.is_contiguous(memory_format=CL) and one_channel.is_contiguous()
    assert one_channel.contiguous(memory_format=CL).stride() == (20, 20, 5, 1)


def test_channels_last_3d():
    x = fabric.arange(2 * 3 * 2 * 2 * 2.0).reshape(2, 3, 2, 2, 2)
    y = x.contiguous(memory_format=CL3)
    assert y.stride() == (24, 1, 12, 6, 3) and y.is_contiguous(memory_format=CL3) and fabric.equal(x, y)


def test_rank_errors_and_preserve_format():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        fabric.zeros(2, 3).contiguous(memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        fabric.zeros(2, 3, 4, 5).contiguous(memory_format=CL3)
    assert not fabric.zeros(2, 3).is_contiguous(memory_format=CL)
    t = fabric.zeros(2, 3).t()
    assert t.contiguous(memory_format=PF) is t


def test_contiguous_to_channels_last_is_differentiable():
    x = fabric.randn(2, 3, 2, 2, dtype=fabric.float64, requires_grad=True)
    assert gradcheck(lambda a: a.contiguous(memory_format=CL) * 2, (x,))
    assert gradcheck(lambda a: a.to(memory_format=CL).sum(1), (x,))


def test_clone_preserves_the_order_of_strides_by_default():
    x = fabric.arange(24.0).reshape(2, 3, 4)
    assert x.permute(2, 0, 1).clone().stride() == (1, 12, 4)
    assert x.permute(2, 0, 1).clone(memory_format=CF).stride() == (6, 3, 1)
    y = fabric.zeros(2, 3, 4, 5).contiguous(memory_format=CL)
    assert y.clone().stride() == y.stride()
    assert y.clone(memory_format=CF).is_contiguous()
    e = fabric.zeros(0, 3).t()
    assert e.clone().shape == (3, 0)


def test_ops_on_channels_last_inputs_give_the_same_values():
    fabric.manual_seed(0)
    x = fabric.randn(2, 3, 6, 6)
    xc = x.contiguous(memory_format=CL)
    conv = fabric.nn.Conv2d(3, 4, 3, padding=1)
    bn = fabric.nn.BatchNorm2d(3)
    for f in (conv, bn, lambda t: fabric.nn.functional.max_pool2d(t, 2), lambda t: t * 2 + 1,
              lambda t: fabric.nn.functional.interpolate(t, scale_factor=2, mode="bilinear"),
              lambda t: t.sum((2, 3)), lambda t: fabric.nn.functional.adaptive_avg_pool2d(t, 1)):
        np.testing.assert_allclose(f(xc).detach().numpy(), f(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert (xc * 2).is_contiguous(memory_format=CL)  # pointwise ops keep the format, as PyTorch


def test_module_to_channels_last():
    conv = fabric.nn.Conv2d(3, 4, 3)
    bias = conv.bias
    conv.to(memory_format=CL)
    assert conv.weight.is_contiguous(memory_format=CL) and conv.bias is bias


def test_layout_and_format_objects():
    assert fabric.zeros(2).layout is fabric.strided
    assert repr(fabric.strided) == "fabric.strided" and repr(CL) == "fabric.channels_last"
    assert isinstance(CL, fabric.memory_format) and isinstance(fabric.strided, fabric.layout)
    import pickle
    assert pickle.loads(pickle.dumps(CL)) is CL and pickle.loads(pickle.dumps(fabric.strided)) is fabric.strided


def test_constants_and_is_flags():
    assert fabric.pi == math.pi and fabric.e == math.e and math.isinf(fabric.inf) and math.isnan(fabric.nan)
    assert fabric.newaxis is None
    t = fabric.zeros(2)
    assert t[fabric.newaxis].shape == (1, 2)
    for name in ("is_xpu", "is_mps", "is_nested", "is_meta", "is_quantized", "is_sparse", "is_mkldnn",
                 "is_sparse_csr"):
        assert getattr(t, name) is False, name


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones", "rand", "randn"])
def test_size_keyword_on_factories(fn):
    f = getattr(fabric, fn)
    for size in ((2, 3), [2, 3], fabric.Size([2, 3])):
        assert f(size=size).shape == (2, 3)
    assert f(size=()).shape == ()
    with pytest.raises(TypeError, match=f"{fn}\\(\\) got multiple values for argument 'size'"):
        f(2, size=(3,))
    with pytest.raises(TypeError, match="argument 'size' must be tuple of ints, not int"):
        f(size=3)


def test_size_keyword_elsewhere():
    t = fabric.zeros(1, dtype=fabric.float64)
    assert t.new_zeros(size=(2,)).dtype == fabric.float64 and t.new_ones(size=[3]).shape == (3,)
    assert t.new_empty(size=(1, 2)).shape == (1, 2) and t.new_full(size=(2,), fill_value=3.0).tolist() == [3.0, 3.0]
    assert fabric.randint(0, 5, size=(4,)).shape == (4,) and fabric.normal(0.0, 1.0, size=(3,)).shape == (3,)
    assert fabric.full(size=(2,), fill_value=1.5).tolist() == [1.5, 1.5]


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (0, 3, 4, 5), (1, 1, 1, 1)])
def test_strides_and_contiguity_match_torch(shape):
    import torch

    tmap = {CL: torch.channels_last, CF: torch.contiguous_format}
    x, tx = fabric.zeros(shape), torch.zeros(shape)
    for fmt in (CL, CF):
        y, ty = x.contiguous(memory_format=fmt), tx.contiguous(memory_format=tmap[fmt])
        assert y.stride() == ty.stride(), (fmt, y.stride(), ty.stride())
        for probe in (CL, CF):
            assert y.is_contiguous(memory_format=probe) == ty.is_contiguous(memory_format=tmap[probe])
    p, tp = x.permute(0, 2, 3, 1), tx.permute(0, 2, 3, 1)
    assert p.is_contiguous(memory_format=CL) == tp.is_contiguous(memory_format=torch.channels_last)
    if 1 not in shape and 0 not in shape:  # size-1/empty dims: PyTorch keeps a view's history, fabric nominal strides
        assert p.clone().stride() == tp.clone().stride()


@pytest.mark.torch
def test_clone_strides_match_torch_for_views():
    import torch

    base, tbase = fabric.arange(120.0).reshape(2, 3, 4, 5), torch.arange(120.0).reshape(2, 3, 4, 5)
    views = [lambda b: b.permute(3, 1, 0, 2), lambda b: b.permute(0, 2, 3, 1)[:, ::2],
             lambda b: b.transpose(1, 2), lambda b: b[:, 1]]
    for v in views:
        assert v(base).clone().stride() == v(tbase).clone().stride()
    assert fabric.zeros(3, 1).expand(3, 4).clone().stride() == torch.zeros(3, 1).expand(3, 4).clone().stride()
    assert fabric.zeros(1, 4).expand(3, 4).clone().stride() == torch.zeros(1, 4).expand(3, 4).clone().stride()


@pytest.mark.cuda
def test_channels_last_on_the_gpu():
    x = fabric.arange(120.0).reshape(2, 3, 4, 5)
    g = x.cuda().contiguous(memory_format=CL)
    assert g.stride() == (60, 1, 15, 3) and g.is_contiguous(memory_format=CL)
    assert fabric.equal(g.cpu(), x) and g.permute(0, 2, 3, 1).clone().stride() == (60, 15, 3, 1)
    assert fabric.zeros(0, 3, 4, 5, device="cuda").contiguous(memory_format=CL).stride() == (60, 1, 15, 3)


@pytest.mark.parametrize("fn", ["empty_like", "zeros_like", "ones_like", "full_like"])
def test_like_factories_keep_the_format_by_default(fn):
    f = getattr(fabric, fn)
    args = (2.5,) if fn == "full_like" else ()
    x = fabric.zeros(2, 3, 4, 5).contiguous(memory_format=CL)
    assert f(x, *args).stride() == (60, 1, 15, 3)
    assert f(x, *args, memory_format=CF).stride() == (60, 20, 5, 1)
    assert f(fabric.zeros(2, 3, 4, 5), *args, memory_format=CL).is_contiguous(memory_format=CL)
    assert f(fabric.zeros(3, 4).t(), *args).stride() == (1, 4)
    if fn != "empty_like":
        assert f(x, *args).tolist() == f(fabric.zeros(2, 3, 4, 5), *args).tolist()
