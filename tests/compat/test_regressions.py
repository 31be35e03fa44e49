"""Regression tests for mismatches found by the compat scripts (tests/compat/scripts)."""
from __future__ import annotations

import numpy as np
import pytest

import fabric


@pytest.mark.torch
@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 0, 1), (0, 2, 1)])
def test_dropout_mask_of_permuted_input_drawn_in_memory_order(perm):
    # torch: empty_like keeps a dense input's strides and bernoulli_ fills in memory
    # order, e.g. the transposed output of a batch_first MultiheadAttention
    import torch

    base = np.arange(1, 25, dtype=np.float32).reshape(2, 3, 4)
    torch.manual_seed(0)
    ref = torch.nn.functional.dropout(torch.from_numpy(base).permute(*perm), 0.5)
    fabric.manual_seed(0)
    got = fabric.nn.functional.dropout(fabric.from_numpy(base).permute(*perm), 0.5)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    # a strided (non-dense) input draws in C order of its shape
    torch.manual_seed(0)
    ref = torch.nn.functional.dropout(torch.from_numpy(base)[:, ::2], 0.5)
    fabric.manual_seed(0)
    got = fabric.nn.functional.dropout(fabric.from_numpy(base)[:, ::2], 0.5)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


@pytest.mark.torch
def test_transformer_encoder_layer_with_padding_mask_trains_like_torch():
    import torch

    def run(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.5, batch_first=True)
        x = lib.randn(2, 3, 4)
        mask = lib.tensor([[False, False, True], [False, False, False]])
        lib.manual_seed(2)
        return layer(x, src_key_padding_mask=mask).detach().numpy()

    np.testing.assert_allclose(run(fabric), run(torch), rtol=1e-5, atol=1e-6)


_REPR_CASES = [
    "torch.tensor([-0.0, 0.0])",
    "torch.tensor([-0.0, 0.5])",
    "torch.tensor([0.0, float('nan'), -float('inf')])",
    "torch.zeros(3)",
    "torch.tensor([1e10, -0.0, 1.0])",
    # suffixes wrap at the line width exactly where PyTorch wraps them
    "torch.tensor([0.2344, -1.3145, 1.7238, -0.4606, -0.1831], requires_grad=True) * 1",
    "torch.arange(7.).requires_grad_() * 1.5",
    "torch.arange(8., dtype=torch.float64).requires_grad_()",
    "torch.ones(7, dtype=torch.float16, requires_grad=True) * 1.5",
    "torch.arange(18.).reshape(3, 6).requires_grad_() + 1",
]


@pytest.mark.torch
@pytest.mark.parametrize("expr", _REPR_CASES)
def test_repr_matches_torch(expr):
    import torch

    ref = repr(eval(expr, {"torch": torch}))
    got = repr(eval(expr, {"torch": fabric})).replace("fabric.", "torch.")
    assert got == ref


@pytest.mark.torch
@pytest.mark.parametrize("sci", [True, False])
def test_repr_with_forced_sci_mode_matches_torch(sci):
    import torch

    values = [[1.0, 2e9], [1.5, 123456.7], [1e-6, 1.0], [0.0, 0.0]]
    try:
        torch.set_printoptions(sci_mode=sci)
        fabric.set_printoptions(sci_mode=sci)
        for v in values:
            assert repr(fabric.tensor(v)) == repr(torch.tensor(v))
    finally:
        torch.set_printoptions(profile="default")
        fabric.set_printoptions(profile="default")


_INDEX_KEYS = [
    "1", "(1, 2)", "(slice(None), 1)", "(Ellipsis, 2)", "(None, 0)", "(0, None)", "(0, slice(None), None)",
    "(None,)", "(Ellipsis,)", "Ellipsis", "None", "(slice(None),)", "slice(None)", "slice(1, 2)", "(1, slice(1, 3))",
    "(slice(None), slice(0, 2), slice(None))", "(slice(0, 3),)", "(slice(None, 10),)", "(slice(-3, None),)",
    "(slice(0, 3, 1), 1)", "(slice(None, None, 2),)", "(slice(None), None, 1)", "[0, 1]", "(0, [1, 0])",
]


