"""Recurrent layers: ``RNN`` (tanh / relu), ``LSTM`` (with ``proj_size``),
``GRU`` and the cells ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Parameters, their names (``weight_ih_l0``, ``bias_hh_l1_reverse``,
``weight_hr_l0`` ...), shapes, default initialisation (``U(-1/sqrt(hidden),
1/sqrt(hidden))`` drawn in PyTorch's order) and the numbers computed are
PyTorch's, so state_dicts move between the two.

How a layer runs.  Every layer of every direction is one autograd node
(:class:`_RNNLayer`) working on a *packed* layout: rows of the 2-D input
``(N, input_size)`` grouped by time step, step ``t`` holding the
``batch_sizes[t]`` sequences still running (a padded ``(T, B, *)`` input is
the special case of ``T`` equal blocks of ``B`` rows).  Its forward computes
the input projection of all steps in one GEMM, then loops over the steps
doing only ``h @ W_hh^T`` and the gate arithmetic on the first
``batch_sizes[t]`` rows of the running state, so packed sequences give
exactly the results of running each sequence alone: a finished sequence's
state simply stops changing (forward direction), or a sequence joins with
its initial state when its first step comes (reverse direction).  The
backward is hand-written BPTT on arrays (one step loop, then the weight
gradients as three GEMMs over all steps); under ``create_graph=True`` it
recomputes the layer with differentiable Tensor ops (:func:`_layer_reference`)
and differentiates that, so double backward works.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> lstm = nn.LSTM(10, 20, num_layers=2)
    >>> out, (h, c) = lstm(fabric.randn(5, 3, 10))
    >>> out.shape, h.shape
    (fabric.Size([5, 3, 20]), fabric.Size([2, 3, 20]))
"""
from __future__ import annotations

import functools
import math
import numbers
import threading
import warnings
from typing import Any

import numpy as np

from ... import _creation
from ..._tensor import Tensor
from ...autograd.function import Function, FunctionMeta, _apply
from ...autograd.grad_mode import state as _grad_state
from ...ops._util import xp_of
from ...ops.join import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_TYPE_WORDS = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}


def _const(arr) -> Tensor:
    return Tensor._make(arr, False)


# =====================================================================================
# Array kernels.  ``plan`` lists (row offset, batch size) per time step in time order;
# a layer runs the steps in that order (or reversed for the reverse direction) on
# the first ``batch size`` rows of each block; a step reads the state its rows
# left in the previous step's output block (or the initial state, for rows that
# start there).
#
# Layout.  Forward gates are gate-major, ``acts[k, row, :]`` (k = gate), so every
# elementwise op of a step works on contiguous (batch, hidden) blocks (NumPy is
# ~2x slower on column slices of a (batch, 4*hidden) array); the recurrent GEMM
# writes that layout directly (``h @ W_k^T`` for all gates as one batched matmul).
# LSTM gates are reordered internally to (g, i, f, o) so the sigmoid gates are
# adjacent; a sigmoid is computed as ``0.5 * tanh(x / 2) + 0.5`` with the 1/2
# folded into the weights (exact: a power of two), so one ``tanh`` call covers
# all gates of a step.  Backward gradients of the pre-activations are row-major
# ``(rows, gates, hidden)`` so that the per-step GEMM and the final weight
# GEMMs are single 2-D GEMMs.  Per-row derivative factors are computed for all
# steps at once before the step loop.  Names: x input rows, y output rows, acts
# the activated gates, hprev/cprev the state each row started its step from.
# =====================================================================================

_LSTM_PERM = [2, 0, 1, 3]        # internal gate k is PyTorch's gate _LSTM_PERM[k] (PyTorch: i, f, g, o)
_LSTM_UNPERM = [1, 2, 0, 3]
_LSTM_SCALE = (1.0, 0.5, 0.5, 0.5)
_GRU_SCALE = (0.5, 0.5, 1.0)     # r, z, n
_POOL = threading.local()
_POOL_MAX = 1 << 22              # elements; larger scratch arrays are not kept between calls


def _scratch(xp, key, shape, dtype):
    """A scratch array reused between calls (NumPy only): a backward's temporaries
    would otherwise be fresh pages every call, and page faults cost ~10% here."""
    size = 1
    for s in shape:
        size *= s
    if xp is not np or size > _POOL_MAX:
        return xp.empty(shape, dtype)
    bufs = getattr(_POOL, "bufs", None)
    if bufs is None:
        bufs = _POOL.bufs = {}
    k = (key, np.dtype(dtype).char)
    buf = bufs.get(k)
    if buf is None or buf.size < size:
        buf = bufs[k] = np.empty(size, dtype)
    return buf[:size].reshape(shape)


