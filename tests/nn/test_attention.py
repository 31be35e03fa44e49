"""``F.scaled_dot_product_attention``, ``F.multi_head_attention_forward`` and
``nn.MultiheadAttention``: values and gradients against PyTorch over masks,
causal masking, scale, GQA, broadcasting and dropout; fully masked rows;
gradcheck / gradgradcheck; fast vs create_graph backward; errors.  (Generic
module tests come from the ModuleInfo registry.)"""
from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric import nn
from fabric.nn.functional import _attention as A


def _np(t):
    return t.detach().cpu().numpy()


_SDPA_CASES = {
    "plain": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)]},
    "causal_square": {"shapes": [(2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)], "is_causal": True},
    "causal_rect": {"shapes": [(2, 2, 3, 4), (2, 2, 6, 4), (2, 2, 6, 4)], "is_causal": True},
    "bool_mask": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "mask": "bool"},
    "bool_mask_batched": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "mask": "bool4"},
    "float_mask_grad": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "mask": "float"},
    "scale": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "scale": 0.7},
    "negative_scale": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "scale": -0.3},
    "gqa": {"shapes": [(2, 6, 4, 8), (2, 2, 5, 8), (2, 2, 5, 6)], "enable_gqa": True},
    "broadcast_batch": {"shapes": [(2, 3, 4, 8), (1, 3, 5, 8), (3, 5, 6)]},
    "two_dim": {"shapes": [(4, 8), (5, 8), (5, 6)]},
    "five_dim": {"shapes": [(2, 1, 2, 3, 4), (2, 3, 2, 5, 4), (2, 3, 2, 5, 4)]},
    "dropout": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "dropout_p": 0.3},
    "dropout_mask": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "dropout_p": 0.5, "mask": "bool"},
    "dropout_one": {"shapes": [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], "dropout_p": 1.0},
}


def _masks(kind, rng):
    if kind == "bool":
        m = rng.random((4, 5)) > 0.4
        m[1] = False  # a row that attends to nothing
        return m
    if kind == "bool4":
        return rng.random((2, 1, 4, 5)) > 0.3
    if kind == "float":
        return rng.standard_normal((3, 1, 5)).astype(np.float32)
    return None


def _run_sdpa(lib, case, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    c = dict(_SDPA_CASES[case])
    shapes = c.pop("shapes")
    mask = _masks(c.pop("mask", None), rng)
    ins = [lib.from_numpy(rng.standard_normal(s).astype(dtype)).requires_grad_() for s in shapes]
    m = None
    if mask is not None:
        m = lib.from_numpy(mask.astype(dtype) if mask.dtype != bool else mask)
        if mask.dtype != bool:
            m.requires_grad_()
    lib.manual_seed(11)
    out = lib.nn.functional.scaled_dot_product_attention(*ins, attn_mask=m, **c)
    g = rng.standard_normal(tuple(out.shape)).astype(dtype)
    out.backward(lib.from_numpy(g))
    grads = [t.grad for t in ins] + ([m.grad] if m is not None and m.requires_grad else [])
    return out, grads


@pytest.mark.torch
@pytest.mark.parametrize("case", list(_SDPA_CASES))
def test_sdpa_matches_torch(case):
    import torch

    fo, fg = _run_sdpa(fabric, case)
    to, tg = _run_sdpa(torch, case)
    np.testing.assert_allclose(_np(fo), _np(to), rtol=1e-5, atol=2e-6)
    for a, b in zip(fg, tg):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=2e-6)


def test_sdpa_fully_masked_rows_give_zeros_and_zero_gradients():
    q = fabric.randn(1, 3, 4, requires_grad=True)
    k = fabric.randn(1, 5, 4, requires_grad=True)
    v = fabric.randn(1, 5, 2, requires_grad=True)
    mask = fabric.ones(3, 5, dtype=fabric.bool)
    mask[1] = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert not _np(out)[0, 1].any() and np.isfinite(_np(out)).all()
    out.sum().backward()
    assert not _np(q.grad)[0, 1].any() and np.isfinite(_np(k.grad)).all()
    fmask = fabric.zeros(3, 5)
    fmask[2] = float("-inf")
    out2 = F.scaled_dot_product_attention(q, k, v, attn_mask=fmask)
    assert not _np(out2)[0, 2].any()


