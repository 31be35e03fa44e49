"""The op registry (ops/_registry.py): one declaration per op, from which the module's __all__,
the Tensor methods and in-place methods and the autocast cast come."""
import math

import numpy as np
import pytest

import fabric
from fabric.ops import _registry, pointwise


def test_declarations_derive_names_and_methods():
    d = _registry.REGISTRY["atan2"]
    assert d.function is fabric.atan2 and d.inplace == "atan2_" and d.aliases == ("arctan2",)
    for name in ("atan2", "atan2_", "arctan2", "arctan2_"):
        assert name in pointwise.__all__ and name in fabric.ops.__all__
    assert fabric.Tensor.arctan2_ is fabric.atan2_ and fabric.Tensor.atan2 is fabric.atan2
    # maximum has no in-place variant in PyTorch: none is declared, none installed
    assert _registry.REGISTRY["maximum"].inplace is None and not hasattr(fabric.Tensor, "maximum_")
    assert "maximum_" not in pointwise.__all__
    # fabric.special's functions are declared under their own namespace and are not Tensor methods
    assert _registry.REGISTRY["special.erfcx"].method is None and not hasattr(fabric.Tensor, "erfcx")


def test_declared_autocast_policy_and_empty_slots():
    assert _registry.REGISTRY["exp2"].autocast is None
    assert _registry.REGISTRY["log1p"].autocast == "log1p"  # CUDA autocast: float32
    d = _registry.REGISTRY["sin"]
    assert (d.onnx, d.fusion) == (None, "elementwise")
    assert d.vmap is not None and d.jvp is not None   # the pointwise tables' batching and JVP rules
    with pytest.raises(RuntimeError, match="declared twice"):
        _registry.declare(fabric.sin)


def test_binary_table_ops_keep_their_nodes_and_gradients():
    a = fabric.tensor([1.0, 3.0, 2.0], dtype=fabric.float64, requires_grad=True)
    b = fabric.tensor([2.0, 1.0, 2.0], dtype=fabric.float64, requires_grad=True)
    y = fabric.maximum(a, b)
    assert type(y.grad_fn).__name__ == "MaximumBackward0"
    y.sum().backward()
    assert a.grad.tolist() == [0.0, 1.0, 0.5] and b.grad.tolist() == [1.0, 0.0, 0.5]
    for f in (fabric.atan2, fabric.hypot, fabric.logaddexp, fabric.logaddexp2, fabric.fmin, fabric.fmax):
        assert fabric.autograd.gradcheck(f, (a, b + 0.25))


def test_angle_added_by_the_recipe():
    x = fabric.tensor([-1.5, 0.0, -0.0, 2.0, math.nan, math.inf, -math.inf], requires_grad=True)
    y = fabric.angle(x)
    np.testing.assert_array_equal(y.detach().numpy(), np.array([math.pi, 0, 0, 0, math.nan, 0, math.pi], np.float32))
    assert type(y.grad_fn).__name__ == "AngleBackward0" and x.angle().tolist()[0] == y.tolist()[0]
    y.sum().backward()
    assert x.grad.tolist() == [0.0] * 7
    assert fabric.angle(fabric.tensor([-1, 2])).dtype is fabric.float32
    assert not hasattr(fabric.Tensor, "angle_")


@pytest.mark.torch
def test_angle_matches_torch():
    import torch

    a = np.array([-1.5, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf])
    for dt in (np.float16, np.float32, np.float64):
        np.testing.assert_array_equal(fabric.angle(fabric.from_numpy(a.astype(dt))).numpy(),
                                      torch.angle(torch.from_numpy(a.astype(dt))).numpy())
    assert fabric.angle(fabric.tensor([-3, 0, 4])).tolist() == torch.angle(torch.tensor([-3, 0, 4])).tolist()


def test_internal_helpers_are_not_public():
    for name in ("binary", "copy_into_out", "scalar_tensor_like", "builtins_bool"):
        assert not hasattr(fabric, name), name
        assert name not in fabric.ops.__all__, name


def test_declared_autocast_is_what_the_entry_applies():
    import inspect

    from fabric.ops import _autocast

    assert _registry.REGISTRY["atan2"].autocast == "atan2"  # CUDA: promote
    x = fabric.ones(2, dtype=fabric.float16)
    assert _autocast.cast("log1p", x) is None  # autocast off: nothing to do
    with fabric.autocast("cpu", dtype=fabric.float16):  # the first activation installs the prologues
        pass
    for key, d in _registry.REGISTRY.items():
        if d.autocast is not None:
            body = inspect.unwrap(d.function)
            assert body.__code__.co_names[:2] == ("__fabric_autocast__", "active"), key


def _public(key):
    obj = fabric
    for part in key.split("."):
        obj = getattr(obj, part, None)
    return obj


def test_each_declaration_is_the_public_function_at_its_name():
    import fabric.nn.functional  # noqa: F401  (declares its ops)

    wrong = [key for key, d in _registry.REGISTRY.items() if d.top_level and _public(key) is not d.function]
    assert wrong == []


def test_tensor_methods_come_from_declarations():
    declared = _registry.tensor_methods()
    for name, fn in declared.items():
        if name in fabric.Tensor.__dict__ and fabric.Tensor.__dict__[name] is not fn:
            continue  # the Tensor class defines its own (never overridden)
        assert getattr(fabric.Tensor, name) is fn, name
    # every op function installed as a Tensor method comes from a declaration (there is no hand-kept list)
    for name, value in vars(fabric.Tensor).items():
        if callable(value) and getattr(value, "__module__", "").startswith(("fabric.ops.", "fabric._random_ops")) \
                and name[:2] != "__":
            assert name in declared, name
    # Tensor-only methods (PyTorch has no torch.cumsum_): methods, not in fabric's namespace
    only = _registry.method_only_names()
    assert {"cumsum_", "divide_", "new", "is_shared"} <= only
    for name in only:
        assert hasattr(fabric.Tensor, name) and not hasattr(fabric, name) and name not in fabric.ops.__all__, name


def test_derived_all_holds_every_declared_name():
    from fabric.ops import arith, attributes, indexing, inplace, join, reduce, shape, sorting

    for module in (arith, attributes, reduce, inplace, sorting, join, pointwise, shape, indexing):
        names = _registry.public_names(module.__name__)
        assert names and set(names) <= set(module.__all__), module.__name__
        assert len(module.__all__) == len(set(module.__all__)), module.__name__
        assert set(names) - _registry.method_only_names() <= set(fabric.ops.__all__)
