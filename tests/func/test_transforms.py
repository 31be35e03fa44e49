"""fabric.func transforms: values against closed forms and finite differences,
composition, errors; against torch.func where installed."""
import numpy as np
import pytest

import fabric
from fabric import func as ff

RS = np.random.RandomState(0)


def t64(a, **kw):
    return fabric.tensor(np.asarray(a, dtype=np.float64), **kw)


def f_vec(x):
    return (x.sin() * x.exp()).sum()


def test_grad_closed_form_and_no_requires_grad():
    x = t64([0.1, 0.5, -1.2])
    g = ff.grad(f_vec)(x)
    xn = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.cos(xn) * np.exp(xn) + np.sin(xn) * np.exp(xn), rtol=1e-12)
    assert not g.requires_grad and not x.requires_grad


def test_grad_argnums_pytree_and_aux():
    def f(a, params, c):
        out = (a * params["w"]).sum() + (params["b"] ** 2).sum() + c
        return out, {"a2": a * 2}

    a = t64([1.0, 2.0])
    params = {"w": t64([3.0, 4.0]), "b": t64([0.5])}
    (ga, gp), aux = ff.grad(f, argnums=(0, 1), has_aux=True)(a, params, 1.0)
    np.testing.assert_allclose(ga.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(gp["w"].numpy(), [1.0, 2.0])
    np.testing.assert_allclose(gp["b"].numpy(), [1.0])
    np.testing.assert_allclose(aux["a2"].numpy(), [2.0, 4.0])
    g, (v, aux) = ff.grad_and_value(f, argnums=1, has_aux=True)(a, params, 1.0)
    assert v.item() == 3 + 8 + 0.25 + 1


def test_grad_unused_input_gives_zeros():
    g = ff.grad(lambda x, y: (x * 2).sum(), argnums=1)(t64([1.0]), t64([5.0, 6.0]))
    np.testing.assert_allclose(g.numpy(), [0.0, 0.0])


def test_grad_errors():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"):
        ff.grad(lambda x: x * 2)(t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor"):
        ff.grad(lambda x: 3.0)(t64([1.0]))
    with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
        ff.grad(lambda x: x.sum(), has_aux=True)(t64([1.0]))
    with pytest.raises(RuntimeError, match="Got argnums=2, but only 1 positional inputs"):
        ff.grad(lambda x: x.sum(), argnums=2)(t64([1.0]))
    with pytest.raises(RuntimeError, match="floating point"):
        ff.grad(lambda x: x.sum())(fabric.tensor([1, 2]))


def test_grad_of_grad_and_closure_stays_differentiable():
    x = t64(0.7)
    gg = ff.grad(ff.grad(lambda x: x.sin() * x))(x)   # d2/dx2 (x sin x) = 2 cos x - x sin x
    np.testing.assert_allclose(gg.item(), 2 * np.cos(0.7) - 0.7 * np.sin(0.7), rtol=1e-12)
    w = t64([2.0], requires_grad=True)
    g = ff.grad(lambda x: (x * x * w).sum())(t64([3.0]))   # 2 x w: still differentiable in w
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [6.0])


def test_vjp():
    x = t64([1.0, 2.0, 3.0])
    out, fn = ff.vjp(lambda x: (x ** 2, x.sum()), x)
    (g,) = fn((t64([1.0, 1.0, 1.0]), t64(2.0)))
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy() + 2)
    (g2,) = fn((t64([0.0, 1.0, 0.0]), t64(0.0)))   # vjp_fn can be called again
    np.testing.assert_allclose(g2.numpy(), [0.0, 4.0, 0.0])
    out, fn, aux = ff.vjp(lambda x: (x.exp(), x), x, has_aux=True)
    assert not out.requires_grad and aux is not None
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fn(t64([1.0]))


def _numeric_jac(f, x, eps=1e-6):
    xn = x.numpy().astype(np.float64)
    base = f(t64(xn)).numpy()
    jac = np.zeros(base.shape + xn.shape)
    for idx in np.ndindex(*xn.shape):
        xp, xm = xn.copy(), xn.copy()
        xp[idx] += eps
        xm[idx] -= eps
        jac[(...,) + idx] = (f(t64(xp)).numpy() - f(t64(xm)).numpy()) / (2 * eps)
    return jac


def g_mat(x):
    return ((x @ x.T).tanh() @ x) * x.sum(0)


@pytest.mark.parametrize("shape", [(3,), (2, 3), ()])
def test_jacrev_jacfwd_match_finite_differences(shape):
    x = t64(RS.randn(*shape))

    def f(x):
        return x.exp() * x.sin() if x.dim() < 2 else g_mat(x)

    num = _numeric_jac(f, x)
    for jac in (ff.jacrev, ff.jacfwd):
        j = jac(f)(x)
        assert tuple(j.shape) == num.shape
        np.testing.assert_allclose(j.numpy(), num, rtol=1e-6, atol=1e-8)


def test_jvp_and_linearize_match_jacobian():
    x = t64(RS.randn(2, 3))
    t = t64(RS.randn(2, 3))
    out, jv = ff.jvp(g_mat, (x,), (t,))
    j = ff.jacrev(g_mat)(x).numpy()
    np.testing.assert_allclose(jv.numpy(), np.tensordot(j, t.numpy(), axes=2), rtol=1e-10)
    np.testing.assert_allclose(out.numpy(), g_mat(x).numpy())
    out2, fn = ff.linearize(g_mat, x)
    np.testing.assert_allclose(fn(t).numpy(), jv.numpy(), rtol=1e-12)
    np.testing.assert_allclose(fn(t * 2).numpy(), 2 * jv.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="same shape"):
        ff.jvp(g_mat, (x,), (t64([1.0]),))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        ff.jvp(g_mat, x, t)


