"""Transformer layers and stacks against PyTorch: masks, activations,
norm placement, the causal-mask helpers, PyTorch's nested-tensor inference
path (zeros at padded positions), training steps, errors.  (Generic module
tests come from the ModuleInfo registry.)"""
from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest

import fabric
from fabric import nn
from fabric.nn.modules import transformer as T


def _np(t):
    return t.detach().cpu().numpy()


def _pair(make):
    import torch

    torch.manual_seed(0)
    fabric.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make(fabric.nn), make(torch.nn)


def _run(lib, m, arrays, kwargs, train, grad=True):
    m.train(train)
    ins = [lib.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    kw = {k: (lib.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    lib.manual_seed(3)
    out = m(*ins, **kw)
    if grad:
        g = np.random.default_rng(9).standard_normal(tuple(out.shape)).astype(np.float32)
        out.backward(lib.from_numpy(g))
    return out, ins


def _compare(make, arrays, kwargs=None, train=False, rtol=1e-4, atol=1e-5):
    fm, tm = _pair(make)
    import torch

    fo, fi = _run(fabric, fm, arrays, kwargs or {}, train)
    to, ti = _run(torch, tm, arrays, kwargs or {}, train)
    np.testing.assert_allclose(_np(fo), _np(to), rtol=rtol, atol=atol)
    for a, b in zip(fi, ti):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-3, atol=1e-4)
    tp = dict(tm.named_parameters())
    for n, p in fm.named_parameters():
        if tp[n].grad is None:
            assert p.grad is None or not _np(p.grad).any()
        else:
            np.testing.assert_allclose(_np(p.grad), _np(tp[n].grad), rtol=1e-3, atol=1e-4, err_msg=n)
    return fm, tm


rng = np.random.default_rng(0)
SRC = rng.standard_normal((6, 2, 8)).astype(np.float32)
TGT = rng.standard_normal((4, 2, 8)).astype(np.float32)
CAUSAL4 = np.triu(np.full((4, 4), -np.inf, np.float32), 1)


@pytest.mark.torch
@pytest.mark.parametrize("activation", ["relu", "gelu", "silu_fn", "gelu_module"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_activations_and_norm_placement(activation, norm_first):
    def make(nn_):
        import importlib

        F = importlib.import_module(nn_.__name__ + ".functional")
        act = {"silu_fn": F.silu, "gelu_module": nn_.GELU()}.get(activation, activation)
        return nn_.TransformerEncoderLayer(8, 2, 12, dropout=0.0, activation=act, norm_first=norm_first)

    fm, _ = _compare(make, [SRC])
    assert fm.activation_relu_or_gelu == {"relu": 1, "gelu": 2, "gelu_module": 2}.get(activation, 0)


@pytest.mark.torch
@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_full_transformer_matches_torch(dropout):
    make = lambda nn_: nn_.Transformer(8, 2, 2, 2, 12, dropout=dropout)
    kwargs = {"tgt_mask": CAUSAL4, "src_key_padding_mask": np.array([[False] * 5 + [True], [False] * 6]),
              "memory_key_padding_mask": np.array([[False] * 5 + [True], [False] * 6])}
    _compare(make, [SRC, TGT], kwargs, train=dropout > 0)


@pytest.mark.torch
def test_transformer_options_match_torch():
    make = lambda nn_: nn_.Transformer(8, 4, 1, 2, 16, dropout=0.0, activation="gelu", layer_norm_eps=1e-3,
                                       batch_first=True, norm_first=True, bias=False)
    _compare(make, [SRC.transpose(1, 0, 2).copy(), TGT.transpose(1, 0, 2).copy()],
             {"tgt_mask": CAUSAL4, "tgt_is_causal": True})


@pytest.mark.torch
def test_custom_encoder_decoder():
    def make(nn_):
        enc = nn_.TransformerEncoder(nn_.TransformerEncoderLayer(8, 2, 12, 0.0), 1)
        dec = nn_.TransformerDecoder(nn_.TransformerDecoderLayer(8, 2, 12, 0.0), 1)
        return nn_.Transformer(8, 2, custom_encoder=enc, custom_decoder=dec)

    fm, tm = _compare(make, [SRC, TGT])
    assert list(fm.state_dict()) == list(tm.state_dict())


@pytest.mark.torch
def test_generate_square_subsequent_mask_and_causal_detection():
    import torch

    for sz in (1, 3, 5):
        a = nn.Transformer.generate_square_subsequent_mask(sz)
        b = torch.nn.Transformer.generate_square_subsequent_mask(sz)
        np.testing.assert_array_equal(_np(a), b.numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=fabric.float64).dtype == fabric.float64
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    assert T._detect_is_causal_mask(causal) is True
    assert T._detect_is_causal_mask(causal, size=3) is False
    assert T._detect_is_causal_mask(fabric.zeros(4, 4)) is False
    assert T._detect_is_causal_mask(None, True) is True
    assert T._detect_is_causal_mask(causal, False) is False


@pytest.mark.torch
@pytest.mark.parametrize("no_grad", [True, False])
def test_encoder_nested_tensor_path_zeros_padding(no_grad):
    """PyTorch's inference path (eval, no gradient needed, batch_first, left-aligned padding)
    returns zeros at padded positions before the final norm; with gradients it does not."""
    import torch

    make = lambda nn_: nn_.TransformerEncoder(nn_.TransformerEncoderLayer(8, 2, 12, batch_first=True), 2,
                                              nn_.LayerNorm(8))
    fm, tm = _pair(make)
    x = SRC.transpose(1, 0, 2).copy()
    kpm = np.zeros((2, 6), bool)
    kpm[0, 4:] = True
    outs = []
    for lib, m in ((fabric, fm), (torch, tm)):
        m.eval()
        args = (lib.from_numpy(x.copy()),)
        if no_grad:
            with lib.no_grad():
                outs.append(_np(m(*args, src_key_padding_mask=lib.from_numpy(kpm))))
        else:
            outs.append(_np(m(*args, src_key_padding_mask=lib.from_numpy(kpm))))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-5)
    ln_bias = _np(fm.norm.bias)
    padded_is_norm_of_zero = np.allclose(outs[0][0, 4:], ln_bias)
    assert padded_is_norm_of_zero == no_grad


def test_nested_tensor_warnings():
    with pytest.warns(UserWarning, match="self_attn.batch_first was not True"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12), 2)
    with pytest.warns(UserWarning, match="num_heads is odd"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(9, 3, 12, batch_first=True), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12), 2, enable_nested_tensor=False)
    assert not enc.use_nested_tensor


def test_stacks_clone_the_layer():
    layer = nn.TransformerEncoderLayer(8, 2, 12)
    enc = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    w = [_np(l.linear1.weight) for l in enc.layers]
    assert all(np.array_equal(w[0], x) for x in w) and enc.layers[0] is not layer
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight


@pytest.mark.torch
def test_training_steps_match_torch():
    """A few SGD steps of a small encoder-decoder from the same initialisation stay equal."""
    import torch

    make = lambda nn_: nn_.Transformer(8, 2, 1, 1, 12, dropout=0.0)
    fm, tm = _pair(make)
    fo = fabric.optim.SGD(fm.parameters(), lr=0.05)
    to = torch.optim.SGD(tm.parameters(), lr=0.05)
    for _step in range(3):
        for lib, m, opt in ((fabric, fm, fo), (torch, tm, to)):
            opt.zero_grad()
            out = m(lib.from_numpy(SRC), lib.from_numpy(TGT), tgt_mask=lib.from_numpy(CAUSAL4))
            (out ** 2).mean().backward()
            opt.step()
    tp = dict(tm.named_parameters())
    for n, p in fm.named_parameters():
        np.testing.assert_allclose(_np(p), tp[n].detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=n)


def _errors(lib, case):
    nn_ = lib.nn
    cases = {
        "activation": lambda: nn_.TransformerEncoderLayer(8, 2, activation="tanh"),
        "batch": lambda: nn_.Transformer(8, 2, 1, 1, 12)(lib.randn(3, 2, 8), lib.randn(3, 3, 8)),
        "batch_first": lambda: nn_.Transformer(8, 2, 1, 1, 12, batch_first=True)(lib.randn(2, 3, 8),
                                                                                  lib.randn(3, 3, 8)),
        "d_model": lambda: nn_.Transformer(8, 2, 1, 1, 12)(lib.randn(3, 2, 6), lib.randn(3, 2, 6)),
        "mask_type": lambda: nn_.TransformerEncoderLayer(8, 2, 12)(lib.randn(3, 2, 8),
                                                                   src_mask=lib.zeros(3, 3, dtype=lib.int64)),
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases[case]()
    except Exception as e:
        return type(e), str(e)
    return None, ""


@pytest.mark.torch
@pytest.mark.parametrize("case", ["activation", "batch", "batch_first", "d_model", "mask_type"])
def test_errors_match_torch(case):
    import torch

    ft, fmsg = _errors(fabric, case)
    tt, tmsg = _errors(torch, case)
    assert ft is tt and fmsg == tmsg, (fmsg, tmsg)


def test_pickle_keeps_activation():
    import pickle

    layer = nn.TransformerDecoderLayer(8, 2, 12, activation="gelu")
    copy = pickle.loads(pickle.dumps(layer))
    assert copy.activation is layer.activation
    x, mem = fabric.randn(3, 1, 8), fabric.randn(4, 1, 8)
    layer.eval(), copy.eval()
    np.testing.assert_array_equal(_np(layer(x, mem)), _np(copy(x, mem)))


def test_doctests():
    res = doctest.testmod(T, extraglobs={"fabric": fabric}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