class _Saved:
    """Allocator for the arrays a layer keeps for its backward.

    Recorded layers (``keep``) take them from a pool and give them back when
    their graph node is freed (``weakref.finalize``), so a training loop
    reuses the same memory every step instead of faulting in fresh pages
    (page faults cost as much as the step's GEMMs on some machines).  Without
    a graph the arrays are per-thread scratch.  Outputs never come from here.
    NumPy only; CuPy has its own memory pool."""

    _lock = threading.Lock()
    _free = {}                   # (size, dtype char) -> [1-D arrays]
    _bytes = 0
    limit = 256 << 20            # pooled bytes kept at most

    def __init__(self, xp, dtype, keep):
        self.xp, self.dtype, self.keep = xp, np.dtype(dtype), keep
        self.taken = []

    def __call__(self, name, shape):
        xp = self.xp
        if not self.keep:
            return _scratch(xp, name, shape, self.dtype)
        if xp is not np:
            return xp.empty(shape, self.dtype)
        size = math.prod(shape)
        key = (size, self.dtype.char)
        buf = None
        with _Saved._lock:
            lst = _Saved._free.get(key)
            if lst:
                buf = lst.pop()
                _Saved._bytes -= buf.nbytes
        if buf is None:
            buf = np.empty(size, self.dtype)
        self.taken.append(buf)
        return buf.reshape(shape)

    def release_with(self, node):
        if self.taken:
            import weakref

            weakref.finalize(node, _Saved._give, self.taken)

    @staticmethod
    def _give(bufs):
        with _Saved._lock:
            for b in bufs:
                if _Saved._bytes + b.nbytes <= _Saved.limit:
                    _Saved._free.setdefault((b.size, b.dtype.char), []).append(b)
                    _Saved._bytes += b.nbytes


def _order(plan, reverse):
    return reversed(plan) if reverse else plan


def _gate_weights(xp, w, gates, perm, scale):
    """``w`` (gates*H, K) as gate-major ``(gates, K, H)`` (transposed for ``rows @ w_k^T``), permuted and
    scaled, contiguous."""
    w3 = w.reshape(gates, -1, w.shape[1])
    if perm is not None:
        w3 = w3[perm]
    w3 = w3 * xp.asarray(scale, w.dtype)[:, None, None]
    return xp.ascontiguousarray(w3.transpose(0, 2, 1))


def _gate_bias(xp, b, gates, perm, scale):
    b2 = b.reshape(gates, -1)
    if perm is not None:
        b2 = b2[perm]
    return (b2 * xp.asarray(scale, b.dtype)[:, None])[:, None, :]


def _gather_state(dst, src_block, prev_bs, bs, s0):
    """Fill ``dst`` (bs, ·) with the state of the rows of a step: the first
    ``prev_bs`` rows from the previous step's block, the rest from ``s0``."""
    if src_block is None:
        prev_bs = 0
    else:
        m = min(bs, prev_bs)
        dst[:m] = src_block[:m]
    if bs > prev_bs:
        if s0 is None:
            dst[prev_bs:] = 0
        else:
            dst[prev_bs:] = s0[prev_bs:bs]


@functools.lru_cache(maxsize=256)
def _final_rows(plan, reverse):
    """Per batch row, the row index (in the packed layout) of its last processed step."""
    if reverse or all(bs == plan[0][1] for _, bs in plan):
        off, bs = plan[0] if reverse else plan[-1]
        return slice(off, off + bs)
    rows = np.empty(plan[0][1], np.int64)
    for off, bs in plan:
        rows[:bs] = np.arange(off, off + bs)
    return rows


def _final_state(xp, arr, plan, reverse):
    rows = _final_rows(plan, reverse)
    if isinstance(rows, slice):
        return arr[rows].copy()
    return arr[xp.asarray(rows)]


def _lstm_forward(xp, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, plan, reverse, keep=True):
    """With ``keep`` (a graph is recorded) the step also stores the derivative
    factors its backward needs, computed while the step's blocks are in cache:
    ``k[:4, row] = (1 - t^2) * [i, g, c_prev, tanh(c)]`` for the gates (g, i, f, o)
    (``t`` the raw tanh outputs; the sigmoids' 1/4 is applied in backward) and
    ``k[4, row] = o (1 - tanh(c)^2) = o - h tanh(c)``."""
    n, hid = x.shape[0], w_ih.shape[0] // 4
    p = w_hh.shape[1]
    batch = plan[0][1]
    dt = x.dtype
    alloc = _Saved(xp, dt, keep)
    acts = xp.matmul(x, _gate_weights(xp, w_ih, 4, _LSTM_PERM, _LSTM_SCALE), out=alloc("lstm_a", (4, n, hid)))
    if b_ih is not None:
        acts += _gate_bias(xp, b_ih + b_hh, 4, _LSTM_PERM, _LSTM_SCALE)
    whh = _gate_weights(xp, w_hh, 4, _LSTM_PERM, _LSTM_SCALE)                         # (4, p, hid)
    whr_t = xp.ascontiguousarray(w_hr.T) if w_hr is not None else None
    hprev = alloc("lstm_hp", (n, p)) if keep else _scratch(xp, "lstm_hp", (batch, p), dt)
    cs = alloc("lstm_c", (n, hid))
    cpb = _scratch(xp, "lstm_cp", (batch, hid), dt)
    thb = _scratch(xp, "lstm_th", (batch, hid), dt)
    k = alloc("lstm_k", (5, n, hid)) if keep else None
    r = (alloc("lstm_r", (n, hid)) if keep else _scratch(xp, "lstm_r", (batch, hid), dt)) if w_hr is not None else None
    y = xp.empty((n, p), dt)
    tmp = _scratch(xp, "lstm_t", (4 * batch * hid,), dt)
    prev = None
    for off, bs in _order(plan, reverse):
        e = off + bs
        hp = hprev[off:e] if keep else hprev[:bs]
        if prev is None:
            _gather_state(hp, None, 0, bs, h0)
            cp = cpb[:bs]
            _gather_state(cp, None, 0, bs, c0)
        else:
            poff, pbs = prev
            _gather_state(hp, y[poff:poff + pbs], pbs, bs, h0)
            if pbs >= bs:
                cp = cs[poff:poff + bs]
            else:
                cp = cpb[:bs]
                _gather_state(cp, cs[poff:poff + pbs], pbs, bs, c0)
        prev = (off, bs)
        t = tmp[:4 * bs * hid].reshape(4, bs, hid)
        xp.matmul(hp, whh, out=t)
        a = acts[:, off:e]
        a += t
        xp.tanh(a, out=a)
        if keep:
            kk = k[:, off:e]
            k4 = kk[:4]
            xp.multiply(a, a, out=k4)
            xp.subtract(1, k4, out=k4)
        s = a[1:]
        s *= 0.5
        s += 0.5
        cn = cs[off:e]
        th = thb[:bs]
        xp.multiply(a[2], cp, out=cn)
        xp.multiply(a[1], a[0], out=th)
        cn += th
        xp.tanh(cn, out=th)
        ye = y[off:e]
        if w_hr is None:
            xp.multiply(a[3], th, out=ye)
            ot = ye
        else:
            ot = r[off:e] if keep else r[:bs]
            xp.multiply(a[3], th, out=ot)
            xp.matmul(ot, whr_t, out=ye)
        if keep:
            kk[0] *= a[1]
            kk[1] *= a[0]
            kk[2] *= cp
            kk[3] *= th
            xp.multiply(ot, th, out=kk[4])
            xp.subtract(a[3], kk[4], out=kk[4])
    h = _final_state(xp, y, plan, reverse)
    c = _final_state(xp, cs, plan, reverse)
    return (y, h, c), ((acts, k, hprev, r) if keep else None), alloc