@pytest.mark.parametrize("case", ["plain", "bool_mask", "float_mask_grad", "gqa", "causal_rect", "dropout_mask",
                                  "broadcast_batch"])
def test_sdpa_gradcheck_and_gradgradcheck(case):
    rng = np.random.default_rng(1)
    c = dict(_SDPA_CASES[case])
    shapes = [tuple(min(s, 3) if i >= len(sh) - 2 else s for i, s in enumerate(sh)) for sh in c.pop("shapes")]
    if case == "gqa":
        shapes = [(1, 4, 2, 3), (1, 2, 3, 3), (1, 2, 3, 2)]
    kind = c.pop("mask", None)
    ins = [fabric.from_numpy(rng.standard_normal(s)).requires_grad_() for s in shapes]
    L, S = shapes[0][-2], shapes[1][-2]
    extra = []
    if kind == "bool":
        m = rng.random((L, S)) > 0.4
        m[0] = False
        c["attn_mask"] = fabric.from_numpy(m)
    elif kind == "float":
        extra = [fabric.from_numpy(rng.standard_normal((1, L, S))).requires_grad_()]

    def f(*a):
        fabric.manual_seed(3)
        kw = dict(c)
        if extra:
            kw["attn_mask"] = a[3]
        return F.scaled_dot_product_attention(*a[:3], **kw)

    args = tuple(ins + extra)
    assert fabric.autograd.gradcheck(f, args)
    assert fabric.autograd.gradgradcheck(f, args)


@pytest.mark.parametrize("case", ["bool_mask", "float_mask_grad", "gqa", "dropout", "causal_square"])
def test_sdpa_fast_backward_agrees_with_create_graph(case):
    rng = np.random.default_rng(2)
    c = dict(_SDPA_CASES[case])
    shapes = c.pop("shapes")
    mask = _masks(c.pop("mask", None), rng)
    ins = [fabric.from_numpy(rng.standard_normal(s)).requires_grad_() for s in shapes]
    if mask is not None:
        m = fabric.from_numpy(mask if mask.dtype == bool else mask.astype(np.float64))
        if mask.dtype != bool:
            m.requires_grad_()
            ins.append(m)
        c["attn_mask"] = m
    fabric.manual_seed(0)
    out = F.scaled_dot_product_attention(*ins[:3], **c)
    g = fabric.from_numpy(rng.standard_normal(tuple(out.shape)))
    fast = fabric.autograd.grad(out, ins, g, retain_graph=True)
    graph = fabric.autograd.grad(out, ins, g, create_graph=True)
    for a, b in zip(fast, graph):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


def _sdpa_error(lib, case):
    f = lib.nn.functional.scaled_dot_product_attention
    q, k, v = lib.randn(2, 4, 3, 8), lib.randn(2, 4, 5, 8), lib.randn(2, 4, 5, 6)
    cases = {
        "causal_and_mask": lambda: f(q, k, v, attn_mask=lib.ones(3, 5, dtype=lib.bool), is_causal=True),
        "dtype": lambda: f(q, k.double(), v),
        "mask_dtype": lambda: f(q, k, v, attn_mask=lib.ones(3, 5, dtype=lib.float64)),
        "mask_int": lambda: f(q, k, v, attn_mask=lib.ones(3, 5, dtype=lib.int64)),
        "mask_shape": lambda: f(q, k, v, attn_mask=lib.ones(3, 4)),
        "heads": lambda: f(q, lib.randn(2, 2, 5, 8), lib.randn(2, 2, 5, 6)),
        "gqa_divide": lambda: f(q, lib.randn(2, 3, 5, 8), lib.randn(2, 3, 5, 6), enable_gqa=True),
        "one_dim": lambda: f(lib.randn(8), lib.randn(8), lib.randn(8)),
        "value_len": lambda: f(q, k, lib.randn(2, 4, 6, 6)),
        "key_dim": lambda: f(q, lib.randn(2, 4, 5, 7), v),
        "dropout": lambda: f(q, k, v, dropout_p=1.5),
        "ints": lambda: f(q.long(), k.long(), v.long()),
    }
    try:
        cases[case]()
    except Exception as e:
        return type(e), str(e)
    return None, ""


