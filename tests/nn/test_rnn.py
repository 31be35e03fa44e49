"""Recurrent layers and ``nn.utils.rnn``: packed sequences against running
each sequence alone, outputs / final states / gradients against PyTorch over
the options, the fused layer against its Tensor-op reference, gradcheck and
double backward, errors, and the packing utilities.  (The ModuleInfo
registry in moduleinfo_rnn_attention.py adds the generic module tests.)"""
from __future__ import annotations

import doctest

import numpy as np
import pytest

import fabric
from fabric import nn
from fabric.nn.modules import rnn as R
from fabric.nn.utils import rnn as U

MODES = ("RNN", "LSTM", "GRU")


def _np(t):
    return t.detach().cpu().numpy()


def _t(a, grad=False):
    t = fabric.from_numpy(np.array(a, copy=True))
    return t.requires_grad_() if grad else t


def _states(h):
    return list(h) if isinstance(h, tuple) else [h]


def _make(lib, mode, *args, **kwargs):
    lib.manual_seed(0)
    return getattr(lib.nn, mode)(*args, **kwargs)


def _copy_weights(fm, tm):
    fm.load_state_dict({k: fabric.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})


# --- packed input = each sequence alone ---------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_equals_each_sequence_alone(mode, bidirectional):
    rng = np.random.default_rng(1)
    lengths = [4, 1, 6, 3, 6]
    m = _make(fabric, mode, 3, 5, num_layers=2, bidirectional=bidirectional).double()
    dirs = 2 if bidirectional else 1
    x = _t(rng.standard_normal((6, 5, 3)))
    h0 = _t(rng.standard_normal((2 * dirs, 5, 5)))
    hx = (h0, _t(rng.standard_normal((2 * dirs, 5, 5)))) if mode == "LSTM" else h0
    out, h = m(U.pack_padded_sequence(x, lengths, enforce_sorted=False), hx)
    y, lens = U.pad_packed_sequence(out)
    assert lens.tolist() == lengths
    for b, n in enumerate(lengths):
        hb = tuple(s[:, b:b + 1] for s in hx) if mode == "LSTM" else hx[:, b:b + 1]
        yb, hb_out = m(x[:n, b:b + 1], hb)
        np.testing.assert_allclose(_np(y[:n, b]), _np(yb[:, 0]), rtol=1e-12, atol=1e-12)
        assert not _np(y[n:, b]).any()
        for s, sb in zip(_states(h), _states(hb_out)):
            np.testing.assert_allclose(_np(s[:, b]), _np(sb[:, 0]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_packed_gradients_equal_per_sequence_gradients(mode):
    """Gradients through a packed batch equal the sum of per-sequence gradients."""
    rng = np.random.default_rng(2)
    lengths = [2, 5, 3]
    m = _make(fabric, mode, 2, 3, bidirectional=True).double()
    xs = rng.standard_normal((5, 3, 2))
    x = _t(xs, True)
    out, h = m(U.pack_padded_sequence(x, lengths, enforce_sorted=False))
    y, _ = U.pad_packed_sequence(out)
    loss = (y ** 2).sum() + sum((s ** 3).sum() for s in _states(h))
    loss.backward()
    grads = {n: _np(p.grad) for n, p in m.named_parameters()}
    m.zero_grad()
    total = {n: 0 for n in grads}
    for b, n in enumerate(lengths):
        xb = _t(xs[:n, b:b + 1], True)
        yb, hb = m(xb)
        ((yb ** 2).sum() + sum((s ** 3).sum() for s in _states(hb))).backward()
        np.testing.assert_allclose(_np(x.grad)[:n, b], _np(xb.grad)[:, 0], rtol=1e-10, atol=1e-12)
        for name, p in m.named_parameters():
            total[name] = total[name] + _np(p.grad)
        m.zero_grad()
    for name, g in grads.items():
        np.testing.assert_allclose(g, total[name], rtol=1e-10, atol=1e-12, err_msg=name)


# --- against PyTorch ------------------------------------------------------------------------------

_OPTIONS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True, "bias": False},
    {"batch_first": True},
    {"num_layers": 3, "bidirectional": True, "batch_first": True},
]


