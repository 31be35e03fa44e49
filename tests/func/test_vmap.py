"""fabric.func.vmap: in_dims/out_dims (nested), randomness modes, nesting,
composition with grad/jacrev/jacfwd, errors; the list of ops on the
per-example fallback; against torch.func.vmap where installed."""
import numpy as np
import pytest

import fabric
from fabric.func import grad, jacfwd, jacrev, vmap, vmap_fallback_ops

RS = np.random.RandomState(1)


def t64(a, **kw):
    return fabric.tensor(np.asarray(a, dtype=np.float64), **kw)


def test_basic_and_in_dims():
    x = t64(RS.randn(4, 3))
    w = t64(RS.randn(3))
    np.testing.assert_allclose(vmap(lambda v: (v * w).sum())(x).numpy(), x.numpy() @ w.numpy())
    np.testing.assert_allclose(vmap(lambda v, w: v @ w, in_dims=(1, None))(x.T.contiguous(), w).numpy(),
                               x.numpy() @ w.numpy())
    np.testing.assert_allclose(vmap(lambda v: v.sum(), in_dims=-1)(x).numpy(), x.numpy().sum(0))


def test_nested_in_dims_and_out_dims():
    x = t64(RS.randn(2, 3))
    y = t64(RS.randn(3, 2))

    def f(d):
        return {"s": d["a"] + d["b"], "p": (d["a"] * d["b"]).sum()}

    out = vmap(f, in_dims=({"a": 0, "b": 1},))({"a": x, "b": y})
    np.testing.assert_allclose(out["s"].numpy(), x.numpy() + y.numpy().T)
    np.testing.assert_allclose(out["p"].numpy(), (x.numpy() * y.numpy().T).sum(1))
    a, b = vmap(lambda v: (v * 2, v.sum()), out_dims=(1, 0))(x)
    assert a.shape == (3, 2)
    np.testing.assert_allclose(a.numpy(), 2 * x.numpy().T)
    unbatched = vmap(lambda v: (v, w0), out_dims=(0, None))(x) if (w0 := t64([1.0])) is not None else None
    assert unbatched[1] is w0


def test_nested_vmap_matches_outer_product():
    a = t64(RS.randn(3))
    b = t64(RS.randn(4))
    out = vmap(vmap(lambda x, y: x * y, in_dims=(None, 0)), in_dims=(0, None))(a, b)
    np.testing.assert_allclose(out.numpy(), np.outer(a.numpy(), b.numpy()))


def test_randomness_modes():
    x = fabric.zeros(5, 1000)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        vmap(lambda v: v + fabric.rand(1000))(x)
    fabric.manual_seed(0)
    same = vmap(lambda v: v + fabric.rand(1000), randomness="same")(x)
    assert all(np.array_equal(same[0].numpy(), same[i].numpy()) for i in range(5))
    diff = vmap(lambda v: v + fabric.rand(1000), randomness="different")(x)
    assert not np.array_equal(diff[0].numpy(), diff[1].numpy())
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda v: v, randomness="sometimes")


def test_composition_with_autodiff():
    x = t64(RS.randn(3, 2))

    def f(v):
        return (v.sin() * v[0]).sum()

    per = vmap(grad(f))(x)
    for i in range(3):
        np.testing.assert_allclose(per[i].numpy(), grad(f)(x[i]).numpy())
    jf = vmap(jacfwd(lambda v: v.exp() * v.sum()))(x)
    jr = vmap(jacrev(lambda v: v.exp() * v.sum()))(x)
    assert jf.shape == (3, 2, 2)
    np.testing.assert_allclose(jf.numpy(), jr.numpy(), rtol=1e-12)
    xr = x.detach().requires_grad_()
    vmap(lambda v: (v ** 2).sum())(xr).sum().backward()   # gradients flow through vmap
    np.testing.assert_allclose(xr.grad.numpy(), 2 * x.numpy())
    np.testing.assert_allclose(grad(lambda z: vmap(f)(z).sum())(x).numpy(), per.numpy())


def test_errors():
    x = fabric.ones(3, 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes \\[3, 2\\]"):
        vmap(lambda a, b: a + b)(x, fabric.ones(2))
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="at least one input must be mapped"):
        vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a, b: a, in_dims=(0, 0))(x, 3.0)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda a: 3.0)(x)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(lambda: x)()
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        vmap(lambda a: a, in_dims=(0, 0))(x)


def test_fallback_op_list():
    """vmap_fallback_ops lists the registered ops without a batching rule (they run per example)."""
    from fabric.ops._registry import REGISTRY

    ops = vmap_fallback_ops()
    assert set(k for k, d in REGISTRY.items() if d.vmap is None) <= set(ops)
    for name in ("exp", "hypot", "add", "sum", "matmul", "reshape", "cat", "softmax", "einsum",
                 "nn.functional.relu", "nn.functional.cross_entropy", "nn.functional.conv2d", "linalg.vector_norm"):
        assert name not in ops, name   # they have rules
    for name in ("linalg.det", "scatter", "nn.functional.multi_head_attention_forward", "nn.functional.batch_norm"):
        assert name in ops, name


@pytest.mark.torch
def test_against_torch_vmap():
    import torch
    import torch.func as tf

    xn, wn = RS.randn(5, 3, 2), RS.randn(2, 4)

    def f(lib):
        def g(x, w):
            return (x @ w).softmax(-1).sum(0) * x.mean()
        return g

    out = vmap(f(fabric), in_dims=(0, None))(t64(xn), t64(wn))
    ref = tf.vmap(f(torch), in_dims=(0, None))(torch.tensor(xn), torch.tensor(wn))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    out = vmap(f(fabric), in_dims=(2, None), out_dims=1)(t64(xn.transpose(1, 2, 0)), t64(wn))
    ref = tf.vmap(f(torch), in_dims=(2, None), out_dims=1)(torch.tensor(xn.transpose(1, 2, 0)), torch.tensor(wn))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
