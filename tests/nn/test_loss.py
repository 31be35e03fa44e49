"""Loss functions (fabric.nn.functional): NumPy formulas, reductions and the
legacy ``size_average``/``reduce`` arguments, gradcheck / gradgradcheck in
float64, fused-vs-differentiable gradients, errors, CTC against a brute-force
sum over alignments, and - marked ``torch`` - values and gradients vs PyTorch
over reductions, weights, ignore_index, label smoothing and shapes."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F


def T(a, grad=False):
    t = fabric.from_numpy(np.array(a, copy=True))
    return t.requires_grad_() if grad else t


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def ref_cross_entropy(x, t, w=None, ignore_index=-100, eps=0.0, reduction="mean"):
    """PyTorch's formula on (N, C, *d) logits and (N, *d) class indices."""
    c = x.shape[1]
    lp = np.moveaxis(_log_softmax(x, 1), 1, -1).reshape(-1, c)
    tt = t.reshape(-1)
    w = np.ones(c) if w is None else w
    valid = tt != ignore_index
    ts = np.where(valid, tt, 0)
    nll = -lp[np.arange(len(tt)), ts] * w[ts] * valid
    smooth = -(lp * w).sum(1) * valid
    loss = (1 - eps) * nll + eps / c * smooth
    if reduction == "none":
        return loss.reshape(t.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (w[ts] * valid).sum()


def test_cross_entropy_matches_formula():
    rng = np.random.default_rng(0)
    w = rng.random(4) + 0.2
    for shape in [(6, 4), (2, 4, 3), (2, 4, 2, 3)]:
        x = rng.standard_normal(shape)
        t = rng.integers(0, 4, (shape[0],) + shape[2:])
        t.reshape(-1)[1] = -100
        for weight, eps, red in itertools.product([None, w], [0.0, 0.3], ["mean", "sum", "none"]):
            got = F.cross_entropy(T(x), T(t), weight=None if weight is None else T(weight), label_smoothing=eps,
                                  reduction=red)
            np.testing.assert_allclose(got.numpy(), ref_cross_entropy(x, t, weight, -100, eps, red), rtol=1e-12,
                                       atol=1e-14, err_msg=f"{shape} {eps} {red}")


def test_cross_entropy_class_probabilities():
    rng = np.random.default_rng(1)
    x, p, w = rng.standard_normal((5, 3)), rng.random((5, 3)), rng.random(3)
    lp = _log_softmax(x, 1)
    np.testing.assert_allclose(F.cross_entropy(T(x), T(p)).numpy(), -(lp * p).sum() / 5, rtol=1e-12)
    ps = p * 0.8 + 0.2 / 3
    np.testing.assert_allclose(F.cross_entropy(T(x), T(p), weight=T(w), label_smoothing=0.2, reduction="none").numpy(),
                               -(lp * ps * w).sum(1), rtol=1e-12)
    assert np.isnan(F.cross_entropy(fabric.zeros(0, 3), fabric.zeros(0, 3)).item())


def test_nll_loss_matches_formula_and_edge_cases():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((5, 4)), rng.random(4) + 0.1
    t = np.array([0, 3, 1, -100, 3])
    got = F.nll_loss(T(x), T(t), weight=T(w), reduction="none").numpy()
    exp = np.where(t != -100, -x[np.arange(5), np.maximum(t, 0)] * w[np.maximum(t, 0)], 0)
    np.testing.assert_allclose(got, exp, rtol=1e-12)
    np.testing.assert_allclose(F.nll_loss(T(x), T(t), weight=T(w)).numpy(),
                               exp.sum() / w[t[t != -100]].sum(), rtol=1e-12)
    # everything ignored: mean is 0/0 = nan, sum is 0; an empty batch has a nan mean
    allign = T(np.full(5, -100))
    assert np.isnan(F.nll_loss(T(x), allign).item()) and F.nll_loss(T(x), allign, reduction="sum").item() == 0
    assert np.isnan(F.nll_loss(fabric.zeros(0, 4), fabric.zeros(0, dtype=fabric.int64)).item())
    assert F.nll_loss(fabric.zeros(0, 4), fabric.zeros(0, dtype=fabric.int64), reduction="none").shape == (0,)
    # unbatched input, uint8 targets
    assert F.nll_loss(T(x[0]), T(np.array(2))).item() == -x[0, 2]
    np.testing.assert_allclose(F.nll_loss(T(x), T(np.array([0, 1, 2, 3, 0], dtype=np.uint8))).item(),
                               -x[np.arange(5), [0, 1, 2, 3, 0]].mean())


def test_losses_match_formulas():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    d = x - y
    p, q = rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4))
    sgn = np.where(rng.random((3, 4)) > 0.5, 1.0, -1.0)
    cases = [
        (F.mse_loss(T(x), T(y)), (d ** 2).mean()),
        (F.l1_loss(T(x), T(y), reduction="sum"), np.abs(d).sum()),
        (F.smooth_l1_loss(T(x), T(y), beta=0.5, reduction="none"),
         np.where(np.abs(d) < 0.5, 0.5 * d ** 2 / 0.5, np.abs(d) - 0.25)),
        (F.huber_loss(T(x), T(y), delta=0.5, reduction="none"),
         np.where(np.abs(d) < 0.5, 0.5 * d ** 2, 0.5 * (np.abs(d) - 0.25))),
        (F.binary_cross_entropy(T(p), T(q)), -(q * np.log(p) + (1 - q) * np.log1p(-p)).mean()),
        (F.binary_cross_entropy_with_logits(T(x), T(q), pos_weight=T(np.array([1.0, 2.0, 0.5, 3.0])),
                                            reduction="none"),
         -(np.array([1.0, 2.0, 0.5, 3.0]) * q * np.log(1 / (1 + np.exp(-x))) + (1 - q) * np.log(1 - 1 / (1 + np.exp(-x))))),
        (F.kl_div(T(np.log(p)), T(q), reduction="batchmean"), (q * (np.log(q) - np.log(p))).sum() / 3),
        (F.kl_div(T(np.log(p)), T(np.log(q)), reduction="sum", log_target=True), (q * (np.log(q) - np.log(p))).sum()),
        (F.poisson_nll_loss(T(x), T(q * 3)), (np.exp(x) - q * 3 * x).mean()),
        (F.gaussian_nll_loss(T(x), T(y), T(p), reduction="sum"), (0.5 * (np.log(p) + d ** 2 / p)).sum()),
        (F.soft_margin_loss(T(x), T(sgn)), np.log1p(np.exp(-sgn * x)).mean()),
        (F.hinge_embedding_loss(T(x), T(sgn), margin=0.5, reduction="none"),
         np.where(sgn == 1, x, np.maximum(0, 0.5 - x))),
        (F.margin_ranking_loss(T(x[0]), T(y[0]), T(sgn[0]), margin=0.2, reduction="sum"),
         np.maximum(0, -sgn[0] * (x[0] - y[0]) + 0.2).sum()),
        (F.multilabel_soft_margin_loss(T(x), T(q), reduction="none"),
         -(q * np.log(1 / (1 + np.exp(-x))) + (1 - q) * np.log(1 / (1 + np.exp(x)))).mean(1)),
    ]
    for i, (got, exp) in enumerate(cases):
        np.testing.assert_allclose(got.numpy(), exp, rtol=1e-10, atol=1e-12, err_msg=f"case {i}")


