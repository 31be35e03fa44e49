"""vmap's batched path: each batching rule against the per-example loop (and torch.func.vmap), counts
that show a rule ran once per batch, the per-op and whole-function fallbacks, composition with grad."""
import numpy as np
import pytest

import fabric
from fabric import exp as bound_exp
from fabric.func import _batched as B
from fabric.func import grad, jacfwd, jacrev, vmap

RS = np.random.RandomState(7)
N = 4  # batch size


def A(*shape):
    return RS.randn(*shape)


def IDX(high, *shape):
    return RS.randint(0, high, size=shape).astype(np.int64)


def _lib_tensor(lib, a):
    return lib.tensor(a) if isinstance(a, np.ndarray) else a


# (name, f(lib, *inputs), inputs as numpy arrays (None: not a tensor), in_dims)
CASES = [
    ("exp", lambda L, x: L.exp(x), [A(N, 3)], 0),
    ("sin_method", lambda L, x: x.sin() * x.cos(), [A(N, 2, 3)], 0),
    ("hypot_table", lambda L, x, y: L.hypot(x, y), [A(N, 3), A(2, 3)], (0, None)),
    ("add_broadcast", lambda L, x, y: x + y, [A(N, 3), A(N, 2, 3)], 0),
    ("mul_unbatched_higher_rank", lambda L, x, w: x * w, [A(N, 3), A(4, 1, 3)], (0, None)),
    ("scalar_ops", lambda L, x: (2 - x) / (1 + x ** 2) + 2 ** x - 3 * x, [A(N, 3)], 0),
    ("rsub_rdiv", lambda L, x, w: w - x + w / (x.abs() + 1), [A(N, 3), A(3)], (0, None)),
    ("compare_where", lambda L, x, y: L.where(x > y, x, y * 2), [A(N, 3), A(N, 3)], 0),
    ("clamp_maximum", lambda L, x, y: L.clamp(x, -0.5, 0.5) + L.maximum(x, y), [A(N, 3), A(3)], (0, None)),
    ("in_dim_1", lambda L, x: x.exp().sum(), [A(3, N)], 1),
    ("sum_all", lambda L, x: x.sum(), [A(N, 2, 3)], 0),
    ("sum_dims", lambda L, x: x.sum((0, 1), keepdim=True) + L.sum(x, -1, keepdim=True), [A(N, 2, 3)], 0),
    ("mean_var_std", lambda L, x: x.mean(0) + x.var(1).sum() + x.std(), [A(N, 2, 3)], 0),
    ("max_min", lambda L, x: (x.max(), x.max(1).values, x.min(dim=0).indices, x.amax(1, keepdim=True)),
     [A(N, 2, 3)], 0),
    ("argmax", lambda L, x: (x.argmax(), x.argmax(1), x.argmin(0)), [A(N, 2, 3)], 0),
    ("logsumexp_prod", lambda L, x: L.logsumexp(x, 1) + x.prod(1), [A(N, 2, 3)], 0),
    ("scans", lambda L, x: x.cumsum(0) + x.cumprod(-1), [A(N, 2, 3)], 0),
    ("all_any", lambda L, x: (x > 0).all(), [A(N, 3)], 0),
    ("softmax", lambda L, x: x.softmax(-1) + L.softmax(x, 0) + L.nn.functional.log_softmax(x, dim=1),
     [A(N, 2, 3)], 0),
    ("view_reshape", lambda L, x: (x.view(-1), x.reshape(3, 2), x.view(6, 1), x.flatten()), [A(N, 2, 3)], 0),
    ("view_as", lambda L, x, y: x.view_as(y) + y.reshape_as(x).reshape(3, 2), [A(N, 2, 3), A(N, 3, 2)], 0),
    ("permute_transpose", lambda L, x: (x.permute(2, 0, 1), x.transpose(0, 2), x.swapaxes(1, 2), x.mT),
     [A(N, 2, 3, 4)], 0),
    ("t_T", lambda L, x: (x.t(), x.T), [A(N, 2, 3)], 0),
    ("unsqueeze_squeeze", lambda L, x: (x.unsqueeze(0), x.unsqueeze(-1), x.squeeze(), x.squeeze(1)),
     [A(N, 2, 1, 3)], 0),
    ("expand_repeat", lambda L, x: (x.expand(4, 2, 3), x.repeat(2, 1, 2), x.expand_as(L.ones(5, 2, 3))),
     [A(N, 2, 1)], 0),
    ("movedim_flip", lambda L, x: (x.movedim(0, 2), x.flip(0), x.flip([1, 2])), [A(N, 2, 3, 4)], 0),
    ("select_narrow", lambda L, x: (x.select(1, 0), x.narrow(0, 1, 1)), [A(N, 2, 3)], 0),
    ("unbind_split_chunk", lambda L, x: (*x.unbind(1), *x.split(1, dim=0), *x.chunk(3, -1)), [A(N, 2, 3)], 0),
    ("cat_stack", lambda L, x, y: (L.cat([x, y], 1), L.stack([x, y]), L.stack((x, y), -1)),
     [A(N, 2, 3), A(2, 3)], (0, None)),
    ("getitem", lambda L, x: (x[0], x[:, 1:], x[..., None], x[1, ::2], x[-1, 0]), [A(N, 2, 3)], 0),
    ("getitem_index_tensor", lambda L, x, i: x[i], [A(N, 5, 3), IDX(5, 4)], (0, None)),
    ("matmul_mat_mat", lambda L, x, w: x @ w, [A(N, 2, 3), A(3, 4)], (0, None)),
    ("matmul_vec_mat", lambda L, x, w: x @ w, [A(N, 3), A(5, 3, 4)], (0, None)),
    ("matmul_mat_vec", lambda L, w, x: w @ x, [A(4, 3), A(N, 3)], (None, 0)),
    ("matmul_both", lambda L, x, y: (x @ y, L.matmul(x[0], y)), [A(N, 2, 3), A(N, 3, 2)], 0),
    ("mm_mv_dot", lambda L, m, v: (L.mm(m, m.T), L.mv(m, v), L.dot(v, v), L.outer(v, v)),
     [A(N, 3, 3), A(N, 3)], 0),
    ("bmm", lambda L, x, y: L.bmm(x, y), [A(N, 2, 2, 3), A(2, 3, 4)], (0, None)),
    ("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b), [A(N, 3), A(4, 3), A(4)], (0, None, None)),
    ("linear_batched_weight", lambda L, x, w, b: L.nn.functional.linear(x, w, b), [A(2, 3), A(N, 4, 3), A(N, 4)],
     (None, 0, 0)),
    ("activations", lambda L, x: L.nn.functional.relu(x) + L.nn.functional.gelu(x) + L.nn.functional.silu(x)
     + L.nn.functional.leaky_relu(x, 0.2) + L.relu(x), [A(N, 3)], 0),
    ("mse_loss", lambda L, x, y: (L.nn.functional.mse_loss(x, y), L.nn.functional.l1_loss(x, y, reduction="sum"),
                                  L.nn.functional.mse_loss(x, y, reduction="none")), [A(N, 2, 3), A(2, 3)], (0, None)),
    ("cross_entropy_1d", lambda L, x, t: L.nn.functional.cross_entropy(x, t), [A(N, 5), IDX(5, N)], 0),
    ("cross_entropy_2d", lambda L, x, t: (L.nn.functional.cross_entropy(x, t),
                                          L.nn.functional.cross_entropy(x, t, reduction="none", label_smoothing=0.1)),
     [A(N, 3, 5), IDX(5, N, 3)], 0),
    ("cross_entropy_probs", lambda L, x, p: L.nn.functional.cross_entropy(x, p.softmax(-1)), [A(N, 3, 5), A(N, 3, 5)],
     0),
    ("conv2d", lambda L, x, w: L.nn.functional.conv2d(x, w, padding=1), [A(N, 2, 3, 5, 5), A(4, 3, 3, 3)],
     (0, None)),
    ("conv2d_unbatched_input", lambda L, x, w: L.nn.functional.max_pool2d(L.nn.functional.conv2d(x, w), 2),
     [A(N, 3, 6, 6), A(4, 3, 3, 3)], (0, None)),
    ("conv_batched_weight", lambda L, x, w, b: (L.nn.functional.conv2d(x, w, b, padding=1),
                                               L.nn.functional.conv1d(x[0, :, 0], w[:, :, 0], b, groups=1)),
     [A(N, 2, 3, 5, 5), A(N, 4, 3, 3, 3), A(4)], (0, 0, None)),
    ("conv_grouped_batched_weight", lambda L, x, w: L.nn.functional.conv2d(x, w, stride=2, groups=2),
     [A(2, 4, 6, 6), A(N, 4, 2, 3, 3)], (None, 0)),
    ("layer_norm", lambda L, x, w: L.nn.functional.layer_norm(x, (3,), w), [A(N, 2, 3), A(3)], (0, None)),
    ("norms", lambda L, x: (x.norm(), x.norm(dim=1), L.linalg.vector_norm(x, 1, dim=(0, 1)),
                            L.nn.functional.normalize(x, dim=0), x.var(0, unbiased=False)), [A(N, 2, 3)], 0),
    ("einsum", lambda L, x, w: (L.einsum("ij,jk->ik", x, w), L.einsum("ij,ij->i", x, x), L.einsum("ii->i", x[:, :2])),
     [A(N, 2, 3), A(3, 4)], (0, None)),
    ("einsum_batched_both", lambda L, x, w: L.einsum("...j,jk->...k", x, w), [A(N, 2, 3), A(N, 3, 4)], 0),
    ("gather_index_select", lambda L, x, i: (x.gather(1, i), x.index_select(1, L.tensor([0, 4, 2])), L.take_along_dim(x, i, 1)),
     [A(N, 2, 5), IDX(5, N, 2, 3)], 0),
    ("nll_one_hot_pad", lambda L, x, t: (L.nn.functional.nll_loss(x.log_softmax(-1), t),
                                         L.nn.functional.one_hot(t, 5), L.nn.functional.pad(x, (1, 2))),
     [A(N, 3, 5), IDX(5, N, 3)], 0),
    ("per_example_affine", lambda L, x, w, b, e, i: (L.nn.functional.layer_norm(x, (3,), w, b),
                                                    L.nn.functional.embedding(i, e),
                                                    L.nn.functional.dropout(x, 0.5, training=False)),
     [A(N, 2, 3), A(N, 3), A(3), A(N, 6, 3), IDX(6, 4)], (0, 0, None, 0, None)),
    ("likes", lambda L, x: L.zeros_like(x) + L.ones_like(x) * x + L.full_like(x, 2.0), [A(N, 3)], 0),
    ("detach_clone_to", lambda L, x: x.detach().clone().contiguous().float().double() + x.to(L.float64),
     [A(N, 3)], 0),
]


def _per_example(fn, inputs, in_dims):
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(inputs)
    n = next(x.shape[d] for x, d in zip(inputs, dims) if d is not None)
    outs = [fn(*[x if d is None else x.select(d, i) for x, d in zip(inputs, dims)]) for i in range(n)]
    if isinstance(outs[0], tuple):
        return tuple(fabric.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return fabric.stack(outs)


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("name,f,inputs,in_dims", CASES, ids=[c[0] for c in CASES])
def test_rule_matches_per_example(name, f, inputs, in_dims):
    xs = [_lib_tensor(fabric, a) for a in inputs]
    before = dict(B.calls)
    out = vmap(lambda *a: f(fabric, *a), in_dims=in_dims)(*xs)
    assert B.calls["per_example"] == before["per_example"], "func fell back to running per example"
    assert B.calls["fallback"] == before["fallback"], "an op ran through the per-op fallback"
    assert B.calls["rule"] > before["rule"]
    ref = _per_example(lambda *a: f(fabric, *a), xs, in_dims)
    for o, r in zip(_flat(out), _flat(ref)):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("name,f,inputs,in_dims", CASES, ids=[c[0] for c in CASES])
def test_rule_matches_torch_vmap(name, f, inputs, in_dims):
    import torch

    out = vmap(lambda *a: f(fabric, *a), in_dims=in_dims)(*[_lib_tensor(fabric, a) for a in inputs])
    ref = torch.func.vmap(lambda *a: f(torch, *a), in_dims=in_dims)(*[_lib_tensor(torch, a) for a in inputs])
    for o, r in zip(_flat(out), _flat(ref)):
        assert tuple(o.shape) == tuple(r.shape)
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-10, atol=1e-12)


def test_a_rule_runs_once_per_batch():
    """One dispatch per op for the whole batch, whatever the batch size."""
    for n in (2, 50):
        x = fabric.randn(n, 8, dtype=fabric.float64)
        before = dict(B.calls)
        vmap(lambda v: (v.exp() * 2).sum())(x)
        assert B.calls["rule"] - before["rule"] == 3
        assert B.calls["fallback"] == before["fallback"] and B.calls["per_example"] == before["per_example"]


def test_names_imported_into_funcs_module_are_dispatched():
    x = fabric.tensor(A(N, 3))
    before = dict(B.calls)
    out = vmap(lambda v: bound_exp(v).sum())(x)   # ``from fabric import exp``: patched in this module's globals
    assert B.calls["per_example"] == before["per_example"] and B.calls["rule"] - before["rule"] == 2
    np.testing.assert_allclose(out.numpy(), np.exp(x.numpy()).sum(1))
    assert bound_exp is fabric.ops.exp   # restored afterwards


def test_op_without_rule_falls_back_per_op():
    x = fabric.tensor(A(N, 3, 3))
    before = dict(B.calls)
    out = vmap(lambda m: fabric.linalg.det(m).exp() + m.sum())(x)
    assert B.calls["fallback"] - before["fallback"] == 1            # det, once, inside the batched call
    assert B.calls["per_example"] == before["per_example"]
    ref = np.exp(np.linalg.det(x.numpy())) + x.numpy().sum((1, 2))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


def test_inplace_ops_inside_vmap():
    x = fabric.tensor(A(N, 3))

    def f(v):
        y = v.clone()
        assert y.mul_(2) is y
        y += 1
        y.clamp_(-1.5, 1.5)
        y[0] = 0.0           # setitem: the per-op fallback writes through each example's slice
        return y

    before = dict(B.calls)
    out = vmap(f)(x)
    assert B.calls["fallback"] - before["fallback"] == 1 and B.calls["per_example"] == before["per_example"]
    ref = np.clip(2 * x.numpy() + 1, -1.5, 1.5)
    ref[:, 0] = 0
    np.testing.assert_allclose(out.numpy(), ref)
    # an unbatched tensor written with batched values: PyTorch raises; fabric runs func per example
    np.testing.assert_allclose(vmap(lambda v: fabric.zeros(3, dtype=fabric.float64).add_(v))(x).numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="vmapped over but `self` not being vmapped"):
        vmap(lambda u: vmap(lambda v: u.add_(v))(x))(x.clone())


def test_data_dependent_python_runs_per_example():
    x = fabric.tensor(A(N, 3))
    before = B.calls["per_example"]
    out = vmap(lambda v: v * 2 if v.sum().item() > 0 else v - 1)(x)
    assert B.calls["per_example"] == before + 1
    ref = np.stack([v * 2 if v.sum() > 0 else v - 1 for v in x.numpy()])
    np.testing.assert_allclose(out.numpy(), ref)


def test_per_sample_gradients():
    W, b = fabric.tensor(A(5, 3)), fabric.tensor(A(5))
    x, y = fabric.tensor(A(N, 3)), fabric.tensor(IDX(5, N))

    def loss(W, b, xi, yi):
        h = fabric.nn.functional.linear(xi, W, b).relu()
        return fabric.nn.functional.cross_entropy(h, yi)

    before = dict(B.calls)
    gW, gb = vmap(grad(loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(W, b, x, y)
    assert B.calls["per_example"] == before["per_example"] and B.calls["fallback"] == before["fallback"]
    for i in range(N):
        rW, rb = grad(loss, argnums=(0, 1))(W, b, x[i], y[i])
        np.testing.assert_allclose(gW[i].numpy(), rW.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gb[i].numpy(), rb.numpy(), rtol=1e-12)


def test_per_sample_gradients_of_a_conv_net_run_batched():
    fabric.manual_seed(0)
    net = fabric.nn.Sequential(fabric.nn.Conv2d(1, 3, 3), fabric.nn.ReLU(), fabric.nn.MaxPool2d(2),
                               fabric.nn.Flatten(), fabric.nn.Linear(3 * 3 * 3, 4)).double()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x, y = fabric.tensor(A(N, 1, 8, 8)), fabric.tensor(IDX(4, N))

    def loss(p, xi, yi):
        return fabric.nn.functional.cross_entropy(fabric.func.functional_call(net, p, (xi.unsqueeze(0),)),
                                                  yi.unsqueeze(0))

    before = dict(B.calls)
    g = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)   # conv with per-example (expanded) weights
    assert B.calls["per_example"] == before["per_example"] and B.calls["fallback"] == before["fallback"]
    for i in range(N):
        ref = grad(loss)(params, x[i], y[i])
        for k in ref:
            np.testing.assert_allclose(g[k][i].numpy(), ref[k].numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.torch
def test_per_sample_gradients_against_torch():
    import torch

    Wn, xn, yn = A(5, 3), A(N, 2, 3), IDX(5, N, 2)

    def loss(L):
        return lambda W, x, y: L.nn.functional.cross_entropy(x @ W.T, y)

    g = vmap(grad(loss(fabric)), in_dims=(None, 0, 0))(fabric.tensor(Wn), fabric.tensor(xn), fabric.tensor(yn))
    r = torch.func.vmap(torch.func.grad(loss(torch)), in_dims=(None, 0, 0))(torch.tensor(Wn), torch.tensor(xn),
                                                                          torch.tensor(yn))
    np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-10)
    h = vmap(jacrev(jacrev(lambda v: (v.sin() * v.sum()).sum())))(fabric.tensor(xn[:, 0]))
    hr = torch.func.vmap(torch.func.hessian(lambda v: (v.sin() * v.sum()).sum()))(torch.tensor(xn[:, 0]))
    np.testing.assert_allclose(h.numpy(), hr.numpy(), rtol=1e-10)


def test_transforms_inside_and_around_vmap():
    x = fabric.tensor(A(N, 3))
    f = lambda v: (v.exp() * v.sum()).sum()
    jf = vmap(jacfwd(lambda v: v.exp() * v.sum()))(x)
    jr = vmap(jacrev(lambda v: v.exp() * v.sum()))(x)
    np.testing.assert_allclose(jf.numpy(), jr.numpy(), rtol=1e-12)
    gv = grad(lambda z: vmap(f)(z).sum())(x)
    np.testing.assert_allclose(gv.numpy(), vmap(grad(f))(x).numpy(), rtol=1e-12)
    xr = x.detach().requires_grad_()
    vmap(lambda v: (v ** 3).sum())(xr).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), 3 * x.numpy() ** 2, rtol=1e-12)


