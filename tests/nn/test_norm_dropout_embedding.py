"""Functional normalisation, dropout, embedding and nn.utils: PyTorch parity,
RNG reproducibility, running statistics, error messages, fused-path twins."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric import nn

rng = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy()


def _pair(shape, dtype=np.float32, grad=True):
    import torch

    a = rng.standard_normal(shape).astype(dtype)
    return (fabric.from_numpy(a.copy()).requires_grad_(grad), torch.from_numpy(a.copy()).requires_grad_(grad))


# --- dropout ----------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("fn,shape,p", [("dropout", (5, 7), 0.3), ("dropout", (1000,), 0.5),
                                        ("dropout2d", (4, 3, 2, 2), 0.5), ("dropout1d", (3, 4, 5), 0.25),
                                        ("dropout3d", (2, 3, 2, 2, 2), 0.4), ("alpha_dropout", (6, 5), 0.2),
                                        ("feature_alpha_dropout", (3, 4, 2), 0.6)])
def test_dropout_masks_equal_torch(fn, shape, p):
    """Same seed, same mask: the CPU generator reproduces PyTorch's bernoulli_ stream."""
    import torch

    fx, tx = _pair(shape)
    fabric.manual_seed(123)
    torch.manual_seed(123)
    fy = getattr(F, fn)(fx, p, training=True)
    ty = getattr(torch.nn.functional, fn)(tx, p, training=True)
    np.testing.assert_allclose(_np(fy), _np(ty), rtol=1e-6, atol=1e-7)
    g = rng.standard_normal(shape).astype(np.float32)
    fy.backward(fabric.from_numpy(g.copy()))
    ty.backward(torch.from_numpy(g.copy()))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(fabric.rand(4).numpy(), torch.rand(4).numpy())


@pytest.mark.torch
def test_inplace_dropout_equals_torch():
    import torch

    a = rng.standard_normal((4, 6)).astype(np.float32)
    fx, tx = fabric.from_numpy(a.copy()), torch.from_numpy(a.copy())
    fabric.manual_seed(4)
    torch.manual_seed(4)
    fy = F.dropout(fx, 0.5, inplace=True)
    ty = torch.nn.functional.dropout(tx, 0.5, inplace=True)
    assert fy is fx and ty is tx
    np.testing.assert_array_equal(fx.numpy(), tx.numpy())


def test_dropout_modes_and_errors():
    x = fabric.randn(4, 5)
    assert F.dropout(x, 0.5, training=False) is x and F.dropout(x, 0.0) is x
    assert float(F.dropout(x, 1.0).abs().sum()) == 0.0
    y = F.dropout(fabric.ones(10000), 0.3).numpy()
    assert set(np.unique(y).tolist()) == {0.0, float(np.float32(1) / np.float32(0.7))}
    assert abs((y == 0).mean() - 0.3) < 0.03
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(-0.1)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(fabric.ones(2, 2, 2, 2))
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input"):
        F.dropout2d(fabric.ones(3, 3))
    fabric.manual_seed(0)
    a = F.dropout(x, 0.5)
    fabric.manual_seed(0)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), a.numpy())
    d = nn.Dropout2d(0.5)
    y = d(fabric.ones(8, 16, 3, 3)).numpy()
    assert (y.reshape(8, 16, 9).std(axis=2) == 0).all()  # whole channels dropped


def test_alpha_dropout_keeps_moments():
    fabric.manual_seed(0)
    x = fabric.randn(200000)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02


# --- embedding ------------------------------------------------------------------------------

@pytest.mark.torch
def test_embedding_max_norm_renorm_equals_torch():
    import torch

    w = rng.standard_normal((6, 4)).astype(np.float32) * 2
    fw, tw = fabric.from_numpy(w.copy()), torch.from_numpy(w.copy())
    idx = np.array([[0, 2, 2], [5, 0, 1]])
    for norm_type in (2.0, 1.0, float("inf")):
        fw, tw = fabric.from_numpy(w.copy()), torch.from_numpy(w.copy())
        fo = F.embedding(fabric.from_numpy(idx), fw, max_norm=1.5, norm_type=norm_type)
        to = torch.nn.functional.embedding(torch.from_numpy(idx), tw, max_norm=1.5, norm_type=norm_type)
        np.testing.assert_allclose(fw.numpy(), tw.numpy(), rtol=1e-6)
        np.testing.assert_allclose(fo.numpy(), to.numpy(), rtol=1e-6)