def test_margin_losses_match_formulas():
    x = np.array([[0.1, 0.2, 0.4, 0.8], [0.5, -0.3, 0.9, 0.0]])
    # multi-margin: sum_{j != y} max(0, 1 - x[y] + x[j]) / C
    exp = [np.maximum(0, 1 - x[0, 3] + x[0, :3]).sum() / 4, np.maximum(0, 1 - x[1, 0] + x[1, 1:]).sum() / 4]
    np.testing.assert_allclose(F.multi_margin_loss(T(x), T(np.array([3, 0])), reduction="none").numpy(), exp)
    # multi-label margin: target classes {3, 0} then -1 ends the list
    tgt = np.array([[3, 0, -1, 1], [2, 2, -1, 0]])
    rows = []
    for i, ts in enumerate([[3, 0], [2, 2]]):
        others = [k for k in range(4) if k not in ts]
        rows.append(sum(max(0, 1 - x[i, j] + x[i, k]) for j in ts for k in others) / 4)
    np.testing.assert_allclose(F.multilabel_margin_loss(T(x), T(tgt), reduction="none").numpy(), rows)
    # triplet: d(a, p) - d(a, n) + margin with the eps-shifted p-norm
    rng = np.random.default_rng(4)
    a, pos, neg = (rng.standard_normal((3, 4)) for _ in range(3))
    dp = np.linalg.norm(a - pos + 1e-6, axis=1)
    dn = np.linalg.norm(a - neg + 1e-6, axis=1)
    np.testing.assert_allclose(F.triplet_margin_loss(T(a), T(pos), T(neg), margin=2.0, reduction="none").numpy(),
                               np.maximum(dp - dn + 2.0, 0), rtol=1e-12)
    cos = (a * pos).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((pos * pos).sum(1) + 1e-12))
    t = np.array([1, -1, -1])
    np.testing.assert_allclose(F.cosine_embedding_loss(T(a), T(pos), T(t), margin=0.1, reduction="none").numpy(),
                               np.where(t == 1, 1 - cos, np.maximum(cos - 0.1, 0)), rtol=1e-12)


