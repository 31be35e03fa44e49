"""default_collate / default_convert: nested structures, dtypes, errors; marked torch: equal to PyTorch's."""
import collections

import numpy as np
import pytest

import fabric
from fabric.data import default_collate, default_convert
from fabric.data._collate import collate, default_collate_fn_map

Point = collections.namedtuple("Point", ["x", "y"])


def _samples():
    """(name, batch builder taking a tensor module) pairs covering every branch."""
    return [
        ("ints", lambda T: [0, 1, 2, 3]),
        ("floats", lambda T: [1.0, 2.5]),
        ("float_then_int", lambda T: [1.0, 2]),
        ("int_then_float", lambda T: [1, 2.5]),
        ("bools", lambda T: [True, False]),
        ("strings", lambda T: ["a", "b"]),
        ("bytes", lambda T: [b"a", b"b"]),
        ("np_f32_scalars", lambda T: [np.float32(1.5), np.float32(2)]),
        ("np_i32_scalars", lambda T: [np.int32(1), np.int32(-2)]),
        ("np_bool_scalars", lambda T: [np.bool_(True), np.bool_(False)]),
        ("np_arrays", lambda T: [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)]),
        ("np_0d", lambda T: [np.array(1.0), np.array(2.0)]),
        ("np_u8", lambda T: [np.arange(4, dtype=np.uint8)] * 3),
        ("np_mixed_dtypes", lambda T: [np.arange(3, dtype=np.int32), np.arange(3, dtype=np.float64)]),
        ("tensors", lambda T: [T.arange(6).reshape(2, 3), T.ones(2, 3, dtype=T.int64)]),
        ("tensor_f64", lambda T: [T.tensor([1.0, 2.0], dtype=T.float64)] * 2),
        ("tuples", lambda T: [(0, 1.5, "a"), (1, 2.5, "b")]),
        ("lists", lambda T: [[0, 1], [2, 3]]),
        ("dicts", lambda T: [{"A": 0, "B": [1.0, T.zeros(2)]}, {"A": 100, "B": [2.0, T.ones(2)]}]),
        ("namedtuples", lambda T: [Point(0, np.zeros(2)), Point(1, np.ones(2))]),
        ("nested", lambda T: [{"img": (np.zeros((2, 2), np.uint8), [T.tensor(1), "x"]), "meta": Point(1.0, 2)},
                              {"img": (np.ones((2, 2), np.uint8), [T.tensor(2), "y"]), "meta": Point(3.0, 4)}]),
        ("ordered_dict", lambda T: [collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)]),
    ]


def _normalize(obj, T):
    """A comparable plain form: tensors -> ('T', dtype name, nested list)."""
    if isinstance(obj, T.Tensor):
        return ("T", str(obj.dtype).split(".")[-1], obj.tolist())
    if isinstance(obj, np.ndarray):
        return ("np", str(obj.dtype), obj.tolist())
    if isinstance(obj, dict):
        return (type(obj).__name__, [(k, _normalize(v, T)) for k, v in obj.items()])
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, [_normalize(v, T) for v in obj])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_normalize(v, T) for v in obj])
    return obj


@pytest.mark.torch
@pytest.mark.parametrize("name,build", _samples(), ids=[n for n, _ in _samples()])
def test_default_collate_matches_torch(name, build):
    import torch
    from torch.utils.data import default_collate as torch_collate

    assert _normalize(default_collate(build(fabric)), fabric) == _normalize(torch_collate(build(torch)), torch)


@pytest.mark.torch
@pytest.mark.parametrize("name,build", _samples(), ids=[n for n, _ in _samples()])
def test_default_convert_matches_torch(name, build):
    import torch
    from torch.utils.data import default_convert as torch_convert

    for sample in build(fabric)[:1]:
        tsample = build(torch)[0]
        assert _normalize(default_convert(sample), fabric) == _normalize(torch_convert(tsample), torch)


def test_collate_examples():
    assert default_collate([0, 1, 2]).tolist() == [0, 1, 2]
    out = default_collate([(0, 1), (2, 3)])
    assert isinstance(out, list) and [t.tolist() for t in out] == [[0, 2], [1, 3]]
    p = default_collate([Point(0, 0), Point(1, 1)])
    assert isinstance(p, Point) and p.x.tolist() == [0, 1]
    assert default_collate([1.5, 2.0]).dtype == fabric.float64
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_convert((1, np.int64(2)))[1].dtype == fabric.int64


def test_collate_keeps_autograd():
    a = fabric.ones(2, requires_grad=True)
    b = fabric.zeros(2, requires_grad=True)
    out = default_collate([a * 2, b * 3])
    out.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [3.0, 3.0]


def test_collate_errors():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([{1, 2}, {3}])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([fabric.zeros(2), fabric.zeros(3)])


def test_custom_collate_fn_map():
    class Box:
        def __init__(self, v):
            self.v = v

    fmap = dict(default_collate_fn_map)
    fmap[Box] = lambda batch, *, collate_fn_map: sum(b.v for b in batch)
    assert collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=fmap)[0] == 4


def test_default_convert_leaves_strings_and_objects():
    arr = np.array(["a", "b"])
    assert default_convert(arr) is arr
    assert default_convert("x") == "x"
    t = fabric.zeros(1)
    assert default_convert(t) is t
    assert default_convert(range(3)) == [0, 1, 2]
