"""jit.trace / concrete_trace record functions a module keeps as attributes (TransformerEncoderLayer's
``self.activation = F.gelu``); an unrecorded function reading a traced tensor's internals raises."""
import io
import warnings

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric import nn
from fabric.fx._concrete import concrete_trace


class _Stored(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.lin(x)) * 2


def _layer(dtype=fabric.float32):
    fabric.manual_seed(0)
    return nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True).to(dtype)


def _jit(m, x):
    return fabric.jit.trace(m, x)


def _concrete(m, x):
    return concrete_trace(m, (x,))


def _grads(m, out):
    m.zero_grad()
    out.pow(2).sum().backward()
    return [p.grad.numpy().copy() for p in m.parameters()]


@pytest.mark.filterwarnings("ignore:Trace had nondeterministic nodes")  # dropout=0.0 in training mode
@pytest.mark.parametrize("trace", [_jit, _concrete])
@pytest.mark.parametrize("make", [_layer, lambda: _Stored(F.relu), lambda: _Stored(fabric.tanh)],
                         ids=["encoder_gelu", "relu", "tanh"])
def test_new_inputs_match_eager_with_gradients(trace, make):
    m = make()
    width = 8 if isinstance(m, nn.TransformerEncoderLayer) else 4
    traced = trace(m, fabric.randn(2, 5, width))
    for _ in range(2):
        x = fabric.randn(2, 5, width, requires_grad=True)
        want, got = m(x), traced(x)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
        gx_want = fabric.autograd.grad(want.pow(2).sum(), x)[0]
        gx_got = fabric.autograd.grad(got.pow(2).sum(), x)[0]
        np.testing.assert_allclose(gx_got.numpy(), gx_want.numpy(), rtol=1e-5, atol=1e-6)
        for a, b in zip(_grads(m, traced(x)), _grads(m, m(x))):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_traced_stored_function_gradcheck():
    fabric.manual_seed(1)
    m = _Stored(fabric.tanh).double()
    traced = fabric.jit.trace(m, fabric.randn(3, 4, dtype=fabric.float64))
    x = fabric.randn(3, 4, dtype=fabric.float64, requires_grad=True)
    assert fabric.autograd.gradcheck(traced, (x,))
    assert fabric.autograd.gradgradcheck(traced, (x,))


def test_traced_encoder_layer_save_load_round_trip():
    m = _layer().eval()
    traced = fabric.jit.trace(m, fabric.randn(2, 5, 8))
    buf = io.BytesIO()
    fabric.jit.save(traced, buf)
    buf.seek(0)
    loaded = fabric.jit.load(buf)
    y = fabric.randn(3, 4, 8)
    with fabric.no_grad():
        np.testing.assert_allclose(loaded(y).numpy(), m(y).numpy(), rtol=1e-6, atol=1e-6)


def test_internal_read_by_unrecorded_function_raises():
    from fabric.nn.functional._activation import Gelu, _unary
    m = _Stored(lambda t: _unary(Gelu, t, "none"))
    for trace in (_jit, _concrete):
        with pytest.raises(RuntimeError, match="internal attribute '_data'"):
            trace(m, fabric.randn(2, 4))


@pytest.mark.torch
def test_traced_encoder_layer_matches_pytorch_trace():
    torch = pytest.importorskip("torch")
    m = _layer(fabric.float64).eval()
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True).double().eval()
    with torch.no_grad():
        for name, p in m.state_dict().items():
            tm.state_dict()[name].copy_(torch.from_numpy(p.numpy()))
    rng = np.random.default_rng(2)
    example, new = rng.standard_normal((2, 5, 8)), rng.standard_normal((3, 4, 8))
    traced = fabric.jit.trace(m, fabric.tensor(example))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ttraced = torch.jit.trace(tm, torch.from_numpy(example), check_trace=False)
    want = ttraced(torch.from_numpy(new)).detach().numpy()
    np.testing.assert_allclose(traced(fabric.tensor(new)).detach().numpy(), want, rtol=1e-10, atol=1e-10)



@pytest.mark.filterwarnings("ignore::fabric.jit.TracerWarning")
def test_traced_recurrent_layers_on_new_inputs():
    # the fused layer kernel reads raw arrays: it is recorded as one node (it used to be a frozen constant)
    fabric.manual_seed(0)
    for rnn in (nn.LSTM(4, 6, batch_first=True), nn.GRU(4, 6, num_layers=2, bidirectional=True)):
        traced = fabric.jit.trace(rnn, fabric.randn(2, 3, 4))
        x = fabric.randn(2, 3, 4, requires_grad=True)
        (got, _), (want, _) = traced(x), rnn(x)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
        gx_got = fabric.autograd.grad(got.pow(2).sum(), x)[0]
        gx_want = fabric.autograd.grad(want.pow(2).sum(), x)[0]
        np.testing.assert_allclose(gx_got.numpy(), gx_want.numpy(), rtol=1e-5, atol=1e-6)
        with pytest.raises(RuntimeError, match="Could not export Python function call '_run_layer'"):
            fabric.jit.save(traced, io.BytesIO())
