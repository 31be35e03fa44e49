"""Lowering rules: LSTM / GRU / RNN as ONNX's own recurrent ops."""
from __future__ import annotations

from ... import nn
from .._builder import V
from ._core import UnsupportedOperatorError, _rank, _reg_module, _unsupported, transpose, unsqueeze
from .layers import _p

# --- recurrent layers -----------------------------------------------------------------------------------------

_GATES = {"LSTM": (4, [0, 3, 1, 2]),   # torch i,f,g,o -> ONNX i,o,f,c
          "GRU": (3, [1, 0, 2])}       # torch r,z,n   -> ONNX z,r,h


def _reorder(L, w: V, hidden: int, order) -> V:
    b = L.b
    rows = [b.op("Slice", [w, b.i64([g * hidden]), b.i64([(g + 1) * hidden]), b.i64([0])], w.dtype, w.rank)
            for g in order]
    return b.op("Concat", rows, w.dtype, w.rank, axis=0)


def rnn(L, m, path, x, hx=None):
    b = L.b
    mode = m.mode
    if mode not in _GATES:
        raise UnsupportedOperatorError(_unsupported(f"nn.RNN (mode {mode})", b.opset))
    if m.proj_size:
        raise UnsupportedOperatorError(_unsupported("LSTM(proj_size>0)", b.opset))
    if _rank(x) != 3:
        raise UnsupportedOperatorError(_unsupported(f"{mode} on unbatched input", b.opset))
    n_gates, order = _GATES[mode]
    H, dirs = m.hidden_size, 2 if m.bidirectional else 1
    if m.batch_first:
        x = transpose(L, x, [1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        h0, c0 = (hx if mode == "LSTM" else (hx, None))
    hs, cs = [], []
    for layer in range(m.num_layers):
        Ws, Rs, Bs = [], [], []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            Ws.append(_reorder(L, _p(L, path, "weight_ih" + sfx), H, order))
            Rs.append(_reorder(L, _p(L, path, "weight_hh" + sfx), H, order))
            if m.bias:
                Bs.append(b.op("Concat", [_reorder(L, _p(L, path, "bias_ih" + sfx), H, order),
                                          _reorder(L, _p(L, path, "bias_hh" + sfx), H, order)], x.dtype, 1, axis=0))
        W = b.op("Concat", [unsqueeze(L, w, [0]) for w in Ws], x.dtype, 3, axis=0)
        R = b.op("Concat", [unsqueeze(L, r, [0]) for r in Rs], x.dtype, 3, axis=0)
        B = b.op("Concat", [unsqueeze(L, bb, [0]) for bb in Bs], x.dtype, 2, axis=0) if Bs else None

        def init(state, layer=layer):
            if state is None:
                return None
            return b.op("Slice", [state, b.i64([layer * dirs]), b.i64([(layer + 1) * dirs]), b.i64([0])],
                        state.dtype, 3)
        inputs = [x, W, R, B, None, init(h0)]
        attrs = {"hidden_size": H, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "LSTM":
            inputs.append(init(c0))
            y, y_h, y_c = b.op("LSTM", inputs, x.dtype, 4, n_out=3, **attrs)
            y_c.rank = 3
            cs.append(y_c)
        else:
            y, y_h = b.op("GRU", inputs, x.dtype, 4, n_out=2, linear_before_reset=1, **attrs)
        y_h.rank = 3
        hs.append(y_h)
        # Y: [T, dirs, B, H] -> [T, B, dirs * H]
        x = b.op("Reshape", [transpose(L, y, [0, 2, 1, 3]), b.i64([0, 0, -1])], x.dtype, 3)
    out = transpose(L, x, [1, 0, 2]) if m.batch_first else x
    h_n = hs[0] if len(hs) == 1 else b.op("Concat", hs, x.dtype, 3, axis=0)
    if mode == "LSTM":
        c_n = cs[0] if len(cs) == 1 else b.op("Concat", cs, x.dtype, 3, axis=0)
        return out, (h_n, c_n)
    return out, h_n


@_reg_module(nn.LSTM, nn.GRU)
def _m_rnn(L, m, path, x, hx=None):
    return rnn(L, m, path, x, hx)


_GATES["RNN_TANH"] = (1, [0])
_GATES["RNN_RELU"] = (1, [0])


@_reg_module(nn.RNN)
def _m_plain_rnn(L, m, path, x, hx=None):
    b = L.b
    if _rank(x) != 3:
        raise UnsupportedOperatorError(_unsupported("nn.RNN on unbatched input", b.opset))
    H, dirs = m.hidden_size, 2 if m.bidirectional else 1
    act = "Tanh" if m.nonlinearity == "tanh" else "Relu"
    if m.batch_first:
        x = transpose(L, x, [1, 0, 2])
    hs = []
    for layer in range(m.num_layers):
        sfx = [f"_l{layer}" + ("_reverse" if d else "") for d in range(dirs)]
        W = b.op("Concat", [unsqueeze(L, _p(L, path, "weight_ih" + s), [0]) for s in sfx], x.dtype, 3, axis=0)
        R = b.op("Concat", [unsqueeze(L, _p(L, path, "weight_hh" + s), [0]) for s in sfx], x.dtype, 3, axis=0)
        B = None
        if m.bias:
            B = b.op("Concat", [unsqueeze(L, b.op("Concat", [_p(L, path, "bias_ih" + s), _p(L, path, "bias_hh" + s)],
                                                  x.dtype, 1, axis=0), [0]) for s in sfx], x.dtype, 2, axis=0)
        h0 = None
        if hx is not None:
            h0 = b.op("Slice", [hx, b.i64([layer * dirs]), b.i64([(layer + 1) * dirs]), b.i64([0])], hx.dtype, 3)
        y, y_h = b.op("RNN", [x, W, R, B, None, h0], x.dtype, 4, n_out=2, hidden_size=H,
                      direction="bidirectional" if dirs == 2 else "forward", activations=[act] * dirs)
        y_h.rank = 3
        hs.append(y_h)
        x = b.op("Reshape", [transpose(L, y, [0, 2, 1, 3]), b.i64([0, 0, -1])], x.dtype, 3)
    out = transpose(L, x, [1, 0, 2]) if m.batch_first else x
    return out, (hs[0] if len(hs) == 1 else b.op("Concat", hs, x.dtype, 3, axis=0))
