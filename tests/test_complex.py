"""Complex tensors: dtypes, promotion, creation, printing, parts and views, conjugation,
casting, errors of ops PyTorch does not define for complex, save/load."""
from __future__ import annotations

import io
import pickle
import warnings

import numpy as np
import pytest

import fabric

Z = [1 + 2j, 3 - 1j, -0.5 + 0.25j]


def test_dtype_objects():
    assert fabric.cfloat is fabric.complex64 and fabric.cdouble is fabric.complex128
    for d, item, real in ((fabric.complex64, 8, fabric.float32), (fabric.complex128, 16, fabric.float64)):
        assert d.is_complex and not d.is_floating_point and d.is_signed
        assert d.itemsize == item and d.to_real() is real and real.to_complex() is d
    assert not fabric.float32.is_complex
    assert fabric.finfo(fabric.complex64).eps == fabric.finfo(fabric.float32).eps
    assert repr(fabric.complex128) == "fabric.complex128"


def test_default_complex_dtype_follows_default_float():
    assert fabric.get_default_complex_dtype() is fabric.complex64
    fabric.set_default_dtype(fabric.float64)
    try:
        assert fabric.get_default_complex_dtype() is fabric.complex128
        assert fabric.tensor([1j]).dtype is fabric.complex128
        assert (fabric.tensor([1, 2]) * 1j).dtype is fabric.complex128
    finally:
        fabric.set_default_dtype(fabric.float32)


@pytest.mark.parametrize("a,b,expected", [
    ("complex64", "float64", "complex128"), ("complex64", "int64", "complex64"), ("complex64", "complex128", "complex128"),
    ("float16", "complex64", "complex64"), ("bool", "complex128", "complex128"), ("bfloat16", "complex64", "complex64"),
])
def test_promote_types(a, b, expected):
    got = fabric.promote_types(getattr(fabric, a), getattr(fabric, b))
    assert got is getattr(fabric, expected)
    assert fabric.promote_types(getattr(fabric, b), getattr(fabric, a)) is got


def test_promotion_with_python_complex_and_zero_dim():
    assert (fabric.ones(2) + 1j).dtype is fabric.complex64
    assert (fabric.ones(2, dtype=fabric.float64) * 1j).dtype is fabric.complex128
    assert (fabric.ones(2, dtype=fabric.int32) + 2j).dtype is fabric.complex64
    # a 0-d complex tensor lifts a dimensioned float64 tensor to complex128 (PyTorch's combine_categories)
    assert (fabric.tensor(1j) + fabric.ones(2, dtype=fabric.float64)).dtype is fabric.complex128
    assert (fabric.tensor([1j]) + fabric.tensor(2.0, dtype=fabric.float64)).dtype is fabric.complex64
    assert fabric.result_type(fabric.tensor([1, 2]), 1j) is fabric.complex64
    np.testing.assert_allclose((fabric.tensor([1.0, 2.0]) * (1 + 1j)).numpy(), [1 + 1j, 2 + 2j])


def test_creation():
    t = fabric.tensor(Z)
    assert t.dtype is fabric.complex64 and t.is_complex() and fabric.is_complex(t) and not t.is_floating_point()
    np.testing.assert_array_equal(t.numpy(), np.array(Z, np.complex64))
    assert fabric.tensor(np.array(Z)).dtype is fabric.complex128
    assert fabric.zeros(2, dtype=fabric.cfloat).dtype is fabric.complex64
    assert fabric.ones(2, 2, dtype=fabric.cdouble).numpy().tolist() == [[1, 1], [1, 1]]
    assert fabric.full((2,), 1 + 2j).dtype is fabric.complex64
    assert fabric.tensor([1, 2]).to(fabric.cfloat).tolist() == [1 + 0j, 2 + 0j]
    assert fabric.tensor([1.0]).type(fabric.complex128).dtype is fabric.complex128
    assert fabric.tensor([1j]).type() == "torch.ComplexFloatTensor"
    assert fabric.tensor([1j], requires_grad=True).requires_grad


def test_creation_errors():
    with pytest.raises(TypeError, match="^must be real number, not complex$"):
        fabric.tensor([1 + 2j], dtype=fabric.float32)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
        fabric.full((2,), 1 + 2j, dtype=fabric.float32)
    assert fabric.full((2,), 3 + 0j, dtype=fabric.int64).tolist() == [3, 3]