def _torch_case(mode, opts, packed, with_state, seed=0):
    import torch

    rng = np.random.default_rng(seed)
    tm = _make(torch, mode, 3, 4, **opts)
    fm = _make(fabric, mode, 3, 4, **opts)
    _copy_weights(fm, tm)
    bf = opts.get("batch_first", False)
    dirs = 2 if opts.get("bidirectional") else 1
    layers = opts.get("num_layers", 1)
    proj = opts.get("proj_size", 0)
    T, B = 5, 4
    x = rng.standard_normal((B, T, 3) if bf else (T, B, 3)).astype(np.float32)
    lengths = np.array([3, 5, 1, 4])
    states = []
    if with_state:
        states = [rng.standard_normal((layers * dirs, B, proj or 4)).astype(np.float32)]
        if mode == "LSTM":
            states.append(rng.standard_normal((layers * dirs, B, 4)).astype(np.float32))
    results = []
    for lib, m in ((fabric, fm), (torch, tm)):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        st = [lib.from_numpy(s.copy()).requires_grad_() for s in states]
        hx = None if not st else (tuple(st) if mode == "LSTM" else st[0])
        inp = lib.nn.utils.rnn.pack_padded_sequence(xt, lib.from_numpy(lengths.copy()), batch_first=bf,
                                                    enforce_sorted=False) if packed else xt
        out, h = m(inp, hx)
        if packed:
            out, _ = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=bf)
        hs = list(h) if isinstance(h, tuple) else [h]
        g = np.random.default_rng(seed + 1)
        loss = (out * lib.from_numpy(g.standard_normal(tuple(out.shape)).astype(np.float32))).sum()
        for s in hs:
            loss = loss + (s * lib.from_numpy(g.standard_normal(tuple(s.shape)).astype(np.float32))).sum()
        loss.backward()
        results.append(([out] + hs, [xt] + st, dict(m.named_parameters())))
    return results


@pytest.mark.torch
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("opts", _OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "default")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_matches_torch(mode, opts, packed):
    (fo, fi, fp), (to, ti, tp) = _torch_case(mode, opts, packed, with_state=packed or opts.get("bidirectional", False))
    for a, b in zip(fo, to):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)
    for a, b in zip(fi, ti):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-3, atol=1e-5)
    for n, p in fp.items():
        np.testing.assert_allclose(_np(p.grad), _np(tp[n].grad), rtol=1e-3, atol=1e-4, err_msg=n)


@pytest.mark.torch
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("opts", [{"proj_size": 2}, {"proj_size": 3, "num_layers": 2, "bidirectional": True}])
def test_lstm_proj_matches_torch(packed, opts):
    (fo, fi, fp), (to, ti, tp) = _torch_case("LSTM", opts, packed, with_state=True)
    assert tuple(fo[0].shape)[-1] == opts["proj_size"] * (2 if opts.get("bidirectional") else 1)
    for a, b in zip(fo, to):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)
    for a, b in zip(fi, ti):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-3, atol=1e-5)
    for n, p in fp.items():
        np.testing.assert_allclose(_np(p.grad), _np(tp[n].grad), rtol=1e-3, atol=1e-4, err_msg=n)


