"""Indexing: ``__getitem__`` / ``__setitem__`` with every key kind, the
index ops' semantics beyond the OpInfo registry (duplicates in gradients,
in-place forms and autograd, CopySlices on views), and error types."""
from __future__ import annotations

import numpy as np
import pytest

import fabric

RNG = np.random.default_rng(0)


def T(a, requires_grad=False):
    return fabric.tensor(np.asarray(a), requires_grad=requires_grad)


def arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _key_to(key, conv):
    """Convert NumPy arrays inside an index key to framework tensors."""
    if isinstance(key, tuple):
        return tuple(_key_to(k, conv) for k in key)
    if isinstance(key, np.ndarray):
        return conv(key)
    return key


def _fab(a, grad=False):
    t = fabric.from_numpy(np.array(a))
    return t.requires_grad_(True) if grad else t


def _torch(a, grad=False):
    import torch

    t = torch.from_numpy(np.array(a))
    return t.requires_grad_(True) if grad else t


KEYS = [
    3, -1, slice(1, 4), slice(None, None, 2), slice(-3, None), slice(10, 20), (1, 2), (-1, slice(None), 0),
    Ellipsis, (Ellipsis, 1), (None,), (None, Ellipsis, None), (0, None, slice(1, 3)),
    np.array([0, 2, 2, -1]), np.array([[0, 1], [4, 4]]), np.array(2), np.array([], dtype=np.int64),
    (slice(None), np.array([0, 3])), (np.array([0, 1]), np.array([1, 2])),
    (np.array([[0], [1]]), slice(None), np.array([0, 2])), (0, slice(None), np.array([0, 1, 1])),
    (np.array([0, 4]), 1), (1, np.array([0, 2])), (Ellipsis, np.array([1, 0])),
    np.array([True, False, True, False, True]), (slice(None), np.array([True, False, True, True])),
    True, False, np.array(True), np.array(False), (True, 1), (0, True),
    ([0, 1], [2, 3]), ([0, 3],), (None, np.array([1, 2]), None),
    (np.array(1), slice(None), np.array(-1)), (slice(1, None), None, np.array([2, 0]), Ellipsis),
]


def _mask_key():
    return RNG.random((5, 4)) > 0.5


@pytest.mark.torch
@pytest.mark.parametrize("key", KEYS + [_mask_key()], ids=lambda k: repr(k)[:40])
def test_getitem_matches_torch(key):
    import torch

    x = arr(5, 4, 3)
    fx = fabric.from_numpy(x.copy()).requires_grad_(True)
    tx = torch.from_numpy(x.copy()).requires_grad_(True)
    fy = fx[_key_to(key, _fab)]
    ty = tx[_key_to(key, _torch)]
    assert tuple(fy.shape) == tuple(ty.shape)
    np.testing.assert_array_equal(fy.detach().numpy(), ty.detach().numpy())
    g = RNG.standard_normal(tuple(ty.shape))
    fy.backward(fabric.from_numpy(g.copy()))
    ty.backward(torch.from_numpy(g.copy()))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("key", KEYS + [_mask_key()], ids=lambda k: repr(k)[:40])
def test_setitem_matches_torch(key):
    """Assign a broadcastable value into a non-leaf tensor; both the base and
    the value get PyTorch's gradients."""
    import torch

    x = arr(5, 4, 3)
    with torch.no_grad():
        shape = torch.from_numpy(x)[_key_to(key, _torch)].shape
    vshape = shape[1:] if len(shape) > 1 else shape  # broadcast along the first dim
    v = arr(*vshape)
    fx = fabric.from_numpy(x.copy()).requires_grad_(True)
    tx = torch.from_numpy(x.copy()).requires_grad_(True)
    fv = fabric.from_numpy(v.copy()).requires_grad_(True)
    tv = torch.from_numpy(v.copy()).requires_grad_(True)
    fy, ty = fx * 1, tx * 1
    fy[_key_to(key, _fab)] = fv
    ty[_key_to(key, _torch)] = tv
    np.testing.assert_array_equal(fy.detach().numpy(), ty.detach().numpy())
    g = arr(5, 4, 3)
    (fy * fabric.from_numpy(g)).sum().backward()
    (ty * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    if tv.grad is not None and not _has_duplicates(key):
        np.testing.assert_allclose(fv.grad.numpy(), tv.grad.numpy(), atol=1e-12)


def _has_duplicates(key):
    ks = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype.kind == "i" and k.size != np.unique(k).size for k in ks)


