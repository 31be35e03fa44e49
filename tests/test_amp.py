"""fabric.amp: autocast state and cast policy, custom_fwd/custom_bwd, GradScaler; compared with torch.amp on CPU
(float16, which torch supports on CPU)."""
from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import fabric
from fabric.ops import _autocast as _policy

F16 = fabric.float16


def _autocast():
    return fabric.autocast("cpu", dtype=F16)


# --- state -------------------------------------------------------------------------------------------------------


def test_state_nesting_and_restore():
    assert not fabric.is_autocast_enabled("cpu") and _policy.active == 0
    assert fabric.get_autocast_dtype("cpu") is fabric.bfloat16 and fabric.get_autocast_dtype("cuda") is F16
    with _autocast():
        assert fabric.is_autocast_enabled("cpu") and not fabric.is_autocast_enabled()  # no argument: cuda
        assert fabric.get_autocast_dtype("cpu") is F16
        with fabric.autocast("cpu", enabled=False):
            assert not fabric.is_autocast_enabled("cpu")
            assert fabric.mm(fabric.ones(2, 2), fabric.ones(2, 2)).dtype is fabric.float32
        assert fabric.is_autocast_enabled("cpu")
        assert fabric.mm(fabric.ones(2, 2), fabric.ones(2, 2)).dtype is F16
    assert not fabric.is_autocast_enabled("cpu") and _policy.active == 0
    assert fabric.get_autocast_dtype("cpu") is fabric.bfloat16


def test_state_restored_after_exception():
    with pytest.raises(ZeroDivisionError), _autocast():
        _ = 1 / 0
    assert not fabric.is_autocast_enabled("cpu") and _policy.active == 0


def test_thread_local():
    seen = []
    with _autocast():
        t = threading.Thread(target=lambda: seen.append(
            (fabric.is_autocast_enabled("cpu"), fabric.mm(fabric.ones(2, 2), fabric.ones(2, 2)).dtype)))
        t.start()
        t.join()
    assert seen == [(False, fabric.float32)]


def test_decorator():
    @fabric.autocast("cpu", dtype=F16)
    def f(a):
        return a @ a

    assert f(fabric.ones(2, 2)).dtype is F16
    assert not fabric.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        fabric.autocast("cpu", dtype=F16)(3)


def test_bfloat16_raises_clearly_but_disabled_always_works():
    for ctx in (lambda: fabric.autocast("cpu"), lambda: fabric.autocast("cpu", dtype=fabric.bfloat16)):
        with pytest.raises(RuntimeError, match=r"bfloat16.*dtype=fabric\.float16"):
            ctx()
    for kw in ({}, {"dtype": fabric.bfloat16}, {"dtype": fabric.float64}, {"dtype": "junk", "cache_enabled": 3}):
        with fabric.autocast("cpu", enabled=False, **kw), fabric.autocast("cuda", enabled=False, **kw):
            assert not fabric.is_autocast_enabled("cpu")
    # low-level setters can select bfloat16; the first autocast op then raises the same error
    prev = fabric.get_autocast_dtype("cpu")
    fabric.set_autocast_enabled("cpu", True)
    try:
        with pytest.raises(RuntimeError, match="bfloat16"):
            fabric.mm(fabric.ones(2, 2), fabric.ones(2, 2))
    finally:
        fabric.set_autocast_enabled("cpu", False)
        fabric.set_autocast_dtype("cpu", prev)
    assert _policy.active == 0


def test_unsupported_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="CPU Autocast only supports"), fabric.autocast("cpu", dtype=fabric.float32):
        assert not fabric.is_autocast_enabled("cpu")


@pytest.mark.skipif(fabric.cuda.is_available(), reason="checks the no-GPU path")
def test_cuda_without_gpu_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available"), fabric.autocast("cuda"):
        assert not fabric.is_autocast_enabled("cuda")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert not fabric.amp.GradScaler().is_enabled()