@pytest.mark.torch
@pytest.mark.parametrize("mode", MODES)
def test_dropout_between_layers_matches_torch(mode):
    import torch

    tm = _make(torch, mode, 3, 4, num_layers=3, dropout=0.5, bidirectional=True)
    fm = _make(fabric, mode, 3, 4, num_layers=3, dropout=0.5, bidirectional=True)
    _copy_weights(fm, tm)
    x = np.random.default_rng(0).standard_normal((4, 3, 3)).astype(np.float32)
    lengths = [2, 4, 3]
    for packed in (False, True):
        res = []
        for lib, m in ((fabric, fm), (torch, tm)):
            xt = lib.from_numpy(x.copy())
            inp = lib.nn.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=False) if packed else xt
            lib.manual_seed(7)
            out = m(inp)[0]
            res.append(_np(out.data if packed else out))
        np.testing.assert_allclose(res[0], res[1], rtol=1e-4, atol=1e-5)
    fm.eval()
    a, b = _np(fm(fabric.from_numpy(x))[0]), _np(fm(fabric.from_numpy(x))[0])
    np.testing.assert_array_equal(a, b)


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch_over_a_loop(mode):
    """A cell stepped by hand over a sequence (as users write it) equals PyTorch, incl. gradients."""
    import torch

    tm = _make(torch, mode, 3, 4)
    fm = _make(fabric, mode, 3, 4)
    _copy_weights(fm, tm)
    xs = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    outs = []
    for lib, m in ((fabric, fm), (torch, tm)):
        x = lib.from_numpy(xs.copy()).requires_grad_()
        h = None
        total = 0
        for t in range(5):
            h = m(x[t], h)
            total = total + (h[0] if isinstance(h, tuple) else h).tanh().sum()
        total.backward()
        outs.append((_np(h[0] if isinstance(h, tuple) else h), _np(x.grad), [_np(p.grad) for p in m.parameters()]))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-3, atol=1e-5)
    for a, b in zip(outs[0][2], outs[1][2]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


# --- the fused layer against its reference twin ----------------------------------------------------

def _layer_args(mode, rng, proj=0, bias=True, with_state=True, plan=((0, 3), (3, 3), (6, 2), (8, 1)), dtype=np.float64):
    gates = R._GATES[mode]
    hid, inp = 3, 2
    p = proj or hid
    n = plan[-1][0] + plan[-1][1]
    batch = plan[0][1]

    def r(*s):
        return _t(rng.standard_normal(s).astype(dtype), True)

    x = r(n, inp)
    h0 = r(batch, p) if with_state else None
    c0 = r(batch, hid) if (with_state and mode == "LSTM") else None
    w_ih, w_hh = r(gates * hid, inp), r(gates * hid, p)
    b_ih, b_hh = (r(gates * hid), r(gates * hid)) if bias else (None, None)
    w_hr = r(proj, hid) if proj else None
    return [x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr], plan


_LAYER_CASES = [(m, rev, proj, bias, st) for m in ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
                for rev in (False, True) for proj in ((0, 2) if m == "LSTM" else (0,))
                for bias, st in ((True, True), (False, False))]


@pytest.mark.parametrize("mode,reverse,proj,bias,with_state", _LAYER_CASES)
def test_fused_layer_matches_reference(mode, reverse, proj, bias, with_state):
    rng = np.random.default_rng(3)
    args, plan = _layer_args(mode, rng, proj, bias, with_state)
    fast = R._run_layer(mode, args[0], args[1], args[2], tuple(args[3:]), plan, reverse)
    ref = R._layer_reference(mode, *args, plan, reverse)
    for a, b in zip(fast, ref):
        if b is not None:
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-13)
    leaves = [a for a in args if a is not None]
    gs = [_t(rng.standard_normal(tuple(o.shape))) for o in fast]

    def loss(outs):
        return sum((o * g).sum() for o, g in zip(outs, gs))

    g_fast = fabric.autograd.grad(loss(fast), leaves)
    g_ref = fabric.autograd.grad(loss(ref), leaves)
    for a, b in zip(g_fast, g_ref):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
def test_fused_layer_gradcheck_and_gradgradcheck(mode):
    rng = np.random.default_rng(4)
    plan = ((0, 2), (2, 2), (4, 1))
    args, plan = _layer_args(mode, rng, proj=2 if mode == "LSTM" else 0, plan=plan)
    idx = [i for i, a in enumerate(args) if a is not None]

    def f(*ins):
        full = list(args)
        for i, t in zip(idx, ins):
            full[i] = t
        outs = R._run_layer(mode, full[0], full[1], full[2], tuple(full[3:]), plan, True)
        return tuple(outs)

    ins = tuple(args[i] for i in idx)
    assert fabric.autograd.gradcheck(f, ins, atol=1e-6, rtol=1e-4)
    # double backward through the create_graph path: inputs and states plus the recurrent weight
    small = (args[0], args[1], args[4])

    def g(x, h0, w_hh):
        full = list(args)
        full[0], full[1], full[4] = x, h0, w_hh
        return tuple(R._run_layer(mode, full[0], full[1], full[2], tuple(full[3:]), plan, False))

    assert fabric.autograd.gradgradcheck(g, small, atol=1e-5, rtol=1e-3)


def test_gradient_penalty_through_lstm_trains():
    """create_graph=True through an LSTM (a gradient penalty) gives a usable second-order graph."""
    fabric.manual_seed(0)
    m = nn.LSTM(2, 3).double()
    x = fabric.randn(4, 2, 2, dtype=fabric.float64, requires_grad=True)
    out, _ = m(x)
    (gx,) = fabric.autograd.grad(out.sum(), x, create_graph=True)
    penalty = (gx ** 2).sum()
    penalty.backward()
    assert all(p.grad is not None and np.isfinite(_np(p.grad)).all() for p in m.parameters())
    assert float(np.abs(_np(m.weight_hh_l0.grad)).sum()) > 0


