"""fabric.export: ExportedProgram (graph + state + signature), Dim, module() guards; docstring examples of the
graph packages."""
import doctest
import importlib

import numpy as np
import pytest

import fabric
from fabric import nn
from fabric.export import Dim, ExportedProgram, InputKind, export


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)
        self.register_buffer("offset", fabric.tensor(0.5))

    def forward(self, x):
        h = fabric.relu(self.bn(self.conv(x)))
        h = h.mean(dim=(2, 3))
        return self.fc(h) + self.offset


def test_exported_program_runs_like_eager_and_describes_itself():
    fabric.manual_seed(0)
    m = Net().eval()
    x = fabric.randn(2, 3, 5, 5)
    ep = export(m, (x,), dynamic_shapes={"x": {0: Dim("batch", min=1, max=64)}})
    assert isinstance(ep, ExportedProgram)
    sig = ep.graph_signature
    assert sig.parameters == ("conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias")
    assert sig.buffers == ("offset", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked")
    assert sig.user_inputs == ("x",)
    assert [s.kind for s in sig.input_specs][-1] is InputKind.USER_INPUT
    assert set(ep.state_dict) == set(m.state_dict())
    assert ep.range_constraints == {"batch": (1, 64)}
    mod = ep.module()
    for b in (2, 7):
        xb = fabric.randn(b, 3, 5, 5)
        np.testing.assert_array_equal(mod(xb).detach().numpy(), m(xb).detach().numpy())
    assert ep.run_decompositions() is ep
    shapes = [tuple(n.meta["val"].shape) for n in ep.graph.nodes if n.op == "call_module"]
    assert shapes == [(2, 4, 5, 5), (2, 4, 5, 5), (2, 2)]
    assert "ExportedProgram" in str(ep)


def test_static_dims_are_checked_by_module():
    m = nn.Linear(3, 2)
    ep = export(m, (fabric.randn(4, 3),))
    with pytest.raises(RuntimeError, match=r"Expected input at \*args\[0\]\.shape\[0\] to be equal to 4, but got 5"):
        ep.module()(fabric.randn(5, 3))
    ep2 = export(m, (fabric.randn(4, 3),), dynamic_shapes=({0: Dim("b", max=8)},))
    assert ep2.module()(fabric.randn(8, 3)).shape == (8, 2)
    with pytest.raises(RuntimeError, match=r"shape\[0\] to be in range \[0, 8\], but got 9"):
        ep2.module()(fabric.randn(9, 3))


def test_bad_arguments():
    m = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="Expecting `args` to be a tuple"):
        export(m, fabric.randn(1, 3))
    with pytest.raises(ValueError, match="not a \\(positional\\) input"):
        export(m, (fabric.randn(1, 3),), dynamic_shapes={"y": {0: Dim("b")}})
    with pytest.raises(ValueError, match="inconsistent"):
        Dim("b", min=4, max=2)
    with pytest.raises(ValueError, match="conflicting with the example input's size 1"):
        export(m, (fabric.randn(1, 3),), dynamic_shapes={"input": {0: Dim("b", min=2)}})
    with pytest.raises(RuntimeError, match="call `exported_program.module\\(\\)`|exported_program.module"):
        export(m, (fabric.randn(1, 3),))(fabric.randn(1, 3))


@pytest.mark.torch
def test_signature_like_torch_export():
    import torch
    tm = torch.nn.Linear(3, 2)
    tep = torch.export.export(tm, (torch.randn(4, 3),))
    fep = export(nn.Linear(3, 2), (fabric.randn(4, 3),))
    assert fep.graph_signature.parameters == tep.graph_signature.parameters
    assert fep.graph_signature.user_inputs == tep.graph_signature.user_inputs


@pytest.mark.parametrize("module", ["fabric.fx.node", "fabric.fx.graph", "fabric.fx.graph_module", "fabric.fx.proxy",
                                    "fabric.fx._symbolic_trace", "fabric.fx.interpreter", "fabric.fx.subgraph_rewriter",
                                    "fabric.fx.passes.shape_prop", "fabric.fx.control_flow", "fabric.fx._concrete",
                                    "fabric.fx", "fabric.export", "fabric.onnx._onnx_ops"])
def test_docstring_examples(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