def test_basic_getitem_is_a_view():
    x = fabric.arange(12.0).reshape(3, 4).clone()
    for key in [1, (1, 2), slice(0, 2), (Ellipsis, 1), (None, 0), (slice(None), slice(1, None, 2))]:
        v = x[key]
        assert v._base is x
        v0 = x._version
        x.add_(1)
        assert v._version == x._version == v0 + 1
        np.testing.assert_array_equal(v.numpy(), x.numpy()[key])
    v = x[1, 2]
    v.fill_(-5)  # a 0-d view writes through
    assert x[1, 2].item() == -5
    y = x[[0, 1]]
    assert y._base is None
    y.zero_()
    assert x[0, 0].item() != 0


def test_0d_int_tensor_index_selects_a_view():
    x = fabric.arange(5.0)
    v = x[fabric.tensor(2)]
    assert v._base is x and v.shape == ()


def test_setitem_on_leaf_under_no_grad():
    w = fabric.ones(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0] = 2.0
    v0 = w._version
    with fabric.no_grad():
        w[0] = 2.0
        w[:, 1] = fabric.tensor([5.0, 6.0, 7.0])
    assert w._version == v0 + 2
    assert w.requires_grad and w.grad_fn is None
    np.testing.assert_array_equal(w[:, 1].detach().numpy(), [5, 6, 7])


def test_setitem_value_requires_grad_makes_target_differentiable():
    out = fabric.zeros(3, 2)
    w = fabric.tensor([1.0, 2.0], requires_grad=True)
    out[1] = w * 3
    assert out.requires_grad and type(out.grad_fn).__name__ == "CopySlices"
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])


def test_setitem_duplicate_indices_value_grad():
    x = fabric.zeros(4)
    v = fabric.tensor(2.0, requires_grad=True)
    x[[1, 1, 2]] = v  # scalar value broadcast to 3 positions, two of them the same element
    x.sum().backward()
    assert v.grad.item() == 3.0  # as in PyTorch: the value is read once per index


def test_setitem_broadcast_and_dtype_cast():
    x = fabric.zeros(2, 3, dtype=fabric.int64)
    x[:, 1:] = fabric.tensor([1.7, -2.2])
    np.testing.assert_array_equal(x.numpy(), [[0, 1, -2], [0, 1, -2]])
    x[0] = fabric.ones(1, 3)  # extra leading 1s are dropped, as in PyTorch
    np.testing.assert_array_equal(x.numpy()[0], [1, 1, 1])
    x[x.numpy() > 0] = 9  # NumPy bool arrays work as masks too
    np.testing.assert_array_equal(x.numpy(), [[9, 9, 9], [0, 9, -2]])


def test_setitem_shape_mismatch_names_both_shapes():
    x = fabric.zeros(4, 5)
    with pytest.raises(RuntimeError, match=r"\(5\).*\(3\).*Target sizes: \[4, 5\].*Tensor sizes: \[3\]"):
        x[:] = fabric.ones(3)
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[3\].*indexing result of shape \[2, 5\]"):
        x[[0, 1]] = fabric.ones(3)
    v0 = x._version
    assert x._version == v0 and not x.numpy().any()  # nothing was written