def test_device_type_errors():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        fabric.autocast(fabric.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'meta'"):
        fabric.autocast("meta", dtype=F16)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        fabric.autocast("foo", dtype=F16)
    with pytest.raises(TypeError, match="must be bool"):
        fabric.set_autocast_enabled("cpu", 1)
    with pytest.raises(TypeError, match="must be torch.dtype"):
        fabric.set_autocast_dtype("cpu", 3)
    assert fabric.amp.is_autocast_available("cpu") and not fabric.amp.is_autocast_available("meta")
    with fabric.autocast("xpu", dtype=F16):  # accepted, as in PyTorch; no fabric tensor lives there
        assert fabric.is_autocast_enabled("xpu")
        assert fabric.mm(fabric.ones(2, 2), fabric.ones(2, 2)).dtype is fabric.float32


def test_set_autocast_enabled_one_argument_is_cuda_and_cache_nesting():
    fabric.set_autocast_enabled(True)
    try:
        assert fabric.is_autocast_enabled("cuda") and not fabric.is_autocast_enabled("cpu")
    finally:
        fabric.set_autocast_enabled(False)
    assert fabric.is_autocast_cache_enabled()
    with fabric.autocast("cpu", dtype=F16, cache_enabled=False):
        assert not fabric.is_autocast_cache_enabled()
    assert fabric.is_autocast_cache_enabled()
    assert fabric.autocast_increment_nesting() == 1 and fabric.autocast_decrement_nesting() == 0
    fabric.clear_autocast_cache()


def test_deprecated_spellings():
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
        ctx = fabric.cuda.amp.autocast(enabled=False)
    with ctx:
        assert not fabric.is_autocast_enabled("cuda")
    with pytest.warns(FutureWarning, match="torch.cpu.amp.autocast"):
        ctx = fabric.cpu.amp.autocast(dtype=F16)
    with ctx:
        assert fabric.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match="torch.cpu.amp.GradScaler"):
        assert fabric.cpu.amp.GradScaler().is_enabled()
    with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
        fabric.cuda.amp.GradScaler(enabled=False)
    with pytest.warns(DeprecationWarning, match=r"is_autocast_cpu_enabled\(\) is deprecated"):
        assert not fabric.is_autocast_cpu_enabled()
    with pytest.warns(DeprecationWarning, match="get_autocast_gpu_dtype"):
        assert fabric.get_autocast_gpu_dtype() is F16


def test_torch_alias_submodules():
    import importlib

    from fabric._torch_alias import fabric_module_name

    for name in ("amp", "cpu", "cpu.amp", "cuda.amp"):
        assert importlib.import_module(fabric_module_name("torch." + name)).__name__ == "fabric." + name
    assert fabric.amp.GradScaler is fabric.GradScaler


# --- cast policy -------------------------------------------------------------------------------------------------


def test_casts_are_differentiable_and_gradients_keep_param_dtype():
    w = fabric.randn(3, 4, requires_grad=True)
    x = fabric.randn(2, 3)
    with _autocast():
        y = x @ w
    assert y.dtype is F16
    assert y.grad_fn.next_functions[1][0].name() == "ToCopyBackward0"
    y.float().sum().backward()
    assert w.grad.dtype is fabric.float32
    np.testing.assert_allclose(w.grad.numpy(), np.repeat(x.numpy().sum(0)[:, None], 4, 1), rtol=2e-3)


def test_not_eligible_float64_ints_out_and_inplace():
    with _autocast():
        assert fabric.mm(fabric.ones(2, 2, dtype=fabric.float64), fabric.ones(2, 2, dtype=fabric.float64)).dtype \
            is fabric.float64
        assert fabric.mm(fabric.ones(2, 2, dtype=fabric.int64), fabric.ones(2, 2, dtype=fabric.int64)).dtype \
            is fabric.int64
        out = fabric.empty(2, 2)
        fabric.mm(fabric.ones(2, 2), fabric.ones(2, 2), out=out)  # out=: not autocast, as in PyTorch
        assert out.dtype is fabric.float32
        assert fabric.exp(fabric.ones(2)).dtype is fabric.float32  # CUDA-only fp32 op: untouched on CPU


def test_fp32_op_body_runs_without_autocast():
    """An fp32 op whose body uses matmul must not see it lowered (PyTorch excludes autocast below a wrapped op)."""
    a, b = fabric.randn(5, 3), fabric.randn(4, 3)
    ref = fabric.cdist(a, b)
    with _autocast():
        got = fabric.cdist(a, b)
        assert fabric.cdist(a.half(), b.half()).dtype is fabric.float32
    assert got.dtype is fabric.float32
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6)


