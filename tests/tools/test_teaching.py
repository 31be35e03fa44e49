"""Teaching mode: fabric.explain (op sources, kernels, a tensor's graph) and
fabric.trace_ops (every op printed as it runs, through the dispatch hook)."""
from __future__ import annotations

import io

import pytest

import fabric
from fabric.autograd import observe


def test_explain_an_op_shows_forward_and_backward():
    text = str(fabric.explain(fabric.mul))
    assert "Function fabric.ops.arith.Mul" in text and "records MulBackward0" in text
    assert "def forward(ctx, a, b):" in text and "return a * b" in text
    assert "def backward(ctx, gy):" in text and "gy * b" in text
    assert text.count("fabric/ops/arith.py:") == 1
    assert str(fabric.explain("mul")).splitlines()[1:] == text.splitlines()[1:]


def test_explain_names_methods_classes_and_nodes():
    assert "Function fabric.ops.arith.Exp" in str(fabric.explain(fabric.Tensor.exp))
    assert "Function fabric.ops.arith.MatMul" in str(fabric.explain("matmul"))
    from fabric.ops.arith import Exp

    assert "xp_of(x).exp(x)" in str(fabric.explain(Exp))
    y = fabric.ones(2, requires_grad=True).exp()
    node_text = str(fabric.explain(y.grad_fn))
    assert node_text.startswith("ExpBackward0 (the node of Exp)")
    layer = str(fabric.explain(fabric.nn.Linear(3, 2)))
    assert layer.startswith("fabric.nn.modules.linear.Linear.forward") and "records AddmmBackward0" in layer
    conv = str(fabric.explain(fabric.nn.Conv2d(3, 4, 3), fabric.ones(1, 3, 5, 5)))
    assert conv.startswith("Conv2d on the example inputs") and "records ConvolutionBackward0" in conv
    with pytest.raises(ValueError, match="no op named"):
        fabric.explain("no_such_op")
    with pytest.raises(TypeError, match="explain\\(\\) takes"):
        fabric.explain(3)


def test_explain_follows_composites_and_table_rows():
    relu = str(fabric.explain(fabric.nn.functional.relu))
    assert "Function fabric.ops.pointwise.Relu" in relu
    assert 'Relu = _unary("Relu", lambda xp, x: xp.maximum(x, 0)' in relu  # the table row that defines it
    softmax = str(fabric.explain(fabric.nn.functional.softmax))
    assert "Softmax" in softmax and "kernels:" in softmax
    assert "softmax: CPU runs Backend.softmax (fabric/backends/base.py:" in softmax
    assert "RawKernel softmax_fwd" in softmax and "RawKernel softmax_bwd" in softmax


def test_explain_a_tensor_walks_its_graph():
    x = fabric.ones(4, 3, requires_grad=True)
    w = fabric.ones(3, 2, requires_grad=True)
    h = (x @ w).relu()
    y = (h * h).sum()
    lines = str(fabric.explain(y)).splitlines()
    assert lines[0].startswith("tensor(") and lines[0].endswith("shape=() float32")
    # shapes are shown where the node recorded its inputs' metadata (fast-path nodes do not)
    stripped = [line.split("  inputs:")[0] for line in lines[1:]]
    assert stripped == [
        "└─ SumBackward0",
        "   └─ MulBackward0",
        "      ├─ ReluBackward0",
        "      │  └─ MmBackward0",
        "      │     ├─ AccumulateGrad  leaf (4, 3) float32 requires_grad",
        "      │     └─ AccumulateGrad  leaf (3, 2) float32 requires_grad",
        "      └─ ReluBackward0 (shown above)",
    ]
    z = fabric.ones(2, 1, requires_grad=True) + fabric.ones(3)  # broadcasting: the node records input shapes
    assert "AddBackward0  inputs: (2, 1) float32" in str(fabric.explain(z))
    leaf = str(fabric.explain(fabric.ones(2)))
    assert "not part of a graph" in leaf


def test_trace_ops_prints_forward_and_backward_in_order():
    x = fabric.ones(2, 3, requires_grad=True)
    buf = io.StringIO()
    with fabric.trace_ops(file=buf, timing=False) as log:
        y = (x * 2.0).sum()
        y.backward()
    assert buf.getvalue().splitlines() == [
        "aten::mul  (2, 3) float32, 2.0 -> (2, 3) float32",
        "aten::sum  (2, 3) float32, False, None -> () float32",
        "SumBackward0    grads () float32 -> ((2, 3) float32, None, None)",
        "  aten::expand  () float32, (2, 3) -> (2, 3) float32",
        "MulBackward0  grads (2, 3) float32 -> ((2, 3) float32, None)",
        "  aten::mul   (2, 3) float32, 2.0 -> (2, 3) float32",
        "torch::autograd::AccumulateGrad  grads (2, 3) float32",
    ]
    assert [r.name for r in log.records][:2] == ["aten::mul", "aten::sum"]
    assert observe.hook.observer is None
    buf2 = io.StringIO()
    with fabric.trace_ops(file=buf2, backward=False):
        (x * 2.0).sum().backward()
    lines = buf2.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["aten::mul", "aten::sum", "aten::expand", "aten::mul"]
    assert all(line.endswith(" us") for line in lines)


def test_trace_ops_and_profiler_together():
    x = fabric.ones(3)
    buf = io.StringIO()
    with fabric.profiler.profile() as prof, fabric.trace_ops(file=buf, timing=False):
        x + x
    assert buf.getvalue().strip() == "aten::add  (3,) float32, (3,) float32 -> (3,) float32"
    assert [e.name for e in prof.events()] == ["aten::add"]


def test_trace_ops_shows_only_its_own_thread():
    import threading

    x = fabric.ones(2)
    buf = io.StringIO()
    with fabric.trace_ops(file=buf, timing=False):
        t = threading.Thread(target=lambda: x * 5.0)
        t.start()
        t.join()
        x + x
    assert buf.getvalue().splitlines() == ["aten::add  (2,) float32, (2,) float32 -> (2,) float32"]
