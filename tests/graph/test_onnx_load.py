"""fabric.onnx.load_model: exported files come back as trainable fabric modules with the same outputs."""
import io

import numpy as np
import pytest

import fabric
from fabric import nn

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from test_onnx_export import (  # noqa: E402
    ActivationZoo,
    BasicBlock,
    ControlFlow,
    GPTBlock,
    NanoGPTAttention,
    RNNModel,
    SmallCNN,
    TensorCodeZoo,
    UNetish,
    _randomize_bn,
    char_gpt_model,
)

import fabric.onnx  # noqa: E402


def _roundtrip(model, args, **kw):
    model.eval()
    f = io.BytesIO()
    fabric.onnx.export(model, args, f, **kw)
    return fabric.onnx.load_model(io.BytesIO(f.getvalue()))


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


CASES = {
    "mlp": (lambda: nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 3)),
            lambda: (fabric.randn(4, 6),)),
    "cnn": (SmallCNN, lambda: (fabric.randn(2, 3, 8, 8),)),
    "resnet": (lambda: BasicBlock(4, 8, 2), lambda: (fabric.randn(2, 4, 10, 10),)),
    "lstm": (lambda: RNNModel("LSTM", True, 2), lambda: (fabric.randn(2, 5, 5),)),
    "gru": (lambda: RNNModel("GRU"), lambda: (fabric.randn(3, 4, 5),)),
    "encoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2,
                                              enable_nested_tensor=False), lambda: (fabric.randn(2, 5, 16),)),
    "gpt": (GPTBlock, lambda: (fabric.randint(0, 20, (2, 7)),)),
    "nanogpt": (NanoGPTAttention, lambda: (fabric.randn(2, 6, 16),)),
    "zoo": (ActivationZoo, lambda: (fabric.randn(2, 3, 8, 8) * 2,)),
    "control_flow": (ControlFlow, lambda: (fabric.randn(3, 4),)),
    "char_gpt": (char_gpt_model, lambda: (fabric.randint(0, 30, (2, 9)),)),
    "tensor_code": (TensorCodeZoo, lambda: (fabric.randn(2, 3, 6),)),
    "unet": (UNetish, lambda: (fabric.randn(2, 3, 8, 8),)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("fold", [False, True])
def test_round_trip_same_outputs(name, fold):
    fabric.manual_seed(0)
    make, inputs = CASES[name]
    m = make()
    _randomize_bn(m)
    args = inputs()
    loaded = _roundtrip(m, args, do_constant_folding=fold)
    for got, want in zip(_flat(loaded(*args)), _flat(m(*args))):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_round_trip_keeps_state_dict_names_and_trains_like_eager():
    fabric.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x, y = fabric.randn(32, 4), fabric.randn(32, 1)
    loaded = _roundtrip(m, (x,), do_constant_folding=False)
    assert sorted(k for k, _ in loaded.named_parameters()) == sorted(m.state_dict())
    runs = []
    for model in (loaded, m):
        opt = fabric.optim.SGD(model.parameters(), lr=0.2)
        losses = []
        for _ in range(30):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append(losses)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-5)
    assert runs[0][-1] < runs[0][0]


def test_loaded_module_is_a_graph_module_with_readable_code():
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    loaded = _roundtrip(m, (fabric.randn(1, 3),), do_constant_folding=False)
    assert isinstance(loaded, fabric.fx.GraphModule)
    assert "onnx_MatMul" in loaded.code and "onnx_Relu" in loaded.code


def test_unknown_operator_is_named():
    from onnx import TensorProto, helper
    node = helper.make_node("Hardmax", ["x"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(NotImplementedError, match="'Hardmax'"):
        fabric.onnx.load_model(helper.make_model(g))


@pytest.mark.torch
def test_loads_a_file_written_by_torch():
    torch = pytest.importorskip("torch")
    import warnings
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                             torch.nn.Linear(4 * 6 * 6, 5)).eval()
    f = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(tm, (torch.randn(2, 3, 6, 6),), f, dynamo=False)
    except Exception as e:
        pytest.skip(f"torch.onnx.export unavailable: {e}")
    loaded = fabric.onnx.load_model(io.BytesIO(f.getvalue()))
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(loaded(fabric.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_if_and_loop_come_back_as_control_flow_ops():
    fabric.manual_seed(0)
    m = ControlFlow()
    loaded = _roundtrip(m, (fabric.randn(3, 4),), input_names=["x"], dynamic_axes={"x": [0]})
    assert "fabric.fx.control_flow.cond" in loaded.code and "fabric.fx.control_flow.while_loop" in loaded.code
    for b, s in [(2, 1.0), (5, -1.0), (1, 3.0)]:
        x = fabric.randn(b, 4) * s
        np.testing.assert_allclose(loaded(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "gpt", "unet"])
def test_loaded_fine_tuned_model_exports_again(name):
    ort = pytest.importorskip("onnxruntime")
    fabric.manual_seed(0)
    make, inputs = CASES[name]
    m = make()
    _randomize_bn(m)
    args = inputs()
    loaded = _roundtrip(m, args, do_constant_folding=False)
    floats = [p for p in loaded.parameters() if p.dim() > 1]
    with fabric.no_grad():                 # a "fine-tuning" step: the re-exported file must carry the new weights
        floats[0].mul_(0.5)
    f = io.BytesIO()
    fabric.onnx.export(loaded, args, f)
    onnx.checker.check_model(onnx.load_from_string(f.getvalue()), full_check=True)
    sess = ort.InferenceSession(f.getvalue())
    got = sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)})
    for g, w in zip(got, _flat(loaded(*args))):
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-4, atol=1e-5)