def test_cuda_policy_table_is_complete_for_listed_names():
    """Every op named in the CUDA lists maps to a policy; binary_cross_entropy is banned there."""
    assert _policy.POLICIES["cuda"]["softmax"] == "fp32" and _policy.POLICIES["cpu"].get("softmax") is None
    assert _policy.POLICIES["cuda"]["binary_cross_entropy"] == "banned"
    assert _policy.POLICIES["cpu"]["binary_cross_entropy"] == "fp32"


_OPS = {
    "matmul": lambda t, g: t.matmul(g(3, 4), g(4, 5)),
    "matmul_1d": lambda t, g: t.matmul(g(4), g(4)),
    "operator_matmul": lambda t, g: g(2, 3, 4) @ g(4, 5),
    "mm": lambda t, g: t.mm(g(3, 4), g(4, 5)),
    "mv": lambda t, g: t.mv(g(3, 4), g(4)),
    "dot": lambda t, g: t.dot(g(4), g(4)),
    "bmm": lambda t, g: t.bmm(g(2, 3, 4), g(2, 4, 5)),
    "addmm": lambda t, g: t.addmm(g(3, 5), g(3, 4), g(4, 5)),
    "addmv": lambda t, g: t.addmv(g(3), g(3, 4), g(4)),
    "addr": lambda t, g: t.addr(g(3, 4), g(3), g(4)),
    "baddbmm": lambda t, g: t.baddbmm(g(2, 3, 5), g(2, 3, 4), g(2, 4, 5)),
    "addbmm": lambda t, g: t.addbmm(g(3, 5), g(2, 3, 4), g(2, 4, 5)),
    "einsum": lambda t, g: t.einsum("ij,jk->ik", g(3, 4), g(4, 5)),
    "tensordot": lambda t, g: t.tensordot(g(3, 4), g(4, 5), 1),
    "multi_dot": lambda t, g: t.linalg.multi_dot([g(3, 4), g(4, 5)]),
    "vecdot": lambda t, g: t.linalg.vecdot(g(3, 4), g(3, 4)),
    "linear": lambda t, g: t.nn.functional.linear(g(3, 4), g(5, 4), g(5)),
    "bilinear": lambda t, g: t.nn.functional.bilinear(g(3, 4), g(3, 2), g(5, 4, 2)),
    "prelu": lambda t, g: t.nn.functional.prelu(g(2, 3), g(1)),
    "sdpa": lambda t, g: t.nn.functional.scaled_dot_product_attention(g(1, 2, 3, 4), g(1, 2, 3, 4), g(1, 2, 3, 4)),
    "softmax": lambda t, g: t.nn.functional.softmax(g(3, 4), -1),
    "log_softmax": lambda t, g: t.log_softmax(g(3, 4), -1),
    "cross_entropy": lambda t, g: t.nn.functional.cross_entropy(g(3, 4), t.tensor([0, 1, 2])),
    "nll_loss": lambda t, g: t.nn.functional.nll_loss(g(3, 4), t.tensor([0, 1, 2])),
    "mse_loss": lambda t, g: t.nn.functional.mse_loss(g(3, 4), g(3, 4)),
    "l1_loss": lambda t, g: t.nn.functional.l1_loss(g(3, 4), g(3, 4)),
    "smooth_l1_loss": lambda t, g: t.nn.functional.smooth_l1_loss(g(3, 4), g(3, 4)),
    "huber_loss": lambda t, g: t.nn.functional.huber_loss(g(3, 4), g(3, 4)),
    "bce": lambda t, g: t.nn.functional.binary_cross_entropy(t.sigmoid(g(3, 4)), g(3, 4).sigmoid()),
    "bce_logits": lambda t, g: t.nn.functional.binary_cross_entropy_with_logits(g(3, 4), g(3, 4).sigmoid()),
    "kl_div": lambda t, g: t.nn.functional.kl_div(g(3, 4), g(3, 4), reduction="batchmean"),
    "layer_norm": lambda t, g: t.nn.functional.layer_norm(g(3, 4), (4,)),
    "group_norm": lambda t, g: t.nn.functional.group_norm(g(2, 4, 3), 2),
    "cdist": lambda t, g: t.cdist(g(3, 4), g(2, 4)),
    "inv": lambda t, g: t.linalg.inv(g(3, 3) + 3 * t.eye(3).to(g(1).dtype)),
    "exp": lambda t, g: t.exp(g(3)),
    "pow": lambda t, g: t.pow(g(3), 2),
    "relu": lambda t, g: t.nn.functional.relu(g(3)),
    "cat": lambda t, g: t.cat([g(3), g(3).half()]),
    "stack": lambda t, g: t.stack([g(3), g(3).half()]),
    "float64": lambda t, g: t.matmul(g(3, 4).double(), g(4, 5).double()),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(_OPS))
