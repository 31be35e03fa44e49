"""Shape and view ops beyond the OpInfo registry: view/memory-sharing
semantics, strides, in-place view ops, ops returning tuples (compared whole
with PyTorch), as_strided geometry, and error types/messages."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fabric

RNG = np.random.default_rng(0)


def arr(*shape):
    return RNG.standard_normal(shape)


def _fab(a, grad=False):
    t = fabric.from_numpy(np.array(a))
    return t.requires_grad_(True) if grad else t


def _torch(a, grad=False):
    import torch

    t = torch.from_numpy(np.array(a))
    return t.requires_grad_(True) if grad else t


VIEW_OPS = [
    ("view", lambda x: x.view(4, 6)),
    ("reshape", lambda x: x.reshape(2, 12)),
    ("flatten", lambda x: x.flatten(1)),
    ("unflatten", lambda x: x.unflatten(2, (2, 2))),
    ("transpose", lambda x: x.transpose(0, 2)),
    ("permute", lambda x: x.permute(2, 0, 1)),
    ("movedim", lambda x: x.movedim(0, -1)),
    ("t", lambda x: x[0].t()),
    ("T", lambda x: x[0].T),
    ("mT", lambda x: x.mT),
    ("expand", lambda x: x[:, :1].expand(2, 5, 4)),
    ("broadcast_to", lambda x: x[0].broadcast_to(3, 3, 4)),
    ("squeeze", lambda x: x[:, :1].squeeze(1)),
    ("unsqueeze", lambda x: x.unsqueeze(1)),
    ("narrow", lambda x: x.narrow(2, 1, 2)),
    ("select", lambda x: x.select(1, 2)),
    ("diagonal", lambda x: x.diagonal(1, 1, 2)),
    ("as_strided", lambda x: x.as_strided((3, 2), (2, 5), 1)),
    ("unfold", lambda x: x.unfold(2, 2, 1)),
    ("getitem", lambda x: x[1, ::2, None, 1:]),
    ("atleast_3d", lambda x: fabric.atleast_3d(x[0, 0])),
    ("unbind", lambda x: x.unbind(1)[2]),
    ("split", lambda x: x.split(2, 2)[1]),
    ("chunk", lambda x: x.chunk(2, 0)[1]),
    ("tensor_split", lambda x: x.tensor_split([1], 1)[1]),
    ("meshgrid", lambda x: fabric.meshgrid(x[0, 0], x[1, 1], indexing="ij")[1]),
    ("broadcast_tensors", lambda x: fabric.broadcast_tensors(x, x[0, 0])[1]),
]


@pytest.mark.parametrize("name,op", VIEW_OPS, ids=[n for n, _ in VIEW_OPS])
def test_views_share_memory_and_version_counter(name, op):
    base = fabric.from_numpy(arr(2, 3, 4))
    v = op(base)
    assert v._base is base, name
    assert np.shares_memory(v.numpy(), base.numpy())
    expected = op(fabric.from_numpy(base.numpy().copy())).numpy().copy()
    v0 = base._version
    base.mul_(2)
    assert v._version == base._version == v0 + 1
    np.testing.assert_allclose(v.numpy(), expected * 2)
    if name not in ("expand", "broadcast_to", "meshgrid", "broadcast_tensors", "as_strided", "unfold"):
        v.add_(1)  # writes through the view
        assert base._version == v0 + 2
        np.testing.assert_allclose(op(base).numpy(), expected * 2 + 1)


COPY_OPS = [
    lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: x.repeat(1, 1, 2), lambda x: x.rot90(2, (1, 2)),
    lambda x: x[0].diag(), lambda x: x.tril(), lambda x: x[[0, 1]], lambda x: x[x.numpy() > 0],
    lambda x: x.index_select(0, fabric.tensor([0])),
    lambda x: x.transpose(0, 1).reshape(-1), lambda x: x.repeat_interleave(1, 0), lambda x: x.tile((1,)),
]


@pytest.mark.parametrize("op", COPY_OPS)
def test_copies_do_not_alias(op):
    base = fabric.from_numpy(arr(2, 3, 4))
    y = op(base)
    assert not np.shares_memory(y.numpy(), base.numpy())
    assert y._base is None


@pytest.mark.torch
def test_view_strides_match_torch():

    a = arr(3, 4, 5)
    for f in [lambda x: x.t() if x.dim() == 2 else x.transpose(0, 2), lambda x: x.diagonal(0, 0, 2),
              lambda x: x.diagonal(-1, 2, 1), lambda x: x.unfold(1, 2, 2), lambda x: x[0].expand(2, 4, 5),
              lambda x: x.permute(1, 2, 0), lambda x: x.narrow(1, 1, 2), lambda x: x.select(2, 3),
              lambda x: x.as_strided((2, 2), (7, 3), 4), lambda x: x[:, 1:, ::2], lambda x: x.unbind(1)[0],
              lambda x: x.split(2, 2)[1], lambda x: x.movedim((0, 1), (2, 0))]:
        ours, theirs = f(_fab(a)), f(_torch(a))
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.stride() == theirs.stride()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.torch
def test_inplace_view_ops_match_torch():

    a = arr(3, 1, 4)
    out = []
    for conv in (_fab, _torch):
        x = conv(a, grad=True)
        y = x * 2
        v0 = y._version
        r = y.squeeze_(1)
        assert r is y and y._version == v0 + 1
        y.unsqueeze_(0).transpose_(0, 2)
        y.t_() if y.dim() <= 2 else y.swapaxes_(1, 2)
        y.squeeze_()
        (y * conv(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)))).sum().backward()
        out.append((tuple(y.shape), y.detach().numpy(), x.grad.numpy()))
    assert out[0][0] == out[1][0]
    np.testing.assert_allclose(out[0][1], out[1][1])
    np.testing.assert_allclose(out[0][2], out[1][2])


def test_inplace_view_ops_on_leaves():
    w = fabric.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.t_()
    with fabric.no_grad():
        w.t_()
    assert w.shape == (3, 2) and w.is_leaf
    x = fabric.zeros(2, 3)
    v = x[0]
    v.unsqueeze_(0)
    assert v.shape == (1, 3) and x.shape == (2, 3) and v._base is x


def _compare_tuple(f, arrays, grad=True):
    """Run ``f`` on fabric and torch tensors; compare every output and the
    gradients of all inputs for a random weighting of all outputs."""
    import torch

    res = []
    for conv, lib in ((_fab, fabric), (_torch, torch)):
        xs = [conv(a, grad=grad) for a in arrays]
        outs = f(lib, *xs)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        vals = [o.detach().numpy().copy() for o in outs]
        gs = None
        if grad:
            w = np.random.default_rng(1)
            loss = sum((o * conv(w.standard_normal(tuple(o.shape)))).sum() for o in outs)
            loss.backward()
            gs = [x.grad.numpy() if x.grad is not None else None for x in xs]
        res.append((vals, gs))
    (v1, g1), (v2, g2) = res
    assert len(v1) == len(v2)
    for a, b in zip(v1, v2):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b)
    if grad:
        for a, b in zip(g1, g2):
            np.testing.assert_allclose(a, b, atol=1e-12)


TUPLE_CASES = [
    ("split_int", lambda L, x: L.split(x, 2), [(5, 3)]),
    ("split_sizes", lambda L, x: x.split([1, 0, 4], 1), [(2, 5)]),
    ("split_empty", lambda L, x: x.split(0, 1), [(2, 0)]),
    ("chunk", lambda L, x: x.chunk(4, -1), [(2, 6)]),
    ("chunk_empty", lambda L, x: x.chunk(3), [(0, 2)]),
    ("tensor_split_sections", lambda L, x: x.tensor_split(3, 1), [(2, 7)]),
    ("tensor_split_indices", lambda L, x: x.tensor_split([1, 5, 10, 3]), [(7,)]),
    ("tensor_split_negative", lambda L, x: x.tensor_split([-2]), [(7,)]),
    ("tensor_split_tensor", lambda L, x: x.tensor_split(L.tensor([1, 2])), [(7,)]),
    ("tensor_split_0d_tensor", lambda L, x: x.tensor_split(L.tensor(3)), [(7,)]),
    ("hsplit", lambda L, x: L.hsplit(x, [1, 3]), [(3, 4)]),
    ("vsplit", lambda L, x: L.vsplit(x, 2), [(4, 3)]),
    ("dsplit", lambda L, x: L.dsplit(x, [1]), [(2, 2, 3)]),
    ("unbind", lambda L, x: x.unbind(-1), [(2, 3)]),
    ("meshgrid_ij", lambda L, a, b, c: L.meshgrid(a, b, c, indexing="ij"), [(2,), (3,), ()]),
    ("meshgrid_xy", lambda L, a, b, c: L.meshgrid([a, b, c], indexing="xy"), [(2,), (3,), (4,)]),
    ("broadcast_tensors", lambda L, a, b, c: L.broadcast_tensors(a, b, c), [(3, 1), (4,), ()]),
    ("atleast_1d", lambda L, a, b: L.atleast_1d(a, b), [(), (2, 2)]),
    ("atleast_2d_list", lambda L, a, b: L.atleast_2d([a, b]), [(), (3,)]),
    ("atleast_3d", lambda L, a, b, c: L.atleast_3d(a, b, c), [(2,), (2, 3), (2, 2, 2, 1)]),
    ("cartesian_prod", lambda L, a, b: L.cartesian_prod(a, b), [(3,), (2,)]),
    ("combinations_r3", lambda L, a: L.combinations(a, 3), [(5,)]),
    ("combinations_repl", lambda L, a: L.combinations(a, 2, with_replacement=True), [(3,)]),
    ("block_diag", lambda L, a, b, c: L.block_diag(a, b, c), [(2, 3), (), (4,)]),
    ("repeat_interleave", lambda L, a: a.repeat_interleave(L.tensor([2, 0, 3]), dim=0), [(3, 2)]),
    ("repeat_interleave_0d_repeats", lambda L, a: a.repeat_interleave(L.tensor(2), dim=1), [(3, 2)]),
    ("diag_embed", lambda L, a: L.diag_embed(a, -1, 0, 2), [(2, 3)]),
    ("as_strided_overlap", lambda L, a: a.as_strided((3, 3), (1, 1)), [(6,)]),
    ("as_strided_of_view", lambda L, a: a[1:].as_strided((2, 2), (1, 2)), [(6,)]),
    ("as_strided_of_expanded", lambda L, a: a.expand(3, 4).as_strided((2, 2), (1, 1)), [(4,)]),
    ("unfold_overlap", lambda L, a: a.unfold(0, 3, 1), [(6, 2)]),
    ("rot90_neg", lambda L, a: a.rot90(-1, (0, 1)), [(2, 3)]),
    ("column_stack", lambda L, a, b, c: L.column_stack([a, b, c]), [(), (1,), (1, 2)]),
    ("dstack", lambda L, a, b: L.dstack([a, b]), [(), (1,)]),
    ("tril_neg", lambda L, a: a.triu(-1) + a.tril(1), [(2, 4, 3)]),
]


@pytest.mark.torch
@pytest.mark.parametrize("name,f,shapes", TUPLE_CASES, ids=[c[0] for c in TUPLE_CASES])
def test_matches_torch_with_all_outputs(name, f, shapes):
    _compare_tuple(f, [arr(*s) for s in shapes])


@pytest.mark.torch
def test_integer_and_bool_dtypes_match_torch():
    a = np.arange(12).reshape(3, 4)
    for f in [lambda L, x: x.flip(1), lambda L, x: L.block_diag(x, x[0].bool()), lambda L, x: x.diag(),
              lambda L, x: L.repeat_interleave(L.tensor([1, 0, 2])), lambda L, x: x.unfold(1, 2, 2),
              lambda L, x: L.combinations(x[0]), lambda L, x: x.bool().tril(), lambda L, x: L.hstack([x, x.bool()])]:
        import torch

        ours, theirs = f(fabric, _fab(a)), f(torch, _torch(a))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_broadcast_shapes():
    assert fabric.broadcast_shapes((2, 1), (3,), 1, ()) == fabric.Size([2, 3])
    assert fabric.broadcast_shapes() == fabric.Size([])
    with pytest.raises(RuntimeError, match=r"length 4 at -1.*index 1 had \(4,\)"):
        fabric.broadcast_shapes((2, 3), (4,))


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning, match="indexing argument"):
        fabric.meshgrid(fabric.zeros(2), fabric.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fabric.meshgrid(fabric.zeros(2), fabric.zeros(3), indexing="xy")


def test_repeat_interleave_forms():
    r = fabric.repeat_interleave(fabric.tensor([2, 0, 1]))
    assert r.tolist() == [0, 0, 2] and r.dtype == fabric.int64
    x = fabric.tensor([[1, 2], [3, 4]])
    assert x.repeat_interleave(2).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    assert x.repeat_interleave(fabric.tensor([1, 2]), dim=0, output_size=3).tolist() == [[1, 2], [3, 4], [3, 4]]
    with pytest.raises(RuntimeError, match="allocated size does not match"):
        x.repeat_interleave(2, dim=0, output_size=3)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(fabric.tensor([1, -1]), dim=0)


def test_as_strided_storage_semantics():
    base = fabric.arange(10.0)
    v = base[2:]
    s = v.as_strided((2, 2), (3, 1))  # default offset: that of v (2)
    assert s.tolist() == [[2.0, 3.0], [5.0, 6.0]]
    s2 = v.as_strided((2,), (1,), 0)  # explicit offsets count from the storage start
    assert s2.tolist() == [0.0, 1.0]
    s.mul_(10)
    assert base[5].item() == 50.0
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 40"):
        base.as_strided((3, 3), (3, 1), 2)
    with pytest.raises(RuntimeError, match="Negative strides"):
        base.as_strided((2,), (-1,))


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L, x: x.view(5, 5),
    lambda L, x: x.t().view(12),
    lambda L, x: x.reshape(5, -1),
    lambda L, x: x.reshape(-1, -1),
    lambda L, x: x.expand(3, 5),
    lambda L, x: x.expand(2),
    lambda L, x: x.permute(0, 0),
    lambda L, x: x.permute(0),
    lambda L, x: x.transpose(0, 2),
    lambda L, x: x.squeeze(2),
    lambda L, x: x.unsqueeze(3),
    lambda L, x: x.flatten(1, 0),
    lambda L, x: x.unflatten(1, (3, 3)),
    lambda L, x: x.unflatten(1, ()),
    lambda L, x: x.movedim((0, 0), (1, 0)),
    lambda L, x: x.movedim((0, 1), (1,)),
    lambda L, x: x.repeat(2),
    lambda L, x: x.flip(0, 0),
    lambda L, x: x.roll((1, 2), 0),
    lambda L, x: x.rot90(1, [0, 0]),
    lambda L, x: x.rot90(1, [0, 1, 2]),
    lambda L, x: x[0].rot90(),
    lambda L, x: x.narrow(0, 2, 2),
    lambda L, x: x.narrow(0, 5, 1),
    lambda L, x: x.select(1, 4),
    lambda L, x: x.diagonal(0, 1, 1),
    lambda L, x: x[0].tril(),
    lambda L, x: L.diag(x.unsqueeze(0)),
    lambda L, x: x.unfold(1, 5, 1),
    lambda L, x: x.unfold(1, 2, 0),
    lambda L, x: x.as_strided((3, 3), (1, 1), 20),
    lambda L, x: L.broadcast_tensors(x, L.ones(5)),
    lambda L, x: L.meshgrid(x, x[0], indexing="ij"),
    lambda L, x: L.meshgrid(x[0], x[0].long(), indexing="ij"),
    lambda L, x: L.cartesian_prod(x),
    lambda L, x: L.combinations(x),
    lambda L, x: L.block_diag(x.unsqueeze(0)),
    lambda L, x: x.split(-1),
    lambda L, x: x.split(0),
    lambda L, x: x.split([1, 1]),
    lambda L, x: x.chunk(0),
    lambda L, x: x.tensor_split(0),
    lambda L, x: L.hsplit(x, 3),
    lambda L, x: L.vsplit(x[0], [1]),
    lambda L, x: L.dsplit(x, [1]),
    lambda L, x: L.stack([x, x[0]]),
    lambda L, x: L.cat([x, x[0]]),
    lambda L, x: L.cat([x, x.unsqueeze(0)]),
    lambda L, x: x.repeat_interleave(L.tensor([1, 2]), dim=0),
    lambda L, x: x.unbind(2),
])
def test_error_types_match_torch(call):
    import torch

    a = np.zeros((3, 4))
    with pytest.raises(Exception) as theirs:
        call(torch, _torch(a))
    with pytest.raises(Exception) as ours:
        call(fabric, _fab(a))
    assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)


def test_error_messages_name_range_and_shapes():
    x = fabric.zeros(3, 4)
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        x.transpose(0, 2)
    with pytest.raises(IndexError, match=r"range of \[-3, 2\], but got 3"):
        x.unsqueeze(3)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(4\) must match the size of tensor b \(5\)"):
        fabric.broadcast_tensors(x, fabric.ones(5))
    with pytest.raises(RuntimeError, match=r"Target sizes: \[3, 5\].*Tensor sizes: \[3, 4\]"):
        x.expand(3, 5)
    with pytest.raises(RuntimeError, match=r"\[3, 4\] at entry 0 and \[4\] at entry 1"):
        fabric.stack([x, x[0]])
    with pytest.raises(RuntimeError, match=r"split_sizes to sum exactly to 3.*split_sizes=\[1, 1\]"):
        x.split([1, 1])


def test_diagonal_and_diag_embed_round_trip_with_grad():
    x = fabric.tensor(arr(2, 3), requires_grad=True)
    e = fabric.diag_embed(x, offset=1, dim1=0, dim2=2)
    assert e.shape == (4, 2, 4)
    back = e.diagonal(1, 0, 2)
    np.testing.assert_array_equal(back.detach().numpy(), x.detach().numpy())
    assert fabric.autograd.gradcheck(lambda t: fabric.diag_embed(t, 1, 0, 2).diagonal(-1, 2, 0), (x,))
    assert fabric.autograd.gradgradcheck(lambda t: (fabric.diag_embed(t) * 2).diagonal(), (x,))
