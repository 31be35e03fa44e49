"""``einsum`` (parsing, contraction planning, the Function) and ``tensordot``.

Example::

    >>> import fabric
    >>> fabric.einsum("ij,j->i", fabric.eye(2), fabric.ones(2))
    tensor([1., 1.])
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor, _wrap_dim
from ...autograd.function import Function, _apply
from .._registry import declare_op
from .._registry import public_names as declared_names
from .._util import xp_of
from ._common import _check_not_bool, _check_tensor, _out, _same_device, _tname

__all__: list[str] = []  # + the declared ops (end of module)

# --- einsum ----------------------------------------------------------------------------

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ELL = "..."


def _einsum_parse_term(term, start, op_index):
    """Subscripts of one operand as a list of letters and at most one ``...``."""
    out = []
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != _ELL:
                raise RuntimeError(f"einsum(): found '.' for operand {op_index} that is not part of any ellipsis")
            if _ELL in out:
                raise RuntimeError(f"einsum(): found '.' for operand {op_index} for which an ellipsis was already "
                                   "found")
            out.append(_ELL)
            i += 3
            continue
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given at index {start + i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        out.append(c)
        i += 1
    return out


@functools.lru_cache(maxsize=1024)
def _einsum_spec(equation, shapes):
    """Turn a PyTorch einsum equation into explicit per-operand subscripts
    (ellipses replaced by fresh letters) and explicit output subscripts."""
    raw = equation
    if "->" in raw:
        lhs, rhs = raw.split("->", 1)
    else:
        lhs, rhs = raw, None
    terms = []
    pos = 0
    for k, t in enumerate(lhs.split(",")):
        stripped = [(pos + i, c) for i, c in enumerate(t) if c != " "]
        terms.append(_einsum_parse_term("".join(c for _, c in stripped), stripped[0][0] if stripped else pos, k)
                     if stripped else [])
        pos += len(t) + 1
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    user = {c for t in terms for c in t if c != _ELL}
    ell_ndim = 0
    for k, (t, shp) in enumerate(zip(terms, shapes)):
        n_sub = sum(1 for c in t if c != _ELL)
        if _ELL in t:
            if n_sub > len(shp):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_sub}) is more than the "
                                   f"number of dimensions ({len(shp)}) for operand {k}")
            ell_ndim = max(ell_ndim, len(shp) - n_sub)
        elif n_sub != len(shp):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_sub}) does not match the "
                               f"number of dimensions ({len(shp)}) for operand {k} and no ellipsis was given")
    free = [c for c in _LETTERS if c not in user]
    if ell_ndim > len(free):
        raise RuntimeError("einsum(): too many subscripts (at most 52 distinct letters plus ellipsis dimensions)")
    ell = "".join(free[:ell_ndim])
    in_subs = []
    for t, shp in zip(terms, shapes):
        s = []
        for c in t:
            if c == _ELL:
                e = len(shp) - (len(t) - 1)
                s.append(ell[ell_ndim - e:] if e else "")
            else:
                s.append(c)
        in_subs.append("".join(s))
    if rhs is None:
        counts = {}
        for t in terms:
            for c in t:
                if c != _ELL:
                    counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        start = len(lhs) + 2
        stripped = [(start + i, c) for i, c in enumerate(rhs) if c != " "]
        t = _einsum_parse_term("".join(c for _, c in stripped), stripped[0][0] if stripped else start, len(terms)) \
            if stripped else []
        seen = set()
        out = ""
        for c in t:
            if c == _ELL:
                out += ell
                continue
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in user:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
            seen.add(c)
            out += c
    return tuple(in_subs), out


def _einsum_sizes(in_subs, shapes):
    sizes = {}
    for k, (s, shp) in enumerate(zip(in_subs, shapes)):
        own = {}
        for c, n in zip(s, shp):
            if c in own and own[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the sizes don't match, "
                                   f"{n} != {own[c]}")
            own[c] = n
        for c, n in own.items():
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = n
            elif n != 1 and n != prev:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast "
                                   f"with previously seen size {prev}")
    return sizes


def _prod(shape):
    n = 1
    for v in shape:
        n *= v
    return n


def _drop_axes(s, drop):
    return tuple(i for i, c in enumerate(s) if c in drop), "".join(c for c in s if c not in drop)


@functools.lru_cache(maxsize=1024)
def _einsum_plan(in_subs, out_subs, shapes):
    """How to evaluate an explicit einsum: generalized diagonals first, then
    pairwise contractions left to right, each one batched matmul (as
    PyTorch's sumproduct_pair), then a final sum and permutation."""
    size = {}
    for s, shp in zip(in_subs, shapes):
        size.update(zip(s, shp))
    diags, subs = [], []
    for s in in_subs:
        u = "".join(dict.fromkeys(s))
        diags.append(f"{s}->{u}" if u != s else None)
        subs.append(u)
    pairs = []
    sa = subs[0]
    for k in range(1, len(subs)):
        sb = subs[k]
        keep = set(out_subs).union(*(set(t) for t in subs[k + 1:]))
        sum_a, sa = _drop_axes(sa, {c for c in sa if c not in sb and c not in keep})
        sum_b, sb = _drop_axes(sb, {c for c in sb if c not in sa and c not in keep})
        batch = [c for c in sa if c in sb and c in keep]
        contr = [c for c in sa if c in sb and c not in keep]
        ak = [c for c in sa if c not in sb]
        bk = [c for c in sb if c not in sa]
        nb, m, kk, n = (_prod(size[c] for c in g) for g in (batch, ak, contr, bk))
        pairs.append((sum_a, sum_b, tuple(sa.index(c) for c in batch + ak + contr), (nb, m, kk),
                      tuple(sb.index(c) for c in batch + contr + bk), (nb, kk, n),
                      tuple(size[c] for c in batch + ak + bk)))
        sa = "".join(batch + ak + bk)
    final_sum, sa = _drop_axes(sa, {c for c in sa if c not in out_subs})
    perm = tuple(sa.index(c) for c in out_subs)
    return tuple(diags), tuple(pairs), final_sum, perm


def _einsum_arrays(xp, in_subs, out_subs, arrays):
    """Evaluate an explicit einsum (see ``_einsum_plan``); the result never
    aliases an input."""
    diags, pairs, final_sum, perm = _einsum_plan(in_subs, out_subs, tuple(a.shape for a in arrays))
    ops = [a if d is None else xp.einsum(d, a) for d, a in zip(diags, arrays)]
    a0 = ops[0]
    for b, (sum_a, sum_b, pa, sha, pb, shb, shr) in zip(ops[1:], pairs):
        if sum_a:
            a0 = a0.sum(axis=sum_a)
        if sum_b:
            b = b.sum(axis=sum_b)
        a0 = (a0.transpose(pa).reshape(sha) @ b.transpose(pb).reshape(shb)).reshape(shr)
    if final_sum:
        a0 = a0.sum(axis=final_sum)
    a0 = a0.transpose(perm)
    if not pairs and not final_sum:
        return a0.copy()
    return xp.ascontiguousarray(a0) if a0.ndim > 1 else a0


class Einsum(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, spec, *arrays):
        in_subs, out_subs, _sizes = spec
        ctx.spec = spec
        ctx.save_for_backward(*arrays)
        return _einsum_arrays(xp_of(arrays[0]), in_subs, out_subs, arrays)

    @staticmethod
    def backward(ctx, gy):
        in_subs, out_subs, sizes = ctx.spec
        ops = ctx.saved_tensors
        grads = [None]
        for k, need in enumerate(ctx.needs_input_grad[1:]):
            if not need:
                grads.append(None)
                continue
            subs = in_subs[k]
            uniq = "".join(dict.fromkeys(subs))
            other_subs = [s for j, s in enumerate(in_subs) if j != k] + [out_subs]
            other_ops = [t for j, t in enumerate(ops) if j != k] + [gy]
            avail = set("".join(other_subs))
            target = "".join(c for c in uniq if c in avail)
            g = _einsum_core(other_subs, target, other_ops)
            full = tuple(sizes[c] for c in uniq)
            if len(target) < len(uniq):
                gs = dict(zip(target, g._data.shape))
                g = g.reshape(tuple(gs.get(c, 1) for c in uniq))
            if g._data.shape != full:  # letters that only other operands broadcast
                g = g.expand(full)
            if len(uniq) < len(subs):
                shape = tuple(sizes[c] for c in subs)
                g = _apply(_EinsumDiagEmbed, (g, subs, uniq, shape), (g._data, subs, uniq, shape))
            grads.append(g)
        return tuple(grads)


class _EinsumDiagEmbed(Function):
    """Gradient of an operand with repeated subscripts (``'ii->i'``): place
    the gradient on the generalized diagonal of a zero tensor."""
    _array_forward = True

    @staticmethod
    def forward(ctx, g, subs, uniq, shape):
        ctx.subs, ctx.uniq = subs, uniq
        xp = xp_of(g)
        z = xp.zeros(shape, g.dtype)
        nd = len(uniq)
        ar = {c: xp.arange(g.shape[i]).reshape(tuple(-1 if j == i else 1 for j in range(nd)))
              for i, c in enumerate(uniq)}
        z[tuple(ar[c] for c in subs)] = g
        return z

    @staticmethod
    def backward(ctx, gz):
        return _einsum_core([ctx.subs], ctx.uniq, [gz]), None, None, None


def _einsum_core(in_subs, out_subs, tensors):
    shapes = [t._data.shape for t in tensors]
    sizes = _einsum_sizes(in_subs, shapes)
    arrays = []
    for s, t in zip(in_subs, tensors):
        a = t._data
        target = tuple(sizes[c] for c in s)
        if a.shape != target:
            a = xp_of(a).broadcast_to(a, target)
        arrays.append(a)
    spec = (tuple(in_subs), out_subs, sizes)
    return _apply(Einsum, (spec, *tensors), (spec, *arrays))


def _sublist_to_str(sub):
    out = ""
    for v in sub:
        if v is Ellipsis:
            out += _ELL
        else:
            v = int(v)
            if not 0 <= v < 52:
                raise RuntimeError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), "
                                   f"got {v}")
            out += _LETTERS[v]
    return out