def test_item_tolist_and_python_conversions():
    t = fabric.tensor([[1 + 2j]])
    assert t.item() == 1 + 2j and isinstance(t.item(), complex)
    assert t.tolist() == [[1 + 2j]]
    assert complex(t) == 1 + 2j
    assert float(fabric.tensor(2 + 0j)) == 2.0 and int(fabric.tensor(3 + 0j)) == 3
    with pytest.raises(RuntimeError, match="^value cannot be converted to type double without overflow$"):
        float(t)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without overflow$"):
        int(t)


def test_randn_and_rand_draw_real_imag_pairs():
    fabric.manual_seed(0)
    z = fabric.randn(1000, dtype=fabric.cfloat)
    fabric.manual_seed(0)
    pairs = fabric.randn(1000, 2) * 0.5 ** 0.5
    np.testing.assert_allclose(fabric.view_as_real(z).numpy(), pairs.numpy(), rtol=1e-6)
    fabric.manual_seed(1)
    u = fabric.rand(3, dtype=fabric.cdouble)
    fabric.manual_seed(1)
    np.testing.assert_array_equal(fabric.view_as_real(u).numpy(), fabric.rand(3, 2, dtype=fabric.float64).numpy())
    assert fabric.randn_like(z).dtype is fabric.complex64


def test_printing():
    assert repr(fabric.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(fabric.tensor(2 + 3j)) == "tensor(2.+3.j)"
    assert repr(fabric.tensor([1j], dtype=fabric.complex128)) == "tensor([0.+1.j], dtype=fabric.complex128)"
    assert repr(fabric.tensor([1.5 + 2j, -3.25 - 1e-3j])) == "tensor([ 1.5000+2.0000e+00j, -3.2500-1.0000e-03j])"
    assert repr(fabric.zeros(0, dtype=fabric.cfloat)) == "tensor([], dtype=fabric.complex64)"


def test_real_and_imag_are_views_that_write_through():
    t = fabric.tensor(Z)
    assert t.real.tolist() == [1.0, 3.0, -0.5] and t.imag.tolist() == [2.0, -1.0, 0.25]
    assert t.real.dtype is fabric.float32 and fabric.real(t)._base is t
    t.real[0] = 5
    t.imag[1] = 7
    assert t.tolist()[:2] == [5 + 2j, 3 + 7j]
    t.imag = fabric.zeros(3)
    assert t.imag.tolist() == [0, 0, 0]
    r = fabric.tensor([1.0, 2.0])
    assert r.real is r
    with pytest.raises(RuntimeError, match="^imag is not implemented for tensors with non-complex dtypes.$"):
        r.imag  # noqa: B018


def test_view_as_real_and_view_as_complex_share_memory():
    z = fabric.tensor(Z)
    r = fabric.view_as_real(z)
    assert r.shape == (3, 2) and r.dtype is fabric.float32 and r.stride() == (2, 1)
    r[0, 1] = 9
    assert z[0].item() == 1 + 9j
    back = fabric.view_as_complex(r)
    back[2] = 0
    assert z[2].item() == 0
    assert fabric.view_as_real(fabric.tensor(1j)).tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="^view_as_real is only supported for complex tensors$"):
        fabric.view_as_real(fabric.ones(2))
    with pytest.raises(RuntimeError, match="^Tensor must have a last dimension of size 2$"):
        fabric.view_as_complex(fabric.ones(3))
    with pytest.raises(RuntimeError, match="^Tensor must have a last dimension with stride 1$"):
        fabric.view_as_complex(fabric.ones(2, 2).t())
    with pytest.raises(RuntimeError, match="^view_as_complex is only supported for float and double tensors, but got "
                                           "a tensor of scalar type: Long$"):
        fabric.view_as_complex(fabric.ones(2, dtype=fabric.int64))