def _unperm_rows(a, gates, perm):
    """Rows of a (gates*H, ·) array in internal gate order back to PyTorch's order."""
    if perm is None:
        return a
    return a.reshape(gates, -1, *a.shape[1:])[perm].reshape(a.shape)


_LSTM_DSCALE = (1.0, 0.25, 0.25, 0.25)   # d sigmoid / d x = (1 - tanh(x/2)^2) / 4


def _lstm_backward(xp, saved, x, w_ih, w_hh, w_hr, gy, ghn, gcn, plan, reverse):
    acts, k, hprev, r = saved
    _, n, hid = acts.shape
    p = w_hh.shape[1]
    batch = plan[0][1]  # the largest batch: batch_sizes never increase
    dt = acts.dtype
    f = acts[2]
    # d below lacks the sigmoids' 1/4: it is folded into the weights of the recurrent GEMM and the results
    dscale = xp.asarray(_LSTM_DSCALE, dt)[:, None, None]
    whh = w_hh.reshape(4, hid, p)[_LSTM_PERM] * dscale                                # (4, hid, p)
    dbuf = _scratch(xp, "lstm_d", (5, n, hid), dt)     # slot 4: scratch for dr * k_c
    dpre = dbuf[:4]
    dh = xp.zeros((batch, p), dt) if ghn is None else ghn.copy()
    dc = xp.zeros((batch, hid), dt) if gcn is None else gcn.copy()
    gh_rows = xp.empty((n, p), dt) if w_hr is not None else None
    tmp4 = _scratch(xp, "lstm_b4", (4 * batch * p,), dt)
    k3, k34 = k[:3], k[3:]
    for off, bs in _order(plan, not reverse):
        e = off + bs
        gh = dh[:bs]
        if gy is not None:
            gh += gy[off:e]
        if w_hr is None:
            dr = gh
        else:
            gh_rows[off:e] = gh
            dr = xp.matmul(gh, w_hr)
        dcs = dc[:bs]
        d5 = dbuf[:, off:e]
        xp.multiply(dr, k34[:, off:e], out=d5[3:])   # d_o and dr * k_c
        dcs += d5[4]
        xp.multiply(dcs, k3[:, off:e], out=d5[:3])
        dcs *= f[off:e]
        t4 = tmp4[:4 * bs * p].reshape(4, bs, p)
        xp.matmul(d5[:4], whh, out=t4)
        xp.sum(t4, axis=0, out=gh)
    dtr = dpre.transpose(0, 2, 1)                                                         # (4, hid, n)
    gw_ih = xp.matmul(dtr, x)
    gw_hh = xp.matmul(dtr, hprev)
    gb = xp.matmul(dpre.transpose(0, 2, 1), xp.ones(n, dt))                              # (4, hid)
    gw_ih *= dscale
    gw_hh *= dscale
    gb *= dscale[:, :, 0]
    wih = w_ih.reshape(4, hid, -1)[_LSTM_PERM] * dscale
    gx = xp.matmul(dpre, wih).sum(0)
    u = _LSTM_UNPERM
    grads = {"x": gx, "w_ih": gw_ih[u].reshape(4 * hid, -1), "w_hh": gw_hh[u].reshape(4 * hid, p),
             "b": gb[u].reshape(4 * hid), "h0": dh, "c0": dc}
    if w_hr is not None:
        grads["w_hr"] = xp.matmul(gh_rows.T, r)
    return grads