def test_reduction_arguments():
    x, y = fabric.randn(3, 4), fabric.randn(3, 4)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead"):
        s = F.mse_loss(x, y, size_average=False)
    np.testing.assert_allclose(s.item(), F.mse_loss(x, y, reduction="sum").item(), rtol=1e-6)
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.l1_loss(x, y, reduce=False).shape == (3, 4)
    with pytest.warns(UserWarning, match="reduction='mean'"):
        m = fabric.nn.CrossEntropyLoss(size_average=True)
    assert m.reduction == "mean"
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.nll_loss(x, fabric.tensor([0, 1, 2]), reduction="foo")
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.mse_loss(x, y, reduction="foo")
    with pytest.warns(UserWarning, match="elementwise_mean"):
        F.mse_loss(x, y, reduction="elementwise_mean")
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, y.exp())
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(x, y[0])


def test_errors():
    x = fabric.randn(3, 4)
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, fabric.tensor([0, 1, 5]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.nll_loss(x, fabric.tensor([0, 1, -3]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.nll_loss(fabric.randn(3, 4, 5), fabric.zeros(3, 5, dtype=fabric.int64) + 7)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)."):
        F.cross_entropy(x, fabric.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        F.nll_loss(x, fabric.tensor([0, 1, 2], dtype=fabric.int32))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 classes or no classes"):
        F.cross_entropy(x, fabric.tensor([0, 1, 2]), weight=fabric.ones(2))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3, 5\], got \[3, 4\]"):
        F.nll_loss(fabric.randn(3, 4, 5), fabric.zeros(3, 4, dtype=fabric.int64))
    with pytest.raises(RuntimeError, match="only batches of spatial targets supported"):
        F.nll_loss(fabric.randn(3, 4, 5, 6), fabric.zeros(3, 5, dtype=fabric.int64))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, fabric.rand(3, 4), ignore_index=3)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, fabric.rand(3, 4), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities"):
        F.cross_entropy(x, fabric.zeros(3, 4, dtype=fabric.int64))
    with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
        F.nll_loss(fabric.tensor(1.0), fabric.tensor(0))
    p = fabric.rand(3, 4)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(p * 2, p)
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(p, p * 2)
    with pytest.raises(ValueError, match="is different to the input size"):
        F.binary_cross_entropy(p, p[0])
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(p, p[0])
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, fabric.tensor([0, 1, 4]))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, fabric.tensor([0, 1, 2]), p=3)
    with pytest.raises(RuntimeError, match="inconsistent weight size, expected 4"):
        F.multi_margin_loss(x, fabric.tensor([0, 1, 2]), weight=fabric.ones(3))
    with pytest.raises(RuntimeError, match="'target' is out of range"):
        F.multilabel_margin_loss(x, fabric.tensor([[0, 1, 4, 2]] * 3))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(x, fabric.tensor([[0, 1, 2]] * 3))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        F.cosine_embedding_loss(x, x, fabric.tensor(1))
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(x, x, fabric.ones(3))
    with pytest.raises(RuntimeError, match="expected to have the same number of dimensions"):
        F.triplet_margin_loss(x, x, x[0])
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_loss(x, x, x, margin=0)
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
        F.kl_div(x.long(), x, reduction="sum")
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, x, beta=-1)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta."):
        F.huber_loss(x, x, delta=0)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, fabric.ones(3, 2))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -fabric.ones(3, 4))
    with pytest.raises(NotImplementedError, match='"mse_cpu" not implemented for \'Long\''):
        F.mse_loss(x.long(), x.long())
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.mse_loss(x, x, weight=fabric.ones(4))


# --- gradients ------------------------------------------------------------------------------