def test_result_dtypes_match_torch_cpu_float16(name):
    import torch

    fn = _OPS[name]
    for half in (False, True):
        results = []
        for t in (torch, fabric):
            rng = np.random.default_rng(0)

            def g(*shape, t=t, rng=rng, half=half):
                x = t.tensor(rng.standard_normal(shape).astype(np.float32))
                return x.half() if half else x

            with t.autocast("cpu", dtype=t.float16):
                r = fn(t, g)
            results.append(r)
        assert str(results[1].dtype).split(".")[-1] == str(results[0].dtype).split(".")[-1], (name, half)
        tol = 2e-2 if results[0].dtype == torch.float16 else 2e-3
        np.testing.assert_allclose(results[1].float().detach().numpy(), results[0].float().detach().numpy(),
                                   rtol=tol, atol=tol)


# --- models vs torch ---------------------------------------------------------------------------------------------


def _mlp_forward(t, p, x, y):
    """Small MLP, returning every intermediate (dtypes compared one by one)."""
    F_ = t.nn.functional
    h1 = F_.linear(x, p["w1"], p["b1"])
    a1 = F_.relu(h1)
    n1 = F_.layer_norm(a1, (a1.shape[-1],), p["g"], p["be"])
    h2 = n1 @ p["w2"].t() + p["b2"]
    s = t.softmax(h2, -1)
    loss = F_.cross_entropy(h2, y)
    return [h1, a1, n1, h2, s, loss]


def _params(t, shapes, seed):
    rng = np.random.default_rng(seed)
    return {k: t.tensor((rng.standard_normal(s) * 0.5).astype(np.float32), requires_grad=True)
            for k, s in shapes.items()}


def _compare_model(forward, shapes, x_shape, classes):
    import torch

    outs, grads = [], []
    for t in (torch, fabric):
        p = _params(t, shapes, 1)
        rng = np.random.default_rng(2)
        x = t.tensor(rng.standard_normal(x_shape).astype(np.float32))
        y = t.tensor(rng.integers(0, classes, x_shape[0]))
        with t.autocast("cpu", dtype=t.float16):
            inter = forward(t, p, x, y)
        inter[-1].backward()
        outs.append(inter)
        grads.append({k: v.grad for k, v in p.items()})
    for i, (a, b) in enumerate(zip(*outs)):
        assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1], f"intermediate {i}"
        np.testing.assert_allclose(b.float().detach().numpy(), a.float().detach().numpy(), rtol=2e-2, atol=2e-2)
    for k in shapes:
        ga, gb = grads[0][k], grads[1][k]
        assert str(gb.dtype).split(".")[-1] == str(ga.dtype).split(".")[-1] == "float32"
        scale = max(1.0, float(ga.abs().max()))
        np.testing.assert_allclose(gb.numpy(), ga.numpy(), rtol=3e-2, atol=3e-2 * scale)


@pytest.mark.torch
def test_mlp_matches_torch_cpu_autocast():
    shapes = {"w1": (16, 8), "b1": (16,), "g": (16,), "be": (16,), "w2": (5, 16), "b2": (5,)}
    _compare_model(_mlp_forward, shapes, (6, 8), 5)


def _convnet_forward(t, p, x, y):
    F_ = t.nn.functional
    c = F_.conv2d(x, p["k"], p["kb"], padding=1)
    a = F_.relu(c)
    m = F_.max_pool2d(a, 2)
    f = m.flatten(1)
    o = F_.linear(f, p["w"], p["b"])
    loss = F_.cross_entropy(o, y)
    return [c, a, m, o, loss]