def _gru_forward(xp, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, plan, reverse, keep=True):
    n, hid = x.shape[0], w_ih.shape[0] // 3
    batch = plan[0][1]
    dt = x.dtype
    alloc = _Saved(xp, dt, keep)
    acts = xp.matmul(x, _gate_weights(xp, w_ih, 3, None, _GRU_SCALE), out=alloc("gru_a", (3, n, hid)))
    b_hn = None
    if b_ih is not None:
        b = b_ih.copy()
        b[:2 * hid] += b_hh[:2 * hid]
        acts += _gate_bias(xp, b, 3, None, _GRU_SCALE)
        b_hn = b_hh[2 * hid:]
    whh = _gate_weights(xp, w_hh, 3, None, _GRU_SCALE)
    hprev = alloc("gru_hp", (n, hid))
    ghn = alloc("gru_hn", (n, hid))
    y = xp.empty((n, hid), dt)
    tmp = _scratch(xp, "gru_t", (3 * batch * hid,), dt)
    prev = None
    for off, bs in _order(plan, reverse):
        e = off + bs
        hp = hprev[off:e]
        if prev is None:
            _gather_state(hp, None, 0, bs, h0)
        else:
            _gather_state(hp, y[prev[0]:prev[0] + prev[1]], prev[1], bs, h0)
        prev = (off, bs)
        t = tmp[:3 * bs * hid].reshape(3, bs, hid)
        xp.matmul(hp, whh, out=t)
        a = acts[:, off:e]
        rz = a[:2]
        rz += t[:2]
        xp.tanh(rz, out=rz)
        rz *= 0.5
        rz += 0.5
        gn = ghn[off:e]
        if b_hn is None:
            gn[...] = t[2]
        else:
            xp.add(t[2], b_hn, out=gn)
        nn_ = a[2]
        xp.multiply(a[0], gn, out=t[0])
        nn_ += t[0]
        xp.tanh(nn_, out=nn_)
        ye = y[off:e]
        xp.subtract(hp, nn_, out=ye)
        ye *= a[1]
        ye += nn_
    return (y, _final_state(xp, y, plan, reverse)), (acts, hprev, ghn), alloc


def _gru_backward(xp, saved, x, w_ih, w_hh, w_hr, gy, ghn_out, gcn, plan, reverse):
    acts, hprev, ghn = saved
    _, n, hid = acts.shape
    batch = plan[0][1]
    dt = acts.dtype
    r, z, nn_ = acts[0], acts[1], acts[2]
    k_n = _scratch(xp, "gru_kn", (n, hid), dt)
    xp.multiply(nn_, nn_, out=k_n)
    xp.subtract(1, k_n, out=k_n)
    k2 = _scratch(xp, "gru_k2", (n, 2, hid), dt)
    kr, kz = k2[:, 0], k2[:, 1]
    xp.subtract(1, z, out=kz)
    k_n *= kz                                     # n: (1 - z)(1 - n^2)
    xp.subtract(1, r, out=kr)
    kr *= r
    kr *= ghn
    kr *= k_n                                     # r: (1 - r) r (W_hn h + b_hn) k_n
    kz *= z
    t = _scratch(xp, "gru_hn", (n, hid), dt)
    xp.subtract(hprev, nn_, out=t)
    kz *= t                                       # z: (h - n) z (1 - z)
    k_nr = t
    xp.multiply(k_n, r, out=k_nr)                 # W_hn h + b_hn: k_n r
    dgh = _scratch(xp, "gru_dgh", (n, 3, hid), dt)   # d of the hidden-side pre-activations
    dgi = _scratch(xp, "gru_dgi", (n, 3, hid), dt)   # d of the input-side ones (r, z equal dgh's)
    dh = xp.zeros((batch, hid), dt) if ghn_out is None else ghn_out.copy()
    tmp = _scratch(xp, "gru_bt", (batch, hid), dt)
    for off, bs in _order(plan, not reverse):
        e = off + bs
        gh = dh[:bs]
        if gy is not None:
            gh += gy[off:e]
        d = dgh[off:e]
        xp.multiply(gh[:, None, :], k2[off:e], out=d[:, :2])
        xp.multiply(gh, k_nr[off:e], out=d[:, 2])
        xp.multiply(gh, k_n[off:e], out=dgi[off:e, 2])
        tz = tmp[:bs]
        xp.multiply(gh, z[off:e], out=tz)
        xp.matmul(d.reshape(bs, 3 * hid), w_hh, out=gh)
        gh += tz
    dgi[:, :2] = dgh[:, :2]
    dgi2, dgh2 = dgi.reshape(n, 3 * hid), dgh.reshape(n, 3 * hid)
    return {"x": xp.matmul(dgi2, w_ih), "w_ih": xp.matmul(dgi2.T, x), "w_hh": xp.matmul(dgh2.T, hprev),
            "b_ih": dgi2.sum(0), "b_hh": dgh2.sum(0), "h0": dh}


def _rnn_forward(relu):
    def forward(xp, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, plan, reverse, keep=True):
        n, hid = x.shape[0], w_ih.shape[0]
        dt = x.dtype
        acts = xp.matmul(x, xp.ascontiguousarray(w_ih.T))
        if b_ih is not None:
            acts += b_ih + b_hh
        whh_t = xp.ascontiguousarray(w_hh.T)
        alloc = _Saved(xp, dt, keep)
        hprev = alloc("rnn_hp", (n, hid))
        prev = None
        for off, bs in _order(plan, reverse):
            e = off + bs
            hp = hprev[off:e]
            if prev is None:
                _gather_state(hp, None, 0, bs, h0)
            else:
                _gather_state(hp, acts[prev[0]:prev[0] + prev[1]], prev[1], bs, h0)
            prev = (off, bs)
            a = acts[off:e]
            a += xp.matmul(hp, whh_t)
            if relu:
                xp.maximum(a, 0, out=a)
            else:
                xp.tanh(a, out=a)
        return (acts, _final_state(xp, acts, plan, reverse)), (acts, hprev), alloc
    return forward