def _grad_cases():
    rng = np.random.default_rng(5)

    def r(*s):
        return rng.standard_normal(s)

    w = rng.random(4) + 0.2
    probs = rng.random((3, 4))
    wl1 = T(rng.random((3, 4)))
    counts = T(rng.integers(0, 5, (3, 4)).astype(float))
    signs = T(np.sign(r(3, 4)))
    return {
        "ce": (lambda x: F.cross_entropy(x, T([0, 3, -100])), [r(3, 4)]),
        "ce_weight_smooth": (lambda x: F.cross_entropy(x, T([0, 3, 1]), weight=T(w), label_smoothing=0.2),
                             [r(3, 4)]),
        "ce_kdim_none": (lambda x: F.cross_entropy(x, T([[0, 3], [2, -100]]), reduction="none",
                                                   label_smoothing=0.1), [r(2, 4, 2)]),
        "ce_probs": (lambda x, p: F.cross_entropy(x, p, weight=T(w), label_smoothing=0.1), [r(3, 4), probs]),
        "nll": (lambda x: F.nll_loss(x, T([[0, 3], [2, 1]]), weight=T(w)), [r(2, 4, 2)]),
        "mse": (lambda x, y: F.mse_loss(x, y), [r(3, 4), r(3, 4)]),
        "l1_weight": (lambda x, y: F.l1_loss(x, y, weight=wl1), [r(3, 4), r(3, 4)]),
        "smooth_l1": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), [r(3, 4), r(3, 4)]),
        "huber": (lambda x, y: F.huber_loss(x, y, delta=0.5, reduction="sum"), [r(3, 4), r(3, 4)]),
        "bce": (lambda x, y: F.binary_cross_entropy(x, y, weight=T(w)), [rng.uniform(0.1, 0.9, (3, 4)),
                                                                          rng.uniform(0, 1, (3, 4))]),
        "bce_logits": (lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw),
                       [r(3, 4), rng.uniform(0, 1, (3, 4)), rng.uniform(0.5, 2, 4)]),
        "kl": (lambda x, y: F.kl_div(x, y, reduction="batchmean"), [r(3, 4), rng.uniform(0.1, 1, (3, 4))]),
        "kl_log": (lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True), [r(3, 4), r(3, 4)]),
        "poisson_full": (lambda x: F.poisson_nll_loss(x, counts, log_input=False, full=True),
                         [rng.uniform(0.5, 2, (3, 4))]),
        "gaussian": (lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True), [r(3, 4), r(3, 4),
                                                                               rng.uniform(0.5, 2, (3, 1))]),
        "cosine_embedding": (lambda a, b: F.cosine_embedding_loss(a, b, T([1, -1, -1]), margin=-0.5),
                             [r(3, 4), r(3, 4)]),
        "soft_margin": (lambda x: F.soft_margin_loss(x, signs), [r(3, 4)]),
        "multilabel_soft": (lambda x: F.multilabel_soft_margin_loss(x, T(probs), weight=T(w)), [r(3, 4)]),
        "multi_margin": (lambda x: F.multi_margin_loss(x, T([0, 3, 1]), p=2, weight=T(w)),
                         [rng.permutation(12).reshape(3, 4) * 0.3]),
        "multilabel_margin": (lambda x: F.multilabel_margin_loss(x, T([[0, 3, -1, 1], [1, 1, 2, -1], [3, 2, 1, 0]])),
                              [rng.permutation(12).reshape(3, 4) * 0.3]),
        "triplet_swap": (lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=4.0, p=3, swap=True),
                         [r(3, 4), r(3, 4), r(3, 4)]),
        "pairwise_inf": (lambda a, b: F.pairwise_distance(a, b, p=float("inf")), [r(3, 4), r(3, 4)]),
        "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b, dim=0), [r(3, 4), r(3, 1)]),
        "pdist": (lambda x: F.pdist(x, p=1.5), [r(4, 3)]),
    }


GRAD_CASES = _grad_cases()


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    fn, arrays = GRAD_CASES[name]
    assert fabric.autograd.gradcheck(fn, tuple(T(a, True) for a in arrays))


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradgradcheck(name):
    fn, arrays = GRAD_CASES[name]
    assert fabric.autograd.gradgradcheck(fn, tuple(T(a, True) for a in arrays))


@pytest.mark.parametrize("kw", [{}, {"weight": True}, {"label_smoothing": 0.3}, {"weight": True, "label_smoothing": 0.1,
                                                                                   "reduction": "sum"},
                                {"reduction": "none", "ignore_index": 2}])
def test_cross_entropy_fused_and_differentiable_agree(kw):
    rng = np.random.default_rng(6)
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = T(rng.random(5) + 0.1)
    x = T(rng.standard_normal((2, 5, 3)), True)
    y = F.cross_entropy(x, T(rng.integers(0, 5, (2, 3))), **kw)
    g = T(rng.standard_normal(tuple(y.shape)))
    fast, = fabric.autograd.grad(y, x, g, retain_graph=True)
    graph, = fabric.autograd.grad(y, x, g, create_graph=True)
    np.testing.assert_allclose(fast.numpy(), graph.detach().numpy(), rtol=1e-12, atol=1e-15)


