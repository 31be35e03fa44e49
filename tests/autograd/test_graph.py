"""fabric.autograd.graph: saved-tensor hooks, multi-grad hooks, gradient edges, version bumps."""
import numpy as np
import pytest

import fabric
from fabric.autograd import graph


def test_graph_names_match_pytorch():
    for name in ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook",
                 "allow_mutation_on_saved_tensors", "Node", "GradientEdge", "get_gradient_edge",
                 "increment_version"]:
        assert hasattr(graph, name), name


def test_saved_tensors_hooks_see_every_saved_tensor_and_feed_backward():
    x = fabric.tensor([1.0, 2.0, 3.0], dtype=fabric.float64, requires_grad=True)
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t.detach() * 1  # a copy: backward must use what unpack returns

    unpacked = []

    def unpack(t):
        unpacked.append(1)
        return t

    with graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()   # exp saves its output, mul saves both inputs
    assert len(packed) == 3
    y.backward()
    assert len(unpacked) == 3
    np.testing.assert_allclose(x.grad.numpy(), (x.exp() * (x + 1)).detach().numpy())


def test_unpack_value_is_used():
    x = fabric.tensor([2.0], requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t * 10):
        y = x * x
    y.backward()
    assert x.grad.item() == 40.0  # grad = b + a with both saved inputs unpacked as 10 * x


def test_custom_function_saved_tensors_hooked():
    class Sq(fabric.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    seen = []
    x = fabric.tensor([3.0], requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
        y = Sq.apply(x)
    y.backward()
    assert len(seen) == 1 and x.grad.item() == 6.0


def test_unpack_must_return_tensor():
    x = fabric.tensor([2.0], requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t, lambda t: 1.0):
        y = x.exp()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.backward()


def test_save_on_cpu():
    x = fabric.tensor([1.0, 2.0], dtype=fabric.float64, requires_grad=True)
    with graph.save_on_cpu(pin_memory=True):
        y = (x.sin() * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), (x.cos() * x + x.sin()).detach().numpy())


def test_disable_saved_tensors_hooks():
    with graph.disable_saved_tensors_hooks("no hooks here"), pytest.raises(RuntimeError, match="no hooks here"), \
            graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        pass
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled again outside
        pass

    @graph.disable_saved_tensors_hooks("decorated")
    def f():
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="decorated"):
        f()


def test_register_multi_grad_hook_all():
    a = fabric.rand(2, 3, requires_grad=True)
    b = fabric.rand(2, 3, requires_grad=True)
    c = a * b
    d = a * b
    calls = []
    graph.register_multi_grad_hook((a, b, c, d), lambda grads: calls.append([g is not None for g in grads]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert calls == [[True, True, True, False], [True, False, True, False]]


def test_register_multi_grad_hook_any_and_remove():
    a = fabric.ones(2, requires_grad=True)
    b = fabric.ones(2, requires_grad=True)
    calls = []
    h = graph.register_multi_grad_hook((a, b), lambda g: calls.append(g.shape), mode="any")
    (a * b).sum().backward()
    assert len(calls) == 1
    h.remove()
    (a * b).sum().backward()
    assert len(calls) == 1
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        graph.register_multi_grad_hook((a,), print, mode="some")


def test_gradient_edge():
    x = fabric.tensor(3.0, requires_grad=True)
    y = x * x
    z = y * 2
    (g,) = fabric.autograd.grad(z, graph.get_gradient_edge(y), retain_graph=True)
    assert g.item() == 2.0
    e = graph.get_gradient_edge(x)
    assert e.node.name() == "AccumulateGrad" and e.output_nr == 0
    (g,) = fabric.autograd.grad(z, e)
    assert g.item() == 12.0
    assert graph.get_gradient_edge(y).node is y.grad_fn
    with pytest.raises(RuntimeError, match="It is not possible to get the gradient edge"):
        graph.get_gradient_edge(fabric.ones(1))


def test_increment_version():
    y = fabric.tensor([1.0, 2.0]) * 1
    v = y._version
    graph.increment_version(y)
    assert y._version == v + 1
    w = fabric.tensor([1.0], requires_grad=True)
    out = w.sin()
    graph.increment_version([w])
    assert w._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


@pytest.mark.torch
def test_saved_hooks_count_matches_torch():
    import torch

    xs = np.array([0.5, 1.5])
    counts = []
    for lib in (torch, fabric):
        x = lib.tensor(xs, requires_grad=True)
        n = []
        with lib.autograd.graph.saved_tensors_hooks(lambda t, n=n: n.append(1) or t, lambda t: t):
            y = (x.exp() * x).tanh().sum()
        y.backward()
        counts.append((len(n), x.grad.detach().numpy()))
    assert counts[0][0] == counts[1][0]
    np.testing.assert_allclose(counts[0][1], counts[1][1])


def test_saved_tensors_hooks_are_per_thread():
    import threading

    seen = []
    started, release = threading.Event(), threading.Event()

    def other():
        with graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
            started.set()
            release.wait(10)

    th = threading.Thread(target=other)
    th.start()
    started.wait(10)
    x = fabric.tensor([1.0], requires_grad=True)
    (x.exp() * x).sum().backward()   # this thread has no hooks: nothing is packed
    release.set()
    th.join()
    assert seen == []