def _rnn_backward(relu):
    def backward(xp, saved, x, w_ih, w_hh, w_hr, gy, ghn, gcn, plan, reverse):
        y, hprev = saved
        n, hid = y.shape
        batch = plan[0][1]
        dt = y.dtype
        k = _scratch(xp, "rnn_k", (n, hid), dt)
        if relu:
            xp.greater(y, 0, out=k)
        else:
            xp.multiply(y, y, out=k)
            xp.subtract(1, k, out=k)
        dpre = _scratch(xp, "rnn_d", (n, hid), dt)
        dh = xp.zeros((batch, hid), dt) if ghn is None else ghn.copy()
        for off, bs in _order(plan, not reverse):
            e = off + bs
            gh = dh[:bs]
            if gy is not None:
                gh += gy[off:e]
            d = dpre[off:e]
            xp.multiply(gh, k[off:e], out=d)
            xp.matmul(d, w_hh, out=gh)
        return {"x": xp.matmul(dpre, w_ih), "w_ih": xp.matmul(dpre.T, x), "w_hh": xp.matmul(dpre.T, hprev),
                "b": dpre.sum(0), "h0": dh}
    return backward


_KERNELS = {
    "LSTM": (_lstm_forward, _lstm_backward),
    "GRU": (_gru_forward, _gru_backward),
    "RNN_TANH": (_rnn_forward(False), _rnn_backward(False)),
    "RNN_RELU": (_rnn_forward(True), _rnn_backward(True)),
}


# =====================================================================================
# The reference: the same layer written with differentiable Tensor ops (one
# small graph per step).  It backs the create_graph backward and the tests.
# =====================================================================================

def _layer_reference(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, plan, reverse):
    """``(y, h_n[, c_n])`` of one layer/direction, with Tensor ops."""
    shape3 = tuple(x.shape) if x.dim() == 3 else None
    if shape3 is not None:
        x = x.reshape(-1, shape3[2])
    xw = F.linear(x, w_ih, b_ih)
    batch = plan[0][1]
    p = w_hh.shape[1]
    hid = w_ih.shape[0] // _GATES[mode]
    h = h0 if h0 is not None else x.new_zeros((batch, p))
    c = None
    if mode == "LSTM":
        c = c0 if c0 is not None else x.new_zeros((batch, hid))
    ys = [None] * len(plan)
    steps = list(enumerate(plan))
    for t, (off, bs) in (reversed(steps) if reverse else steps):
        gi = xw[off:off + bs]
        hp = h[:bs]
        gh = F.linear(hp, w_hh, b_hh)
        if mode == "LSTM":
            ig, fg, gg, og = (gi + gh).chunk(4, 1)
            cn = fg.sigmoid() * c[:bs] + ig.sigmoid() * gg.tanh()
            hn = og.sigmoid() * cn.tanh()
            if w_hr is not None:
                hn = F.linear(hn, w_hr)
            c = cn if bs == c.shape[0] else cat([cn, c[bs:]])
        elif mode == "GRU":
            ir, iz, in_ = gi.chunk(3, 1)
            hr, hz, hn_ = gh.chunk(3, 1)
            rg = (ir + hr).sigmoid()
            zg = (iz + hz).sigmoid()
            ng = (in_ + rg * hn_).tanh()
            hn = (hp - ng) * zg + ng
        else:
            pre = gi + gh
            hn = pre.tanh() if mode == "RNN_TANH" else pre.relu()
        ys[t] = hn
        h = hn if bs == h.shape[0] else cat([hn, h[bs:]])
    y = cat(ys) if len(ys) > 1 else ys[0]
    if shape3 is not None:
        y = y.reshape(shape3[0], shape3[1], y.shape[-1])
    return (y, h, c) if mode == "LSTM" else (y, h)


class _Alias(Function):
    """Identity with its own graph node: the create_graph backward differentiates
    a recomputation hanging off these nodes, so the inner ``autograd.grad``
    stops there instead of walking the history of the layer's inputs."""

    _array_forward = True
    _node_name = "AliasBackward0"

    @staticmethod
    def forward(ctx, x):
        return x.view()

    @staticmethod
    def backward(ctx, gy):
        return gy


