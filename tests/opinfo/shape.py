"""OpInfo entries for shape and view ops, joining and splitting
(fabric/ops/shape.py, fabric/ops/join.py).

Samples cover negative dims, 0-d and empty tensors where PyTorch allows them,
and non-contiguous inputs.  Ops returning a tuple of tensors (split, unbind,
meshgrid ...) compare one chosen output (``output_index``); the whole tuple
and the view/memory-sharing semantics are tested in tests/test_shape.py.
Entries already in core.py (reshape, transpose, permute, expand, squeeze,
unsqueeze, cat, stack, clone, narrow) are not repeated.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import FLOATS, INTS, OpInfo, SampleInput, make

ALL = FLOATS + INTS


def _m(rng, dtype):
    return lambda *shape, nc=False: make(rng, shape, dtype, noncontig=nc)


# --- NumPy references ----------------------------------------------------------

def _unflatten(x, d, sizes):
    d = d % x.ndim
    n = x.shape[d]
    known = int(np.prod([s for s in sizes if s != -1]))
    sizes = tuple(n // known if s == -1 else s for s in sizes)
    return x.reshape(x.shape[:d] + sizes + x.shape[d + 1:])


def _moveaxis(x, s, d):
    return np.moveaxis(x, s, d) if x.ndim else x


def _flatten(x, s=0, e=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = s % x.ndim, e % x.ndim
    return x.reshape(x.shape[:s] + (-1,) + x.shape[e + 1:]) if x.size else \
        x.reshape(x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:])


def _repeat(x, *reps):
    reps = reps[0] if len(reps) == 1 and isinstance(reps[0], tuple) else reps
    return np.tile(x.reshape((1,) * (len(reps) - x.ndim) + x.shape), reps)


def _repeat_interleave(x, repeats, dim=None):
    if dim is None:
        return np.repeat(x.ravel(), repeats)
    return np.repeat(x, repeats, axis=dim)


def _roll(x, shifts, dims=None):
    if dims is None:
        return np.roll(x.ravel(), shifts).reshape(x.shape)
    return np.roll(x, shifts, axis=dims)


def _diag_embed(x, offset=0, d1=-2, d2=-1):
    n = x.shape[-1] + abs(offset)
    nd = x.ndim + 1
    d1, d2 = d1 % nd, d2 % nd
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    idx = np.arange(x.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = x
    # out has the diagonal plane last; move it to (d1, d2)
    src = [nd - 2, nd - 1]
    order = [None] * nd
    order[d1], order[d2] = src
    rest = iter(range(nd - 2))
    order = [o if o is not None else next(rest) for o in order]
    return np.transpose(out, order)


def _as_strided(x, size, stride, offset=0):
    flat = np.ascontiguousarray(x).ravel()
    return np.lib.stride_tricks.as_strided(flat[offset:], size, [s * x.itemsize for s in stride]).copy()


def _unfold(x, d, size, step):
    if x.ndim == 0:
        return x.reshape(1)[:size]
    w = np.lib.stride_tricks.sliding_window_view(x, size, axis=d)
    return w[(slice(None),) * (d % x.ndim) + (slice(None, None, step),)]


def _cartesian(*xs):
    if len(xs) == 1:
        return xs[0]
    return np.array(list(itertools.product(*xs)), dtype=xs[0].dtype).reshape(-1, len(xs))


def _block_diag(*xs):
    mats = [np.atleast_2d(x) for x in xs]
    dt = np.result_type(*xs)
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)), dt)
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def _combinations(x, r=2, with_replacement=False):
    f = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    return np.array(list(f(x, r)), dtype=x.dtype).reshape(-1, r)


def _split_np(x, size_or_sizes, dim=0):
    n = x.shape[dim]
    if isinstance(size_or_sizes, int):
        cuts = list(range(size_or_sizes, n, size_or_sizes))
    else:
        cuts = list(np.cumsum(size_or_sizes)[:-1])
    return tuple(np.split(x, cuts, axis=dim))


def _chunk(x, chunks, dim=0):
    n = x.shape[dim]
    return _split_np(x, -(-n // chunks), dim)


def _tensor_split(x, ios, dim=0):
    return tuple(np.array_split(x, ios, axis=dim))


def _column_stack(xs):
    return np.column_stack(xs)


# --- sample generators -----------------------------------------------------------

def _unflatten_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 12), (1, (3, 4))), SampleInput(m(2, 12), (-1, (2, -1, 3))),
            SampleInput(m(6, 2, nc=True), (0, (3, 2)), name="noncontig"), SampleInput(m(0, 4), (1, (2, 2)))]


def _flatten_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 3, 4)), SampleInput(m(2, 3, 4), (1,)), SampleInput(m(2, 3, 4), (0, -2)),
            SampleInput(m(), name="0d"), SampleInput(m(4, 3, nc=True), name="noncontig"),
            SampleInput(m(2, 0, 3), (1,), name="empty")]


def _movedim_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 3, 4), (0, -1)), SampleInput(m(2, 3, 4), ((0, 1), (2, 0))),
            SampleInput(m(4, 3, nc=True), (1, 0), name="noncontig"), SampleInput(m(), (0, 0), name="0d")]


def _swap_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 3, 4), (0, 2)), SampleInput(m(3, 4), (-1, 0)), SampleInput(m(4, 3, nc=True), (0, 1))]


def _t_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4)), SampleInput(m(5)), SampleInput(m(), name="0d"),
            SampleInput(m(4, 3, nc=True), name="noncontig")]


def _broadcast_to_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 1), ((2, 3, 4),)), SampleInput(m(), ((3,),), name="0d"),
            SampleInput(m(1, 4), ((-1, 4),)), SampleInput(m(3, 1), ((3, 0),), name="empty")]


def _expand_as_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 1), (np.zeros((2, 3, 4), np.int64),)), SampleInput(m(), (np.zeros(3, np.int64),))]


def _broadcast_tensors_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 1), (m(4),)), SampleInput(m(), (m(2, 3),), name="0d"),
            SampleInput(m(2, 1, 3), (m(4, 1),))]


def _repeat_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 3), (2, 1)), SampleInput(m(3), ((2, 2, 2),)), SampleInput(m(), (3,), name="0d"),
            SampleInput(m(2, 3, nc=True), (1, 2), name="noncontig"), SampleInput(m(2, 3), (0, 2), name="zero")]


def _tile_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 3), ((2,),)), SampleInput(m(3), ((2, 2),)), SampleInput(m(2, 3), ((2, 1, 2),))]


def _repeat_interleave_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 3), (2,)), SampleInput(m(2, 3), (2,), {"dim": 1}),
            SampleInput(m(3, 2), (np.array([1, 0, 3]),), {"dim": 0}, name="tensor_repeats"),
            SampleInput(m(3, 2), (np.array([2, 1]),), {"dim": -1}),
            SampleInput(m(), (3,), name="0d"), SampleInput(m(4, 3, nc=True), (2,), {"dim": 0}, name="noncontig")]


def _flip_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 3, 4), ((0, 2),)), SampleInput(m(3, 4), ((-1,),)), SampleInput(m(5), ((0,),)),
            SampleInput(m(4, 3, nc=True), ((0, 1),), name="noncontig"), SampleInput(m(), ((),), name="0d")]


def _fliplr_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4)), SampleInput(m(2, 3, 4)), SampleInput(m(4, 3, nc=True), name="noncontig")]


def _roll_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (1,)), SampleInput(m(3, 4), (-2, 1)), SampleInput(m(2, 3, 4), ((1, 5), (0, 2))),
            SampleInput(m(4, 3, nc=True), (2, 0), name="noncontig")]


def _rot90_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4)), SampleInput(m(3, 4), (2,)), SampleInput(m(2, 3, 4), (-1, (1, 2))),
            SampleInput(m(3, 4), (3, (1, 0))), SampleInput(m(3, 4), (4,))]


def _select_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (0, 1)), SampleInput(m(2, 3, 4), (-1, -2)), SampleInput(m(4, 3, nc=True), (1, 2))]


def _unbind_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4)), SampleInput(m(2, 3, 4), (1,)), SampleInput(m(4, 3, nc=True), (-1,))]


def _diagonal_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4)), SampleInput(m(3, 4), (1,)), SampleInput(m(3, 4), (-2,)),
            SampleInput(m(2, 3, 4), (0, -1, 0)), SampleInput(m(3, 4), (5,), name="empty_diag"),
            SampleInput(m(4, 3, nc=True), (0, 1, 0), name="noncontig")]


def _diag_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3)), SampleInput(m(3), (1,)), SampleInput(m(3), (-2,)), SampleInput(m(3, 4)),
            SampleInput(m(3, 4), (-1,)), SampleInput(m(4, 3, nc=True), (1,), name="noncontig")]


def _diag_embed_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3)), SampleInput(m(2, 3), (1,)), SampleInput(m(2, 3), (-1, 0, 2)),
            SampleInput(m(2, 3), (0, 1, 0))]


def _diagflat_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3)), SampleInput(m(2, 2), (1,)), SampleInput(m(3), (-1,))]


def _tri_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4)), SampleInput(m(3, 4), (1,)), SampleInput(m(2, 3, 4), (-1,)),
            SampleInput(m(4, 3, nc=True), (0,), name="noncontig"), SampleInput(m(0, 3), name="empty")]


def _as_strided_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), ((2, 2), (1, 2))), SampleInput(m(6), ((3, 3), (1, 1)), name="overlap"),
            SampleInput(m(12), ((2, 3), (3, 1), 3), name="offset"), SampleInput(m(5), ((3,), (0,)), name="stride0")]


def _unfold_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(7), (0, 2, 1)), SampleInput(m(3, 7), (1, 3, 2)), SampleInput(m(5, 2), (0, 2, 3)),
            SampleInput(m(4, 3, nc=True), (0, 2, 1), name="noncontig"), SampleInput(m(), (0, 1, 1), name="0d")]


def _atleast_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m()), SampleInput(m(3)), SampleInput(m(2, 3)), SampleInput(m(2, 3, 2))]


def _meshgrid_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3), (m(4),), {"indexing": "ij"}), SampleInput(m(3), (m(4),), {"indexing": "xy"}),
            SampleInput(m(2), (m(3), m()), {"indexing": "xy"}), SampleInput(m(), (m(2),), {"indexing": "ij"})]


def _cartesian_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3), (m(2),)), SampleInput(m(2), (m(2), m(3))), SampleInput(m(3))]


def _block_diag_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 2), (m(1, 3),)), SampleInput(m(), (m(3), m(2, 2))), SampleInput(m(2, 3))]


def _combinations_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(4)), SampleInput(m(4), (3,)), SampleInput(m(3), (2, True)), SampleInput(m(3), (1,))]


def _list_samples(shapes_list):
    def gen(dtype, rng):
        return [SampleInput([make(rng, s, dtype) for s in shapes]) for shapes in shapes_list]
    return gen


def _split_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(5, 2), (2,)), SampleInput(m(2, 5), (2, -1)), SampleInput(m(6, 2), ([1, 3, 2],)),
            SampleInput(m(4, 3, nc=True), (1, 1), name="noncontig")]


def _split_sizes_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(6, 2), ([1, 3, 2],)), SampleInput(m(2, 5), ([2, 0, 3], 1))]


def _chunk_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(5, 2), (3,)), SampleInput(m(2, 6), (4, -1)), SampleInput(m(4, 3, nc=True), (2,))]


def _tensor_split_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(7, 2), (3,)), SampleInput(m(2, 7), ([1, 5], 1)), SampleInput(m(7), ([2, 2, 6],)),
            SampleInput(m(4, 3, nc=True), (2,))]


def _hsplit_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (2,)), SampleInput(m(3, 4), ([1, 3],)), SampleInput(m(6), (3,))]


def _vsplit_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(4, 3), (2,)), SampleInput(m(4, 3), ([1],))]


def _dsplit_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(2, 2, 4), (2,)), SampleInput(m(2, 2, 4), ([3],))]


def _view_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), ((2, 6),)), SampleInput(m(3, 4), (-1,)), SampleInput(m(), ((1, 1),), name="0d"),
            SampleInput(m(2, 3, 4), (2, -1))]


def _view_as_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (np.zeros((2, 6), np.int64),)),
            SampleInput(m(4, 3, nc=True), (np.zeros((4, 3), np.int64),), name="noncontig")]


OPS = [
    OpInfo("view", lambda x, *s: x.reshape(*s) if len(s) > 1 else x.reshape(s[0]), _view_samples, dtypes=ALL,
           torch_name="Tensor.view"),
    OpInfo("view_as", lambda x, o: x.reshape(o.shape), _view_as_samples, dtypes=ALL,
           torch_name="Tensor.view_as"),
    OpInfo("reshape_as", lambda x, o: x.reshape(o.shape), _view_as_samples, dtypes=ALL,
           torch_name="Tensor.reshape_as"),
    OpInfo("flatten", _flatten, _flatten_samples, dtypes=ALL),
    OpInfo("unflatten", _unflatten, _unflatten_samples, dtypes=ALL),
    OpInfo("ravel", np.ravel, lambda d, r: [SampleInput(make(r, (2, 3), d)), SampleInput(make(r, (), d)),
                                            SampleInput(make(r, (4, 3), d, noncontig=True), name="noncontig")],
           dtypes=ALL),
    OpInfo("movedim", _moveaxis, _movedim_samples, dtypes=ALL),
    OpInfo("moveaxis", _moveaxis, _movedim_samples, dtypes=ALL),
    OpInfo("swapaxes", np.swapaxes, _swap_samples, dtypes=ALL),
    OpInfo("swapdims", np.swapaxes, _swap_samples, dtypes=ALL),
    OpInfo("t", lambda x: x.T, _t_samples, dtypes=ALL),
    OpInfo("adjoint", lambda x: np.swapaxes(x, -1, -2), lambda d, r: [SampleInput(make(r, (2, 3, 4), d)),
                                                                       SampleInput(make(r, (4, 3), d, noncontig=True))],
           dtypes=ALL),
    OpInfo("broadcast_to", lambda x, s: np.broadcast_to(x, tuple(x.shape[i - len(s) + x.ndim] if v == -1 else v
                                                                 for i, v in enumerate(s))), _broadcast_to_samples, dtypes=ALL),
    OpInfo("expand_as", lambda x, o: np.broadcast_to(x, o.shape), _expand_as_samples, dtypes=ALL,
           torch_name="Tensor.expand_as"),
    OpInfo("broadcast_tensors", lambda *xs: tuple(np.broadcast_arrays(*xs)), _broadcast_tensors_samples,
           dtypes=ALL, method="", output_index=0),
    OpInfo("broadcast_tensors", lambda *xs: tuple(np.broadcast_arrays(*xs)), _broadcast_tensors_samples,
           dtypes=ALL, method="", output_index=1),
    OpInfo("repeat", _repeat, _repeat_samples, dtypes=ALL,
           torch_name="Tensor.repeat"),
    OpInfo("tile", lambda x, r: np.tile(x, r), _tile_samples, dtypes=ALL),
    OpInfo("repeat_interleave", _repeat_interleave, _repeat_interleave_samples, dtypes=ALL),
    OpInfo("flip", lambda x, d: np.flip(x, d) if x.ndim else x, _flip_samples, dtypes=ALL),
    OpInfo("fliplr", np.fliplr, _fliplr_samples, dtypes=ALL),
    OpInfo("flipud", np.flipud, lambda d, r: _fliplr_samples(d, r) + [SampleInput(make(r, (4,), d))], dtypes=ALL),
    OpInfo("roll", _roll, _roll_samples, dtypes=ALL),
    OpInfo("rot90", lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims), _rot90_samples, dtypes=ALL),
    OpInfo("select", lambda x, d, i: np.take(x, i, axis=d), _select_samples, dtypes=ALL),
    OpInfo("unbind", lambda x, d=0: tuple(np.moveaxis(x, d, 0)), _unbind_samples, dtypes=ALL, output_index=1),
    OpInfo("diagonal", lambda x, o=0, a=0, b=1: np.diagonal(x, o, a, b), _diagonal_samples, dtypes=ALL),
    OpInfo("diag", lambda x, k=0: np.diag(x, k), _diag_samples, dtypes=ALL),
    OpInfo("diag_embed", _diag_embed, _diag_embed_samples, dtypes=ALL),
    OpInfo("diagflat", lambda x, k=0: np.diagflat(x, k), _diagflat_samples, dtypes=ALL),
    OpInfo("tril", lambda x, k=0: np.tril(x, k), _tri_samples, dtypes=ALL, inplace="tril_"),
    OpInfo("triu", lambda x, k=0: np.triu(x, k), _tri_samples, dtypes=ALL, inplace="triu_"),
    OpInfo("as_strided", _as_strided, _as_strided_samples, dtypes=ALL,
           notes="the storage is the memory block the tensor's array lives in (on CUDA: its allocation)"),
    OpInfo("unfold", _unfold, _unfold_samples, dtypes=ALL, torch_name="Tensor.unfold"),
    OpInfo("atleast_1d", np.atleast_1d, _atleast_samples, dtypes=ALL, method=""),
    OpInfo("atleast_2d", np.atleast_2d, _atleast_samples, dtypes=ALL, method=""),
    OpInfo("atleast_3d", np.atleast_3d, _atleast_samples, dtypes=ALL, method=""),
    OpInfo("meshgrid", lambda *xs, indexing="ij": tuple(np.meshgrid(*xs, indexing=indexing)), _meshgrid_samples,
           dtypes=ALL, method="", output_index=0),
    OpInfo("meshgrid", lambda *xs, indexing="ij": tuple(np.meshgrid(*xs, indexing=indexing)), _meshgrid_samples,
           dtypes=ALL, method="", output_index=1),
    OpInfo("cartesian_prod", _cartesian, _cartesian_samples, dtypes=ALL, method=""),
    OpInfo("block_diag", _block_diag, _block_diag_samples, dtypes=ALL, method=""),
    OpInfo("combinations", _combinations, _combinations_samples, dtypes=ALL, method=""),
    OpInfo("hstack", np.hstack, _list_samples([[(2, 3), (2, 1)], [(3,), (2,)], [(), (2,)]]), dtypes=ALL,
           method=""),
    OpInfo("vstack", np.vstack, _list_samples([[(2, 3), (1, 3)], [(3,), (3,)], [(), ()]]), dtypes=ALL, method=""),
    OpInfo("row_stack", np.vstack, _list_samples([[(2, 3), (1, 3)], [(3,), (3,)]]), dtypes=ALL, method=""),
    OpInfo("dstack", np.dstack, _list_samples([[(2, 3), (2, 3)], [(3,), (3,)], [(2, 2, 1), (2, 2, 2)]]),
           dtypes=ALL, method=""),
    OpInfo("column_stack", _column_stack, _list_samples([[(3,), (3, 2)], [(), ()], [(2,), (2,)]]), dtypes=ALL,
           method=""),
    OpInfo("split", _split_np, _split_samples, dtypes=ALL, output_index=1),
    OpInfo("split", _split_np, _split_samples, dtypes=ALL, output_index=-1),
    OpInfo("split_with_sizes", _split_np, _split_sizes_samples, dtypes=ALL, output_index=-1),
    OpInfo("chunk", _chunk, _chunk_samples, dtypes=ALL, output_index=-1),
    OpInfo("tensor_split", _tensor_split, _tensor_split_samples, dtypes=ALL, output_index=1),
    OpInfo("hsplit", lambda x, s: tuple(np.hsplit(x, s)), _hsplit_samples, dtypes=ALL, output_index=1),
    OpInfo("vsplit", lambda x, s: tuple(np.vsplit(x, s)), _vsplit_samples, dtypes=ALL, output_index=0),
    OpInfo("dsplit", lambda x, s: tuple(np.dsplit(x, s)), _dsplit_samples, dtypes=ALL, output_index=1),
]