@pytest.mark.parametrize("key,exc,msg", [
    (4, IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    (-5, IndexError, "index -5 is out of bounds for dimension 0 with size 4"),
    ((0, 5), IndexError, "index 5 is out of bounds for dimension 1 with size 5"),
    ([0, 4], IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    ((slice(None), [0, -6]), IndexError, "index -6 is out of bounds for dimension 1 with size 5"),
    (1.0, IndexError, r"valid indices \(got float\)"),
    ((0, 1.5), IndexError, r"valid indices \(got float\)"),
    (fabric.tensor([1.0]), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (fabric.tensor([1, 0], dtype=fabric.int16), IndexError, "must be long, int, byte or bool"),
    (fabric.tensor([True, False]), IndexError, r"shape of the mask \[2\] at index 0 does not match"),
    ((0, 0, 0), IndexError, "too many indices for tensor of dimension 2"),
    (([0, 1], [0, 1, 2]), IndexError, r"could not be broadcast together with shapes \[2\], \[3\]"),
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    ("a", TypeError, "str"),
])
def test_getitem_errors(key, exc, msg):
    x = fabric.zeros(4, 5)
    with pytest.raises(exc, match=msg):
        x[key]
    with pytest.raises(exc, match=msg):
        x[key] = 1.0


def test_index_0d_errors():
    s = fabric.tensor(1.0)
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        s[0]
    assert s[None].shape == (1,) and s[...].shape == () and s[True].shape == (1,) and s[False].shape == (0,)


def test_duplicate_indices_accumulate_in_gradients():
    x = fabric.arange(5.0, requires_grad=True)
    idx = fabric.tensor([0, 0, 3, 0])
    parts = [x[idx], x.index_select(0, idx), x.take(idx), x.gather(0, idx),
             x.repeat_interleave(fabric.tensor([2, 0, 1, 0, 3])), x.unsqueeze(0)[0, idx]]
    sum(p.sum() for p in parts).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3 * 5 + 2, 0, 1, 5, 3])


def test_large_duplicate_scatter_is_exact():
    """Backward of advanced indexing goes through the backend's scatter_add
    (bincount / reduceat), not np.add.at: check it on many repeats."""
    n = 50_000
    idx = RNG.integers(0, 100, n)
    x = fabric.zeros(100, 3, requires_grad=True)
    x[fabric.from_numpy(idx)].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[:, 0], np.bincount(idx, minlength=100))
    y = fabric.zeros(100, dtype=fabric.int64).index_add(0, fabric.from_numpy(idx), fabric.ones(n, dtype=fabric.int64))
    np.testing.assert_array_equal(y.numpy(), np.bincount(idx, minlength=100))


def test_index_put_accumulate_duplicates():
    x = fabric.zeros(3, 2)
    i = fabric.tensor([0, 0, 2])
    v = fabric.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    y = x.index_put((i,), v, accumulate=True)
    np.testing.assert_array_equal(y.detach().numpy(), [[4, 6], [0, 0], [5, 6]])
    x.index_put_((i,), fabric.ones(2), accumulate=True)
    np.testing.assert_array_equal(x.numpy()[:, 0], [2, 0, 1])
    (y * fabric.tensor([[1.0, 2.0], [0, 0], [3, 4]])).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [[1, 2], [1, 2], [3, 4]])


@pytest.mark.torch
def test_inplace_index_ops_on_non_leaf_are_differentiable():
    import torch

    base = arr(4, 3)
    src = arr(2, 3)
    idx = np.array([3, 0])
    results = []
    for _lib, conv in ((fabric, _fab), (torch, _torch)):
        x = conv(base).requires_grad_(True)
        s = conv(src).requires_grad_(True)
        y = x * 2
        y.index_add_(0, conv(idx), s, alpha=3)
        y.masked_fill_(conv(base > 1), 0.5)
        y.index_copy_(0, conv(np.array([1])), s[:1] * s[1:])
        y.scatter_add_(1, conv(np.array([[0, 0, 2]] * 4)), y.detach() * 0 + 1)
        (y ** 2).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.torch
