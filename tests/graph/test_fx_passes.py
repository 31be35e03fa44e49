"""fx: wrap, concrete_args, Tracer subclasses, Interpreter/Transformer, replace_pattern, ShapeProp,
control-flow ops in a graph, concrete tracing; and torch.fx parity."""
import math
import operator

import numpy as np
import pytest

import fabric
from fabric import fx, nn
from fabric.fx._concrete import ConcreteTracer, concrete_trace
from fabric.fx.control_flow import cond, range_loop, while_loop
from fabric.fx.passes.shape_prop import ShapeProp


def _np(t):
    return t.detach().numpy()


def count_nonzero_helper(x):
    return int((x != 0).sum().item())   # data-dependent: must not be traced into


fx.wrap("count_nonzero_helper")


def test_wrap_records_a_call_function():
    def f(x):
        return x * count_nonzero_helper(x)
    gm = fx.symbolic_trace(f)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets[0].__name__ == "count_nonzero_helper"
    x = fabric.tensor([0.0, 2.0, 3.0])
    np.testing.assert_array_equal(_np(gm(x)), [0.0, 4.0, 6.0])


def test_math_functions_are_autowrapped():
    def f(x):
        return x * math.sqrt(x.size(0))
    gm = fx.symbolic_trace(f)
    x = fabric.ones(4)
    np.testing.assert_allclose(_np(gm(x)), [2.0] * 4)
    assert any(getattr(n.target, "__name__", "") == "sqrt" for n in gm.graph.nodes)


def test_concrete_args_specialise_a_branch():
    def f(x, flag):
        if flag:
            return x + 1
        return x - 1
    gm = fx.symbolic_trace(f, concrete_args={"flag": False})
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["x", "flag_1"]
    np.testing.assert_array_equal(_np(gm(fabric.ones(2), False)), [0.0, 0.0])


def test_tracer_subclass_leaf_and_create_proxy():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            return fabric.tanh(self.lin(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x) * 2

    seen = []

    class BlockLeaf(fx.Tracer):
        def is_leaf_module(self, m, name):
            return isinstance(m, Block) or super().is_leaf_module(m, name)

        def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
            seen.append(kind)
            return super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)

    net = Net()
    graph = BlockLeaf().trace(net)
    assert [n.op for n in graph.nodes] == ["placeholder", "call_module", "call_function", "output"]
    assert seen == ["placeholder", "call_module", "call_function"]
    gm = fx.GraphModule(net, graph)
    x = fabric.randn(3, 2)
    np.testing.assert_array_equal(_np(gm(x)), _np(net(x)))
    plain = fx.symbolic_trace(net)
    assert [n.target for n in plain.graph.nodes if n.op == "call_module"] == ["block.lin"]


def test_interpreter_and_transformer():
    def f(x):
        return fabric.relu(x) + fabric.sigmoid(x)
    gm = fx.symbolic_trace(f)

    class SigmoidToTanh(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is fabric.sigmoid:
                target = fabric.tanh
            return super().call_function(target, args, kwargs)
    new = SigmoidToTanh(gm).transform()
    x = fabric.tensor([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(_np(new(x)), _np(fabric.relu(x) + fabric.tanh(x)))
    np.testing.assert_allclose(_np(fx.Interpreter(gm).run(x)), _np(f(x)))
    assert "fabric.tanh(x)" in new.code


def test_replace_pattern_rewrites_every_match():
    class M(nn.Module):
        def forward(self, x, w):
            a = fabric.matmul(x, w) + 1.0
            b = fabric.matmul(a, w) + 1.0
            return b

    def pattern(x, w):
        return fabric.matmul(x, w) + 1.0

    def replacement(x, w):
        return fabric.addmm(fabric.ones(1), x, w) if False else fabric.relu(fabric.matmul(x, w))

    gm = fx.symbolic_trace(M())
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    x, w = fabric.randn(2, 2), fabric.randn(2, 2)
    want = fabric.relu(fabric.matmul(fabric.relu(fabric.matmul(x, w)), w))
    np.testing.assert_allclose(_np(gm(x, w)), _np(want))
    assert not any(n.target is operator.add for n in gm.graph.nodes)
    gm.graph.lint()


def test_shape_prop_records_metadata():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    gm = fx.symbolic_trace(m)
    ShapeProp(gm).propagate(fabric.randn(2, 3, 8, 8))
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if "tensor_meta" in n.meta}
    assert shapes == {"input_1": (2, 3, 8, 8), "_0": (2, 4, 6, 6), "_1": (2, 144), "_2": (2, 5), "output": (2, 5)}
    assert list(gm.graph.nodes)[1].meta["tensor_meta"].dtype == fabric.float32


def test_control_flow_ops_as_graph_nodes():
    # the graph IR's representation of an if: cond with get_attr'd branch GraphModules
    tg, fg = fx.symbolic_trace(lambda x, y: (x + y,)), fx.symbolic_trace(lambda x, y: (x - y,))
    g = fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    pred = g.call_function(operator.gt, (g.call_method("sum", (x,)), 0))
    t, f = g.get_attr("true_graph_0"), g.get_attr("false_graph_0")
    c = g.call_function(cond, (pred, t, f, (x, y)))
    g.output(g.call_function(operator.getitem, (c, 0)))
    gm = fx.GraphModule({"true_graph_0": tg, "false_graph_0": fg}, g)
    assert "fabric.fx.control_flow.cond(gt, true_graph_0, false_graph_0, (x, y))" in gm.code
    one = fabric.ones(2)
    np.testing.assert_array_equal(_np(gm(one, one)), [2.0, 2.0])
    np.testing.assert_array_equal(_np(gm(-one, one)), [-2.0, -2.0])
    assert while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2), (0, fabric.tensor(1.0)))[1].item() == 8.0
    assert range_loop(0, 4, 1, lambda i, acc: (acc + i,), (fabric.tensor(0),))[0].item() == 6
    with pytest.raises(TypeError, match="must return a tuple"):
        cond(True, lambda: 1, lambda: 2, ())