def test_cross_entropy_kdim_equals_flattened():
    rng = np.random.default_rng(7)
    x, t = rng.standard_normal((2, 4, 3, 2)), rng.integers(0, 4, (2, 3, 2))
    a = T(x, True)
    F.cross_entropy(a, T(t), label_smoothing=0.1).backward()
    b = T(np.moveaxis(x, 1, -1).reshape(-1, 4), True)
    F.cross_entropy(b, T(t.reshape(-1)), label_smoothing=0.1).backward()
    np.testing.assert_allclose(np.moveaxis(a.grad.numpy(), 1, -1).reshape(-1, 4), b.grad.numpy(), rtol=1e-12)


def test_nll_grad_is_scatter_and_float32_dtype():
    x = T(np.zeros((3, 4), np.float32), True)
    F.nll_loss(x, T([1, 0, 3]), reduction="sum").backward()
    exp = np.zeros((3, 4), np.float32)
    exp[[0, 1, 2], [1, 0, 3]] = -1
    np.testing.assert_array_equal(x.grad.numpy(), exp)
    assert F.cross_entropy(T(np.zeros((3, 4), np.float32)), T([1, 0, 3])).dtype == fabric.float32


# --- CTC ----------------------------------------------------------------------------------

def _ctc_brute(lp, target, T_len, blank):
    """-log sum over all alignments of length T_len that collapse to target."""
    C = lp.shape[1]
    total = 0.0
    for path in itertools.product(range(C), repeat=T_len):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k)]
        if collapsed == list(target):
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


def test_ctc_matches_brute_force():
    rng = np.random.default_rng(8)
    lp = _log_softmax(rng.standard_normal((5, 3, 3)), 2)
    targets = np.array([[1, 1, 0], [2, 0, 0], [1, 2, 1]])
    in_len, tgt_len = np.array([5, 4, 5]), np.array([2, 1, 3])
    got = F.ctc_loss(T(lp), T(targets), T(in_len), T(tgt_len), reduction="none").numpy()
    exp = [_ctc_brute(lp[:in_len[n], n], targets[n, :tgt_len[n]], in_len[n], 0) for n in range(3)]
    np.testing.assert_allclose(got, exp, rtol=1e-10)
    # blank elsewhere, empty target, concatenated targets, lists for lengths
    got = F.ctc_loss(T(lp), T(np.array([0, 1, 0, 1, 1])), [5, 3, 4], [2, 0, 3], blank=2, reduction="none").numpy()
    exp = [_ctc_brute(lp[:5, 0], [0, 1], 5, 2), _ctc_brute(lp[:3, 1], [], 3, 2), _ctc_brute(lp[:4, 2], [0, 1, 1], 4, 2)]
    np.testing.assert_allclose(got, exp, rtol=1e-10)


def test_ctc_reductions_zero_infinity_and_unbatched():
    rng = np.random.default_rng(9)
    lp = T(_log_softmax(rng.standard_normal((4, 2, 3)), 2))
    targets = T(np.array([[1, 1, 2], [2, 1, 0]]))
    none = F.ctc_loss(lp, targets, [3, 4], [3, 2], reduction="none")
    assert np.isinf(none.numpy()[0])  # 1,1,2 needs 4 frames (a blank between the 1s)
    z = F.ctc_loss(lp, targets, [3, 4], [3, 2], reduction="none", zero_infinity=True).numpy()
    np.testing.assert_allclose(z, [0.0, none.numpy()[1]])
    mean = F.ctc_loss(lp, targets, [3, 4], [3, 2], zero_infinity=True).item()
    np.testing.assert_allclose(mean, (0.0 / 3 + none.numpy()[1] / 2) / 2)
    x = T(rng.standard_normal((4, 2, 3)), True)
    F.ctc_loss(F.log_softmax(x, 2), targets, [3, 4], [3, 2], reduction="sum", zero_infinity=True).backward()
    assert np.all(x.grad.numpy()[:, 0] == 0) and np.isfinite(x.grad.numpy()).all()
    u = F.ctc_loss(lp[:, 1], T(np.array([2, 1])), T(np.array(4)), T(np.array(2)), reduction="none")
    assert u.shape == () and np.isclose(u.item(), none.numpy()[1])


def test_ctc_gradcheck_through_log_softmax():
    rng = np.random.default_rng(10)
    x = T(rng.standard_normal((5, 2, 4)), True)
    targets, lengths = T(np.array([[1, 3, 3], [2, 2, 0]])), T(np.array([3, 2]))

    def f(x):
        return F.ctc_loss(F.log_softmax(x, 2), targets, T(np.array([5, 4])), lengths)

    assert fabric.autograd.gradcheck(f, (x,))