@pytest.mark.torch
def test_convnet_matches_torch_cpu_autocast():
    shapes = {"k": (4, 3, 3, 3), "kb": (4,), "w": (5, 4 * 4 * 4), "b": (5,)}
    _compare_model(_convnet_forward, shapes, (2, 3, 8, 8), 5)


# --- custom_fwd / custom_bwd ------------------------------------------------------------------------------------


@pytest.mark.torch
def test_custom_fwd_bwd_match_torch():
    import torch

    seen = {t.__name__: _run_custom_functions(t) for t in (torch, fabric)}
    assert seen["fabric"] == seen["torch"]


def _run_custom_functions(t):
    dtypes = []

    class MyMM(t.autograd.Function):
        @staticmethod
        @t.amp.custom_fwd(device_type="cpu", cast_inputs=t.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            dtypes.append(("fwd", str(a.dtype), t.is_autocast_enabled("cpu")))
            return a.mm(b)

        @staticmethod
        @t.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            dtypes.append(("bwd", str(g.dtype), t.is_autocast_enabled("cpu")))
            return g.mm(b.t()), a.t().mm(g)

    class Plain(t.autograd.Function):
        @staticmethod
        @t.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a):
            dtypes.append(("plain", str(a.mm(a).dtype), t.is_autocast_enabled("cpu")))
            return a * 2

        @staticmethod
        @t.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            dtypes.append(("plain_bwd", t.is_autocast_enabled("cpu"), str(t.get_autocast_dtype("cpu"))))
            return g * 2

    a = t.ones(2, 2, requires_grad=True)
    with t.autocast("cpu", dtype=t.float16):
        y = MyMM.apply(a.half(), a)
        z = Plain.apply(a)
    y.sum().backward()
    z.sum().backward()
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        t.amp.custom_fwd(device_type=None)
    return [tuple(str(v).split(".")[-1] for v in d) for d in dtypes]


# --- GradScaler --------------------------------------------------------------------------------------------------


def _train(t, steps, inject, opt_name="SGD", clip=False):
    rng = np.random.default_rng(0)
    w1 = t.tensor((rng.standard_normal((8, 4)) * 0.5).astype(np.float32), requires_grad=True)
    w2 = t.tensor((rng.standard_normal((3, 8)) * 0.5).astype(np.float32), requires_grad=True)
    params = [w1, w2]
    opt = t.optim.SGD(params, lr=0.1) if opt_name == "SGD" else t.optim.Adam(params, lr=0.01)
    scaler = t.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    xs = rng.standard_normal((steps, 5, 4)).astype(np.float32)
    ys = rng.integers(0, 3, (steps, 5))
    scales, returns = [], []
    for i in range(steps):
        opt.zero_grad()
        with t.autocast("cpu", dtype=t.float16):
            out = t.nn.functional.linear(t.relu(t.nn.functional.linear(t.tensor(xs[i]), w1)), w2)
            loss = t.nn.functional.cross_entropy(out, t.tensor(ys[i]))
        scaler.scale(loss).backward()
        if i in inject:
            w1.grad[0, 0] = float("inf") if inject[i] == "inf" else float("nan")
        if clip:
            scaler.unscale_(opt)
            t.nn.utils.clip_grad_norm_(params, 1.0)
        returns.append(scaler.step(opt))
        scaler.update()
        scales.append((scaler.get_scale(), scaler._get_growth_tracker()))
    return scales, returns, [p.detach().numpy().copy() for p in params], scaler.state_dict()