def test_concrete_trace_goes_through_modules_and_reports_constants():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.register_buffer("scale", fabric.tensor(2.0))

        def forward(self, x):
            y = self.lin(x) * self.scale
            if y.sum() > 0:                       # data-dependent: baked in, reported
                y = y + 1
            return y.view(y.size(0), -1), y.max().item()

    fabric.manual_seed(0)
    m = M()
    tracer = ConcreteTracer()
    x = fabric.randn(2, 4) + 5
    gm = concrete_trace(m, (x,), tracer=tracer)
    kinds = [k for k, _, _ in tracer.constants]
    assert "bool" in kinds and "item" in kinds and "shape" in kinds
    calls = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[0] == "linear"
    got = gm(x)
    np.testing.assert_array_equal(_np(got[0]), _np(m(x)[0]))
    assert list(gm.state_dict()) == ["scale", "lin.weight", "lin.bias"]


def test_concrete_trace_transformer_matches_eager_at_other_inputs():
    fabric.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2).eval()
    gm = concrete_trace(enc, (fabric.randn(3, 5, 16),))
    x2 = fabric.randn(3, 5, 16)
    np.testing.assert_allclose(_np(gm(x2)), _np(enc(x2)), rtol=1e-6, atol=1e-6)
    assert not any(n.op == "call_module" for n in gm.graph.nodes)


def test_print_tabular_format(capsys):
    gm = fx.symbolic_trace(lambda x: fabric.relu(x))
    gm.graph.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert lines[2].split() == ["placeholder", "x", "x", "()", "{}"]
    assert lines[3].split() == ["call_function", "relu", "fabric.relu", "(x,)", "{}"]


@pytest.mark.torch
def test_same_graph_and_code_shape_as_torch_fx():
    import torch

    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(3, 4)
                self.p = lib.nn.Parameter(lib.ones(4))

            def forward(self, x):
                a = self.lin(x) + self.p
                b = lib.relu(a).sum(dim=-1)
                return a.view(a.size(0), -1)[:, 1], b
        return M()

    fm, tm = build(fabric), build(torch)
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in fm.state_dict().items()})
    fg, tg = fx.symbolic_trace(fm), torch.fx.symbolic_trace(tm)

    def sig(g):
        return [(n.op, n.name, n.target if isinstance(n.target, str) else n.target.__name__) for n in g.graph.nodes]
    assert sig(fg) == sig(tg)
    assert fg.code.replace("fabric.", "torch.") == tg.code
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for a, b in zip(fg(fabric.tensor(x)), tg(torch.tensor(x))):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-6)


def test_tuple_unpacking_of_a_proxy_and_iteration_error():
    def f(x):
        b, t, c = x.shape
        return x.view(b * t, c)
    gm = fx.symbolic_trace(f)
    assert gm(fabric.ones(2, 3, 4)).shape == (6, 4)
    assert gm(fabric.ones(5, 1, 2)).shape == (5, 2)     # sizes are nodes, not constants
    assert "math.sqrt" in fx.symbolic_trace(lambda x: x * math.sqrt(x.size(0))).code

    def g(x):
        return [y for y in x]
    with pytest.raises(fx.TraceError, match="cannot be iterated"):
        fx.symbolic_trace(g)


def test_concrete_trace_sees_ops_held_as_staticmethods():
    fabric.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())
    gm = concrete_trace(m, (fabric.randn(1, 1, 5, 5),))
    assert [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"] == ["conv2d", "relu"]
    x = fabric.randn(2, 1, 6, 6)
    np.testing.assert_allclose(_np(gm(x)), _np(m(x)), rtol=1e-6, atol=1e-6)


@pytest.mark.torch
def test_resnet_block_graph_matches_torch_fx():
    import torch

    def build(lib):
        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = lib.nn.Conv2d(4, 4, 3, padding=1, bias=False)
                self.bn1 = lib.nn.BatchNorm2d(4)
                self.relu = lib.nn.ReLU()
                self.convs = lib.nn.Sequential(lib.nn.Conv2d(4, 4, 3, padding=1), lib.nn.BatchNorm2d(4))

            def forward(self, x):
                out = self.relu(self.bn1(self.conv1(x)))
                out = self.convs(out)
                out += x
                return lib.flatten(self.relu(out), 1).mean(dim=-1, keepdim=True)
        return Block().eval()

    fm, tm = build(fabric), build(torch)
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in fm.state_dict().items()})
    fg, tg = fx.symbolic_trace(fm), torch.fx.symbolic_trace(tm)

    def sig(g):
        return [(n.op, n.name, n.target if isinstance(n.target, str) else n.target.__name__, len(n.args))
                for n in g.graph.nodes]
    assert sig(fg) == sig(tg)
    assert fg.code.replace("fabric.", "torch.") == tg.code
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(_np(fg(fabric.tensor(x))), tg(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_math_module_itself_is_not_patched_while_tracing():
    """Autowrap reaches math through the traced code's globals only: code elsewhere in the process (e.g. a
    numba kernel compiled on its first call inside a trace) must still see math's builtins."""
    import sys
    import types

    seen = []

    def f(x):
        seen.append(isinstance(sys.modules["math"].exp, types.BuiltinFunctionType))
        return x * math.sqrt(x.size(0))

    gm = fx.symbolic_trace(f)
    assert seen == [True]
    np.testing.assert_allclose(_np(gm(fabric.ones(4))), [2.0] * 4)