# --- module API and errors -------------------------------------------------------------------------

def test_parameter_names_and_all_weights():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    names = [n for n, _ in m.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert "weight_hr_l1_reverse" in names and len(names) == 20
    assert m._flat_weights_names == names
    assert [[p.shape for p in ws] for ws in m.all_weights][2][0] == (16, 4)
    assert m.weight_ih_l1.shape == (16, 4) and m.weight_hh_l0.shape == (16, 2)
    m.flatten_parameters()
    assert all(a is b for a, b in zip(m._flat_weights, m.parameters()))


def test_dtype_and_device_moves_keep_working():
    m = nn.GRU(2, 3, num_layers=2)
    m.double()
    out, h = m(fabric.randn(4, 1, 2, dtype=fabric.float64))
    assert out.dtype == fabric.float64 and h.dtype == fabric.float64
    with pytest.raises(ValueError, match="does not match weight dtype"):
        m(fabric.randn(4, 1, 2))


def test_replaced_parameter_is_used():
    m = nn.RNN(2, 3)
    m.weight_hh_l0 = nn.Parameter(fabric.zeros(3, 3))
    m.weight_ih_l0 = nn.Parameter(fabric.zeros(3, 2))
    m.bias_ih_l0 = nn.Parameter(fabric.zeros(3))
    m.bias_hh_l0 = nn.Parameter(fabric.ones(3))
    out, _ = m(fabric.randn(2, 1, 2))
    np.testing.assert_allclose(_np(out), np.tanh(1.0), rtol=1e-6)


def test_empty_batch():
    out, (h, _c) = nn.LSTM(2, 3)(fabric.randn(4, 0, 2))
    assert tuple(out.shape) == (4, 0, 3) and tuple(h.shape) == (1, 0, 3)


def _errors(lib, case):
    nn_ = lib.nn
    x = lib.ones(5, 2, 3)
    cases = {
        "input_dim": lambda: nn_.LSTM(3, 4)(lib.ones(5, 2, 3, 1)),
        "rnn_input_dim": lambda: nn_.RNN(3, 4)(lib.ones(5)),
        "input_size": lambda: nn_.GRU(3, 4)(lib.ones(5, 2, 4)),
        "dtype": lambda: nn_.LSTM(3, 4)(x.double()),
        "hidden_size": lambda: nn_.GRU(3, 4)(x, lib.zeros(2, 2, 4)),
        "hidden_dim": lambda: nn_.RNN(3, 4)(x, lib.zeros(2, 4)),
        "lstm_hidden": lambda: nn_.LSTM(3, 4)(x, (lib.zeros(1, 3, 4), lib.zeros(1, 2, 4))),
        "lstm_cell": lambda: nn_.LSTM(3, 4)(x, (lib.zeros(1, 2, 4), lib.zeros(1, 2, 5))),
        "lstm_hx_dims": lambda: nn_.LSTM(3, 4)(x, (lib.zeros(2, 4), lib.zeros(2, 4))),
        "seq_len_zero": lambda: nn_.LSTM(3, 4)(lib.ones(0, 2, 3)),
        "dropout_range": lambda: nn_.LSTM(3, 4, dropout=1.5),
        "proj_size": lambda: nn_.LSTM(3, 4, proj_size=4),
        "proj_gru": lambda: nn_.GRU(3, 4, proj_size=2),
        "nonlinearity": lambda: nn_.RNN(3, 4, nonlinearity="sigmoid"),
        "hidden_zero": lambda: nn_.LSTM(3, 0),
        "bias_type": lambda: nn_.LSTM(3, 4, bias=1),
        "cell_input": lambda: nn_.LSTMCell(3, 4)(lib.ones(2, 5)),
        "cell_batch": lambda: nn_.LSTMCell(3, 4)(lib.ones(2, 3), (lib.zeros(2, 4), lib.zeros(3, 4))),
        "cell_hidden": lambda: nn_.GRUCell(3, 4)(lib.ones(2, 3), lib.zeros(2, 5)),
        "cell_dim": lambda: nn_.RNNCell(3, 4)(lib.ones(2, 3, 1)),
        "cell_hx_dim": lambda: nn_.GRUCell(3, 4)(lib.ones(2, 3), lib.zeros(1, 2, 4)),
        "cell_dtype": lambda: nn_.GRUCell(3, 4)(lib.ones(2, 3).double()),
    }
    try:
        cases[case]()
    except Exception as e:
        return type(e), str(e)
    return None, ""


_ERROR_CASES = ["input_dim", "rnn_input_dim", "input_size", "dtype", "hidden_size", "hidden_dim", "lstm_hidden",
                "lstm_cell", "lstm_hx_dims", "seq_len_zero", "dropout_range", "proj_size", "proj_gru", "nonlinearity",
                "hidden_zero", "bias_type", "cell_input", "cell_batch", "cell_hidden", "cell_dim", "cell_hx_dim",
                "cell_dtype"]


@pytest.mark.torch
@pytest.mark.parametrize("case", _ERROR_CASES)
def test_errors_match_torch(case):
    import torch

    ft, fmsg = _errors(fabric, case)
    tt, tmsg = _errors(torch, case)
    assert ft is tt, (fmsg, tmsg)
    assert fmsg.replace("fabric.", "torch.") == tmsg


def test_dropout_warning_single_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.2)


