"""fabric.onnx.export: every file passes onnx.checker (full_check) and onnxruntime reproduces fabric's
outputs at two batch sizes through a dynamic batch axis (and a dynamic sequence length where the model allows)."""
import io
import warnings

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import fabric.onnx  # noqa: E402


def _export(model, args, input_names, output_names, dynamic_axes, **kw):
    f = io.BytesIO()
    proto = fabric.onnx.export(model, args, f, input_names=input_names, output_names=output_names,
                               dynamic_axes=dynamic_axes, **kw)
    onnx.checker.check_model(onnx.load_from_string(f.getvalue()), full_check=True)
    return proto, ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [] if out is None else [out]


def _check(model, make_inputs, input_names, output_names, dynamic_axes, sizes, **kw):
    model.eval()
    proto, sess = _export(model, make_inputs(*sizes[0]), input_names, output_names, dynamic_axes, **kw)
    for size in sizes:
        inputs = make_inputs(*size)
        want = [t.detach().numpy() for t in _flat(model(*inputs))]
        got = sess.run(None, {n: t.numpy() for n, t in zip(input_names, inputs)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    return proto


def test_mlp_layernorm_gelu():
    fabric.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Dropout(0.2), nn.Linear(16, 16),
                      nn.GELU(approximate="tanh"), nn.Linear(16, 3))
    _check(m, lambda b: (fabric.randn(b, 6),), ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}}, [(2,), (5,)])


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=1, padding="same", bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.avg = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(fabric.relu(self.bn1(self.conv1(x))))
        x = self.avg(F.relu(self.bn2(self.conv2(x))))
        x = self.gap(x)
        x = x.view(x.size(0), -1)
        return self.fc(self.drop(x))


def _randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.copy_(fabric.randn(mod.num_features) * 0.1)
            mod.running_var.copy_(fabric.rand(mod.num_features) + 0.5)


def test_cnn_batchnorm_pool_dropout_eval():
    fabric.manual_seed(0)
    m = SmallCNN()
    _randomize_bn(m)
    _check(m, lambda b: (fabric.randn(b, 3, 8, 8),), ["x"], ["logits"], {"x": {0: "N"}, "logits": {0: "N"}},
           [(2,), (3,)])
    m.train()
    fabric.onnx.export(m, (fabric.randn(2, 3, 8, 8),), None)
    assert m.training  # export put it in eval mode only while exporting


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


def test_resnet_basic_block():
    fabric.manual_seed(0)
    m = BasicBlock(4, 8, 2)
    _randomize_bn(m)
    _check(m, lambda b: (fabric.randn(b, 4, 10, 10),), ["x"], ["y"], {"x": [0], "y": [0]}, [(1,), (4,)])


class RNNModel(nn.Module):
    def __init__(self, kind, bidirectional=False, num_layers=1):
        super().__init__()
        self.kind = kind
        self.rnn = getattr(nn, kind)(5, 7, num_layers=num_layers, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(7 * (2 if bidirectional else 1), 3)

    def forward(self, x):
        out, state = self.rnn(x)
        h = state[0] if self.kind == "LSTM" else state   # a Python branch on a module attribute traces fine
        return self.head(out), h


@pytest.mark.parametrize("kind,bidirectional,layers", [("LSTM", False, 1), ("GRU", False, 1), ("LSTM", True, 2),
                                                       ("GRU", True, 2)])
def test_lstm_gru_use_onnx_recurrent_ops(kind, bidirectional, layers):
    fabric.manual_seed(0)
    m = RNNModel(kind, bidirectional, layers)
    proto = _check(m, lambda b, t: (fabric.randn(b, t, 5),), ["x"], ["y", "h"],
                   {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}, "h": {1: "batch"}}, [(2, 4), (3, 6)])
    assert sum(n.op_type == kind for n in proto.graph.node) == layers


def test_transformer_encoder_dynamic_batch_and_sequence():
    fabric.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True, activation="gelu")
    m = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=False)
    _check(m, lambda b, t: (fabric.randn(b, t, 16),), ["src"], ["out"],
           {"src": {0: "batch", 1: "seq"}, "out": {0: "batch", 1: "seq"}}, [(2, 5), (3, 7)])