@declare_op(method=False)
def einsum(*args: Any) -> Tensor:
    """Einstein summation, PyTorch's rules: ellipsis broadcasting, implicit
    output (sorted letters that occur once), repeated subscripts (diagonals,
    traces), size-1 broadcasting, and the sublist format
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.  All operands must share a dtype.

    Example::

        >>> a = fabric.arange(6.).reshape(2, 3)
        >>> fabric.einsum("ij->j", a)
        tensor([3., 5., 7.])
        >>> fabric.einsum("ii", fabric.eye(3))
        tensor(3.)
    """
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    else:
        ops, subs = list(args[0::2]), list(args[1::2])
        out_sub = None
        if len(ops) > len(subs):
            out_sub = ops.pop()
            if not isinstance(out_sub, (list, tuple)):
                raise TypeError("einsum(): the sublist format expects each operand to be followed by its subscripts")
        equation = ",".join(_sublist_to_str(s) for s in subs)
        if out_sub is not None:
            equation += "->" + _sublist_to_str(out_sub)
        operands = tuple(ops)
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): expected Tensor operands, but operand {i} is {type(t).__name__}")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    dt = operands[0]._data.dtype
    for t in operands[1:]:
        if t._data.dtype != dt:
            raise RuntimeError(f"expected scalar type {_tname(dt)} but found {_tname(t._data.dtype)}")
    _same_device("einsum", *operands)
    if len(operands) > 1:
        _check_not_bool("bmm", operands[0])
    in_subs, out_subs = _einsum_spec(equation, tuple(t._data.shape for t in operands))
    if len(operands) == 1 and dt.kind in "biu" and dt != np.int64 and set(in_subs[0]) - set(out_subs):
        operands = (operands[0].to(D.int64),)  # PyTorch sums integers as int64 (single-operand reductions)
    return _einsum_core(in_subs, out_subs, list(operands))