@pytest.mark.torch
@pytest.mark.parametrize("key", _INDEX_KEYS)
def test_indexing_grad_fn_name_matches_torch(key):
    # printed tensors show grad_fn=<SelectBackward0> for x[0] etc.
    import torch

    ref = torch.randn(3, 4, 5, requires_grad=True)[eval(key)].grad_fn.name()
    got = fabric.randn(3, 4, 5, requires_grad=True)[eval(key)].grad_fn.name()
    assert got == ref


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, True, False), (True, True, True),
                                                  (False, False, True)])
def test_triangular_solve_matches_torch(upper, transpose, unit):
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    outs = []
    for lib in (torch, fabric):
        A = lib.tensor(a, requires_grad=True)
        B = lib.tensor(b, requires_grad=True)
        r = lib.triangular_solve(B, A, upper, transpose, unit)
        (r.solution * lib.arange(1.0, 3.0, dtype=lib.float64)).sum().backward()
        outs.append([r.solution.detach().numpy(), r.cloned_coefficient.detach().numpy(), A.grad.numpy(),
                     B.grad.numpy()])
        assert type(r).__name__ == "triangular_solve"
    for ref, got in zip(*outs):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="Expected b to have at least 2 dimensions"):
        fabric.triangular_solve(fabric.ones(3), fabric.eye(3))
    with pytest.raises(RuntimeError, match="same dtype"):
        fabric.triangular_solve(fabric.ones(3, 1, dtype=fabric.float64), fabric.eye(3))


@pytest.mark.torch
def test_legacy_tensor_types_match_torch():
    # old tutorials: torch.FloatTensor(...), x.type(torch.LongTensor), isinstance(x, torch.FloatTensor)
    import torch

    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor"):
        ref_cls, got_cls = getattr(torch, name), getattr(fabric, name)
        assert str(got_cls.dtype) == str(ref_cls.dtype).replace("torch.", "fabric.")
        assert got_cls(2, 3).shape == ref_cls(2, 3).shape
        assert got_cls([1, 0, 2]).tolist() == ref_cls([1, 0, 2]).tolist()
        assert fabric.ones(2).type(got_cls).tolist() == torch.ones(2).type(ref_cls).tolist()
        for dt in ("float32", "int64"):
            assert isinstance(fabric.ones(1, dtype=getattr(fabric, dt)), got_cls) == \
                isinstance(torch.ones(1, dtype=getattr(torch, dt)), ref_cls)
    assert fabric.LongTensor([1.7, 2]).tolist() == [1, 2]
    with pytest.raises(TypeError):
        fabric.FloatTensor(fabric.ones(2, dtype=fabric.long))


@pytest.mark.torch
@pytest.mark.parametrize("ctor", ["nn.LSTM(4, 3)", "nn.GRU(4, 3)", "nn.RNN(4, 3)", "nn.LSTM(4, 3, batch_first=True)",
                                  "nn.GRU(4, 3, num_layers=2, bidirectional=True)", "nn.GRUCell(4, 3)",
                                  "nn.RNNCell(4, 3)", "nn.RNNCell(4, 3, nonlinearity='relu')", "nn.LSTMCell(4, 3)"])
def test_rnn_output_grad_fn_names_match_torch(ctor):
    # printed RNN outputs show torch's CPU node names; an LSTMCell's c is the one
    # exception (its h and c come from one node here, named after h's MulBackward0)
    import torch

    def names(lib):
        m = eval(ctor, {"nn": lib.nn})
        out = m(lib.randn(3, 2, 4) if "Cell" not in ctor else lib.randn(2, 4))
        first = out[0] if isinstance(out, tuple) else out
        hidden = out[1] if isinstance(out, tuple) and "Cell" not in ctor else None
        if isinstance(hidden, tuple):
            hidden = hidden[0]
        return first.grad_fn.name(), hidden.grad_fn.name() if hidden is not None else None

    assert names(fabric) == names(torch)


@pytest.mark.torch
def test_bfloat16_tensor_prints_like_torch_when_ml_dtypes_is_installed():
    pytest.importorskip("ml_dtypes", reason="fabric.bfloat16 needs the optional ml_dtypes package")
    import torch

    import fabric

    t = repr(torch.tensor([[1.5, 2.0]], dtype=torch.bfloat16))
    f = repr(fabric.tensor([[1.5, 2.0]], dtype=fabric.bfloat16))
    assert f.replace("fabric.", "torch.") == t