def test_embedding_errors():
    w = fabric.randn(3, 2)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got torch.FloatTensor instead"):
        F.embedding(fabric.tensor([1.0]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(fabric.tensor([3]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(fabric.tensor([-1]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(fabric.tensor([1]), w, padding_idx=3)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        nn.EmbeddingBag(3, 2, mode="max", sparse=True)(fabric.tensor([[0, 1]]))  # sum/mean: tests/sparse
    assert F.embedding(fabric.tensor([1], dtype=fabric.int32), w).shape == (1, 2)


def test_embedding_from_pretrained_and_padding():
    w = fabric.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    emb = nn.Embedding.from_pretrained(w)
    assert not emb.weight.requires_grad and emb.weight.data_ptr() == w.data_ptr()
    emb2 = nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    out = emb2(fabric.tensor([0, 1, 0]))
    out.sum().backward()
    np.testing.assert_array_equal(emb2.weight.grad.numpy(), [[0, 0], [1, 1], [0, 0]])
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(fabric.ones(3))
    e = nn.Embedding(4, 2, padding_idx=-1)
    assert e.padding_idx == 3 and float(e.weight[3].abs().sum()) == 0.0


def test_embedding_backward_large_vocab_uses_segment_sum():
    """Above the one-hot BLAS threshold the weight gradient is a sort + segment sum; both paths agree."""
    from fabric.backends import fused

    idx = rng.integers(0, 5000, size=2000)
    gy = rng.standard_normal((2000, 3))
    ref = np.zeros((5000, 3))
    np.add.at(ref, idx, gy)  # reference only (tiny sizes)
    np.testing.assert_allclose(fused.embedding_backward(np, idx, gy, 5000), ref, rtol=1e-12, atol=1e-12)
    w = nn.Parameter(fabric.zeros(5000, 3, dtype=fabric.float64))
    F.embedding(fabric.from_numpy(idx), w).backward(fabric.from_numpy(gy))
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_functional_equals_torch(mode):
    import torch

    w = rng.standard_normal((7, 3)).astype(np.float32)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 6, 0])
    off = np.array([0, 2, 2, 5])
    fw, tw = fabric.from_numpy(w.copy()).requires_grad_(), torch.from_numpy(w.copy()).requires_grad_()
    fo = F.embedding_bag(fabric.from_numpy(idx), fw, fabric.from_numpy(off), mode=mode, padding_idx=4)
    to = torch.nn.functional.embedding_bag(torch.from_numpy(idx), tw, torch.from_numpy(off), mode=mode,
                                           padding_idx=4)
    np.testing.assert_allclose(_np(fo), _np(to), rtol=1e-6, atol=1e-7)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    fo.backward(fabric.from_numpy(g.copy()))
    to.backward(torch.from_numpy(g.copy()))
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.torch
def test_embedding_bag_per_sample_weights_grad_equals_torch():
    import torch

    w = rng.standard_normal((5, 2)).astype(np.float32)
    idx, off = np.array([0, 1, 1, 4, 2]), np.array([0, 3])
    psw = rng.standard_normal(5).astype(np.float32)
    fw, tw = fabric.from_numpy(w.copy()).requires_grad_(), torch.from_numpy(w.copy()).requires_grad_()
    fp, tp = fabric.from_numpy(psw.copy()).requires_grad_(), torch.from_numpy(psw.copy()).requires_grad_()
    fo = F.embedding_bag(fabric.from_numpy(idx), fw, fabric.from_numpy(off), mode="sum", per_sample_weights=fp)
    to = torch.nn.functional.embedding_bag(torch.from_numpy(idx), tw, torch.from_numpy(off), mode="sum",
                                           per_sample_weights=tp)
    (fo ** 2).sum().backward()
    (to ** 2).sum().backward()
    np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_bag_errors():
    w = fabric.randn(3, 2)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(fabric.tensor([1, 2]), w)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(fabric.tensor([1, 2]), w, fabric.tensor([1]))
    with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater than input's length 2"):
        F.embedding_bag(fabric.tensor([1, 2]), w, fabric.tensor([0, 3]))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(fabric.tensor([[1, 2]]), w, fabric.tensor([0]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(fabric.tensor([1, 2]), w, fabric.tensor([0]), mode="foo")
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(fabric.tensor([1, 2]), w, fabric.tensor([0]), mode="max", per_sample_weights=fabric.ones(2))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        F.embedding_bag(fabric.tensor([1, 2]), w, fabric.tensor([0]), per_sample_weights=fabric.ones(3))


def test_one_hot():
    np.testing.assert_array_equal(F.one_hot(fabric.tensor([0, 2, 1])).numpy(), np.eye(3, dtype=np.int64)[[0, 2, 1]])
    assert F.one_hot(fabric.tensor([[1]]), 4).shape == (1, 1, 4) and F.one_hot(fabric.tensor([1]), 4).dtype == \
        fabric.int64
    assert F.one_hot(fabric.zeros(0, dtype=fabric.int64), 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(fabric.tensor([1.0]))
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(fabric.tensor([-1]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(fabric.tensor([3]), 3)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(fabric.zeros(0, dtype=fabric.int64))


# --- normalisation ----------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("momentum", [0.1, None, 0.5])
def test_batchnorm_running_stats_over_steps_equal_torch(momentum):
    import torch

    f, t = nn.BatchNorm2d(3, momentum=momentum), torch.nn.BatchNorm2d(3, momentum=momentum)
    for _ in range(4):
        fx, tx = _pair((4, 3, 2, 2))
        fy, ty = f(fx), t(tx)
        np.testing.assert_allclose(_np(fy), _np(ty), rtol=1e-5, atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(f, name).numpy(), getattr(t, name).numpy(), rtol=1e-6, atol=1e-7)
    f.eval(), t.eval()
    fx, tx = _pair((2, 3, 2, 2))
    np.testing.assert_allclose(_np(f(fx)), _np(t(tx)), rtol=1e-5, atol=1e-5)


def test_batch_norm_functional_errors_and_versions():
    x = fabric.randn(4, 3)
    rm, rv = fabric.zeros(3), fabric.ones(3)
    v = rm._version
    F.batch_norm(x, rm, rv, training=True)
    assert rm._version > v
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(x, fabric.zeros(4), fabric.ones(4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(fabric.randn(1, 3), rm, rv, training=True)
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(3)(fabric.randn(2, 3, 4))
    assert F.batch_norm(fabric.randn(0, 3), rm, rv, training=False).shape == (0, 3)


def test_layer_norm_errors_and_half():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], "
                                           r"but got input of size\[2, 3\]"):
        F.layer_norm(fabric.ones(2, 3), (4,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(fabric.ones(2, 3), (3,), fabric.ones(4))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        F.layer_norm(fabric.ones(2, 3), 3)
    x = fabric.randn(3, 8)
    y16 = F.layer_norm(x.half(), (8,))
    assert y16.dtype == fabric.float16
    np.testing.assert_allclose(y16.float().numpy(), F.layer_norm(x, (8,)).numpy(), atol=2e-3)


@pytest.mark.torch
def test_rms_norm_default_eps_equals_torch():
    import torch

    fx, tx = _pair((3, 5))
    np.testing.assert_allclose(_np(F.rms_norm(fx, (5,))), _np(torch.nn.functional.rms_norm(tx, (5,))), rtol=1e-6)
    fx64 = fabric.from_numpy(np.full((2, 4), 1e-9))
    tx64 = torch.from_numpy(np.full((2, 4), 1e-9))
    np.testing.assert_allclose(_np(F.rms_norm(fx64, (4,))), _np(torch.nn.functional.rms_norm(tx64, (4,))),
                               rtol=1e-10)


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        F.group_norm(fabric.ones(2, 3, 4), 2)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(fabric.ones(2, 4, 4), 2, fabric.ones(3))
    with pytest.raises(ValueError, match="num_channels \\(3\\) must be divisible by num_groups \\(2\\)"):
        nn.GroupNorm(2, 3)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.group_norm(fabric.ones(1, 2), 2)


def test_instance_norm_checks():
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(fabric.ones(2, 3, 1))
    with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features"):
        nn.InstanceNorm1d(3, affine=True)(fabric.ones(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(fabric.randn(2, 4, 5))
    m = nn.InstanceNorm1d(3, track_running_stats=True)
    m(fabric.randn(2, 3, 5))
    assert float(m.running_mean.abs().sum()) > 0
    m.eval()
    assert m(fabric.randn(2, 3, 5)).shape == (2, 3, 5)


@pytest.mark.torch
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (float("inf"), -1), (3.0, 1), (0.5, 1)])
def test_normalize_equals_torch(p, dim):
    import torch

    fx, tx = _pair((3, 4))
    fy = F.normalize(fx, p=p, dim=dim)
    ty = torch.nn.functional.normalize(tx, p=p, dim=dim)
    np.testing.assert_allclose(_np(fy), _np(ty), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal((3, 4)).astype(np.float32)
    fy.backward(fabric.from_numpy(g.copy()))
    ty.backward(torch.from_numpy(g.copy()))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_normalize_zero_vector_and_gradcheck():
    x = fabric.zeros(2, 3, requires_grad=True)
    y = F.normalize(x)
    y.sum().backward()
    assert np.isfinite(x.grad.numpy()).all() and float(y.abs().sum()) == 0
    x = fabric.from_numpy(rng.standard_normal((2, 3))).requires_grad_()
    for p in (2.0, 1.0, 3.0):
        assert fabric.autograd.gradcheck(lambda t, p=p: F.normalize(t, p=p), (x,))
    assert fabric.autograd.gradgradcheck(lambda t: F.normalize(t), (x,))


@pytest.mark.torch
def test_local_response_norm_and_bilinear_equal_torch():
    import torch

    fx, tx = _pair((2, 6, 3))
    np.testing.assert_allclose(_np(F.local_response_norm(fx, 4, 0.5, 0.6, 1.5)),
                               _np(torch.nn.functional.local_response_norm(tx, 4, 0.5, 0.6, 1.5)), rtol=1e-5)
    f1, t1 = _pair((2, 3))
    f2, t2 = _pair((2, 4))
    fw, tw = _pair((5, 3, 4))
    np.testing.assert_allclose(_np(F.bilinear(f1, f2, fw)), _np(torch.nn.functional.bilinear(t1, t2, tw)),
                               rtol=1e-5, atol=1e-6)


def test_linear_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(6x4 and 5x2\)"):
        F.linear(fabric.ones(2, 3, 4), fabric.ones(2, 5))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: double != float"):
        F.linear(fabric.ones(3, 4, dtype=fabric.float64), fabric.ones(2, 4))
    with pytest.raises(RuntimeError, match="The expanded size of the tensor \\(2\\) must match"):
        F.linear(fabric.ones(3, 4), fabric.ones(2, 4), fabric.ones(3))
    assert F.linear(fabric.ones(3, 4), fabric.ones(4)).shape == (3,)
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input batch dimensions do not match at dim 0: got 3 and 2"):
        F.bilinear(fabric.ones(3, 4), fabric.ones(2, 5), fabric.ones(6, 4, 5))


def test_fused_and_graph_backward_agree_for_norms():
    """The fused array backward (plain backward) equals the Tensor-op backward (create_graph)."""
    x = fabric.from_numpy(rng.standard_normal((4, 3, 5))).requires_grad_()
    w = fabric.from_numpy(rng.standard_normal(5)).requires_grad_()
    b = fabric.from_numpy(rng.standard_normal(5)).requires_grad_()
    g = fabric.from_numpy(rng.standard_normal((4, 3, 5)))
    for fn, args in ((F.layer_norm, ((5,), w, b)), (F.rms_norm, ((5,), w))):
        y = fn(x, *args)
        fast = fabric.autograd.grad(y, [x, w], g, retain_graph=True)
        slow = fabric.autograd.grad(y, [x, w], g, create_graph=True)
        for a, c in zip(fast, slow):
            np.testing.assert_allclose(a.numpy(), c.detach().numpy(), rtol=1e-10, atol=1e-12)
            assert c.requires_grad


# --- nn.utils ---------------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 0.5, 3])
def test_clip_grad_norm_equals_torch(norm_type):
    import torch

    grads = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,), (2, 2, 2)]]
    fps = [nn.Parameter(fabric.zeros(g.shape)) for g in grads]
    tps = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for fp, tp, g in zip(fps, tps, grads):
        fp.grad, tp.grad = fabric.from_numpy(g.copy()), torch.from_numpy(g.copy())
    fn = nn.utils.clip_grad_norm_(fps, 0.7, norm_type=norm_type)
    tn = torch.nn.utils.clip_grad_norm_(tps, 0.7, norm_type=norm_type)
    np.testing.assert_allclose(fn.numpy(), tn.numpy(), rtol=1e-5)
    assert fn.dtype == fabric.float32 and fn.shape == ()
    for fp, tp in zip(fps, tps):
        np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_behaviour():
    p = nn.Parameter(fabric.ones(3))
    p.grad = fabric.tensor([0.1, 0.1, 0.1])
    total = nn.utils.clip_grad_norm_(p, 10.0)  # below max_norm: unchanged
    assert abs(float(total) - math.sqrt(0.03)) < 1e-6
    np.testing.assert_allclose(p.grad.numpy(), 0.1, rtol=1e-6)
    p.grad = fabric.tensor([float("nan"), 1.0, 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert float(nn.utils.clip_grad_norm_([], 1.0)) == 0.0
    q = nn.Parameter(fabric.ones(2))
    assert float(nn.utils.clip_grad_norm_([q], 1.0)) == 0.0  # no gradients at all
    r = nn.Parameter(fabric.ones(2, dtype=fabric.float64))
    r.grad = fabric.tensor([3.0, 4.0], dtype=fabric.float64)
    s = nn.Parameter(fabric.ones(1))
    s.grad = fabric.tensor([12.0])
    total = nn.utils.clip_grad_norm_([r, s], 1.0)  # mixed dtypes: one norm per group, combined
    assert abs(float(total) - 13.0) < 1e-5
    assert abs(float((r.grad * r.grad).sum()) + float(s.grad[0]) ** 2 - 1.0) < 1e-5


@pytest.mark.torch
def test_clip_grad_value_and_vector_conversion_equal_torch():
    import torch

    g = rng.standard_normal((4, 3)).astype(np.float32) * 3
    fp, tp = nn.Parameter(fabric.zeros(4, 3)), torch.nn.Parameter(torch.zeros(4, 3))
    fp.grad, tp.grad = fabric.from_numpy(g.copy()), torch.from_numpy(g.copy())
    assert nn.utils.clip_grad_value_(fp, 1.5) is None
    torch.nn.utils.clip_grad_value_(tp, 1.5)
    np.testing.assert_array_equal(fp.grad.numpy(), tp.grad.numpy())
    fabric.manual_seed(0)
    torch.manual_seed(0)
    fm, tm = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    fv, tv = nn.utils.parameters_to_vector(fm.parameters()), torch.nn.utils.parameters_to_vector(tm.parameters())
    np.testing.assert_array_equal(_np(fv), _np(tv))
    assert fv.requires_grad
    new = np.arange(8, dtype=np.float32)
    nn.utils.vector_to_parameters(fabric.from_numpy(new.copy()), fm.parameters())
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new.copy()), tm.parameters())
    np.testing.assert_array_equal(_np(fm.weight), _np(tm.weight))
    np.testing.assert_array_equal(_np(fm.bias), _np(tm.bias))
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], fm.parameters())
