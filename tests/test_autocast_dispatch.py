"""Autocast applied by the dispatch path (ops/_autocast.entry) from each op's declaration, and the weight-cast
cache; tests/test_amp.py compares the resulting dtypes and values with torch op by op."""
import inspect

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric.ops import _autocast, _registry

F16 = fabric.float16


def _autocast_cpu(**kw):
    return fabric.autocast("cpu", dtype=F16, **kw)


def test_every_listed_op_that_fabric_has_is_declared_with_its_policy():
    declared = {d.autocast for d in _registry.REGISTRY.values() if d.autocast}
    # names on the lists that fabric implements under another spelling, or not at all
    elsewhere = {"grid_sampler", "conv_tbc", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "stft",
                 "lu_solve", "orgqr", "ormqr", "geqrf", "linalg_householder_product", "triangular_solve",
                 "fractional_max_pool2d", "fractional_max_pool3d", "reflection_pad1d", "reflection_pad2d",
                 "replication_pad1d", "replication_pad2d", "replication_pad3d", "index_put", "scatter_add",
                 "addcdiv", "addcmul", "renorm", "dist", "quantile", "nanquantile", "cat", "stack", "index_copy",
                 "erfinv", "expm1", "log10", "log2", "log1p", "reciprocal", "rsqrt", "acos", "asin", "cosh",
                 "sinh", "tan", "atan2"}
    listed = {op for table in _autocast.POLICIES.values() for op in table}
    missing = sorted(listed - declared - elsewhere)
    assert missing == [], missing


def test_prologue_keeps_the_function_its_signature_and_its_lines():
    with _autocast_cpu():  # the first activation installs the prologues
        pass
    for f in (fabric.mm, fabric.exp, F.cross_entropy, F.linear, fabric.linalg.vector_norm):
        body = inspect.unwrap(f)
        assert body.__code__.co_names[:2] == ("__fabric_autocast__", "active"), f
        assert body.__code__.co_filename == inspect.getsourcefile(body)
    assert fabric.Tensor.mm is fabric.mm and fabric.ops.linalg.products.mm is fabric.mm
    assert str(inspect.signature(F.cross_entropy)).startswith("(input, target, weight=None")
    # a traceback from the op's body points at the op's own line
    lines, first = inspect.getsourcelines(fabric.mm)
    with pytest.raises(RuntimeError, match="self must be a matrix") as info:
        fabric.mm(fabric.ones(2), fabric.ones(2, 2))
    tb = [e for e in info.traceback if e.name == "mm"]
    assert tb and first <= tb[0].lineno + 1 <= first + len(lines)


def test_out_and_non_tensor_arguments_pass_through():
    a = fabric.ones(2, 2)
    with _autocast_cpu():
        out = fabric.empty(2, 2)
        assert fabric.matmul(a, a, out=out) is out and out.dtype is fabric.float32
        assert fabric.einsum("ij,jk->ik", a, a).dtype is F16
        assert fabric.einsum("ij,jk->ik", [a, a]).dtype is F16  # operands in a list
        assert fabric.linalg.multi_dot([a, a, a]).dtype is F16
        with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
            assert fabric.chain_matmul(a, a).dtype is F16
        with pytest.raises(TypeError):
            fabric.mm(a, "x")


def test_listed_op_bodies_run_with_autocast_excluded():
    seen = []
    real = _autocast.cast

    def spy(op, *args):
        r = real(op, *args)
        if r is not None:
            seen.append(op)
        return r

    _autocast.cast = spy
    try:
        with _autocast_cpu():
            F.cross_entropy(fabric.randn(3, 4), fabric.tensor([0, 1, 2]))
            fabric.addmm(fabric.zeros(3), fabric.ones(2, 4), fabric.ones(4, 3))
    finally:
        _autocast.cast = real
    assert seen == ["cross_entropy", "addmm"]  # not log_softmax/nll_loss/mm inside them


def test_weight_cast_cache_shares_one_cast_per_region_like_torch():
    torch = pytest.importorskip("torch")
    for lib in (fabric, torch):
        w = lib.randn(4, 4, requires_grad=True)
        x = lib.randn(2, 4)
        with lib.autocast("cpu", dtype=lib.float16):
            a, b = lib.mm(x, w), lib.mm(x, w)
        shared = a.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]
        assert shared, lib.__name__
        with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
            a, b = lib.mm(x, w), lib.mm(x, w)
        assert a.grad_fn.next_functions[1][0] is not b.grad_fn.next_functions[1][0], lib.__name__
        with lib.autocast("cpu", dtype=lib.float16):  # a new region casts again
            c = lib.mm(x, w)
        (a.float().sum() + c.float().sum()).backward()
        np.testing.assert_allclose(w.grad.numpy(), np.repeat(2 * x.numpy().sum(0)[:, None], 4, 1), rtol=3e-3)


def test_weight_cast_cache_rules():
    w = fabric.randn(3, 3, requires_grad=True)
    x = fabric.randn(3, 3)
    with _autocast_cpu():
        fabric.mm(x, w)
        assert list(_autocast.state.cache) == [id(w)]  # the leaf requiring grad only, not x
        fabric.mm(w * 1, x)  # not a leaf: not cached
        with fabric.no_grad():
            fabric.mm(x, fabric.randn(3, 3, requires_grad=True))  # under no_grad: not cached
        assert len(_autocast.state.cache) == 1
        with _autocast_cpu():
            pass  # an inner region's exit keeps the cache
        assert len(_autocast.state.cache) == 1
        fabric.clear_autocast_cache()
        assert not _autocast.state.cache
        fabric.mm(x, w)
    assert not _autocast.state.cache  # the outermost region's exit clears it


def test_entry_without_source_is_an_equivalent_wrapper():
    namespace = {}
    exec("def dtypes(a, b, *, out=None):\n    return a.dtype, b.dtype\n", {}, namespace)
    f = _autocast.entry(namespace["dtypes"], "mm")
    assert f is not namespace["dtypes"] and f.__wrapped__ is namespace["dtypes"]
    a = fabric.ones(2, 2)
    with _autocast_cpu():
        assert f(a, b=a) == (F16, F16)
        assert f(a, a, out=a) == (fabric.float32, fabric.float32)  # out=: not autocast
        assert f(a, a.double()) == (F16, fabric.float64)
    assert f(a, a) == (fabric.float32, fabric.float32)
