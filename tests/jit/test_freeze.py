"""fabric.jit.freeze / optimize_for_inference: same numbers as eager, parameters become constants."""
import pytest

import fabric
from fabric import fx, nn
from fabric.fx import control_flow


def _conv_net():
    fabric.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Dropout(0.5),
                        nn.Conv2d(4, 2, 1, bias=False), nn.BatchNorm2d(2))
    net.train()
    for _ in range(3):                       # non-trivial running statistics
        net(fabric.randn(4, 2, 5, 5))
    return net.eval()


@pytest.mark.parametrize("front", ["script", "trace"])
def test_freeze_matches_eager_and_has_no_state(front):
    net = _conv_net()
    x = fabric.randn(3, 2, 5, 5)
    sm = fabric.jit.script(net) if front == "script" else fabric.jit.trace(net, x)
    frozen = fabric.jit.freeze(sm)
    assert fabric.allclose(frozen(x), net(x), atol=1e-6)
    assert list(frozen.state_dict()) == [] and list(frozen.parameters()) == []
    # training is folded: no branch on it survives
    assert all(n.op != "get_attr" or not n.target.endswith("training") for n in frozen.graph.nodes)


def test_freeze_inlines_training_branches():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            if self.training:
                x = x * 10
            else:
                x = x - 1
            return self.lin(x)

    m = M().eval()
    sm = fabric.jit.script(m)
    assert control_flow.cond in [n.target for n in sm.graph.nodes]
    frozen = fabric.jit.freeze(sm)
    assert control_flow.cond not in [n.target for n in frozen.graph.nodes]
    x = fabric.randn(2, 3)
    assert fabric.allclose(frozen(x), m(x))


def test_freeze_keeps_data_dependent_control_flow():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, n: int):
            for _ in range(n):
                if x.sum() > 0:
                    x = self.lin(x)
                else:
                    x = -x
            return x

    m = M().eval()
    frozen = fabric.jit.freeze(fabric.jit.script(m))
    targets = [n.target for n in frozen.graph.nodes]
    assert control_flow.range_loop in targets
    for n in (0, 1, 4):
        x = fabric.randn(3, 2)
        assert fabric.allclose(frozen(x, n), m(x, n))


def test_freeze_errors_and_preserved_attrs():
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
        fabric.jit.freeze(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        fabric.jit.freeze(fabric.jit.script(nn.Linear(2, 2)))
    lin = nn.Linear(2, 2).eval()
    frozen = fabric.jit.freeze(fabric.jit.script(lin), preserved_attrs=["weight"])
    assert frozen.weight is lin.weight
    with fabric.no_grad():
        lin.weight.mul_(2)
    x = fabric.randn(1, 2)
    assert fabric.allclose(frozen(x), lin(x))


def test_optimize_for_inference_folds_conv_bn_and_dropout():
    net = _conv_net()
    x = fabric.randn(3, 2, 5, 5)
    for sm in (fabric.jit.script(net), fabric.jit.trace(net, x)):
        opt = fabric.jit.optimize_for_inference(sm)
        names = [getattr(n.target, "__name__", "") for n in opt.graph.nodes if n.op == "call_function"]
        assert "batch_norm" not in names and "dropout" not in names
        assert names.count("conv2d") == 2
        assert fabric.allclose(opt(x), net(x), atol=1e-5)
        assert isinstance(opt, fx.GraphModule)
    with pytest.raises(RuntimeError, match="expects a ScriptModule"):
        fabric.jit.optimize_for_inference(net)
