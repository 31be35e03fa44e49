"""A model scripted / traced in PyTorch and in fabric gives the same outputs (torch is the oracle)."""
import numpy as np
import pytest

import fabric

pytestmark = pytest.mark.torch


def _torch():
    return pytest.importorskip("torch")


def make_net(T):
    """The same model class written against ``T`` (torch or fabric)."""
    nn = T.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(16, 8)
            self.norm = nn.LayerNorm(8)
            self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
            self.drop = nn.Dropout(0.25)

        def forward(self, x, steps: int):
            h = T.relu(self.bn(self.conv(x)))
            h = nn.functional.max_pool2d(h, 2).flatten(1)
            h = self.norm(self.fc(h))
            for layer in self.layers:
                h = h + nn.functional.gelu(layer(h))
            for _ in range(steps):
                if h.mean() > 0:
                    h = h * 0.5
                else:
                    h = h + 0.25
            k = 0
            while k < 2:
                h = self.drop(h)
                k += 1
            return T.log_softmax(h, dim=-1)

    return Net


def _copy_weights(tm, fm):
    sd = {k: fabric.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    fm.load_state_dict(sd)


def _pair():
    torch = _torch()
    torch.manual_seed(0)
    tm = make_net(torch)().eval()
    fm = make_net(fabric)().eval()
    _copy_weights(tm, fm)
    x = np.random.default_rng(0).standard_normal((3, 2, 4, 4)).astype(np.float32)
    return torch, tm, fm, x


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_scripted_models_agree():
    torch, tm, fm, x = _pair()
    ts, fs = torch.jit.script(tm), fabric.jit.script(fm)
    for steps in (0, 1, 3):
        want = ts(torch.from_numpy(x), steps).detach().numpy()
        got = fs(fabric.tensor(x), steps).detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _two_steps(T, net):
    class TwoSteps(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x, 2)

    return TwoSteps()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_traced_models_agree_at_other_batch_sizes():
    torch, tm, fm, x = _pair()
    tt = torch.jit.trace(_two_steps(torch, tm), torch.from_numpy(x))
    with pytest.warns(fabric.jit.TracerWarning):   # the h.mean() > 0 branch is baked in, as in torch
        ft = fabric.jit.trace(_two_steps(fabric, fm), fabric.tensor(x))
    for batch in (3, 6):
        xb = np.random.default_rng(batch).standard_normal((batch, 2, 4, 4)).astype(np.float32)
        want = tt(torch.from_numpy(xb)).detach().numpy()
        got = ft(fabric.tensor(xb)).detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def script_fn(T):
    def f(x, n: int, limit: float):
        acc = T.zeros_like(x)
        i = 0
        while i < n:
            for j in range(3):
                if (acc.sum() + j) < limit:
                    acc = acc + x * (j + 1)
                else:
                    acc = acc - 0.5
            i += 1
        return acc
    return f


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_scripted_functions_agree():
    torch = _torch()
    tf, ff = torch.jit.script(script_fn(torch)), fabric.jit.script(script_fn(fabric))
    x = np.linspace(-1, 2, 5).astype(np.float32)
    for n, limit in ((0, 1.0), (2, 3.0), (4, 10.0)):
        np.testing.assert_allclose(ff(fabric.tensor(x), n, limit).numpy(),
                                   tf(torch.from_numpy(x), n, limit).numpy(), rtol=1e-6)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_frozen_and_optimized_models_agree():
    torch, tm, fm, x = _pair()
    want = torch.jit.optimize_for_inference(torch.jit.script(tm))(torch.from_numpy(x), 2).detach().numpy()
    got = fabric.jit.optimize_for_inference(fabric.jit.script(fm))(fabric.tensor(x), 2).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    got = fabric.jit.freeze(fabric.jit.script(fm))(fabric.tensor(x), 2).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_unsupported_construct_rejected_by_both():
    torch = _torch()

    def f(x):
        try:
            return x + 1
        except Exception:
            return x

    with pytest.raises(Exception, match="try blocks aren't supported") as t_err:
        torch.jit.script(f)
    with pytest.raises(fabric.jit.frontend.UnsupportedNodeError, match="try blocks aren't supported") as f_err:
        fabric.jit.script(f)
    assert str(f_err.value).split("\n")[0] == str(t_err.value).strip().split("\n")[0]