def test_jvp_constant_output_and_has_aux():
    x = t64([1.0, 2.0])
    out, jv = ff.jvp(lambda x: fabric.ones(2, dtype=fabric.float64), (x,), (x,))
    np.testing.assert_allclose(jv.numpy(), [0.0, 0.0])
    out, jv, aux = ff.jvp(lambda x: (x * 3, "meta"), (x,), (x,), has_aux=True)
    np.testing.assert_allclose(jv.numpy(), [3.0, 6.0])
    assert aux == "meta"


def test_jac_argnums_and_multiple_outputs():
    def f(a, b):
        return a * b, (a ** 2).sum()

    a, b = t64([1.0, 2.0]), t64([3.0, 4.0])
    for jac in (ff.jacrev, ff.jacfwd):
        (jab, jbb), (jas, jbs) = jac(f, argnums=(0, 1))(a, b)
        np.testing.assert_allclose(jab.numpy(), np.diag([3.0, 4.0]))
        np.testing.assert_allclose(jbb.numpy(), np.diag([1.0, 2.0]))
        np.testing.assert_allclose(jas.numpy(), [2.0, 4.0])
        np.testing.assert_allclose(jbs.numpy(), [0.0, 0.0])


def test_hessian_and_nested_jacrev():
    def f(x):
        return (x[0] ** 3 * x[1] + x[1].sin())

    x = t64([1.5, 0.5])
    h_expected = np.array([[6 * 1.5 * 0.5, 3 * 1.5 ** 2], [3 * 1.5 ** 2, -np.sin(0.5)]])
    np.testing.assert_allclose(ff.hessian(f)(x).numpy(), h_expected, rtol=1e-12)
    np.testing.assert_allclose(ff.jacrev(ff.jacrev(f))(x).numpy(), h_expected, rtol=1e-12)
    np.testing.assert_allclose(ff.jacfwd(ff.jacfwd(f))(x).numpy(), h_expected, rtol=1e-12)
    assert not ff.hessian(f)(x).requires_grad


def test_transforms_work_under_no_grad():
    with fabric.no_grad():
        g = ff.grad(lambda x: (x * x).sum())(t64([3.0]))
    np.testing.assert_allclose(g.numpy(), [6.0])


def test_functional_call_with_grad_per_sample():
    model = fabric.nn.Linear(3, 1).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = t64(RS.randn(4, 3))
    y = t64(RS.randn(4, 1))

    def loss(p, xi, yi):
        out = ff.functional_call(model, p, (xi.unsqueeze(0),))
        return ((out - yi) ** 2).sum()

    per_sample = ff.vmap(ff.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(4):
        model.zero_grad()
        loss(dict(model.named_parameters()), x[i], y[i]).backward()
        np.testing.assert_allclose(per_sample["weight"][i].numpy(), model.weight.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(per_sample["bias"][i].numpy(), model.bias.grad.numpy(), rtol=1e-12)


def test_stack_module_state():
    fabric.manual_seed(0)
    models = [fabric.nn.Sequential(fabric.nn.Linear(3, 2), fabric.nn.BatchNorm1d(2)) for _ in range(3)]
    params, buffers = ff.stack_module_state(models)
    assert params["0.weight"].shape == (3, 2, 3) and params["0.weight"].requires_grad
    assert params["0.weight"].grad_fn is None
    np.testing.assert_allclose(params["0.weight"][1].detach().numpy(), models[1][0].weight.detach().numpy())
    assert buffers["1.running_mean"].shape == (3, 2)
    with pytest.raises(RuntimeError, match="Expected at least one model"):
        ff.stack_module_state([])
    models[0].eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        ff.stack_module_state(models)


@pytest.mark.torch
def test_against_torch_func():
    import torch
    import torch.func as tf

    xn = RS.randn(2, 3)
    tn = RS.randn(2, 3)

    def make(lib):
        def f(x):
            return (((x @ x.T).tanh() @ x) * x.sum(0)).exp()
        return f

    x = t64(xn)
    xt = torch.tensor(xn)
    fF, fT = make(fabric), make(torch)
    np.testing.assert_allclose(ff.jacrev(fF)(x).numpy(), tf.jacrev(fT)(xt).numpy(), rtol=1e-10)
    np.testing.assert_allclose(ff.jacfwd(fF)(x).numpy(), tf.jacfwd(fT)(xt).numpy(), rtol=1e-10)
    np.testing.assert_allclose(ff.jvp(fF, (x,), (t64(tn),))[1].numpy(),
                               tf.jvp(fT, (xt,), (torch.tensor(tn),))[1].numpy(), rtol=1e-10)

    def s(x):
        return (x.sin() * x).sum() ** 2

    np.testing.assert_allclose(ff.grad(s)(x).numpy(), tf.grad(s)(xt).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ff.hessian(s)(x).numpy(), tf.hessian(s)(xt).numpy(), rtol=1e-10)
    vF = ff.vmap(ff.jacfwd(lambda v: v.sin() * v.sum()))(x)
    vT = tf.vmap(tf.jacfwd(lambda v: v.sin() * v.sum()))(xt)
    np.testing.assert_allclose(vF.numpy(), vT.numpy(), rtol=1e-12)