def test_nested_vmap_and_chunks():
    a, b = fabric.tensor(A(3, 2)), fabric.tensor(A(5, 2))
    before = dict(B.calls)
    out = vmap(vmap(lambda u, v: (u * v).sum() + u @ v, in_dims=(None, 0)), in_dims=(0, None))(a, b)
    assert B.calls["per_example"] == before["per_example"] and B.calls["fallback"] == before["fallback"]
    np.testing.assert_allclose(out.numpy(), 2 * a.numpy() @ b.numpy().T, rtol=1e-12)
    x = fabric.tensor(A(7, 3))
    np.testing.assert_allclose(vmap(lambda v: v.softmax(0), chunk_size=3)(x).numpy(), vmap(lambda v: v.softmax(0))(
        x).numpy())
    pairs = vmap(vmap(grad(lambda u, v: (u * v).sum().sin()), in_dims=(None, 0)), in_dims=(0, None))(a, b)  # grad at two levels
    ref = np.cos((a.numpy()[:, None] * b.numpy()[None]).sum(-1))[..., None] * b.numpy()[None]
    np.testing.assert_allclose(pairs.numpy(), ref, rtol=1e-12)


def test_dims_chunks_and_kwargs():
    x = fabric.tensor(A(3, N, 2))

    def f(v, scale=1.0):
        return {"a": v * scale, "b": (v.sum(), v.exp())}

    full = vmap(f, in_dims=-2, out_dims={"a": -1, "b": (0, 1)})(x, scale=2.0)
    chunked = vmap(f, in_dims=-2, out_dims={"a": -1, "b": (0, 1)}, chunk_size=3)(x, scale=2.0)
    xs = x.numpy().transpose(1, 0, 2)   # examples first
    np.testing.assert_allclose(full["a"].numpy(), 2 * x.numpy().transpose(0, 2, 1))
    np.testing.assert_allclose(full["b"][0].numpy(), xs.sum((1, 2)))
    np.testing.assert_allclose(full["b"][1].numpy(), np.exp(xs).transpose(1, 0, 2))
    for k in ("a",):
        np.testing.assert_allclose(chunked[k].numpy(), full[k].numpy())
    for i in range(2):
        np.testing.assert_allclose(chunked["b"][i].numpy(), full["b"][i].numpy())


def test_randomness_same_replays_the_generator_per_example():
    x = fabric.ones(N, 1000)
    fabric.manual_seed(3)
    out = vmap(lambda v: fabric.nn.functional.dropout(v, 0.5), randomness="same")(x)
    assert all(np.array_equal(out[0].numpy(), out[i].numpy()) for i in range(N))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda v: fabric.nn.functional.dropout(v, 0.5))(x)


def test_batched_tensor_inside_func():
    seen = {}

    def f(v):
        seen["type"], seen["shape"], seen["dim"] = type(v).__name__, v.shape, v.dim()
        return v.data * 2   # (PyTorch refuses .data under vmap; fabric gives the detached batched alias)

    assert vmap(f, in_dims=1)(fabric.ones(2, N, 3)).tolist() == [[[2.0] * 3] * 2] * N
    assert seen == {"type": "BatchedTensor", "shape": fabric.Size([2, 3]), "dim": 2}