@pytest.mark.torch
@pytest.mark.parametrize("opt_name,clip", [("SGD", False), ("Adam", True)])
def test_grad_scaler_training_matches_torch(opt_name, clip):
    import torch

    inject = {2: "inf", 5: "nan", 6: "inf"}
    ref = _train(torch, 9, inject, opt_name, clip)
    got = _train(fabric, 9, inject, opt_name, clip)
    assert got[0] == ref[0]  # scale and growth tracker after every update
    assert got[1] == ref[1]
    for a, b in zip(got[2], ref[2]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
    assert got[3] == ref[3]


@pytest.mark.torch
def test_grad_scaler_api_matches_torch():
    import torch

    for t in (torch, fabric):
        s = t.amp.GradScaler("cpu", init_scale=8.0)
        assert s.get_scale() == 8.0 and s.state_dict() == {"scale": 8.0, "growth_factor": 2.0,
                                                          "backoff_factor": 0.5, "growth_interval": 2000,
                                                          "_growth_tracker": 0}
        s.set_growth_factor(3.0)
        s.set_backoff_factor(0.25)
        s.set_growth_interval(7)
        assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (3.0, 0.25, 7)
        with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
            t.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
            t.amp.GradScaler("cpu", backoff_factor=1.0)
        w = t.ones(2, requires_grad=True)
        opt = t.optim.SGD([w], lr=0.1)
        with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None"):
            s.unscale_(opt)
        scaled = s.scale([w.sum(), (w * 2).sum()])
        assert isinstance(scaled, list) and scaled[1].item() == 32.0
        with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
            s.scale([3])
        s.scale(w.sum()).backward()
        s.unscale_(opt)
        assert w.grad.tolist() == [1.0, 1.0]
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
            s.unscale_(opt)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            s.step(opt, closure=lambda: None)
        assert s.step(opt) is None
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update"):
            s.step(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
            s.unscale_(opt)
        with pytest.raises(AssertionError, match="may only be pickled"):
            pickle.dumps(s)
        s.update(4.0)
        assert s.get_scale() == 4.0
        s.update(t.tensor(16.0))
        assert s.get_scale() == 16.0
        with pytest.raises(AssertionError, match="new_scale should be a float"):
            s.update(t.tensor([1.0, 2.0]))
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.get_scale() == 16.0 and s2._scale is None
        with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
            s.update()
        h = t.ones(2, dtype=t.float16, requires_grad=True)
        opt_h = t.optim.SGD([h], lr=0.1)
        s.scale(h.sum()).backward()
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            s.unscale_(opt_h)
        fresh = t.amp.GradScaler("cpu")
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            fresh.load_state_dict({})
        fresh.load_state_dict({"scale": 2.0, "growth_factor": 4.0, "backoff_factor": 0.125,
                               "growth_interval": 3, "_growth_tracker": 1})
        assert fresh.state_dict()["_growth_tracker"] == 1 and fresh.get_scale() == 2.0


@pytest.mark.torch
def test_grad_scaler_disabled_is_pass_through_like_torch():
    import torch

    for t in (torch, fabric):
        s = t.amp.GradScaler("cpu", enabled=False, growth_factor=0.5)  # no validation when disabled
        w = t.ones(2, requires_grad=True)
        opt = t.optim.SGD([w], lr=0.5)
        loss = w.sum()
        assert s.scale(loss) is loss
        loss.backward()
        assert s.unscale_(opt) is None and s.step(opt) is None and s.update() is None
        assert w.tolist() == [0.5, 0.5]
        assert s.get_scale() == 1.0 and s.state_dict() == {} and not s.is_enabled()
        s.load_state_dict({})
        assert s._get_growth_tracker() == 0


def test_grad_scaler_growth_and_inf_backoff_without_torch():
    w = fabric.ones(2, requires_grad=True)
    opt = fabric.optim.SGD([w], lr=0.0)
    s = fabric.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    history = []
    for i in range(5):
        opt.zero_grad()
        s.scale(w.sum()).backward()
        if i == 3:
            w.grad[1] = float("nan")
        s.step(opt)
        s.update()
        history.append((s.get_scale(), s._get_growth_tracker()))
    assert history == [(4.0, 1), (8.0, 0), (8.0, 1), (4.0, 0), (4.0, 1)]
    assert s._scale.dtype is fabric.float32 and s._growth_tracker.dtype is fabric.int32


# --- docs --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["fabric.amp", "fabric.ops._autocast", "fabric.amp.autocast_mode",
                                    "fabric.amp.grad_scaler", "fabric.cpu", "fabric.cpu.amp", "fabric.cuda.amp"])
def test_docstring_examples(module):
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0


def test_docs_example_runs():
    import os
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "amp.md")) as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.DOTALL).group(1)
    exec(compile(code, "docs/amp.md", "exec"), {})
