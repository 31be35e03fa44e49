"""The autograd engine, grad modes, custom Functions, hooks and checks."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import fabric
from fabric.autograd import Function, gradcheck, gradgradcheck


def leaf(*shape, dtype=fabric.float64, seed=0):
    rng = np.random.default_rng(seed)
    return fabric.from_numpy(rng.standard_normal(shape).astype(np.float64)).to(dtype).requires_grad_()


def test_simple_backward_and_accumulation():
    x = leaf(3)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy() + 3)


def test_value_used_twice_gets_both_contributions():
    x = leaf(2)
    y = x * x + x * 2 + x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy() + 3)


def test_broadcasting_is_undone():
    a = leaf(3, 1)
    b = leaf(4, seed=1)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), b.detach().numpy().sum()))


def test_long_chain_no_recursion_limit():
    x = fabric.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 0.0
    y.sum().backward()
    assert x.grad.item() == 1.0


def test_gradient_argument_and_non_scalar_error():
    x = leaf(3)
    y = x * 2
    with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
        y.backward()
    y.backward(fabric.ones(3, dtype=fabric.float64) * 0.5)
    np.testing.assert_allclose(x.grad.numpy(), [1.0] * 3)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(fabric.ones(2, dtype=fabric.float64))


def test_graph_freed_after_backward():
    x = leaf(3)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * x.detach().numpy() + 2 * x.detach().numpy())


def test_inplace_modification_of_saved_tensor_raises():
    x = leaf(3)
    y = x * 1
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf(3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 1.0
    with fabric.no_grad():
        x.add_(1)
        x[0] = 2.0
    assert x[0].item() == 2.0


def test_inplace_on_non_leaf_is_differentiable():
    x = leaf(3)
    y = x * 2
    y.mul_(x)
    y.add_(1)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy())
    assert type(y.grad_fn).__name__ == "AddBackward0"


def test_setitem_gradients():
    x = leaf(4)
    w = leaf(2, seed=3)
    y = x * 1
    y[1:3] = w * 2
    (y * fabric.arange(4.0, dtype=fabric.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.0, 3.0])
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])


def test_inplace_on_view_of_grad_tensor_rebases_history():
    x = leaf(3, 2)
    y = x * 1
    v = y[0]
    v.mul_(3)  # CopySlices: y's history now includes the in-place op on its row 0
    (y * y).sum().backward()
    expected = 2 * x.detach().numpy()
    expected[0] *= 9
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_autograd_grad_and_allow_unused():
    x = leaf(3)
    z = leaf(3, seed=1)
    y = (x * x).sum()
    (g,) = fabric.autograd.grad(y, x)
    np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy())
    assert x.grad is None
    with pytest.raises(RuntimeError, match="not have been used"):
        fabric.autograd.grad((x * 2).sum(), [x, z])
    gx, gz = fabric.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None
    gx, gz = fabric.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
    assert gz.tolist() == [0.0] * 3


def test_grad_wrt_non_leaf():
    x = leaf(3)
    h = x * 2
    y = (h * h).sum()
    (gh,) = fabric.autograd.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy())


def test_higher_order_gradients():
    x = fabric.tensor([2.0], dtype=fabric.float64, requires_grad=True)
    y = x ** 3
    (g,) = fabric.autograd.grad(y.sum(), x, create_graph=True)
    assert g.requires_grad
    (g2,) = fabric.autograd.grad(g.sum(), x, create_graph=True)
    (g3,) = fabric.autograd.grad(g2.sum(), x)
    assert g.item() == 12.0 and g2.item() == 12.0 and g3.item() == 6.0


def test_backward_create_graph_then_second_backward():
    x = leaf(3)
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy())


def test_backward_inputs_argument():
    a, b = leaf(2), leaf(2, seed=1)
    (a * b).sum().backward(inputs=[a])
    assert a.grad is not None and b.grad is None
    h = a * 3
    (h * b).sum().backward(inputs=[h])
    np.testing.assert_allclose(h.grad.numpy(), b.detach().numpy())


def test_retain_grad_and_hooks():
    x = leaf(3)
    h = x * 2
    h.retain_grad()
    seen = []
    handle = h.register_hook(lambda g: seen.append(g.clone()) or g * 10)
    (h * 1).sum().backward()
    assert h.grad.tolist() == [1.0, 1.0, 1.0]  # retain_grad registered first sees the unmodified grad
    np.testing.assert_allclose(x.grad.numpy(), [20.0] * 3)
    handle.remove()
    x.grad = None
    (x * 2 * 1).sum().backward()
    assert len(seen) == 1


def test_leaf_hook_modifies_grad():
    x = leaf(2)
    x.register_hook(lambda g: g * 0 + 7)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]


def test_post_accumulate_grad_hook():
    x = leaf(2)
    calls = []
    x.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.clone()))
    (x * 3).sum().backward()
    assert calls[0].tolist() == [3.0, 3.0]


def test_nonleaf_grad_access_warns():
    x = leaf(2)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="not a leaf"):
        assert y.grad is None


def test_no_grad_enable_grad_set_grad_enabled():
    x = leaf(2)
    with fabric.no_grad():
        y = x * 2
        with fabric.enable_grad():
            z = x * 2
    assert not y.requires_grad and z.requires_grad

    @fabric.no_grad()
    def f(t):
        return t * 2

    @fabric.no_grad
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad
    with fabric.set_grad_enabled(False):
        assert not fabric.is_grad_enabled()
    assert fabric.is_grad_enabled()
    fabric.set_grad_enabled(False)
    assert not fabric.is_grad_enabled()
    fabric.set_grad_enabled(True)
    with fabric.inference_mode():
        assert not (x * 2).requires_grad
        assert fabric.is_inference_mode_enabled()

    @fabric.no_grad()
    def gen():
        yield (x * 2).requires_grad

    assert list(gen()) == [False]


def test_grad_mode_is_thread_local():
    results = {}

    def worker():
        results["thread"] = fabric.is_grad_enabled()

    with fabric.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert results["thread"] is True


class Cube(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x ** 3 * k

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return gy * 3 * x ** 2 * ctx.k, None


def test_custom_function_and_double_backward():
    x = leaf(3)
    y = Cube.apply(x, 2.0)
    assert type(y.grad_fn).__name__ == "CubeBackward"
    assert gradcheck(lambda t: Cube.apply(t, 2.0), (x,))
    assert gradgradcheck(lambda t: Cube.apply(t, 2.0), (x,))


def test_custom_function_needs_input_grad_and_non_differentiable():
    class Split(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.flags = ctx.needs_input_grad
            idx = a.detach() * 0 + 1
            ctx.mark_non_differentiable(idx)
            return a * b, idx

        @staticmethod
        def backward(ctx, gy, gidx):
            return gy * 2, None

    a = leaf(3)
    b = fabric.ones(3, dtype=fabric.float64)
    y, idx = Split.apply(a, b)
    assert y.requires_grad and not idx.requires_grad
    assert y.grad_fn.flags == (True, False)
    y.sum().backward()
    assert a.grad.tolist() == [2.0] * 3


def test_custom_function_mark_dirty():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, gy):
            return gy

    x = leaf(2)
    y = x * 1
    v = y._version
    z = AddOneInplace.apply(y)
    assert z is y and y._version > v
    (z * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_once_differentiable():
    from fabric.autograd import once_differentiable

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            return gy * 2 * x

    x = leaf(2)
    y = (Sq.apply(x) * x).sum()  # the grad flowing into Sq requires grad
    (g,) = fabric.autograd.grad(y, x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_custom_function_setup_context_style():
    class Mul3(Function):
        @staticmethod
        def forward(x):
            return x * 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = 3

        @staticmethod
        def backward(ctx, gy):
            return gy * ctx.k

    x = leaf(2)
    Mul3.apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_wrong_number_of_gradients_is_reported():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, gy):
            return gy

    a, b = leaf(2), leaf(2, seed=1)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(a, b).sum().backward()


def test_gradcheck_reports_worst_element():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, gy):
            return gy * 3

    x = leaf(3)
    with pytest.raises(RuntimeError, match="worst element"):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_detect_anomaly_names_op():
    x = fabric.tensor([0.0, 1.0], dtype=fabric.float64, requires_grad=True)
    with pytest.warns(UserWarning), fabric.autograd.detect_anomaly():
        y = (x ** 0.5).sum()
        with pytest.raises(RuntimeError, match="PowBackward0"):
            y.backward()


def test_functional_jacobian_hessian_vjp_jvp_hvp():
    from fabric.autograd.functional import hessian, hvp, jacobian, jvp, vjp

    x = fabric.tensor([1.0, 2.0], dtype=fabric.float64)
    J = jacobian(lambda t: t ** 2, x)
    np.testing.assert_allclose(J.numpy(), np.diag([2.0, 4.0]))
    H = hessian(lambda t: (t ** 3).sum(), x)
    np.testing.assert_allclose(H.numpy(), np.diag([6.0, 12.0]))
    v = fabric.tensor([1.0, -1.0], dtype=fabric.float64)
    out, g = vjp(lambda t: t ** 2, x, v)
    np.testing.assert_allclose(g.numpy(), [2.0, -4.0])
    out, jv = jvp(lambda t: t ** 2, x, v)
    np.testing.assert_allclose(jv.numpy(), [2.0, -4.0])
    out, hv = hvp(lambda t: (t ** 3).sum(), x, v)
    np.testing.assert_allclose(hv.numpy(), [6.0, -12.0])
    Ja, Jb = jacobian(lambda a, b: a * b, (x, v))
    np.testing.assert_allclose(Ja.numpy(), np.diag(v.numpy()))


def test_grad_fn_next_functions_and_names():
    x = leaf(2)
    y = x * 2 + 1
    assert type(y.grad_fn).__name__ == "AddBackward0"
    (mul_edge, nr), (none_edge, _) = y.grad_fn.next_functions
    assert type(mul_edge).__name__ == "MulBackward0" and none_edge is None
    acc = mul_edge.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x


def test_node_hooks():
    x = leaf(2)
    y = x * 2
    seen = {}
    y.grad_fn.register_prehook(lambda go: seen.setdefault("pre", go))
    y.grad_fn.register_hook(lambda gi, go: seen.setdefault("post", gi))
    y.sum().backward()
    assert seen["pre"][0].tolist() == [1.0, 1.0]
    assert seen["post"][0].tolist() == [2.0, 2.0]


@pytest.mark.torch
def test_engine_matches_torch_on_a_small_graph():
    import torch

    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    a, b = fabric.tensor(a0, requires_grad=True), fabric.tensor(b0, requires_grad=True)
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    for (x, y), _lib in [((a, b), fabric), ((ta, tb), torch)]:
        h = (x * y).exp() / (y * y + 1)
        out = (h.sum(0) @ y - h.mean()) ** 2
        out.backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


def test_leaf_keeps_one_accumulate_grad_node_across_graphs():
    x = leaf(2)
    first = (x * 2).grad_fn.next_functions[0][0]
    second = (x.exp()).grad_fn.next_functions[0][0]
    assert first is second and first.variable is x


def test_graph_does_not_keep_an_unreferenced_leaf_alive():
    import gc
    import weakref

    x = leaf(3)
    ref = weakref.ref(x)
    y = (x + 2).sum()  # (an op that saved x would keep it, as in PyTorch)
    del x
    gc.collect()
    assert ref() is None  # its gradient could not be read by anyone
    y.backward()          # and backward still runs
    assert y.grad_fn.next_functions[0][0].next_functions[0][0].variable is None


def test_hooked_leaf_dropped_before_backward_still_runs_its_hooks():
    seen = []
    x = leaf(2)
    x.register_hook(lambda g: seen.append(g.tolist()))
    y = (x * 3).sum()
    del x
    y.backward()
    assert seen == [[3.0, 3.0]]


@pytest.mark.parametrize("op", ["mul", "div", "exp", "matmul", "sum"])
def test_fast_path_ops_check_saved_tensor_versions(op):
    x = leaf(2, 2)
    h = x * 1  # a non-leaf that may be modified in place
    y = {"mul": lambda: h * h, "div": lambda: h / (h + 3), "exp": lambda: h.exp(), "matmul": lambda: h @ h,
         "sum": lambda: h.exp().sum()}[op]()
    h.add_(1)
    if op in ("exp", "sum"):  # exp saved its output, not h, and sum saves nothing
        y.sum().backward()
        return
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_fast_path_broadcasting_and_promotion_reduce_gradients():
    a = fabric.tensor([[1.0, 2.0, 3.0]], requires_grad=True)   # (1, 3)
    b = fabric.tensor([[1.0], [2.0]], requires_grad=True)       # (2, 1)
    (a * b + a / b - b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[3.0 + 1.5] * 3])
    np.testing.assert_allclose(b.grad.numpy(), [[6.0 - 6.0 - 3.0], [6.0 - 1.5 - 3.0]])
    c = fabric.tensor([1.0, 2.0], dtype=fabric.float64, requires_grad=True)
    d = fabric.tensor([3.0, 4.0], requires_grad=True)            # float32 promoted by the slow path
    (c * d).sum().backward()
    assert d.grad.dtype == fabric.float32 and d.grad.tolist() == [1.0, 2.0]


def test_fast_path_zero_dim_saved_output():
    x = fabric.tensor(2.0, requires_grad=True)
    y = x.exp()
    (g,) = fabric.autograd.grad(y, x, create_graph=True)
    (gg,) = fabric.autograd.grad(g, x)
    assert abs(g.item() - np.exp(2.0)) < 1e-5 and abs(gg.item() - np.exp(2.0)) < 1e-5


def test_view_sees_in_place_op_made_through_a_sibling_view():
    w = fabric.ones(4, requires_grad=True)
    x = w.clone()
    v1, v2 = x[0:2], x[1:3]
    v1.mul_(3)                      # rewrites x's history; v2 overlaps v1 at x[1]
    v2.sum().backward()
    assert w.grad.tolist() == [0.0, 3.0, 1.0, 0.0]
    assert type(v2.grad_fn).__name__ == "AsStridedBackward0"


def test_view_sees_in_place_op_on_its_base_and_views_of_views():
    w = fabric.arange(6.0, requires_grad=True)
    x = w * 1
    v = x.reshape(2, 3)[1]          # a view of a view: its base is x
    x.mul_(2)
    (v * v).sum().backward()
    assert w.grad.tolist() == [0.0, 0.0, 0.0, 24.0, 32.0, 40.0]


def test_multi_output_view_after_in_place_on_base_raises_like_pytorch():
    x = fabric.ones(2, requires_grad=True).clone()
    a, _ = x.unbind()
    x.mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and its base or another view"):
        a.sum().backward()


def test_view_of_leaf_modified_under_no_grad_keeps_its_history():
    w = fabric.ones(2, 3, requires_grad=True)
    wt = w.t()
    with fabric.no_grad():
        w.add_(1.0)                 # an optimizer-style update: the history is unchanged
    (wt * 2).sum().backward()
    assert type(wt.grad_fn).__name__ == "TransposeBackward0" or type(wt.grad_fn).__name__ == "TBackward0"
    assert w.grad.tolist() == [[2.0] * 3] * 2


@pytest.mark.torch
def test_sibling_view_gradients_match_torch():
    import torch

    def run(lib):
        w = lib.arange(1.0, 9.0, requires_grad=True)
        x = w * 1
        a, b, c = x[0:5], x[3:8], x.reshape(2, 4)[:, 1]
        a.mul_(a.detach() + 1)
        b.add_(x[0:5].sum())
        (c * c).sum().backward()
        return w.grad.tolist()

    assert run(fabric) == run(torch)
