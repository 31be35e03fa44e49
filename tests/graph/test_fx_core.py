"""The graph IR: Graph / Node / GraphModule / Proxy, and symbolic tracing against eager and torch.fx."""
import operator

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric import fx, nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 4)
        self.p = nn.Parameter(fabric.ones(4))

    def forward(self, x, y=2):
        a = self.lin(x) + self.p
        b = fabric.relu(a).sum(dim=-1)
        c = F.gelu(a) * y
        return a.view(a.size(0), -1)[:, 1], (b, {"c": c})


def test_graph_by_hand_builds_users_and_code():
    g = fx.Graph()
    x = g.placeholder("x")
    one = g.call_function(operator.add, (x, 1))
    r = g.call_method("relu", (one,))
    s = g.call_function(fabric.sum, (r,), {"dim": 0})
    g.output((s, r))
    assert list(x.users) == [one] and set(r.users) == {s, list(g.nodes)[-1]}
    assert [n.op for n in g.nodes] == ["placeholder", "call_function", "call_method", "call_function", "output"]
    gm = fx.GraphModule(nn.Module(), g)
    out = gm(fabric.tensor([[-3.0, 1.0], [2.0, 0.5]]))
    np.testing.assert_allclose(out[0].detach().numpy(), [3.0, 3.5])
    assert "add = x + 1;  x = None" in gm.code
    assert "fabric.sum(relu, dim = 0)" in gm.code
    g.lint()


def test_replace_all_uses_with_and_erase():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(fabric.relu, (x,))
    b = g.call_function(fabric.neg, (a,))
    g.output(b)
    with g.inserting_after(a):
        t = g.call_function(fabric.tanh, (x,))
    changed = a.replace_all_uses_with(t)
    assert changed == [b] and b.args == (t,) and not a.users
    g.erase_node(a)
    assert [n.name for n in g.nodes] == ["x", "tanh", "neg", "output"]
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(t)
    gm = fx.GraphModule({}, g)
    x0 = fabric.tensor([0.5, -1.0])
    np.testing.assert_allclose(gm(x0).detach().numpy(), (-fabric.tanh(x0)).detach().numpy())


def test_map_arg_and_aggregate():
    g = fx.Graph()
    x = g.placeholder("x")
    assert fx.map_arg((x, [1, {"k": x}], slice(x, None)), lambda n: n.name) == ("x", [1, {"k": "x"}],
                                                                                 slice("x", None, None))


def test_symbolic_trace_matches_eager_and_keeps_state():
    fabric.manual_seed(0)
    m = Small()
    gm = fx.symbolic_trace(m)
    x = fabric.randn(2, 3)
    got, want = gm(x, 3), m(x, 3)
    np.testing.assert_array_equal(got[0].detach().numpy(), want[0].detach().numpy())
    np.testing.assert_array_equal(got[1][1]["c"].detach().numpy(), want[1][1]["c"].detach().numpy())
    assert list(gm.state_dict()) == list(m.state_dict())
    assert [n for n, _ in gm.named_modules()] == ["", "lin"]
    ops = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__) for n in gm.graph.nodes]
    assert ops == [("placeholder", "x"), ("placeholder", "y"), ("call_module", "lin"), ("get_attr", "p"),
                   ("call_function", "add"), ("call_function", "relu"), ("call_method", "sum"),
                   ("call_function", "gelu"), ("call_function", "mul"), ("call_method", "size"),
                   ("call_method", "view"), ("call_function", "getitem"), ("output", "output")]
    assert gm.code.strip().startswith("def forward(self, x, y = 2):\n    lin = self.lin(x);  x = None")


def test_gradients_flow_through_graph_module():
    fabric.manual_seed(1)
    m = Small()
    gm = fx.symbolic_trace(m)
    x = fabric.randn(2, 3)
    gm(x)[0].sum().backward()
    m2 = Small()
    m2.load_state_dict(m.state_dict())
    m2(x)[0].sum().backward()
    np.testing.assert_allclose(gm.lin.weight.grad.detach().numpy(), m2.lin.weight.grad.detach().numpy())


def test_proxy_control_flow_raises():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(fx.TraceError, match="control flow"):
        fx.symbolic_trace(f)


def test_edit_graph_then_recompile_dce_and_copies():
    import copy

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2)

        def forward(self, x):
            unused = self.b(x)  # noqa: F841  (dead, but a module call is impure and stays)
            y = fabric.relu(self.a(x))
            z = y * 3  # noqa: F841  (dead and pure: removed)
            return y
    gm = fx.symbolic_trace(M())
    assert gm.graph.eliminate_dead_code()
    assert [n.name for n in gm.graph.nodes] == ["x", "b", "a", "relu", "output"]
    relu = next(n for n in gm.graph.nodes if n.name == "relu")
    with gm.graph.inserting_after(relu):
        neg = gm.graph.call_function(fabric.neg, (relu,))
    relu.replace_all_uses_with(neg, delete_user_cb=lambda u: u is not neg)
    gm.recompile()
    x = fabric.randn(3, 2)
    np.testing.assert_allclose(gm(x).detach().numpy(), (-fabric.relu(gm.a(x))).detach().numpy())
    dup = copy.deepcopy(gm)
    assert dup.code == gm.code and dup.a is not gm.a
    np.testing.assert_allclose(dup(x).detach().numpy(), gm(x).detach().numpy())
    b_node = next(n for n in gm.graph.nodes if n.op == "call_module" and n.target == "b")
    gm.graph.erase_node(b_node)
    gm.delete_all_unused_submodules()
    gm.recompile()
    assert [name for name, _ in gm.named_modules()] == ["", "a"]
    new_graph = copy.deepcopy(gm.graph)
    gm.graph = new_graph            # assigning a graph recompiles
    assert gm.graph is new_graph and "self.a(x)" in gm.code


def test_lint_reports_use_before_definition():
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(fabric.relu, (x,))
    g.output(y)
    with g.inserting_before(y):
        bad = g.call_function(fabric.neg, (x,))
    bad.args = (y,)
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()


def test_varargs_function_and_graph_printing():
    def f(x, *rest):
        return x + rest[0]
    gm = fx.symbolic_trace(f)
    assert gm.code.splitlines()[3] == "def forward(self, x, *rest):"
    np.testing.assert_array_equal(gm(fabric.ones(2), fabric.ones(2)).numpy(), [2.0, 2.0])
    text = str(fx.symbolic_trace(lambda x: fabric.relu(x)).graph)
    assert text.splitlines() == ["graph():", "    %x : [num_users=1] = placeholder[target=x]",
                                 "    %relu : [num_users=1] = call_function[target=fabric.relu](args = (%x,), "
                                 "kwargs = {})", "    return relu"]


def test_reflected_operators_and_stack_traces():
    class T(fx.Tracer):
        record_stack_traces = True

    def f(x):
        return (2 - x) * (3 / x) + (-x) ** 2 @ fabric.ones(2, 2) - abs(x)

    tracer = T()
    g = tracer.trace(f)
    gm = fx.GraphModule(tracer.root, g)      # the root holds the tensor constant fabric.ones(2, 2)
    assert "_tensor_constant0" in dict(gm.named_buffers())
    x = fabric.tensor([[1.0, -2.0]])
    np.testing.assert_allclose(gm(x).numpy(), f(x).numpy())
    sub = next(n for n in g.nodes if n.op == "call_function" and n.target is operator.sub)
    assert sub.args == (2, next(iter(g.nodes)))
    assert "return (2 - x)" in sub.stack_trace