@pytest.mark.torch
@pytest.mark.parametrize("case", ["causal_and_mask", "dtype", "mask_dtype", "mask_int", "mask_shape", "heads",
                                  "gqa_divide", "one_dim", "value_len", "key_dim", "dropout", "ints"])
def test_sdpa_errors_match_torch(case):
    import torch

    ft, fmsg = _sdpa_error(fabric, case)
    tt, tmsg = _sdpa_error(torch, case)
    assert ft is tt and fmsg == tmsg, (fmsg, tmsg)


# --- multi-head attention ----------------------------------------------------------------------------

def _mha_pair(*args, **kwargs):
    import torch

    torch.manual_seed(0)
    fabric.manual_seed(0)
    return nn.MultiheadAttention(*args, **kwargs), torch.nn.MultiheadAttention(*args, **kwargs)


@pytest.mark.torch
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_fully_masked_rows_match_torch(need_weights):
    """PyTorch's explicit softmax gives NaN rows (need_weights=True); its SDPA path gives zeros."""
    import torch

    fm, tm = _mha_pair(4, 2, batch_first=True)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    kpm = np.zeros((2, 3), bool)
    kpm[0] = True
    kpm[1, 2] = True
    outs = []
    for lib, m in ((fabric, fm), (torch, tm)):
        t = lib.from_numpy(x.copy())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o, w = m(t, t, t, key_padding_mask=lib.from_numpy(kpm), need_weights=need_weights)
        outs.append((_np(o), None if w is None else _np(w)))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-5, atol=1e-6)
    assert np.array_equal(np.isnan(outs[0][0]), np.isnan(outs[1][0]))
    if need_weights:
        np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("variant", ["mask3d", "float_kpm", "static_kv", "separate_weights", "mixed_mask_types"])
