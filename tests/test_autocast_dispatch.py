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
    # names on the lists that fabric does not implement (conv_tbc, the RNN cell kernels, renorm,
    # fractional pooling, the LAPACK helpers) or implements inside another op (F.pad's reflect/replicate modes)
    elsewhere = {"conv_tbc", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "renorm",
                 "fractional_max_pool2d", "fractional_max_pool3d", "geqrf", "orgqr", "ormqr", "lu_solve",
                 "linalg_householder_product", "reflection_pad1d", "reflection_pad2d", "replication_pad1d",
                 "replication_pad2d", "replication_pad3d"}
    listed = {op for table in _autocast.POLICIES.values() for op in table}
    missing = sorted(listed - declared - elsewhere)
    assert missing == [], missing
    assert not elsewhere & declared


_MORE_OPS = {
    "grid_sample": lambda t, g: t.nn.functional.grid_sample(g(1, 1, 3, 3), g(1, 2, 2, 2), align_corners=False),
    "dist": lambda t, g: t.dist(g(3), g(3)),
    "quantile": lambda t, g: t.quantile(g(5), 0.5),
    "index_copy": lambda t, g: t.index_copy(g(3, 2), 0, t.tensor([0, 2]), g(2, 2).float()),
    "addcmul": lambda t, g: t.addcmul(g(3), g(3), g(3)),
    "softmax_dtype": lambda t, g: t.softmax(g(3, 4), -1, dtype=t.float64),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(_MORE_OPS))
def test_newly_declared_ops_match_torch_cpu_float16(name):
    """Ops that gained their autocast entry with their declaration (tests/test_amp.py has the others)."""
    import torch

    for half in (False, True):
        results = []
        for t in (torch, fabric):
            rng = np.random.default_rng(0)

            def g(*shape, t=t, rng=rng, half=half):
                x = t.tensor(rng.standard_normal(shape).astype(np.float32))
                return x.half() if half else x

            with t.autocast("cpu", dtype=t.float16):
                results.append(_MORE_OPS[name](t, g))
        assert str(results[1].dtype).split(".")[-1] == str(results[0].dtype).split(".")[-1], (name, half)
        np.testing.assert_allclose(results[1].double().numpy(), results[0].double().numpy(), rtol=2e-2, atol=2e-2)


def test_prologue_keeps_the_function_its_signature_and_its_lines():
    with _autocast_cpu():  # the first activation installs the prologues
        pass
    for f in (fabric.mm, fabric.exp, F.cross_entropy, F.linear, fabric.linalg.vector_norm):
        body = inspect.unwrap(f)
        assert body.__code__.co_names[:2] == ("__fabric_autocast__", "active"), f
        assert body.__code__.co_filename == inspect.getsourcefile(body)
    assert fabric.Tensor.mm is fabric.mm and fabric.ops.linalg.products.mm is fabric.mm
    params = inspect.signature(F.cross_entropy).parameters
    assert list(params)[:3] == ["input", "target", "weight"] and params["weight"].default is None
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


def test_an_op_whose_file_changed_since_import_warns_and_runs_uncast(tmp_path):
    import importlib.util
    import linecache
    import sys

    src = tmp_path / "edited_op.py"
    src.write_text("def edited_mm(input, mat2, *, out=None):\n    return input.dtype, mat2.dtype\n")
    spec = importlib.util.spec_from_file_location("edited_op", src)
    module = importlib.util.module_from_spec(spec)
    sys.modules["edited_op"] = module
    n = len(_autocast._entries)
    try:
        spec.loader.exec_module(module)
        with _autocast_cpu():
            f = _autocast.entry(module.edited_mm, "mm")  # autocast was enabled before: installed at once
            assert f is module.edited_mm and f(fabric.ones(1), fabric.ones(1)) == (F16, F16)
        src.write_text("# edited\n\n\n\ndef other():\n    pass\n")
        linecache.checkcache(str(src))
        with pytest.warns(RuntimeWarning, match="runs without autocast until reloaded"):
            _autocast._install_one(module.edited_mm, "mm", n)
    finally:
        del _autocast._entries[n:]
        sys.modules.pop("edited_op", None)