class _RNNLayer(Function):
    """One layer, one direction: ``(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)`` ->
    ``(y, h_n)`` or, for LSTM, ``(y, h_n, c_n)``; see the module docstring."""

    _array_forward = True
    _node_name = "RnnLayerBackward0"

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, plan, reverse):
        xp = xp_of(x)
        # a padded (T, B, I) input may be a strided view (batch_first): NumPy copies it into rows here
        x2 = x.reshape(-1, x.shape[-1]) if x.ndim == 3 else x
        keep = bool(ctx.needs_input_grad)
        outs, saved, alloc = _KERNELS[mode][0](xp, x2, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, plan, reverse, keep)
        if keep:
            alloc.release_with(ctx)
        if x.ndim == 3:
            outs = (outs[0].reshape(x.shape[0], x.shape[1], outs[0].shape[1]),) + tuple(outs[1:])
        ctx.mode, ctx.plan, ctx.reverse, ctx.arrays, ctx.x2 = mode, plan, reverse, saved, x2
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, outs[0])
        return outs

    @staticmethod
    def backward(ctx, gy, ghn, gcn=None):
        saved = ctx.saved_tensors  # also checks that no output/input was modified in place
        need = ctx.needs_input_grad
        if _grad_state.enabled:
            return _layer_backward_graph(ctx, saved[:8], need, (gy, ghn, gcn))
        x, _h0, _c0, w_ih, w_hh, _b_ih, _b_hh, w_hr = (None if t is None else t._data for t in saved[:8])
        xp = xp_of(x)
        gyd = None
        if gy is not None:
            gyd = gy._data
            if gyd.ndim == 3:
                gyd = gyd.reshape(-1, gyd.shape[-1])

        def arr(g):
            return None if g is None else g._data

        gr = _KERNELS[ctx.mode][1](xp, ctx.arrays, ctx.x2, w_ih, w_hh, w_hr, gyd, arr(ghn), arr(gcn), ctx.plan,
                                   ctx.reverse)
        b_ih_g = gr.get("b_ih", gr.get("b"))
        b_hh_g = gr.get("b_hh", gr.get("b"))
        gx = gr["x"].reshape(x.shape) if x.ndim == 3 else gr["x"]
        vals = (gx, gr["h0"], gr.get("c0"), gr["w_ih"], gr["w_hh"], b_ih_g, b_hh_g, gr.get("w_hr"))
        out = tuple(_const(v) if (n and v is not None) else None for v, n in zip(vals, need))
        return out + (None, None, None)


def _layer_backward_graph(ctx, inputs, need, grads_out):
    """The create_graph backward: differentiate the Tensor-op recomputation."""
    from ...autograd import grad as _grad

    ins = [(_Alias.apply(t) if n else t.detach()) if t is not None else None for t, n in zip(inputs, need)]
    outs = _layer_reference(ctx.mode, *ins, ctx.plan, ctx.reverse)
    pairs = [(o, g) for o, g in zip(outs, grads_out) if g is not None and o is not None]
    wrt = [t for t, n in zip(ins, need) if n and t is not None]
    res = _grad([o for o, _ in pairs], wrt, [g for _, g in pairs], create_graph=True, allow_unused=True)
    it = iter(res)
    out = tuple(next(it) if (n and t is not None) else None for t, n in zip(ins, need))
    return out + (None, None, None)


def _named_layer(node_name):
    return FunctionMeta(f"_RNNLayer_{node_name}", (_RNNLayer,), {"_node_name": node_name, "__module__": __name__})


# The node names PyTorch's CPU kernels give the outputs, so that printed tensors
# match (grad_fn=<...>): a whole layer, and a cell (whose last op is h's)
_LAYER_FN = {"LSTM": _named_layer("MkldnnRnnLayerBackward0"), "GRU": _named_layer("StackBackward0"),
             "RNN_TANH": _named_layer("StackBackward0"), "RNN_RELU": _named_layer("StackBackward0")}
_CELL_FN = {"LSTM": _named_layer("MulBackward0"), "GRU": _named_layer("AddBackward0"),
            "RNN_TANH": _named_layer("TanhBackward0"), "RNN_RELU": _named_layer("ReluBackward0")}


def _run_layer(mode, x, h0, c0, weights, plan, reverse, cell=False):
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    args = (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, plan, reverse)
    fn = (_CELL_FN if cell else _LAYER_FN)[mode]
    return _apply(fn, args, [a._data if isinstance(a, Tensor) else a for a in args])


# tracing (jit.trace, fabric.compile) records one layer as one node: its fused kernel reads raw arrays
_run_layer._fx_leaf_function = True  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=256)
def _padded_plan(steps, batch):
    return tuple((t * batch, batch) for t in range(steps))


def _packed_plan(batch_sizes):
    sizes = batch_sizes._data.tolist()
    plan, off = [], 0
    for bs in sizes:
        plan.append((off, bs))
        off += bs
    return tuple(plan)


def _dtype_word(dt):
    return _TYPE_WORDS.get(str(dt), str(dt))


def _rnn_stack(mode, x, plan, hx, cx, layer_weights, num_layers, dropout, train, bidirectional):
    """Run all layers and directions on ``x``: packed rows ``(N, I)`` or a
    padded ``(T, B, I)`` batch; returns ``(y, h_n, c_n)`` with ``c_n`` None
    except for LSTM."""
    dirs = 2 if bidirectional else 1
    hs, cs = [], []
    layer_input = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            h0 = hx[k] if hx is not None else None
            c0 = cx[k] if cx is not None else None
            res = _run_layer(mode, layer_input, h0, c0, layer_weights[k], plan, d == 1)
            outs.append(res[0])
            hs.append(res[1])
            if mode == "LSTM":
                cs.append(res[2])
        layer_input = outs[0] if dirs == 1 else cat(outs, -1)
        if dropout != 0 and train and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    return layer_input, stack(hs), (stack(cs) if mode == "LSTM" else None)


def _apply_permutation(tensor, permutation, dim: int = 1):
    return tensor.index_select(dim, permutation)


# =====================================================================================
# Modules
# =====================================================================================