@declare_op(method=False)
def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[int] | Sequence[Sequence[int]] = 2,
              out: Tensor | None = None) -> Tensor:
    """Contract ``dims`` dims of ``a`` and ``b``: an int (last ``dims`` of
    ``a`` with the first of ``b``) or a pair of dim lists."""
    _check_tensor(a, "tensordot", "a", 1)
    _check_tensor(b, "tensordot", "b", 2)
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = list(range(na - dims, na))
        db = list(range(dims))
        shown_a = [d - na for d in da]
        shown_b = db
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
        da, db = dims
        da = [da] if isinstance(da, (int, np.integer)) else list(da)
        db = [db] if isinstance(db, (int, np.integer)) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        shown_a, shown_b = da, db
        da = [_wrap_dim(d, na) for d in da]
        db = [_wrap_dim(d, nb) for d in db]
    for x, y, sx, sy in zip(da, db, shown_a, shown_b):
        if a._data.shape[x] != b._data.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._data.shape[x]} in dim "
                               f"{sx} and second has size {b._data.shape[y]} in dim {sy}")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    _check_not_bool("dot" if len(da) == na and len(db) == nb else "addmm_impl_cpu_", a)
    _same_device("tensordot", a, b)
    if na + nb - len(da) > 52 or na + nb > 52 + len(da):
        raise RuntimeError("tensordot: too many dimensions (at most 52 distinct subscripts)")
    la = list(_LETTERS[:na])
    lb = list(_LETTERS[na:na + nb])
    for x, y in zip(da, db):
        lb[y] = la[x]
    out_subs = "".join(c for i, c in enumerate(la) if i not in da) + "".join(c for i, c in enumerate(lb)
                                                                             if i not in db)
    return _out(_einsum_core(["".join(la), "".join(lb)], out_subs, [a, b]), out)


__all__ += declared_names(__name__)