def test_multi_head_attention_forward_matches_torch(variant):
    import torch

    rng = np.random.default_rng(4)
    E, H, L, S, N = 4, 2, 3, 5, 2
    arrays = {
        "q": rng.standard_normal((L, N, E)), "k": rng.standard_normal((S, N, E)), "v": rng.standard_normal((S, N, E)),
        "w": rng.standard_normal((3 * E, E)), "b": rng.standard_normal(3 * E), "ow": rng.standard_normal((E, E)),
        "ob": rng.standard_normal(E), "mask3": rng.standard_normal((N * H, L, S)),
        "kpm": np.where(rng.random((N, S)) > 0.7, -np.inf, 0.0), "sk": rng.standard_normal((N * H, S, E // H)),
        "sv": rng.standard_normal((N * H, S, E // H)), "qw": rng.standard_normal((E, E)),
        "kw": rng.standard_normal((E, E)), "vw": rng.standard_normal((E, E)),
    }
    res = []
    for lib in (fabric, torch):
        t = {k: lib.from_numpy(v.astype(np.float32)).requires_grad_(k in ("q", "k", "w", "mask3"))
             for k, v in arrays.items()}
        kw = {}
        if variant == "mask3d":
            kw["attn_mask"] = t["mask3"]
        elif variant == "float_kpm":
            kw["key_padding_mask"] = t["kpm"]
        elif variant == "static_kv":
            kw.update(static_k=t["sk"], static_v=t["sv"])
        elif variant == "separate_weights":
            kw.update(use_separate_proj_weight=True, q_proj_weight=t["qw"], k_proj_weight=t["kw"],
                      v_proj_weight=t["vw"])
        elif variant == "mixed_mask_types":  # a bool attn_mask with a float padding mask warns
            kw.update(attn_mask=lib.from_numpy(arrays["mask3"][0] > 0.8), key_padding_mask=t["kpm"])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out, weights = lib.nn.functional.multi_head_attention_forward(
                t["q"], t["k"], t["v"], E, H, t["w"], t["b"], None, None, False, 0.0, t["ow"], t["ob"], **kw)
        (out.sum() + weights.sum()).backward()
        res.append((_np(out), _np(weights), [None if t[k].grad is None else _np(t[k].grad) for k in ("q", "k", "w")],
                    [str(x.message) for x in w]))
    (fo, fw, fg, fwarn), (to, tw, tg, twarn) = res
    np.testing.assert_allclose(fo, to, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fw, tw, rtol=1e-4, atol=1e-5)
    for a, b in zip(fg, tg):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    assert fwarn == twarn


def _mha_error(lib, case):
    nn_ = lib.nn
    x = lib.randn(3, 2, 4)
    cases = {
        "divisible": lambda: nn_.MultiheadAttention(5, 2),
        "nonpositive": lambda: nn_.MultiheadAttention(0, 2),
        "query_dims": lambda: nn_.MultiheadAttention(4, 2)(lib.randn(4), lib.randn(4), lib.randn(4)),
        "key_dims": lambda: nn_.MultiheadAttention(4, 2)(x, lib.randn(3, 4), lib.randn(3, 4)),
        "mask2d_shape": lambda: nn_.MultiheadAttention(4, 2)(x, x, x, attn_mask=lib.zeros(2, 2)),
        "mask3d_shape": lambda: nn_.MultiheadAttention(4, 2)(x, x, x, attn_mask=lib.zeros(3, 3, 3)),
        "kpm_shape": lambda: nn_.MultiheadAttention(4, 2)(x, x, x, key_padding_mask=lib.zeros(3, 3, dtype=lib.bool)),
        "mask_int": lambda: nn_.MultiheadAttention(4, 2)(x, x, x, attn_mask=lib.zeros(3, 3, dtype=lib.int64)),
        "causal_no_mask": lambda: nn_.MultiheadAttention(4, 2)(x, x, x, is_causal=True),
        "embed_dim": lambda: nn_.MultiheadAttention(4, 2)(lib.randn(3, 2, 6), lib.randn(3, 2, 6), lib.randn(3, 2, 6)),
        "kv_shape": lambda: nn_.MultiheadAttention(4, 2)(x, lib.randn(5, 2, 4), lib.randn(4, 2, 4)),
    }
    try:
        cases[case]()
    except Exception as e:
        return type(e), str(e)
    return None, ""


@pytest.mark.torch
@pytest.mark.parametrize("case", ["divisible", "nonpositive", "query_dims", "key_dims", "mask2d_shape",
                                  "mask3d_shape", "kpm_shape", "mask_int", "causal_no_mask", "embed_dim", "kv_shape"])
def test_mha_errors_match_torch(case):
    import torch

    ft, fmsg = _mha_error(fabric, case)
    tt, tmsg = _mha_error(torch, case)
    assert ft is tt, (fmsg, tmsg)
    assert fmsg.replace("fabric.Size", "torch.Size") == tmsg


def test_mha_parameters_and_state_dict_keys():
    m = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True)
    assert [n for n, _ in m.named_parameters()] == ["q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                    "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                                    "out_proj.bias"]
    assert m.in_proj_weight is None and m.k_proj_weight.shape == (8, 3) and m.head_dim == 4
    m2 = nn.MultiheadAttention(8, 2, bias=False)
    assert list(m2.state_dict()) == ["in_proj_weight", "out_proj.weight"]


def test_mha_batch_first_self_attention_keeps_identity():
    """Self-attention with batch_first still takes the packed projection path (one GEMM)."""
    fabric.manual_seed(0)
    m = nn.MultiheadAttention(4, 2, batch_first=True)
    x = fabric.randn(2, 3, 4)
    a = m(x, x, x)[0]
    b = m(x, x.clone(), x.clone())[0]
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)


def test_merge_masks():
    m = nn.MultiheadAttention(4, 2)
    q = fabric.zeros(2, 3, 4)
    kpm = fabric.zeros(2, 3)
    merged, kind = m.merge_masks(fabric.zeros(3, 3), kpm, q)
    assert kind == 2 and tuple(merged.shape) == (2, 2, 3, 3)
    assert m.merge_masks(None, kpm, q) == (kpm, 1)
    assert m.merge_masks(None, None, q) == (None, None)


def test_doctests():
    import fabric.nn.modules.attention as MA

    for mod in (A, MA):
        res = doctest.testmod(mod, extraglobs={"fabric": fabric}, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, mod.__name__