class RNNBase(Module):
    """Base class of :class:`RNN`, :class:`LSTM` and :class:`GRU`: creates the
    parameters (``weight_ih_l{k}{suffix}``, ``weight_hh_l{k}{suffix}``,
    ``bias_ih_l{k}{suffix}``, ``bias_hh_l{k}{suffix}``, ``weight_hr_l{k}{suffix}``
    with ``suffix`` ``''`` or ``'_reverse'``) in PyTorch's order and runs the
    layers.

    Example::

        >>> import fabric
        >>> [n for n, _ in fabric.nn.GRU(2, 3, bidirectional=True).named_parameters()][:5]
        ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0', 'weight_ih_l0_reverse']
    """

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]
    __jit_unused_properties__ = ["all_weights"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                w_ih = Parameter(_creation.empty((gate_size, layer_input_size), **factory_kwargs))
                w_hh = Parameter(_creation.empty((gate_size, real_hidden_size), **factory_kwargs))
                b_ih = Parameter(_creation.empty(gate_size, **factory_kwargs))
                b_hh = Parameter(_creation.empty(gate_size, **factory_kwargs))
                if self.proj_size == 0:
                    layer_params = (w_ih, w_hh, b_ih, b_hh) if bias else (w_ih, w_hh)
                else:
                    w_hr = Parameter(_creation.empty((proj_size, hidden_size), **factory_kwargs))
                    layer_params = (w_ih, w_hh, b_ih, b_hh, w_hr) if bias else (w_ih, w_hh, w_hr)
                suffix = "_reverse" if direction == 1 else ""
                param_names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    param_names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if self.proj_size > 0:
                    param_names += ["weight_hr_l{}{}"]
                param_names = [x.format(layer, suffix) for x in param_names]
                for name, param in zip(param_names, layer_params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(param_names)
                self._all_weights.append(param_names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        """The parameters in ``_flat_weights_names`` order (read from the
        module on every access, so replaced Parameters are always seen)."""
        return [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]

    def flatten_parameters(self) -> None:
        """A no-op: fabric's weights need no re-packing (PyTorch packs them for cuDNN)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self):
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    # --- checks ---------------------------------------------------------------------------
    def check_input(self, input, batch_sizes) -> None:
        w0 = getattr(self, self._flat_weights_names[0])
        if input.dtype != w0.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w0.dtype}). Convert "
                             f"input: input.to({w0.dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        expected_hidden_size = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden, expected_hidden_size)

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def _check_state_dtype(self, input, states):
        for s in states:
            if s is not None and s.dtype != input.dtype:
                raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_dtype_word(s._data.dtype)} "
                                   f"and {_dtype_word(input._data.dtype)}")

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def __setstate__(self, d):
        super().__setstate__(d)
        if "proj_size" not in d:
            self.proj_size = 0

    # --- running ---------------------------------------------------------------------------
    def _layer_weights(self):
        per = len(self._all_weights[0])
        flat = self._flat_weights
        out = []
        for k in range(len(self._all_weights)):
            ws = flat[k * per:(k + 1) * per]
            if self.bias:
                w_ih, w_hh, b_ih, b_hh = ws[:4]
            else:
                (w_ih, w_hh), b_ih, b_hh = ws[:2], None, None
            out.append((w_ih, w_hh, b_ih, b_hh, ws[-1] if self.proj_size > 0 else None))
        return out

    def _run(self, input, batch_sizes, hx, cx):
        """Run the stack on a checked input: ``input`` is packed data (2-D) when
        ``batch_sizes`` is given, else ``(T, B, *)`` or ``(B, T, *)``."""
        if batch_sizes is not None:
            x = input
            plan = _packed_plan(batch_sizes)
        else:
            x = input.transpose(0, 1) if self.batch_first else input
            steps, batch = x.shape[0], x.shape[1]
            if steps == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            plan = _padded_plan(steps, batch)
        y, h_n, c_n = _rnn_stack(self.mode, x, plan, hx, cx, self._layer_weights(), self.num_layers, self.dropout,
                                 self.training, self.bidirectional)
        if batch_sizes is None and self.batch_first:
            y = y.transpose(0, 1)
        return y, h_n, c_n


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``
    (``nonlinearity='relu'`` for ReLU), over ``num_layers`` layers and one
    or two directions.  ``forward(input, hx=None)`` takes ``(L, N, H_in)``
    (``(N, L, H_in)`` with ``batch_first``), ``(L, H_in)`` unbatched, or a
    :class:`~fabric.nn.utils.rnn.PackedSequence`, and returns
    ``(output, h_n)``.

    Example::

        >>> import fabric
        >>> rnn = fabric.nn.RNN(10, 20, 2)
        >>> output, hn = rnn(fabric.randn(5, 3, 10), fabric.randn(2, 3, 20))
        >>> output.shape, hn.shape
        (fabric.Size([5, 3, 20]), fabric.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return _forward_single_state(self, input, hx, "RNN")


class GRU(RNNBase):
    """Gated recurrent unit (PyTorch's equations:
    ``r = σ(W_ir x + b_ir + W_hr h + b_hr)``, ``z = σ(...)``,
    ``n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))``, ``h' = (1 - z) ⊙ n + z ⊙ h``).
    Arguments and inputs as :class:`RNN`.

    Example::

        >>> import fabric
        >>> out, h = fabric.nn.GRU(4, 6, batch_first=True)(fabric.randn(2, 5, 4))
        >>> out.shape, h.shape
        (fabric.Size([2, 5, 6]), fabric.Size([1, 2, 6]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return _forward_single_state(self, input, hx, "GRU")


def _forward_single_state(self, input, hx, name):
    """RNN / GRU forward (one state tensor), as PyTorch's ``RNN.forward``."""
    orig_input = input
    if isinstance(orig_input, PackedSequence):
        input, batch_sizes, sorted_indices, unsorted_indices = orig_input
        if hx is not None:
            hx = self.permute_hidden(hx, sorted_indices)
    else:
        batch_sizes = None
        if input.dim() not in (2, 3):
            what = f"{input.dim()}D tensor instead" if name == "RNN" else f"{input.dim()}D instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {what}")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        sorted_indices = None
        unsorted_indices = None
    self.check_input(input, batch_sizes)
    if hx is not None:
        self.check_hidden_size(hx, self.get_expected_hidden_size(input, batch_sizes))
        self._check_state_dtype(input, (hx,))
    output, hidden, _ = self._run(input, batch_sizes, hx, None)
    if isinstance(orig_input, PackedSequence):
        from ..utils.rnn import PackedSequence as _PS

        return _PS(output, batch_sizes, sorted_indices, unsorted_indices), self.permute_hidden(hidden,
                                                                                                unsorted_indices)
    if not is_batched:
        output = output.squeeze(batch_dim)
        hidden = hidden.squeeze(1)
    return output, self.permute_hidden(hidden, unsorted_indices)


class LSTM(RNNBase):
    """Long short-term memory: gates ``i, f, g, o`` (in that order in the
    weights), ``c' = f ⊙ c + i ⊙ g``, ``h' = o ⊙ tanh(c')``, and with
    ``proj_size > 0`` ``h' = W_hr (o ⊙ tanh(c'))``.  ``forward(input,
    (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``; inputs as
    :class:`RNN`.

    Example::

        >>> import fabric
        >>> lstm = fabric.nn.LSTM(10, 20, 2, proj_size=5)
        >>> output, (hn, cn) = lstm(fabric.randn(5, 3, 10))
        >>> output.shape, hn.shape, cn.shape
        (fabric.Size([5, 3, 5]), fabric.Size([2, 3, 5]), fabric.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        orig_input = input
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = orig_input
            if hx is not None:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_input(input, batch_sizes)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            sorted_indices = None
            unsorted_indices = None
            if hx is None:
                self.check_input(input, batch_sizes)
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if hx is not None:
            self.check_forward_args(input, hx, batch_sizes)
            self._check_state_dtype(input, hx)
            h0, c0 = hx
        else:
            h0 = c0 = None
        output, h_n, c_n = self._run(input, batch_sizes, h0, c0)
        hidden = (h_n, c_n)
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)


# --- cells -----------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Base class of the cells: ``weight_ih`` ``(chunks * hidden, input)``,
    ``weight_hh`` ``(chunks * hidden, hidden)``, ``bias_ih``, ``bias_hh``.

    Example::

        >>> import fabric
        >>> fabric.nn.GRUCell(3, 4).weight_ih.shape
        fabric.Size([12, 3])
    """

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_creation.empty((num_chunks * hidden_size, input_size), **factory_kwargs))
        self.weight_hh = Parameter(_creation.empty((num_chunks * hidden_size, hidden_size), **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(_creation.empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(_creation.empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _cell(self, mode, input, states, name):
        """Check like PyTorch's cell ops, then run one step of the fused layer."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        states = [None if s is None else (s.unsqueeze(0) if not is_batched else s) for s in states]
        w = self.weight_ih
        if input.size(1) != w.shape[1]:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {w.shape[1]}")
        for k, s in enumerate(states):
            if s is None:
                continue
            if input.size(0) != s.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} batch size {s.size(0)}")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.size(1)}, expected "
                                   f"{self.hidden_size}")
        for t in [s for s in states if s is not None] + [input]:
            if t.dtype != w.dtype:
                raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_dtype_word(t._data.dtype)} "
                                   f"and {_dtype_word(w._data.dtype)}")
        batch = input.shape[0]
        h0 = states[0]
        c0 = states[1] if len(states) > 1 else None
        res = _run_layer(mode, input, h0, c0, (w, self.weight_hh, self.bias_ih, self.bias_hh, None),
                         ((0, batch),), False, cell=True)
        out = (res[1], res[2]) if mode == "LSTM" else res[1]
        if not is_batched:
            out = (out[0].squeeze(0), out[1].squeeze(0)) if mode == "LSTM" else out.squeeze(0)
        return out


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``
    (or ReLU).  ``forward(input, hx=None)``: input ``(N, H_in)`` or
    ``(H_in,)``; returns ``h'``.

    Example::

        >>> import fabric
        >>> cell = fabric.nn.RNNCell(10, 20)
        >>> hx = fabric.zeros(3, 20)
        >>> for x in fabric.randn(6, 3, 10):
        ...     hx = cell(x, hx)
        >>> hx.shape
        fabric.Size([3, 20])
    """

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._cell(mode, input, [hx], "RNNCell")


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c)=None)`` returns ``(h', c')``.

    Example::

        >>> import fabric
        >>> h, c = fabric.nn.LSTMCell(10, 20)(fabric.randn(3, 10))
        >>> h.shape, c.shape
        (fabric.Size([3, 20]), fabric.Size([3, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        states = [None, None] if hx is None else [hx[0], hx[1]]
        return self._cell("LSTM", input, states, "LSTMCell")


class GRUCell(RNNCellBase):
    """One GRU step; ``forward(input, hx=None)`` returns ``h'``.

    Example::

        >>> import fabric
        >>> fabric.nn.GRUCell(10, 20)(fabric.randn(3, 10)).shape
        fabric.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        return self._cell("GRU", input, [hx], "GRUCell")