def test_complex_polar_conj():
    re, im = fabric.tensor([1.0, 3.0]), fabric.tensor([[2.0], [-1.0]])
    z = fabric.complex(re, im)
    assert z.shape == (2, 2) and z.tolist()[1] == [1 - 1j, 3 - 1j]
    p = fabric.polar(fabric.tensor([2.0], dtype=fabric.float64), fabric.tensor([np.pi / 2], dtype=fabric.float64))
    assert p.dtype is fabric.complex128 and abs(p.item() - 2j) < 1e-12
    c = z.conj()
    assert c.tolist()[1] == [1 + 1j, 3 + 1j] and not c.is_conj() and c.resolve_conj() is c
    assert fabric.conj_physical(z).tolist() == c.tolist() and c.resolve_neg() is c and not c.is_neg()
    assert re.conj() is re
    with pytest.raises(RuntimeError, match="^Expected both inputs to be Half, Float or Double tensors but got Long and "
                                           "Long$"):
        fabric.complex(fabric.tensor([1]), fabric.tensor([1]))
    with pytest.raises(RuntimeError, match="^Expected object of scalar type Float but got scalar type Double for "
                                           "second argument$"):
        fabric.complex(re, re.double())


def test_conjugate_transposes():
    m = fabric.tensor([[1j, 2.0]])
    assert m.H.tolist() == [[-1j], [2]] and m.mH.tolist() == [[-1j], [2]] and m.adjoint().tolist() == [[-1j], [2]]
    with pytest.raises(RuntimeError, match="^tensor.H is only supported on matrices"):
        fabric.tensor([1j]).H  # noqa: B018


def test_abs_angle_sgn():
    z = fabric.tensor([3 + 4j, 0j, -2j])
    assert fabric.abs(z).tolist() == [5, 0, 2] and fabric.abs(z).dtype is fabric.float32
    np.testing.assert_allclose(fabric.angle(z).numpy(), np.angle(np.array([3 + 4j, 0, -2j])), rtol=1e-6)
    np.testing.assert_allclose(fabric.sgn(z).numpy(), [0.6 + 0.8j, 0, -1j], rtol=1e-6)


def test_casting_complex_to_real_warns_and_keeps_real_part():
    z = fabric.tensor([1 + 2j])
    with pytest.warns(UserWarning, match="^Casting complex values to real discards the imaginary part$"):
        r = z.to(fabric.float64)
    assert r.tolist() == [1.0]


