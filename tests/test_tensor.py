"""Tensor creation, attributes, conversion, devices, printing, views."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import fabric


def test_creation_functions():
    assert fabric.zeros(2, 3).shape == (2, 3)
    assert fabric.zeros((2, 3)).shape == (2, 3)
    assert fabric.ones([4]).tolist() == [1.0] * 4
    assert fabric.full((2,), 7).dtype == fabric.int64
    assert fabric.full((2,), 7.0).dtype == fabric.float32
    assert fabric.full((2,), True).dtype == fabric.bool
    assert fabric.empty(3).shape == (3,)
    assert fabric.eye(3).numpy().tolist() == np.eye(3).tolist()
    assert fabric.eye(2, 3).shape == (2, 3)
    assert fabric.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert fabric.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert fabric.arange(5).dtype == fabric.int64
    assert fabric.arange(5.0).dtype == fabric.float32
    assert fabric.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    x = fabric.ones(2, 3, dtype=fabric.float64)
    for f in (fabric.zeros_like, fabric.ones_like, fabric.empty_like):
        y = f(x)
        assert y.shape == x.shape and y.dtype == fabric.float64
    assert fabric.full_like(x, 3).tolist() == [[3.0] * 3] * 2
    z = fabric.zeros(2, requires_grad=True)
    assert z.requires_grad and z.is_leaf


@pytest.mark.torch
def test_arange_linspace_match_torch():
    import torch

    for args in [(0, 1, 0.1), (-3, 7, 0.7), (10,), (1, 2, 0.3)]:
        np.testing.assert_array_equal(fabric.arange(*args).numpy(), torch.arange(*args).numpy())
    for args in [(0, 1, 7), (-2.5, 3.3, 11), (0, 1, 1), (3, -3, 100)]:
        np.testing.assert_allclose(fabric.linspace(*args).numpy(), torch.linspace(*args).numpy(), rtol=0, atol=1e-7)


def test_tensor_copies_and_from_numpy_shares():
    a = np.arange(3.0)
    t = fabric.tensor(a)
    a[0] = 100
    assert t[0].item() == 0.0
    s = fabric.from_numpy(a)
    a[1] = 50
    assert s[1].item() == 50
    s[2] = -1
    assert a[2] == -1
    assert fabric.as_tensor(a)._data is a
    with pytest.raises(TypeError):
        fabric.from_numpy([1, 2])


def test_tensor_from_nested_and_tensors():
    assert fabric.tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert fabric.tensor([fabric.tensor(1.0), fabric.tensor(2.0)]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError):
        fabric.tensor([[1, 2], [3]])
    assert fabric.tensor(3).ndim == 0
    assert fabric.tensor([]).shape == (0,)


def test_attributes():
    x = fabric.zeros(2, 3, 4)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.dim() == x.ndim == 3
    assert x.numel() == 24
    assert x.stride() == (12, 4, 1)
    assert x.transpose(0, 2).stride() == (1, 4, 12)
    assert x.is_contiguous() and not x.transpose(0, 1).is_contiguous()
    assert x.transpose(0, 1).contiguous().is_contiguous()
    assert x.device == fabric.device("cpu")
    assert str(x.device) == "cpu"
    assert x.element_size() == 4
    assert len(x) == 2
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)
    with pytest.raises(TypeError):
        len(fabric.tensor(1.0))


def test_item_tolist_bool_numpy():
    assert fabric.tensor([2.5]).item() == 2.5
    assert isinstance(fabric.tensor(3).item(), int)
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        fabric.ones(2).item()
    assert fabric.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert bool(fabric.tensor([1.0])) and not bool(fabric.tensor(0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(fabric.ones(2))
    x = fabric.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    assert np.asarray(fabric.ones(2)).tolist() == [1.0, 1.0]
    assert float(fabric.tensor(1.5)) == 1.5 and int(fabric.tensor(2)) == 2
    assert [1, 2, 3][fabric.tensor(1)] == 2


def test_iteration_yields_rows():
    rows = list(fabric.arange(6).reshape(3, 2))
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]


def test_to_and_conversions():
    x = fabric.tensor([1.7, -2.2])
    assert x.to(fabric.float64).dtype == fabric.float64
    assert x.to("cpu") is x
    assert x.to("cpu", copy=True) is not x
    assert x.long().tolist() == [1, -2]
    assert x.int().dtype == fabric.int32
    assert x.double().dtype == fabric.float64
    assert x.half().dtype == fabric.float16
    assert x.bool().tolist() == [True, True]
    assert x.float() is x
    assert x.type_as(fabric.zeros(1, dtype=fabric.float64)).dtype == fabric.float64
    assert x.to(fabric.zeros(1, dtype=fabric.int64)).dtype == fabric.int64
    assert x.type() == "torch.FloatTensor"
    assert x.cpu() is x


def test_to_is_differentiable_and_casts_gradients():
    x = fabric.ones(3, requires_grad=True)
    y = x.to(fabric.float64) * 2
    y.sum().backward()
    assert x.grad.dtype == fabric.float32
    assert x.grad.tolist() == [2.0] * 3


def test_cuda_absent_is_clean():
    if fabric.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert fabric.cuda.device_count() == 0
    assert fabric.cuda.unavailable_reason()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        fabric.ones(2).to("cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        fabric.ones(2).cuda()


def test_device_objects():
    d = fabric.device("cuda:1")
    assert d.type == "cuda" and d.index == 1
    assert repr(d) == "device(type='cuda', index=1)"
    assert str(d) == "cuda:1"
    assert fabric.device("cpu") == "cpu"
    assert fabric.device("cuda", 0) == fabric.device("cuda:0")
    with pytest.raises(RuntimeError):
        fabric.device("tpu")
    with pytest.raises(RuntimeError):
        fabric.device("cuda:x")


def test_device_mismatch_error_names_devices():
    class FakeCuda:
        pass
    # fabric checks the array class; simulate a CUDA array by a subclass-free object is not possible on CPU,
    # so check the message helper directly
    from fabric.ops._util import device_mismatch

    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        a = type("T", (), {"device": fabric.device("cuda:0")})()
        b = type("T", (), {"device": fabric.device("cpu")})()
        device_mismatch(a, b)


def test_repr_like_torch():
    assert repr(fabric.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(fabric.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(fabric.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(fabric.tensor([True, False])) == "tensor([ True, False])"
    assert repr(fabric.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    x = fabric.tensor([1.0], requires_grad=True)
    assert repr(x * 2) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(fabric.tensor([1.0], dtype=fabric.float64)) == "tensor([1.], dtype=fabric.float64)"
    assert repr(fabric.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(fabric.tensor(3.5)) == "tensor(3.5000)"
    assert repr(fabric.tensor([[1.0, 2.0], [3.0, 4.0]])) == "tensor([[1., 2.],\n        [3., 4.]])"
    assert "..." in repr(fabric.zeros(5000))


@pytest.mark.torch
def test_repr_matches_torch_for_common_values():
    import torch

    rng = np.random.default_rng(0)
    cases = [rng.standard_normal((3, 4)).astype(np.float32), np.array([1e-5, 1.0], np.float32),
             np.array([1e10, 1.0], np.float32), np.arange(12).reshape(3, 4), np.array([0.5, np.nan, np.inf], np.float32),
             rng.standard_normal((2, 3, 2)).astype(np.float32), np.array([-1.5, 2.25], np.float32),
             rng.standard_normal(2000).astype(np.float32)]
    for c in cases:
        ours = repr(fabric.from_numpy(c.copy())).replace("fabric.", "torch.")
        theirs = repr(torch.from_numpy(c.copy()))
        assert ours == theirs, (ours, theirs)


def test_views_share_memory_and_version():
    x = fabric.zeros(4, 3)
    v = x[1]
    r = x.reshape(12)
    t = x.t()
    v[0] = 5
    assert x[1, 0].item() == 5 and r[3].item() == 5 and t[0, 1].item() == 5
    assert x._version == v._version == r._version == t._version == 1
    x.add_(1)
    assert v._version == 2
    d = x.detach()
    d.zero_()
    assert x.sum().item() == 0
    assert x._version == 3


def test_clone_and_contiguous():
    x = fabric.arange(6.0).reshape(2, 3)
    c = x.clone()
    c[0, 0] = 9
    assert x[0, 0].item() == 0
    t = x.t()
    assert t.contiguous().is_contiguous()
    assert x.contiguous() is x


def test_pickle_and_deepcopy():
    x = fabric.arange(6.0).reshape(2, 3).requires_grad_()
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.requires_grad
    z = copy.deepcopy(x)
    assert z.tolist() == x.tolist() and z._data is not x._data
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


def test_dlpack_roundtrip():
    x = fabric.arange(4.0)
    y = fabric.from_dlpack(x)
    y[0] = 7
    assert x[0].item() == 7
    n = np.from_dlpack(x)
    assert n.tolist() == x.tolist()
    z = fabric.from_dlpack(np.arange(3))
    assert z.tolist() == [0, 1, 2]


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point"):
        fabric.zeros(2, dtype=fabric.int64).requires_grad_()
    x = fabric.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False
    assert not x.detach().requires_grad


def test_data_attribute():
    x = fabric.ones(2, requires_grad=True)
    d = x.data
    assert not d.requires_grad
    d.mul_(3)
    assert x.tolist() == [3.0, 3.0]
    x.data = fabric.zeros(2)
    assert x.tolist() == [0.0, 0.0] and x.requires_grad


def test_new_factories():
    x = fabric.ones(2, dtype=fabric.float64)
    assert x.new_zeros(3).dtype == fabric.float64
    assert x.new_ones((2, 2)).shape == (2, 2)
    assert x.new_full((2,), 5).tolist() == [5.0, 5.0]
    assert x.new_tensor([1, 2]).dtype == fabric.float64


def test_floating_point_warnings_of_fabric_kernels_are_silenced_like_pytorch():
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('error')\n"
            "import numpy as np, fabric\n"
            "x = fabric.tensor([0.0, 1.0])\n"
            "assert (x / x).isnan().tolist() == [True, False]\n"
            "assert fabric.tensor([-1.0]).log().isnan().item() and fabric.tensor([1e4]).exp().isinf().item()\n"
            "try:\n    np.log(np.array([-1.0]))\nexcept RuntimeWarning:\n    print('numpy still warns')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "numpy still warns"


def test_size_items_must_be_integers():
    assert fabric.Size([fabric.tensor(3), True, np.int64(4)]) == (3, 1, 4)
    assert type(fabric.Size([True])[0]) is int and type(fabric.Size([2, 3])[:1]) is fabric.Size
    for bad, i, name in (([1.5], 0, "float"), ([2, "a"], 1, "str"), ([fabric.tensor(3.0)], 0, "Tensor"),
                         ([None], 0, "NoneType"), ([np.float64(2)], 0, "numpy.float64")):
        with pytest.raises(TypeError, match=rf"torch.Size\(\) takes an iterable of 'int' \(item {i} is '{name}'\)"):
            fabric.Size(bad)


@pytest.mark.torch
def test_size_errors_match_torch():
    torch = pytest.importorskip("torch")
    for bad in ([1.5], [2, "a"], [None], [np.float64(2)]):
        with pytest.raises(TypeError) as ours:
            fabric.Size(bad)
        with pytest.raises(TypeError) as theirs:
            torch.Size(bad)
        assert str(ours.value) == str(theirs.value)