def test_transformer_encoder_norm_first_seq_first_with_padding_mask():
    fabric.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True)
    m = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = m

        def forward(self, x, pad):
            return self.enc(x, src_key_padding_mask=pad)

    def inputs(b, t):
        pad = fabric.zeros(b, t, dtype=fabric.bool)
        pad[:, -1] = True
        return fabric.randn(t, b, 8), pad
    _check(Wrap(), inputs, ["x", "pad"], ["y"], {"x": {0: "seq", 1: "batch"}, "pad": {0: "batch", 1: "seq"},
                                                 "y": {0: "seq", 1: "batch"}}, [(2, 4), (3, 6)])


class GPTBlock(nn.Module):
    """Token + position embedding, one causal self-attention block, tied output projection."""

    def __init__(self, vocab=20, d=16, heads=4, ctx=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx):
        t = idx.size(1)
        x = self.tok(idx) + self.pos(fabric.arange(t))
        mask = fabric.triu(fabric.full((t, t), float("-inf")), diagonal=1)
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        x = x + self.mlp(self.ln2(x))
        return F.linear(self.ln_f(x), self.tok.weight)   # tied with the token embedding


def test_gpt_block_causal_mask_embedding_tied_weights():
    fabric.manual_seed(0)
    m = GPTBlock()
    proto = _check(m, lambda b, t: (fabric.randint(0, 20, (b, t)),), ["idx"], ["logits"],
                   {"idx": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}, [(2, 5), (3, 9)],
                   do_constant_folding=False)
    names = [i.name for i in proto.graph.initializer]
    assert names.count("tok.weight") == 1   # one initializer serves the embedding and the output layer


def test_unsupported_op_names_it():
    class M(nn.Module):
        def forward(self, x):
            return fabric.cumsum(x, 0)
    with pytest.raises(fabric.onnx.UnsupportedOperatorError, match="'fabric.cumsum'.*opset version 18"):
        fabric.onnx.export(M(), (fabric.ones(3),), io.BytesIO())


def test_options_export_params_and_initializers_as_inputs():
    fabric.manual_seed(0)
    m = nn.Linear(3, 2)
    x = fabric.randn(4, 3)
    p = fabric.onnx.export(m, (x,), None, input_names=["x"], export_params=False)
    assert [i.name for i in p.graph.input] == ["x", "weight", "bias"] and not p.graph.initializer
    sess = ort.InferenceSession(p.SerializeToString())
    got = sess.run(None, {"x": x.numpy(), "weight": m.weight.detach().numpy(), "bias": m.bias.detach().numpy()})[0]
    np.testing.assert_allclose(got, m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    p2 = fabric.onnx.export(m, (x,), None, keep_initializers_as_inputs=True, do_constant_folding=False,
                            opset_version=17)
    assert {i.name for i in p2.graph.input} == {"input", "weight", "bias"}
    assert p2.opset_import[0].version == 17
    with pytest.raises(ValueError, match="opset_version 17 to 21"):
        fabric.onnx.export(m, (x,), None, opset_version=9)


def test_dynamic_shapes_torch_export_style(tmp_path):
    from fabric.export import Dim
    fabric.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    path = tmp_path / "m.onnx"
    fabric.onnx.export(m, (fabric.randn(2, 4),), str(path), dynamic_shapes={"input": {0: Dim("batch")}})
    model = onnx.load(str(path))
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    sess = ort.InferenceSession(str(path))
    x = fabric.randn(6, 4)
    np.testing.assert_allclose(sess.run(None, {"input": x.numpy()})[0], m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def _parity_models(lib):
    nn_ = lib.nn
    return {
        "mlp": (nn_.Sequential(nn_.Linear(6, 16), nn_.LayerNorm(16), nn_.GELU(), nn_.Linear(16, 3)), (5, 6)),
        "cnn": (nn_.Sequential(nn_.Conv2d(3, 4, 3, padding=1), nn_.BatchNorm2d(4), nn_.ReLU(), nn_.MaxPool2d(2),
                               nn_.Flatten(), nn_.Linear(4 * 4 * 4, 5)), (3, 3, 8, 8)),
        "lstm": (nn_.LSTM(5, 7, num_layers=2, batch_first=True), (3, 4, 5)),
        "gru": (nn_.GRU(5, 7, batch_first=True, bidirectional=True), (3, 4, 5)),
    }


@pytest.mark.torch
@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "gru"])
def test_same_numbers_as_torch_onnx_file_in_onnxruntime(name):
    torch = pytest.importorskip("torch")
    fabric.manual_seed(0)
    fm, shape = _parity_models(fabric)[name]
    tm, _ = _parity_models(torch)[name]
    fm.eval()
    tm.eval()
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in fm.state_dict().items()})
    axes = {"x": {0: "b"}}
    f1 = io.BytesIO()
    fabric.onnx.export(fm, (fabric.randn(*shape),), f1, input_names=["x"], dynamic_axes=axes)
    f2 = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(tm, (torch.randn(*shape),), f2, input_names=["x"], dynamic_axes=axes, dynamo=False)
    except Exception as e:  # torch's exporter may need packages absent here
        pytest.skip(f"torch.onnx.export unavailable: {e}")
    x = np.random.default_rng(0).standard_normal((2,) + shape[1:]).astype(np.float32)
    a = ort.InferenceSession(f1.getvalue()).run(None, {"x": x})
    b = ort.InferenceSession(f2.getvalue()).run(None, {"x": x})
    assert len(a) == len(b)
    for ga, gb in zip(a, b):
        np.testing.assert_allclose(ga, gb, rtol=1e-4, atol=1e-5)


