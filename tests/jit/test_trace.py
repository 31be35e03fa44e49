"""fabric.jit.trace / trace_module: same numbers as eager, TracerWarning, check_trace, strict."""
import warnings

import pytest

import fabric
from fabric import nn


def _cnn():
    fabric.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Dropout(0.3), nn.Flatten(), nn.Linear(16, 3)).eval()


def test_trace_module_matches_eager_and_keeps_state():
    m = _cnn()
    x = fabric.randn(2, 1, 4, 4)
    t = fabric.jit.trace(m, x)
    names = [getattr(n.target, "__name__", n.target) for n in t.graph.nodes if n.op == "call_function"]
    assert "conv2d" in names and "batch_norm" in names and "linear" in names
    for batch in (2, 5):
        y = fabric.randn(batch, 1, 4, 4)
        assert fabric.allclose(t(y), m(y), atol=1e-6)
    assert list(t.state_dict()) == list(m.state_dict())
    assert isinstance(t, fabric.jit.ScriptModule) and "def forward" in t.code


def test_trace_function_and_tuple_outputs():
    def f(x, y):
        return x * y + 1, (x - y).relu()

    a, b = fabric.randn(3), fabric.randn(3)
    t = fabric.jit.trace(f, (a, b))
    got, want = t(b, a), f(b, a)
    assert all(fabric.equal(g, w) for g, w in zip(got, want))
    assert isinstance(t, fabric.jit.ScriptFunction)


def test_trace_through_any_op_and_gradients():
    def f(x):
        return fabric.linalg.norm(fabric.special.expit(x) @ x.T, dim=1).cumsum(0)

    x = fabric.randn(3, 3, dtype=fabric.float64, requires_grad=True)
    t = fabric.jit.trace(f, x)
    assert fabric.autograd.gradcheck(t, (x,))
    assert fabric.allclose(t(x), f(x))


def test_is_tracing_flag():
    seen = []

    def f(x):
        seen.append(fabric.jit.is_tracing())
        return x + 1

    fabric.jit.trace(f, fabric.ones(1), check_trace=False)
    assert seen == [True] and fabric.jit.is_tracing() is False


@pytest.mark.parametrize("fn,text", [
    (lambda x: x * 2 if x.sum() > 0 else x, "Converting a tensor to a Python boolean"),
    (lambda x: x * float(x.max()), "Converting a tensor to a Python float"),
    (lambda x: x + x.sum().item(), "Converting a tensor to a Python number"),
    (lambda x: x * len(x), "Using len to get tensor shape"),
    (lambda x: x.view(x.shape[0], -1), "hard-codes 1 tensor size"),
])
def test_tracer_warnings(fn, text):
    with pytest.warns(fabric.jit.TracerWarning, match=text):
        fabric.jit.trace(fn, fabric.ones(2, 2), check_trace=False)


def test_no_warning_for_plain_ops_or_rank_reads():
    with warnings.catch_warnings():
        warnings.simplefilter("error", fabric.jit.TracerWarning)
        fabric.jit.trace(nn.BatchNorm1d(3).eval(), fabric.randn(4, 3))   # reads x.dim() only
        fabric.jit.trace(lambda x: fabric.tanh(x) * 3, fabric.ones(2))


def test_check_trace_detects_data_dependent_branch():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x

    with pytest.warns(fabric.jit.TracerWarning), \
            pytest.raises(fabric.jit.TracingCheckError, match="Graphs differed across invocations"):
        fabric.jit.trace(f, fabric.ones(2), check_inputs=[(-fabric.ones(2),)])


def test_check_trace_warns_on_nondeterminism_and_constants():
    with pytest.warns(fabric.jit.TracerWarning, match="nondeterministic nodes"):
        fabric.jit.trace(nn.Dropout(0.5), fabric.ones(10))
    # a Python value baked in: the retrace differs
    with pytest.warns(fabric.jit.TracerWarning, match="Converting a tensor to a Python number"), \
            pytest.raises(fabric.jit.TracingCheckError):
        fabric.jit.trace(lambda x: x * x.sum().item(), fabric.ones(2), check_inputs=[fabric.zeros(2)])


def test_strict_warns_on_list_output_and_non_tensor_inputs_rejected():
    with pytest.warns(fabric.jit.TracerWarning, match="Encountering a list at the output of the tracer"):
        fabric.jit.trace(lambda x: [x, x + 1], fabric.ones(1), check_trace=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fabric.jit.TracerWarning)
        fabric.jit.trace(lambda x: [x, x + 1], fabric.ones(1), strict=False, check_trace=False)
    with pytest.raises(RuntimeError, match=r"Type 'Tuple\[Tensor, int\]' cannot be traced"):
        fabric.jit.trace(lambda x, n: x * n, (fabric.ones(1), 3))
    with pytest.raises(RuntimeError, match="example_kwarg_inputs or example_inputs must be provided"):
        fabric.jit.trace(lambda x: x)


def test_trace_module_methods():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            return self.lin(x).relu()

        def score(self, x):
            return self.lin(x).sum(1)

    m = M()
    t = fabric.jit.trace_module(m, {"forward": fabric.randn(2, 3), "score": fabric.randn(2, 3)})
    x = fabric.randn(4, 3)
    assert fabric.allclose(t(x), m(x)) and fabric.allclose(t.score(x), m.score(x))
    with pytest.raises(AttributeError, match="expected a dictionary"):
        fabric.jit.trace_module(m, fabric.ones(1))


def test_trace_shares_parameters_and_follows_to():
    m = nn.Linear(3, 3)
    t = fabric.jit.trace(m, fabric.randn(1, 3))
    assert t.weight is m.weight
    t.to(fabric.float64)
    x = fabric.randn(2, 3, dtype=fabric.float64)
    assert t(x).dtype == fabric.float64 and fabric.allclose(t(x), m(x))


def test_trace_recurrent_layers_check_passes():
    fabric.manual_seed(0)
    for rnn in (nn.LSTM(4, 6, batch_first=True), nn.GRU(4, 6, num_layers=2)):
        x = fabric.randn(2, 3, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fabric.jit.TracerWarning)
            t = fabric.jit.trace(rnn, x)
        assert fabric.allclose(t(x)[0], rnn(x)[0], atol=1e-6)