def test_cell_unknown_nonlinearity_fails_in_forward():
    c = nn.RNNCell(2, 3)
    c.nonlinearity = "foo"
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: foo"):
        c(fabric.ones(1, 2))


# --- nn.utils.rnn ---------------------------------------------------------------------------------

def _both(fn):
    import torch

    return fn(fabric), fn(torch)


def _eq(a, b):
    np.testing.assert_array_equal(_np(a), b.detach().numpy())


@pytest.mark.torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_pad_round_trip_matches_torch(batch_first, enforce_sorted):
    rng = np.random.default_rng(0)
    lengths = [5, 4, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4, 4]
    x = rng.standard_normal((5, 5, 2)).astype(np.float32)  # (T, B, 2) or (B, T, 2): both 5

    def run(lib):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        p = lib.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=batch_first,
                                                  enforce_sorted=enforce_sorted)
        y, lens = lib.nn.utils.rnn.pad_packed_sequence(p, batch_first=batch_first, padding_value=-2.0,
                                                       total_length=7)
        (y * lib.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
        return p, y, lens, xt.grad

    (fp, fy, fl, fg), (tp, ty, tl, tg) = _both(run)
    for a, b in zip(fp, tp):
        if b is None:
            assert a is None
        else:
            _eq(a, b)
            assert a.dtype == fabric.int64 or a.dtype == fabric.float32
    assert fp.batch_sizes.device.type == "cpu"
    _eq(fy, ty)
    _eq(fl, tl)
    _eq(fg, tg)


@pytest.mark.torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    seqs = [np.arange(6).reshape(3, 2), np.arange(10, 12).reshape(1, 2), np.arange(20, 28).reshape(4, 2)]

    def run(lib):
        ts = [lib.from_numpy(s.astype(np.float64)).requires_grad_() for s in seqs]
        out = lib.nn.utils.rnn.pad_sequence(ts, batch_first=batch_first, padding_value=-1.5,
                                            padding_side=padding_side)
        (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        ints = lib.nn.utils.rnn.pad_sequence([lib.from_numpy(s) for s in seqs], batch_first=batch_first,
                                             padding_side=padding_side)
        return out, ints, [t.grad for t in ts]

    (fo, fi, fg), (to, ti, tg) = _both(run)
    _eq(fo, to)
    _eq(fi, ti)
    assert fi.dtype == fabric.int64
    for a, b in zip(fg, tg):
        _eq(a, b)


@pytest.mark.torch
def test_pack_sequence_unpack_unpad_match_torch():
    seqs = [np.arange(3.0), np.arange(5.0) + 10, np.arange(1.0) + 20]

    def run(lib):
        ts = [lib.from_numpy(s.copy()) for s in seqs]
        p = lib.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
        unpacked = lib.nn.utils.rnn.unpack_sequence(p)
        padded = lib.nn.utils.rnn.pad_sequence(ts)
        unpadded = lib.nn.utils.rnn.unpad_sequence(padded, lib.tensor([3, 5, 1]))
        return p, unpacked, unpadded, padded.shape

    (fp, fu, fd, fs), (tp, tu, td, ts) = _both(run)
    for a, b in zip(fp, tp):
        _eq(a, b)
    for a, b in zip(fu + fd, tu + td):
        _eq(a, b)
    assert tuple(fs) == tuple(ts) == (3, 5)  # unpad_sequence transposed it in place, as PyTorch does
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        U.pack_sequence([fabric.ones(1), fabric.ones(2)])


def _util_errors(lib, case):
    r = lib.nn.utils.rnn
    cases = {
        "unsorted": lambda: r.pack_padded_sequence(lib.zeros(3, 2), [2, 3]),
        "zero_length": lambda: r.pack_padded_sequence(lib.zeros(3, 2), [2, 0]),
        "len_count": lambda: r.pack_padded_sequence(lib.zeros(3, 2), [2, 1, 1]),
        "empty": lambda: r.pack_padded_sequence(lib.zeros(0, 2), [2, 1]),
        "lengths_2d": lambda: r.pack_padded_sequence(lib.zeros(3, 2), lib.tensor([[2, 1]])),
        "input_1d": lambda: r.pack_padded_sequence(lib.zeros(3), [1, 1, 1]),
        "total_length": lambda: r.pad_packed_sequence(r.pack_padded_sequence(lib.zeros(3, 2), [3, 2]),
                                                      total_length=2),
        "pad_empty": lambda: r.pad_sequence([]),
        "padding_side": lambda: r.pad_sequence([lib.ones(2)], padding_side="mid"),
    }
    try:
        cases[case]()
    except Exception as e:
        return type(e), str(e)
    return None, ""


@pytest.mark.torch
@pytest.mark.parametrize("case", ["unsorted", "zero_length", "len_count", "empty", "lengths_2d", "input_1d",
                                  "total_length", "pad_empty", "padding_side"])
def test_util_errors_match_torch(case):
    import torch

    ft, fmsg = _util_errors(fabric, case)
    tt, tmsg = _util_errors(torch, case)
    assert ft is tt and fmsg == tmsg, (fmsg, tmsg)


def test_length_beyond_input_raises():
    # PyTorch reads past the end of the input here; fabric refuses
    with pytest.raises(RuntimeError, match="exceeds the input's sequence length"):
        U.pack_padded_sequence(fabric.zeros(3, 2), [4, 2])


def test_packed_sequence_methods():
    p = U.pack_sequence([fabric.ones(3, 2), fabric.ones(2, 2)])
    assert p.double().data.dtype == fabric.float64
    assert p.to(fabric.float32) is p
    assert p.long().data.dtype == fabric.int64 and p.long().batch_sizes is p.batch_sizes
    assert not p.is_cuda
    q = U.PackedSequence(p.data, p.batch_sizes, fabric.tensor([1, 0]))
    assert q.unsorted_indices.tolist() == [1, 0]
    r = U.PackedSequence((p.data, p.batch_sizes))
    assert r.batch_sizes is p.batch_sizes and r.sorted_indices is None
    assert U.invert_permutation(fabric.tensor([2, 0, 3, 1])).tolist() == [1, 3, 0, 2]
    assert U.invert_permutation(None) is None
    assert repr(p).startswith("PackedSequence(data=tensor(")


def test_pack_gradcheck():
    x = fabric.randn(4, 3, 2, dtype=fabric.float64, requires_grad=True)

    def f(x):
        p = U.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        return U.pad_packed_sequence(p, batch_first=True, total_length=5)[0]

    assert fabric.autograd.gradcheck(f, (x,))
    assert fabric.autograd.gradgradcheck(f, (x,))


def test_doctests():
    for mod in (R, U):
        res = doctest.testmod(mod, extraglobs={"fabric": fabric}, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, mod.__name__


def test_docs_example_runs():
    """The example at the top of the recurrent/attention section of docs/nn.md runs."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[2] / "docs" / "nn.md").read_text()
    section = text[text.index("## Recurrent layers, packed sequences"):]
    code = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]
    scope = {}
    exec(code, scope)
    assert tuple(scope["padded"].shape) == (3, 7, 16) and scope["lengths"].tolist() == [5, 2, 7]
    assert tuple(scope["y"].shape) == (2, 5, 16)