def test_ctc_errors():
    lp = fabric.randn(4, 2, 3).log_softmax(2)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, fabric.tensor([[1], [1]]), [4, 4], [1, 1], blank=3)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 4, but got value 5"):
        F.ctc_loss(lp, fabric.tensor([[1], [1]]), [5, 4], [1, 1])
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, fabric.tensor([[1], [1]]), [4], [1, 1])
    with pytest.raises(RuntimeError, match="at dimension 1"):
        F.ctc_loss(lp, fabric.tensor([[1], [1]]), [4, 4], [2, 1])


def test_loss_module_buffers_and_repr():
    w = fabric.ones(3)
    m = fabric.nn.CrossEntropyLoss(weight=w, ignore_index=1, label_smoothing=0.1)
    assert list(m.state_dict()) == ["weight"] and m.weight is w and repr(m) == "CrossEntropyLoss()"
    b = fabric.nn.BCEWithLogitsLoss(pos_weight=fabric.ones(2))
    assert list(dict(b.named_buffers())) == ["pos_weight"]
    assert fabric.nn.MSELoss(reduction="sum").reduction == "sum"
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        fabric.nn.TripletMarginLoss(margin=0)
    with pytest.raises(TypeError, match="delta must be a float or int"):
        fabric.nn.HuberLoss(delta="1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(fabric.nn.NLLLoss2d(), fabric.nn.NLLLoss)


# --- PyTorch parity -------------------------------------------------------------------------

def _both(a, lib, grad):
    t = lib.from_numpy(np.array(a, copy=True))
    return t.requires_grad_() if grad and t.is_floating_point() else t


def _compare_with_torch(name, arrays, kwargs, grad=(0,), dtype=np.float64, tol=1e-10):
    import torch
    import torch.nn.functional as TF

    fa = [_both(a, fabric, i in grad) for i, a in enumerate(arrays)]
    ta = [_both(a, torch, i in grad) for i, a in enumerate(arrays)]
    fk = {k: (_both(v, fabric, False) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    tk = {k: (_both(v, torch, False) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    y, ty = getattr(F, name)(*fa, **fk), getattr(TF, name)(*ta, **tk)
    assert tuple(y.shape) == tuple(ty.shape) and str(y.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1]
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol, equal_nan=True,
                               err_msg=f"{name} {kwargs}")
    if not ty.requires_grad:
        return
    g = np.random.default_rng(0).standard_normal(tuple(ty.shape)).astype(dtype)
    y.backward(fabric.from_numpy(g.copy()))
    ty.backward(torch.from_numpy(g.copy()))
    for i in grad:
        if ta[i].grad is None:  # torch leaves a zero gradient undefined (e.g. the 0-norm)
            assert fa[i].grad is None or not fa[i].grad.numpy().any()
            continue
        np.testing.assert_allclose(fa[i].grad.numpy(), ta[i].grad.numpy(), rtol=tol, atol=tol,
                                   err_msg=f"grad {i} of {name} {kwargs}")


CE_SHAPES = [((6, 5), (6,)), ((5,), ()), ((2, 5, 3), (2, 3)), ((2, 5, 2, 3), (2, 2, 3)), ((2, 5, 2, 1, 2), (2, 2, 1, 2))]


@pytest.mark.torch
@pytest.mark.parametrize("shapes", CE_SHAPES, ids=[str(s[0]) for s in CE_SHAPES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_and_nll_match_torch(shapes, dtype):
    rng = np.random.default_rng(11)
    xs, ts = shapes
    x = rng.standard_normal(xs).astype(dtype) * 3
    t = rng.integers(0, 5, ts)
    if t.ndim:
        t.reshape(-1)[0] = 2
        t.reshape(-1)[-1] = -100
    w = (rng.random(5) + 0.1).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-10
    for weight, eps, red, ii in itertools.product([None, w], [0.0, 0.25], ["mean", "sum", "none"], [-100, 2]):
        kw = {"reduction": red, "ignore_index": ii, "label_smoothing": eps}
        if weight is not None:
            kw["weight"] = weight
        ti = np.where(t == -100, ii, t)
        _compare_with_torch("cross_entropy", [x, ti], kw, dtype=dtype, tol=tol)
        kw.pop("label_smoothing")
        _compare_with_torch("nll_loss", [x, ti], kw, dtype=dtype, tol=tol)
    probs = rng.random(xs).astype(dtype)
    for weight, eps, red in itertools.product([None, w], [0.0, 0.25], ["mean", "sum", "none"]):
        kw = {"reduction": red, "label_smoothing": eps}
        if weight is not None:
            kw["weight"] = weight
        _compare_with_torch("cross_entropy", [x, probs], kw, grad=(0, 1), dtype=dtype, tol=tol)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.filterwarnings("ignore:Using a target size:UserWarning")       # the broadcast mse case, both libs
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")  # kl_div 'mean', both libs
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # xlogy(0, 0)'s nan gradient
def test_losses_match_torch(dtype):
    rng = np.random.default_rng(12)

    def r(*s, scale=1.0):
        return (rng.standard_normal(s) * scale).astype(dtype)

    def u(*s, lo=0.05, hi=0.95):
        return rng.uniform(lo, hi, s).astype(dtype)

    sgn = np.where(rng.random((3, 4)) > 0.5, 1, -1).astype(dtype)
    tol = 2e-5 if dtype == np.float32 else 1e-10
    for red in ["mean", "sum", "none"]:
        cases = [
            ("mse_loss", [r(3, 4), r(3, 4)], {}, (0, 1)),
            ("mse_loss", [r(3, 4), r(4)], {}, (0, 1)),
            ("mse_loss", [r(3, 4), r(3, 4)], {"weight": u(3, 4)}, (0, 1)),
            ("l1_loss", [r(3, 4), r(3, 4)], {}, (0, 1)),
            ("l1_loss", [r(3, 4), r(3, 4)], {"weight": u(3, 4)}, (0, 1)),
            ("smooth_l1_loss", [r(3, 4), r(3, 4)], {"beta": 0.5}, (0, 1)),
            ("smooth_l1_loss", [r(3, 4), r(3, 4)], {"beta": 0.0}, (0, 1)),
            ("huber_loss", [r(3, 4), r(3, 4)], {"delta": 0.5}, (0, 1)),
            ("huber_loss", [r(3, 4), r(3, 4)], {"delta": 2.0, "weight": u(3, 4)}, (0, 1)),
            ("binary_cross_entropy", [u(3, 4), u(3, 4, lo=0, hi=1)], {}, (0, 1)),
            ("binary_cross_entropy", [u(3, 4), u(3, 4, lo=0, hi=1)], {"weight": u(4)}, (0, 1)),
            ("binary_cross_entropy", [np.array([0.0, 1.0, 0.5], dtype), np.array([1.0, 0.0, 1.0], dtype)], {}, (1,)),
            ("binary_cross_entropy_with_logits", [r(3, 4, scale=5), u(3, 4, lo=0, hi=1)],
             {"weight": u(4), "pos_weight": u(4, lo=0.5, hi=3)}, (0, 1)),
            ("kl_div", [np.log(u(3, 4)), u(3, 4)], {}, (0, 1)),
            ("kl_div", [np.log(u(3, 4)), np.log(u(3, 4))], {"log_target": True}, (0, 1)),
            ("kl_div", [np.log(u(3, 4)), np.concatenate([u(3, 3), np.zeros((3, 1), dtype)], 1)], {}, (0, 1)),
            ("poisson_nll_loss", [r(3, 4), u(3, 4, lo=0, hi=5)], {}, (0, 1)),
            ("poisson_nll_loss", [u(3, 4, lo=0.1, hi=3), rng.integers(0, 5, (3, 4)).astype(dtype)],
             {"log_input": False, "full": True}, (0,)),
            ("gaussian_nll_loss", [r(3, 4), r(3, 4), u(3, 4)], {}, (0, 1, 2)),
            ("gaussian_nll_loss", [r(3, 4), r(3, 4), u(3)], {"full": True}, (0, 1, 2)),
            ("gaussian_nll_loss", [r(3, 4), r(3, 4), np.array([1e-9, 0.5, 2.0], dtype)[:, None]], {}, (0, 1, 2)),
            ("cosine_embedding_loss", [r(3, 4), r(3, 4), np.array([1, -1, -1])], {"margin": 0.2}, (0, 1)),
            ("cosine_embedding_loss", [r(4), r(4), np.array(-1)], {"margin": -0.5}, (0, 1)),
            ("margin_ranking_loss", [r(5), r(5), np.sign(r(5))], {"margin": 0.1}, (0, 1)),
            ("hinge_embedding_loss", [r(3, 4), sgn], {"margin": 0.7}, (0,)),
            ("soft_margin_loss", [r(3, 4, scale=3), sgn], {}, (0,)),
            ("multilabel_soft_margin_loss", [r(3, 4), (u(3, 4) > 0.5).astype(dtype)], {"weight": u(4)}, (0, 1)),
            ("multi_margin_loss", [r(3, 4), np.array([0, 3, 1])], {"p": 2, "margin": 0.5, "weight": u(4)}, (0,)),
            ("multi_margin_loss", [r(4), np.array(1)], {}, (0,)),
            ("multilabel_margin_loss", [r(3, 4), np.array([[0, 3, -1, 1], [1, 1, 2, -1], [3, 2, 1, 0]])], {}, (0,)),
            ("multilabel_margin_loss", [r(4), np.array([-1, 3, 1, 0])], {}, (0,)),
            ("triplet_margin_loss", [r(3, 4), r(3, 4), r(3, 4)], {"margin": 2.0, "p": 1.5, "swap": True},
             (0, 1, 2)),
            ("triplet_margin_with_distance_loss", [r(3, 4), r(3, 4), r(3, 4)], {"margin": 2.0, "swap": True},
             (0, 1, 2)),
        ]
        for name, arrays, kw, grad in cases:
            _compare_with_torch(name, arrays, dict(kw, reduction=red), grad=grad, dtype=dtype, tol=tol)
    for p in [2.0, 1.0, 3.0, 0.5, 0.0, float("inf")]:
        _compare_with_torch("pairwise_distance", [r(3, 4), r(3, 4)], {"p": p}, grad=(0, 1), dtype=dtype, tol=tol)
        _compare_with_torch("pdist", [r(4, 3)], {"p": p}, grad=(0,), dtype=dtype, tol=tol)
    _compare_with_torch("pairwise_distance", [r(3, 4), r(4)], {"keepdim": True, "eps": 0.0}, grad=(0, 1),
                        dtype=dtype, tol=tol)
    _compare_with_torch("cosine_similarity", [r(3, 4), r(1, 4)], {"dim": 1}, grad=(0, 1), dtype=dtype, tol=tol)
    _compare_with_torch("cosine_similarity", [r(3, 4), np.zeros((3, 4), dtype)], {"dim": 1}, grad=(0, 1),
                        dtype=dtype, tol=tol)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_matches_torch(dtype, reduction):
    import torch
    import torch.nn.functional as TF

    rng = np.random.default_rng(13)
    T_, N, C = 12, 4, 5
    x = rng.standard_normal((T_, N, C)).astype(dtype)
    targets = rng.integers(1, C, (N, 6))
    targets[0, :3] = 2  # repeats
    in_len, tgt_len = np.array([12, 10, 7, 3]), np.array([6, 4, 0, 2])
    tol = 1e-5 if dtype == np.float32 else 1e-10
    for concat, zero_inf in itertools.product([False, True], [False, True]):
        tg = np.concatenate([targets[n, :tgt_len[n]] for n in range(N)]) if concat else targets
        a = fabric.from_numpy(x.copy()).requires_grad_()
        t = torch.from_numpy(x.copy()).requires_grad_()
        y = F.ctc_loss(F.log_softmax(a, 2), T(tg), T(in_len), T(tgt_len), reduction=reduction,
                       zero_infinity=zero_inf)
        ty = TF.ctc_loss(TF.log_softmax(t, 2), torch.from_numpy(tg), torch.from_numpy(in_len),
                         torch.from_numpy(tgt_len), reduction=reduction, zero_infinity=zero_inf)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
        g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
        y.backward(fabric.from_numpy(g.copy()))
        ty.backward(torch.from_numpy(g.copy()))
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)
    # the gradient wrt log_probs themselves is PyTorch's (it assumes normalised inputs)
    lp = TF.log_softmax(torch.from_numpy(x), 2).numpy()
    a = fabric.from_numpy(lp.copy()).requires_grad_()
    t = torch.from_numpy(lp.copy()).requires_grad_()
    F.ctc_loss(a, T(targets), list(in_len), list(tgt_len), reduction=reduction).sum().backward()
    TF.ctc_loss(t, torch.from_numpy(targets), torch.from_numpy(in_len), torch.from_numpy(tgt_len),
                reduction=reduction).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.torch
def test_loss_module_constants_match_torch():
    import torch

    for n in ["L1Loss", "NLLLoss", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss", "BCELoss",
              "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss",
              "CrossEntropyLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
              "MultiMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
              "PairwiseDistance", "CosineSimilarity"]:
        fc = getattr(fabric.nn, n).__dict__.get("__constants__", getattr(fabric.nn, n).__constants__
                                                if hasattr(getattr(fabric.nn, n), "__constants__") else None)
        tc = getattr(torch.nn, n).__dict__.get("__constants__", getattr(torch.nn, n).__constants__
                                               if hasattr(getattr(torch.nn, n), "__constants__") else None)
        assert fc == tc, n