def test_scatter_reduce_ties_and_zeros_match_torch():
    import torch

    x = np.array([[1.0, 0.0, 3.0, 2.0]])
    src = np.array([[3.0, 3.0, 0.0, 2.0, 5.0, 0.0]])
    idx = np.array([[0, 0, 1, 3, 2, 2]])
    for reduce in ("amax", "amin", "prod", "mean", "sum"):
        for include_self in (True, False):
            out = []
            for _lib, conv in ((fabric, _fab), (torch, _torch)):
                a = conv(x).requires_grad_(True)
                b = conv(src).requires_grad_(True)
                r = a.scatter_reduce(1, conv(idx), b, reduce, include_self=include_self)
                (r * conv(np.array([[1.0, 2.0, 3.0, 4.0]]))).sum().backward()
                out.append((r.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
            for p, q in zip(*out):
                np.testing.assert_allclose(p, q, atol=1e-12, err_msg=f"{reduce} {include_self}")


@pytest.mark.torch
def test_index_op_errors_match_torch():
    import torch

    cases = [
        lambda L, x: x.index_select(0, L.tensor([4])),
        lambda L, x: x.index_select(0, L.tensor([[1]])),
        lambda L, x: x.index_select(0, L.tensor([1.0])),
        lambda L, x: x.index_select(5, L.tensor([1])),
        lambda L, x: x.gather(1, L.tensor([[5]])),
        lambda L, x: x.gather(1, L.tensor([1])),
        lambda L, x: x.scatter(0, L.tensor([[0]]), L.ones(1, 1, dtype=L.float64)),
        lambda L, x: x.scatter(0, L.tensor([[0, 1, 2, 0, 1]]), L.ones(1, 5)),
        lambda L, x: x.scatter_reduce(0, L.tensor([[0]]), L.ones(1, 1), "foo"),
        lambda L, x: x.index_add(0, L.tensor([0, 1]), L.ones(3, 4)),
        lambda L, x: x.index_add(0, L.tensor([0, 1]), L.ones(2, 4, dtype=L.float64)),
        lambda L, x: x.index_add(0, L.tensor([0, 5]), L.ones(2, 4)),
        lambda L, x: x.index_copy(0, L.tensor([0, 5]), L.ones(2, 4)),
        lambda L, x: x.index_fill(0, L.tensor([0, 5]), 1.0),
        lambda L, x: x.index_fill(0, L.tensor([0]), L.tensor([1.0])),
        lambda L, x: x.masked_fill(L.ones(3, 4, dtype=L.uint8), 1.0),
        lambda L, x: x.masked_fill(L.ones(4, dtype=L.bool), L.tensor([1.0])),
        lambda L, x: x[0].masked_fill_(L.ones(2, 4, dtype=L.bool), 1.0),
        lambda L, x: x.masked_select(L.ones(3, 4)),
        lambda L, x: x.masked_scatter(L.ones(3, 4, dtype=L.bool), L.ones(5)),
        lambda L, x: x.take(L.tensor([12])),
        lambda L, x: x.take(L.tensor([1], dtype=L.int32)),
        lambda L, x: x.put(L.tensor([0, 1]), L.ones(3)),
        lambda L, x: x.put(L.tensor([1]), L.ones(1, dtype=L.float64)),
        lambda L, x: x.take_along_dim(L.tensor([0]), 1),
        lambda L, x: x.index_put((L.tensor([0, 1]),), L.ones(4, dtype=L.float64)),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(Exception) as theirs:
            case(torch, torch.zeros(3, 4))
        with pytest.raises(Exception) as ours:
            case(fabric, fabric.zeros(3, 4))
        assert type(ours.value) is type(theirs.value), (i, ours.value, theirs.value)


def test_out_of_range_dim_names_the_range():
    x = fabric.zeros(3, 4)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        x.index_select(2, fabric.tensor([0]))
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got -3"):
        x.gather(-3, fabric.tensor([[0]]))


def test_index_tensor_devices_and_dtypes():
    x = fabric.arange(6.0).reshape(2, 3)
    assert x[fabric.tensor([1], dtype=fabric.int32)].shape == (1, 3)
    with pytest.warns(UserWarning, match="uint8"):
        assert x[fabric.tensor([1, 0], dtype=fabric.uint8)].shape == (1, 3)


@pytest.mark.torch
@pytest.mark.parametrize("as_tuple", [False, True])
def test_nonzero_argwhere_where_match_torch(as_tuple):
    import torch

    for a in [np.array([[0, 1.5], [2, 0]]), np.array(3.0), np.array(0.0), np.zeros((0, 2)), np.array([True, False])]:
        ours = fabric.nonzero(_fab(a), as_tuple=as_tuple)
        theirs = torch.nonzero(_torch(a), as_tuple=as_tuple)
        if as_tuple:
            assert len(ours) == len(theirs)
            for p, q in zip(ours, theirs):
                np.testing.assert_array_equal(p.numpy(), q.numpy())
                assert p.dtype == fabric.int64
        else:
            assert tuple(ours.shape) == tuple(theirs.shape)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
            np.testing.assert_array_equal(fabric.argwhere(_fab(a)).numpy(), torch.argwhere(_torch(a)).numpy())


# --- CopySlices: in-place on views of tensors that require grad ------------------

@pytest.mark.torch
def test_inplace_on_views_matches_torch():

    a0, w0 = arr(3, 4), arr(4)

    def run(conv):
        a = conv(a0).requires_grad_(True)
        w = conv(w0).requires_grad_(True)
        y = a * 1.5
        y[:, 0] *= 2                     # getitem view, in-place, setitem back
        y[1].add_(w)                     # in-place on a row view with a second input
        y.narrow(1, 1, 2).mul_(y[0, 1:3].clone())
        y.diagonal().zero_()
        y.t()[2].mul_(0.5)
        z = (y * y).sum() + y.sum()
        z.backward()
        return y.detach().numpy(), a.grad.numpy(), w.grad.numpy()

    for p, q in zip(run(_fab), run(_torch)):
        np.testing.assert_allclose(p, q, atol=1e-12)


def test_inplace_on_view_gradgrad():
    a = fabric.tensor(arr(3, 3), requires_grad=True)

    def f(a):
        y = a * 1.0
        y[1:, 1] = y[1:, 1].clone() * a[0, :2]
        v = y[:, 2]
        v.add_(v.clone() ** 2)
        y[0].add_(y[2].clone() * a[1])
        return y

    assert fabric.autograd.gradcheck(f, (a,))
    assert fabric.autograd.gradgradcheck(f, (a,))


def test_inplace_on_view_errors():
    w = fabric.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        w[0].mul_(2)
    y = w * 1
    a, _ = y.split(2)
    with pytest.raises(RuntimeError, match="function that returns multiple views"):
        a.mul_(2)
    with fabric.no_grad():
        w[1:].mul_(3)  # fine without autograd
    np.testing.assert_array_equal(w.detach().numpy(), [1, 3, 3])


def test_view_of_non_grad_base_with_grad_value():
    out = fabric.zeros(2, 3)
    w = fabric.tensor([1.0, 2.0, 3.0], requires_grad=True)
    row = out[1]
    row.copy_(w * 2)
    assert out.requires_grad and type(out.grad_fn).__name__ == "CopySlices"
    (out * fabric.tensor([[1.0, 1, 1], [1.0, 2, 3]])).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2, 4, 6])


def _random_key(rng, shape):
    """A random PyTorch index for ``shape`` mixing every key kind (index
    arrays may be out of bounds: then both libraries must raise)."""
    key = []
    for dim in range(int(rng.integers(1, 5))):
        n = shape[dim] if dim < len(shape) else 0
        r = rng.random()
        if r < 0.2 and n:
            k = int(rng.integers(-n, n))
        elif r < 0.4:
            k = slice(*(rng.choice([None, int(rng.integers(-n - 1, n + 2))]) for _ in range(2)),
                      rng.choice([None, 1, 2, 3]))
        elif r < 0.5:
            k = None
        elif r < 0.65 and n:
            k = rng.integers(-n, n, size=[(2,), (1,), (2, 1), ()][int(rng.integers(4))])
        elif r < 0.75 and n:
            k = rng.random(n) > 0.5
        elif r < 0.8:
            k = bool(rng.random() > 0.5)
        elif r < 0.85 and not any(k is Ellipsis for k in key):
            k = Ellipsis
        else:
            k = slice(None)
        key.append(k)
    return tuple(key)


@pytest.mark.torch
def test_random_keys_match_torch():
    """getitem and setitem (values and gradients of base and value) agree
    with PyTorch on random mixed keys, errors included."""
    import torch

    rng = np.random.default_rng(1)
    for _ in range(300):
        shape = tuple(int(s) for s in rng.integers(0, 5, size=int(rng.integers(1, 5))))
        x = rng.standard_normal(shape)
        key = _random_key(rng, shape)
        try:
            tr = torch.from_numpy(x)[_key_to(key, _torch)]
        except Exception as e:
            with pytest.raises(type(e)):
                fabric.from_numpy(x)[_key_to(key, _fab)]
            continue
        fr = fabric.from_numpy(x)[_key_to(key, _fab)]
        assert tuple(fr.shape) == tuple(tr.shape), key
        np.testing.assert_array_equal(fr.numpy(), tr.numpy())
        v = rng.standard_normal(tuple(tr.shape))
        tx, fx = _torch(x, True), _fab(x, True)
        tv, fv = _torch(v, True), _fab(v, True)
        ty, fy = tx * 1, fx * 1
        ty[_key_to(key, _torch)] = tv
        fy[_key_to(key, _fab)] = fv
        g = rng.standard_normal(shape)
        (ty * _torch(g)).sum().backward()
        (fy * _fab(g)).sum().backward()
        np.testing.assert_array_equal(fy.detach().numpy(), ty.detach().numpy())
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), err_msg=repr(key))
        if not _has_duplicates(key):
            np.testing.assert_allclose(fv.grad.numpy(), tv.grad.numpy(), err_msg=repr(key))


def test_view_created_in_no_grad_then_modified_with_grad_raises():
    w = fabric.ones(3, requires_grad=True)
    with fabric.no_grad():
        v = w[1:]
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        v.mul_(2)
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        v.add_(fabric.ones(2, requires_grad=True))
    with fabric.no_grad():
        v.mul_(2)
    np.testing.assert_array_equal(w.detach().numpy(), [1, 2, 2])