@pytest.mark.parametrize("call,exc,msg", [
    (lambda z: z < 1, NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z.max(), NotImplementedError, "\"max_all\" not implemented for 'ComplexFloat'"),
    (lambda z: z.max(0), RuntimeError, "max(): does not support complex input"),
    (lambda z: fabric.maximum(z, z), RuntimeError, "maximum not implemented for complex tensors."),
    (lambda z: z.sort(), RuntimeError, " Sort does not support complex dtypes on CPU"),
    (lambda z: z.argmax(), RuntimeError, "argmax(): does not support complex input"),
    (lambda z: z.clamp(0), NotImplementedError, "clamp is not supported for complex types"),
    (lambda z: fabric.relu(z), NotImplementedError, "clamp is not supported for complex types"),
    (lambda z: z.amax(), NotImplementedError, "\"max_values_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z.sign(), NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers. "
                                              "Please use torch.sgn instead."),
    (lambda z: z.floor(), NotImplementedError, "floor is not supported for complex inputs"),
    (lambda z: fabric.erf(z), NotImplementedError, "\"erf_vml_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: fabric.deg2rad(z), RuntimeError, "deg2rad is not supported for complex tensors."),
    (lambda z: fabric.atan2(z, z), NotImplementedError, "\"atan2_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z.topk(1), RuntimeError, " topk does not support complex dtypes on CPU"),
    (lambda z: z.median(), NotImplementedError, "\"median_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: fabric.floor_divide(z, 2), NotImplementedError, "\"div_floor_cpu\" not implemented for 'ComplexFloat'"),
])
def test_ordering_and_real_only_ops_raise_pytorchs_errors(call, exc, msg):
    z = fabric.tensor(Z)
    with pytest.raises(exc) as info:
        call(z)
    assert str(info.value) == msg
    assert (z == z).all() and not (z != z).any()


def test_pickle_and_save_load_round_trip(tmp_path):
    z = fabric.tensor(Z, dtype=fabric.complex128)
    assert pickle.loads(pickle.dumps(z)).tolist() == z.tolist()
    buf = io.BytesIO()
    fabric.save({"z": z, "w": fabric.tensor(Z)[::2]}, buf)
    buf.seek(0)
    out = fabric.load(buf)
    assert out["z"].dtype is fabric.complex128 and out["z"].tolist() == z.tolist()
    assert out["w"].dtype is fabric.complex64 and out["w"].tolist() == [Z[0], Z[2]]


@pytest.mark.torch
def test_matches_torch_printing_promotion_and_storage_names():
    torch = pytest.importorskip("torch")
    cases = [[1 + 2j, 3 - 1j], [[1j, 0], [2, -0.0j]], [float("nan") + 1j, 1e10j], [1 + 1j] * 30,
             [1.5 + 2j, -3.25 - 1e-3j]]
    for data in cases:
        assert repr(fabric.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "fabric.")
    big = fabric.tensor(np.arange(2000) * (1 + 1j))
    assert repr(big) == repr(torch.tensor(np.arange(2000) * (1 + 1j))).replace("torch.", "fabric.")
    for a, b in (("float16", "complex64"), ("complex64", "float64"), ("int8", "complex128")):
        got = fabric.promote_types(getattr(fabric, a), getattr(fabric, b))
        assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1]
    # files interchange with torch (ComplexFloatStorage / ComplexDoubleStorage)
    buf = io.BytesIO()
    fabric.save({"a": fabric.tensor(Z), "b": fabric.tensor(Z, dtype=fabric.complex128)}, buf)
    buf.seek(0)
    got = torch.load(buf)
    assert got["a"].dtype == torch.complex64 and got["a"].tolist() == fabric.tensor(Z).tolist()
    assert got["b"].dtype == torch.complex128
    buf = io.BytesIO()
    torch.save(torch.tensor(Z, dtype=torch.complex128).view(3, 1)[:, 0], buf)
    buf.seek(0)
    assert fabric.load(buf).tolist() == Z
    torch.manual_seed(3)
    fabric.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(fabric.randn(5, dtype=fabric.cfloat).numpy(),
                                   torch.randn(5, dtype=torch.cfloat).numpy(), rtol=1e-6)


def test_inplace_samplers_fill_real_and_imaginary_parts():
    fabric.manual_seed(5)
    z = fabric.empty(4, dtype=fabric.cfloat).uniform_(-1, 1)
    fabric.manual_seed(5)
    np.testing.assert_array_equal(fabric.view_as_real(z).numpy(), fabric.empty(4, 2).uniform_(-1, 1).numpy())
    fabric.manual_seed(5)
    z = fabric.empty(4, dtype=fabric.cdouble).normal_(1.0, 2.0)
    fabric.manual_seed(5)
    pairs = fabric.empty(4, 2, dtype=fabric.float64).normal_(1.0, 2.0 * 0.5 ** 0.5)
    np.testing.assert_allclose(fabric.view_as_real(z).numpy(), pairs.numpy())


def test_module_to_complex_warns_and_casts_floating_parameters():
    with pytest.warns(UserWarning, match="^Complex modules are a new feature"):
        m = fabric.nn.Linear(2, 2).to(fabric.cfloat)
    assert m.weight.dtype is fabric.complex64 and m.weight.requires_grad
    with pytest.raises(TypeError, match="^nn.Module.to only accepts floating point or complex dtypes"):
        fabric.nn.Linear(2, 2).to(fabric.int64)


@pytest.mark.torch
@pytest.mark.parametrize("name,kw", [("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
                                     ("Adam", {"lr": 0.1}), ("AdamW", {"lr": 0.1, "amsgrad": True}),
                                     ("Adamax", {}), ("NAdam", {}), ("RAdam", {}),
                                     ("RMSprop", {"centered": True, "momentum": 0.5}), ("Adagrad", {}),
                                     ("Adadelta", {}), ("Rprop", {}), ("ASGD", {})])
def test_complex_linear_trains_like_torch(name, kw):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((4, 3)) + 1j * np.random.default_rng(1).standard_normal((4, 3))
    torch.manual_seed(0)
    fabric.manual_seed(0)
    tl, fl = torch.nn.Linear(3, 2, dtype=torch.cfloat), fabric.nn.Linear(3, 2, dtype=fabric.cfloat)
    np.testing.assert_array_equal(fl.weight.detach().numpy(), tl.weight.detach().numpy())  # same init streams
    tx, fx = torch.tensor(x, dtype=torch.cfloat), fabric.tensor(x, dtype=fabric.cfloat)
    topt, fopt = getattr(torch.optim, name)(tl.parameters(), **kw), getattr(fabric.optim, name)(fl.parameters(), **kw)
    for _ in range(3):
        topt.zero_grad()
        fopt.zero_grad()
        tl(tx).abs().sum().backward()
        fl(fx).abs().sum().backward()
        np.testing.assert_allclose(fl.weight.grad.numpy(), tl.weight.grad.numpy(), rtol=1e-5, atol=1e-5)
        topt.step()
        fopt.step()
    np.testing.assert_allclose(fl.weight.detach().numpy(), tl.weight.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fl.bias.detach().numpy(), tl.bias.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.torch
def test_conv2d_on_complex_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    cplx = lambda *s: rng.standard_normal(s) + 1j * rng.standard_normal(s)
    arrays, g = (cplx(1, 2, 5, 5), cplx(3, 2, 3, 3), cplx(3)), cplx(1, 3, 3, 3)
    grads = []
    for T in (torch, fabric):
        xs = [T.tensor(a, requires_grad=True) for a in arrays]
        y = T.nn.functional.conv2d(*xs, stride=2, padding=1)
        grads.append([y.detach().numpy()] + [t.numpy() for t in T.autograd.grad(y, xs, T.tensor(g))])
    for ours, theirs in zip(grads[1], grads[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    with pytest.raises(NotImplementedError, match="\"LayerNormKernelImpl\" not implemented for 'ComplexFloat'"):
        fabric.nn.functional.layer_norm(fabric.ones(2, 3, dtype=fabric.cfloat), (3,))


def test_testing_helpers_take_complex():
    a = fabric.tensor([1 + 2j, 3j])
    fabric.testing.assert_close(a, a.clone())
    with pytest.raises(AssertionError, match="Mismatched elements: 2 / 2"):
        fabric.testing.assert_close(a, a + 1e-3j)
    t = fabric.testing.make_tensor((3,), dtype=fabric.cfloat, device="cpu", low=-1, high=1, requires_grad=True)
    assert t.dtype is fabric.complex64 and t.requires_grad
    parts = fabric.view_as_real(t.detach())
    assert bool(((parts >= -1) & (parts < 1)).all())


@pytest.mark.torch
@pytest.mark.parametrize("name", ["setitem", "setitem_real", "div_", "isreal", "isfinite", "isnan", "isinf", "isposinf",
                                  "bool", "arange", "linspace", "linspace_dtype", "exp_", "scalar_tensor", "abs_",
                                  "sqrt_", "add_real", "copy_to_real"])
def test_edge_cases_match_torch(name):
    torch = pytest.importorskip("torch")

    def setitem(z, v):
        z[0] = v
        return z

    cases = {
        "setitem": lambda T: setitem(T.tensor([1 + 1j, 2j]), 5 - 1j),
        "setitem_real": lambda T: setitem(T.tensor([1.0, 2.0]), 5 - 1j),
        "div_": lambda T: T.tensor([1 + 1j]).div_(2j),
        "isreal": lambda T: T.isreal(T.tensor([1 + 0j, 1j])),
        "isfinite": lambda T: T.isfinite(T.tensor([complex("nan"), 1j])),
        "isnan": lambda T: T.isnan(T.tensor([complex("nan"), 1j])),
        "isinf": lambda T: T.isinf(T.tensor([complex("inf"), 1j])),
        "isposinf": lambda T: T.isposinf(T.tensor([1j])),
        "bool": lambda T: T.tensor([0j, 1j]).bool(),
        "arange": lambda T: T.arange(3, dtype=T.cfloat),
        "linspace": lambda T: T.linspace(0, 1j, 3),
        "linspace_dtype": lambda T: T.linspace(1 + 2j, -3, 5, dtype=T.cdouble),
        "exp_": lambda T: T.tensor([1j]).exp_(),
        "scalar_tensor": lambda T: T.scalar_tensor(1j),
        "abs_": lambda T: T.tensor([3 + 4j]).abs_(),
        "sqrt_": lambda T: T.tensor([3 + 4j]).sqrt_(),
        "add_real": lambda T: T.tensor([1.0]).add_(1j),
        "copy_to_real": lambda T: T.zeros(2).copy_(T.tensor([1 + 1j, 2])),
    }
    out = []
    for T in (torch, fabric):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(repr(cases[name](T)).replace("torch.", "fabric."))
            except Exception as e:
                out.append(f"{type(e).__name__}: {e}")
    assert out[1] == out[0]