class NanoGPTAttention(nn.Module):
    """The hand-written causal attention of nanoGPT: shapes from x.size(), a registered tril buffer."""

    def __init__(self, d=16, h=4, ctx=16):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.n_head = h
        self.register_buffer("bias", fabric.tril(fabric.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.n_head) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


def test_nanogpt_attention_with_shape_arithmetic():
    fabric.manual_seed(0)
    _check(NanoGPTAttention(), lambda b, t: (fabric.randn(b, t, 16),), ["x"], ["y"],
           {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, [(2, 5), (3, 11)])


class ControlFlow(nn.Module):
    """fx.control_flow ops (what jit.script produces for if / for range / while) become ONNX If / Loop."""

    def __init__(self):
        super().__init__()
        from fabric import fx
        self.lin = nn.Linear(4, 4)
        self.then_ = fx.symbolic_trace(lambda x, y: (x + y,))
        self.else_ = fx.symbolic_trace(lambda x, y: (x * y - 1,))
        self.body = fx.symbolic_trace(lambda i, acc, x: (acc + x * i, x))
        self.w_cond = fx.symbolic_trace(lambda n, acc: n < 3)
        self.w_body = fx.symbolic_trace(lambda n, acc: (n + 1, fabric.tanh(acc)))

    def forward(self, x):
        from fabric.fx.control_flow import cond, range_loop, while_loop
        h = self.lin(x)
        (r,) = cond(h.sum() > 0, self.then_, self.else_, (h, x))
        acc, _ = range_loop(0, x.size(0), 1, self.body, (r, h))
        _, acc = while_loop(self.w_cond, self.w_body, (0, acc))
        return acc


def test_control_flow_ops_lower_to_if_and_loop():
    fabric.manual_seed(0)
    m = ControlFlow()
    proto = _check(m, lambda b, s: (fabric.randn(b, 4) * s,), ["x"], ["y"], {"x": {0: "n"}, "y": {0: "n"}},
                   [(2, 1.0), (5, -1.0), (3, 3.0)])
    assert [n.op_type for n in proto.graph.node if n.op_type in ("If", "Loop")] == ["If", "Loop", "Loop"]


def test_exported_program_input_and_verify():
    from fabric.export import Dim, export
    fabric.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    ep = export(m, (fabric.randn(2, 4),), dynamic_shapes={"input": {0: Dim("b")}})
    proto = fabric.onnx.export(ep, f=None, input_names=["x"], dynamic_axes={"x": [0]}, verify=True, dynamo=True)
    onnx.checker.check_model(proto, full_check=True)
    with pytest.raises(NotImplementedError, match="custom_translation_table"):
        fabric.onnx.export(m, (fabric.randn(2, 4),), custom_translation_table={fabric.relu: None})


class ActivationZoo(nn.Module):
    """Activation modules/functions, functional conv/pool/batch_norm/pad and scaled_dot_product_attention."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(fabric.randn(4, 3, 3, 3) * 0.3)
        self.register_buffer("mean", fabric.randn(4) * 0.1)
        self.register_buffer("var", fabric.rand(4) + 0.5)
        self.acts = nn.Sequential(nn.LeakyReLU(0.2), nn.ELU(0.7), nn.Hardtanh(-2.0, 2.0), nn.Softplus(beta=2.0),
                                  nn.ReLU6(), nn.Hardswish(), nn.Mish())
        self.rnn = nn.RNN(4, 5, batch_first=True, nonlinearity="relu", bidirectional=True)

    def forward(self, x):
        h = F.conv2d(F.pad(x, (1, 1, 1, 1)), self.w, stride=1)
        h = F.batch_norm(h, self.mean, self.var, training=False)
        h = F.max_pool2d(self.acts(h), 2)
        h = F.avg_pool2d(F.leaky_relu(h, 0.1), 2, stride=1) + fabric.clamp(h[:, :, :3, :3], -0.5, 0.5)
        seq = h.flatten(2).transpose(1, 2)                     # (B, 9, 4)
        q = seq.view(seq.size(0), seq.size(1), 2, 2).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        out, hn = self.rnn(a.transpose(1, 2).reshape(seq.size(0), seq.size(1), 4))
        return F.hardsigmoid(out) + F.softplus(out) + F.elu(out) + F.relu6(out) + F.mish(out), hn


def test_activation_zoo_functional_layers_sdpa_rnn():
    fabric.manual_seed(0)
    _check(ActivationZoo(), lambda b: (fabric.randn(b, 3, 8, 8) * 2,), ["x"], ["y", "h"],
           {"x": {0: "b"}, "y": {0: "b"}, "h": {1: "b"}}, [(2,), (3,)])


def test_keyword_inputs_and_leaf_root_with_mask():
    fabric.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 1,
                                enable_nested_tensor=False).eval()
    x = fabric.randn(2, 5, 8)
    pad = fabric.zeros(2, 5, dtype=fabric.bool)
    pad[0, -2:] = True
    f = io.BytesIO()
    proto = fabric.onnx.export(enc, (x,), f, kwargs={"src_key_padding_mask": pad}, input_names=["x", "pad"],
                               dynamic_axes={"x": {0: "b", 1: "t"}, "pad": {0: "b", 1: "t"}}, verify=True)
    assert [i.name for i in proto.graph.input] == ["x", "pad"]
    sess = ort.InferenceSession(f.getvalue())
    x2, pad2 = fabric.randn(3, 4, 8), fabric.zeros(3, 4, dtype=fabric.bool)
    pad2[1, -1] = True
    np.testing.assert_allclose(sess.run(None, {"x": x2.numpy(), "pad": pad2.numpy()})[0],
                               enc(x2, src_key_padding_mask=pad2).detach().numpy(), rtol=1e-4, atol=1e-5)
    # PyTorch's convention: a trailing dict in args holds keyword inputs
    p2 = fabric.onnx.export(enc, (x, {"src_key_padding_mask": pad}), None)
    assert len(p2.graph.input) == 2


def char_gpt_model():
    """The GPT of examples/char_gpt.py, small."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "char_gpt.py")
    spec = importlib.util.spec_from_file_location("char_gpt_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.GPT(vocab=30, context=16, d_model=32, n_layer=2, n_head=4)


def test_the_char_gpt_example_exports():
    fabric.manual_seed(0)
    m = char_gpt_model()
    _check(m, lambda b, t: (fabric.randint(0, 30, (b, t)),), ["idx"], ["logits"],
           {"idx": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}, [(2, 5), (3, 16)])


class Scripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        if h.sum() > 0:
            h = h * 2
        else:
            h = h - 1
        for i in range(3):
            h = fabric.tanh(h) + i
        return h


def test_scripted_control_flow_exports_as_if_and_loop():
    jit = pytest.importorskip("fabric.jit", reason="fabric.jit (the jit helper's branch) is not merged here")
    fabric.manual_seed(0)
    m = Scripted()
    sm = jit.script(m)
    proto = _check(sm, lambda b, s: (fabric.randn(b, 4) * s + s,), ["x"], ["y"], {"x": [0], "y": [0]},
                   [(2, 1.0), (3, -1.0)])
    assert {n.op_type for n in proto.graph.node} >= {"If", "Loop"}
    x = fabric.randn(3, 4) - 1
    np.testing.assert_allclose(sm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


class TensorCodeZoo(nn.Module):
    """Tensor code from modern models: RMSNorm, einsum, like-constructors, casts, max/argmax, repeat, normalize."""

    def __init__(self):
        super().__init__()
        self.g = nn.Parameter(fabric.rand(6) + 0.5)
        self.w = nn.Parameter(fabric.randn(6, 6) * 0.3)

    def forward(self, x):
        h = x * fabric.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.g        # RMSNorm
        h = fabric.einsum("btd,de->bte", h, self.w)
        z = fabric.zeros_like(h) + fabric.ones_like(h) * 0.5 + fabric.full_like(h, 2.0)
        m, idx = h.max(dim=-1)
        top = h.argmax(dim=-1).float() + idx.long().float()
        r = h[:, :1, :].repeat(1, 2, 1)
        n = F.normalize(h, dim=-1)
        return (z + h).amax(dim=1) + m.sum(dim=-1, keepdim=True), top, r, n, fabric.maximum(h, z)


def test_tensor_code_zoo():
    fabric.manual_seed(0)
    _check(TensorCodeZoo(), lambda b, t: (fabric.randn(b, t, 6),), ["x"], ["a", "b", "c", "d", "e"],
           {"x": {0: "b", 1: "t"}}, [(2, 3), (4, 5)])


def test_full_transformer_encoder_decoder():
    fabric.manual_seed(0)
    t = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32,
                       dropout=0.1, batch_first=True)

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = t

        def forward(self, src, tgt):
            n = tgt.size(1)
            causal = fabric.triu(fabric.full((n, n), float("-inf")), diagonal=1)
            return self.t(src, tgt, tgt_mask=causal)

    _check(Seq2Seq(), lambda b, s, n: (fabric.randn(b, s, 16), fabric.randn(b, n, 16)), ["src", "tgt"], ["out"],
           {"src": {0: "b", 1: "s"}, "tgt": {0: "b", 1: "n"}, "out": {0: "b", 1: "n"}}, [(2, 5, 3), (3, 7, 6)])
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True, activation="gelu")
    dec = nn.TransformerDecoder(layer, 1, norm=nn.LayerNorm(8))
    _check(dec, lambda b, n: (fabric.randn(n, b, 8), fabric.randn(4, b, 8)), ["tgt", "memory"], ["y"],
           {"tgt": {0: "n", 1: "b"}, "memory": {1: "b"}, "y": {0: "n", 1: "b"}}, [(2, 3), (3, 5)])


class UNetish(nn.Module):
    """GroupNorm, InstanceNorm, ConvTranspose, Upsample / interpolate: the decoder side of image models."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.gn = nn.GroupNorm(2, 8)
        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.ups = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        h = F.silu(self.gn(self.down(x)))
        h = self.inorm(self.up(h))
        a = self.ups(h)
        b = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        c = F.interpolate(h, size=(5, 7), mode="bilinear", align_corners=True)
        return a + b, c, F.group_norm(h, 2)


def test_unet_style_norms_transposed_conv_and_resizing():
    fabric.manual_seed(0)
    m = UNetish()
    with fabric.no_grad():
        m.gn.weight.copy_(fabric.rand(8) + 0.5)
        m.inorm.bias.copy_(fabric.randn(4))
    _check(m, lambda b: (fabric.randn(b, 3, 8, 8),), ["x"], ["y", "z", "w"], {"x": {0: "b"}}, [(2,), (3,)])
