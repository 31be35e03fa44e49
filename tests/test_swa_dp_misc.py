"""swa_utils (AveragedModel, SWALR, update_bn), DataParallel, SyncBatchNorm,
autograd.Variable and ChannelShuffle: behaviour and numbers against PyTorch."""
from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import fabric
from fabric.optim import swa_utils

DOC_MODULES = ["fabric.optim.swa_utils", "fabric.autograd.variable", "fabric.nn.functional._shuffle",
               "fabric.nn.modules.channelshuffle", "fabric.nn.parallel.data_parallel",
               "fabric.nn.modules.syncbatchnorm"]


@pytest.mark.parametrize("module", DOC_MODULES)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def _twin_models(torch, dtype="float32"):
    """The same small model (Linear, BatchNorm1d, Linear) in fabric and torch."""
    rng = np.random.default_rng(0)
    f = fabric.nn.Sequential(fabric.nn.Linear(3, 4), fabric.nn.BatchNorm1d(4), fabric.nn.Linear(4, 2))
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    f.to(getattr(fabric, dtype))
    t.to(getattr(torch, dtype))
    sd = {k: rng.standard_normal(v.shape).astype(dtype) if v.dtype.is_floating_point else v.numpy()
          for k, v in t.state_dict().items()}
    sd["1.running_var"] = np.abs(sd["1.running_var"])
    t.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in sd.items()})
    f.load_state_dict({k: fabric.tensor(v.copy()) for k, v in sd.items()})
    return f, t


def _assert_state_equal(f_sd, t_sd, exact=True):
    assert list(f_sd) == list(t_sd)
    for k in t_sd:
        if exact or not t_sd[k].dtype.is_floating_point:
            np.testing.assert_array_equal(f_sd[k].numpy(), t_sd[k].numpy(), err_msg=k)
        else:
            np.testing.assert_allclose(f_sd[k].numpy(), t_sd[k].numpy(), rtol=1e-6, atol=1e-7, err_msg=k)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema", "swa_multi", "custom"])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_torch(kind, use_buffers):
    import torch
    import torch.optim.swa_utils as tswa

    dtype = "float64" if kind == "swa_multi" else "float32"
    f, t = _twin_models(torch, dtype)
    kw_f, kw_t = {}, {}
    if kind == "ema_multi":
        kw_f["multi_avg_fn"], kw_t["multi_avg_fn"] = swa_utils.get_ema_multi_avg_fn(0.9), tswa.get_ema_multi_avg_fn(0.9)
    elif kind == "ema":
        kw_f["avg_fn"], kw_t["avg_fn"] = swa_utils.get_ema_avg_fn(0.8), tswa.get_ema_avg_fn(0.8)
    elif kind == "swa_multi":
        kw_f["multi_avg_fn"], kw_t["multi_avg_fn"] = swa_utils.get_swa_multi_avg_fn(), tswa.get_swa_multi_avg_fn()
    elif kind == "custom":
        kw_f["avg_fn"] = lambda a, m, n: a * 0.3 + m * 0.7
        kw_t["avg_fn"] = lambda a, m, n: a * 0.3 + m * 0.7
    fa = swa_utils.AveragedModel(f, use_buffers=use_buffers, **kw_f)
    ta = tswa.AveragedModel(t, use_buffers=use_buffers, **kw_t)
    if kind == "swa_multi" and use_buffers:
        # both refuse to average the int64 num_batches_tracked with addcdiv
        for avg, model in ((fa, f), (ta, t)):
            avg.update_parameters(model)
            with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
                avg.update_parameters(model)
        return
    topt = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    x = np.random.default_rng(1).standard_normal((4, 6, 3)).astype(dtype)
    for _epoch in range(4):
        # train torch's model; fabric's model takes its weights so that only the averaging is compared
        for xb in x:
            topt.zero_grad()
            (t(torch.tensor(xb)) ** 2).mean().backward()
            topt.step()
        f.load_state_dict({k: fabric.tensor(v.numpy().copy()) for k, v in t.state_dict().items()})
        fa.update_parameters(f)
        ta.update_parameters(t)
        # the multi-tensor averages go through lerp_ (a fused multiply-add in PyTorch, reproduced by fabric)
        _assert_state_equal(fa.state_dict(), ta.state_dict())
    fa.eval()
    ta.eval()
    np.testing.assert_allclose(fa(fabric.tensor(x[0])).detach().numpy(), ta(torch.tensor(x[0])).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
def test_swalr_matches_torch(strategy, anneal_epochs):
    import torch
    import torch.optim.swa_utils as tswa

    fw = [fabric.nn.Parameter(fabric.zeros(1)), fabric.nn.Parameter(fabric.zeros(1))]
    tw = [torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))]
    fopt = fabric.optim.SGD([{"params": [fw[0]]}, {"params": [fw[1]], "lr": 0.3}], lr=0.7)
    topt = torch.optim.SGD([{"params": [tw[0]]}, {"params": [tw[1]], "lr": 0.3}], lr=0.7)
    fmain = fabric.optim.lr_scheduler.CosineAnnealingLR(fopt, T_max=5)
    tmain = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=5)
    fs = swa_utils.SWALR(fopt, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    ts = tswa.SWALR(topt, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    assert fs.get_last_lr() == ts.get_last_lr()
    for epoch in range(8):
        fopt.step()
        topt.step()
        if epoch < 2:
            fmain.step()
            tmain.step()
        else:
            fs.step()
            ts.step()
        assert fs.get_last_lr() == ts.get_last_lr()
        assert [g["lr"] for g in fopt.param_groups] == [g["lr"] for g in topt.param_groups]
    sd = fs.state_dict()
    assert "anneal_func" not in sd and sd["_anneal_strategy"] == strategy
    fs2 = swa_utils.SWALR(fopt, swa_lr=0.1, anneal_strategy="linear" if strategy == "cos" else "cos")
    fs2.load_state_dict(sd)
    assert fs2.anneal_func is fs2._cosine_anneal if strategy == "cos" else fs2.anneal_func is fs2._linear_anneal
    with pytest.warns(UserWarning, match="get_last_lr"):
        fs.get_lr()


def test_swa_errors():
    opt = fabric.optim.SGD([fabric.nn.Parameter(fabric.zeros(1))], lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
        swa_utils.SWALR(opt, 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        swa_utils.SWALR(opt, [0.1, 0.2])
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided"):
        swa_utils.get_ema_avg_fn(1.5)
    with pytest.raises(ValueError, match=r"Invalid decay value -1 provided"):
        swa_utils.get_ema_multi_avg_fn(-1)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(fabric.nn.Linear(1, 1), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


@pytest.mark.torch
def test_update_bn_matches_torch():
    import torch
    import torch.optim.swa_utils as tswa

    f, t = _twin_models(torch)
    f.train(False)
    t.train(False)
    f[1].momentum = t[1].momentum = 0.3
    x = np.random.default_rng(2).standard_normal((3, 5, 3)).astype("float32")
    swa_utils.update_bn([(fabric.tensor(b), 0) for b in x], f)
    tswa.update_bn([(torch.tensor(b), 0) for b in x], t)
    # the statistics come from a matmul and a batch mean: equal up to float32 rounding
    _assert_state_equal(f.state_dict(), t.state_dict(), exact=False)
    assert not f.training and f[1].momentum == 0.3
    swa_utils.update_bn([fabric.tensor(b) for b in x], f, device="cpu")
    _assert_state_equal(f.state_dict(), t.state_dict(), exact=False)
    swa_utils.update_bn([fabric.ones(2, 3)], fabric.nn.Linear(3, 1))  # no BatchNorm: nothing to do


# --- autograd.Variable ------------------------------------------------------------------------------------------------

@pytest.mark.torch
def test_variable_matches_torch():
    import torch

    from fabric.autograd import Variable

    for lib, V in ((fabric, Variable), (torch, torch.autograd.Variable)):
        t = lib.ones(2)
        v = V(t)
        assert v is not t and type(v) is lib.Tensor and not v.requires_grad
        v[0] = 5.0  # shares data and version counter with t
        assert t.tolist() == [5.0, 1.0] and t._version == v._version == 1
        v = V(t, True)
        assert v.requires_grad and v.is_leaf and not t.requires_grad
        y = lib.ones(2, requires_grad=True) * 2
        v = V(y)
        assert v.grad_fn is None and not v.requires_grad
        assert type(V(lib.nn.Parameter(lib.ones(1)))) is lib.Tensor
        assert isinstance(t, V) and isinstance(lib.nn.Parameter(lib.ones(1)), V) and not isinstance(1.0, V)
        assert V().tolist() == [] and V().dtype == lib.float32
        with pytest.warns(UserWarning, match="volatile was removed"):
            assert not V(t, volatile=True).requires_grad
        with pytest.raises(ValueError, match="can't be volatile and require_grad"), pytest.warns(UserWarning):
            V(t, volatile=True, requires_grad=True)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            V([1.0])
        with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require grad"):
            V(lib.ones(2, dtype=lib.long), requires_grad=True)


def test_variable_alias():
    import fabric.autograd.variable as mod

    assert fabric.autograd.Variable is mod.Variable
    assert fabric._torch_alias.fabric_module_name("torch.autograd.variable") == "fabric.autograd.variable"


# --- ChannelShuffle -----------------------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((1, 4, 2, 3), 2), ((2, 6, 1, 2, 2), 6), ((1, 0, 2), 2),
                                          ((0, 6, 2), 2), ((2, 5, 3), 1)])
def test_channel_shuffle_matches_torch(shape, groups):
    import torch

    x = np.random.default_rng(0).standard_normal(shape)
    g = np.random.default_rng(1).standard_normal(shape)
    fx, tx = fabric.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fy, ty = fabric.nn.ChannelShuffle(groups)(fx), torch.nn.ChannelShuffle(groups)(tx)
    np.testing.assert_array_equal(fy.detach().numpy(), ty.detach().numpy())
    assert fy.is_contiguous()
    fy.backward(fabric.tensor(g))
    if x.size:  # torch's ChannelShuffleBackward0 calls channel_shuffle(grad, 0) on empty inputs and raises
        ty.backward(torch.tensor(g))
        np.testing.assert_array_equal(fx.grad.numpy(), tx.grad.numpy())
    else:
        assert fx.grad.shape == fx.shape
    xi = np.arange(int(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(fabric.nn.functional.channel_shuffle(fabric.tensor(xi), groups).numpy(),
                                  torch.nn.functional.channel_shuffle(torch.tensor(xi), groups).numpy())


def test_channel_shuffle_gradgrad_and_errors():
    x = fabric.randn(2, 4, 3, dtype=fabric.float64, requires_grad=True)
    assert fabric.autograd.gradgradcheck(lambda t: fabric.nn.functional.channel_shuffle(t, 2) ** 2, (x,))
    assert repr(fabric.nn.ChannelShuffle(3)) == "ChannelShuffle(groups=3)"
    F = fabric.nn.functional
    with pytest.raises(RuntimeError, match=r"channel_shuffle expects input with > 2 dims, but got input with sizes \[1, 6\]"):
        F.channel_shuffle(fabric.ones(1, 6), 2)
    with pytest.raises(RuntimeError, match="Number of groups to divide channels in must be positive. Value of groups:0"):
        F.channel_shuffle(fabric.ones(1, 6, 2), 0)
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 6 channels and 4 groups"):
        F.channel_shuffle(fabric.ones(1, 6, 2), 4)
    with pytest.raises(TypeError, match="must be int, not float"):
        F.channel_shuffle(fabric.ones(1, 6, 2), 2.0)


# --- DataParallel -------------------------------------------------------------------------------------------------------

def _no_cuda(monkeypatch):
    monkeypatch.setattr(fabric.cuda, "is_available", lambda: False)


@pytest.mark.torch
def test_data_parallel_without_gpu_matches_torch(monkeypatch):
    import torch

    _no_cuda(monkeypatch)
    f, t = _twin_models(torch)
    fdp, tdp = fabric.nn.DataParallel(f), torch.nn.DataParallel(t)
    assert fdp.module is f and fdp.device_ids == tdp.device_ids == []
    assert isinstance(fdp, fabric.nn.Module) and isinstance(fdp, fabric.nn.parallel.DataParallel)
    assert repr(fdp) == repr(tdp)
    _assert_state_equal(fdp.state_dict(), tdp.state_dict())
    x = np.random.default_rng(3).standard_normal((5, 3)).astype("float32")
    fdp.eval()
    tdp.eval()
    np.testing.assert_allclose(fdp(fabric.tensor(x)).detach().numpy(), tdp(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    # a checkpoint saved from the wrapper loads back into it, and `.module` gives the unprefixed keys
    fdp2 = fabric.nn.DataParallel(fabric.nn.Sequential(fabric.nn.Linear(3, 4), fabric.nn.BatchNorm1d(4),
                                                       fabric.nn.Linear(4, 2)))
    fdp2.load_state_dict(tdp.state_dict())
    _assert_state_equal(fdp2.module.state_dict(), t.state_dict())


def test_data_parallel_forward_kwargs_and_training(monkeypatch):
    _no_cuda(monkeypatch)

    class Two(fabric.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = fabric.nn.Linear(2, 1)

        def forward(self, x, *, scale=1.0):
            return self.lin(x) * scale

    dp = fabric.nn.DataParallel(Two(), device_ids=[0], output_device=0, dim=0)
    x = fabric.ones(4, 2)
    np.testing.assert_allclose(dp(x, scale=2.0).detach().numpy(), (dp.module(x) * 2).detach().numpy())
    opt = fabric.optim.SGD(dp.parameters(), lr=0.1)
    dp(x).sum().backward()
    assert dp.module.lin.weight.grad is not None
    opt.step()


def test_data_parallel_several_gpus_not_implemented(monkeypatch):
    monkeypatch.setattr(fabric.cuda, "is_available", lambda: True)
    monkeypatch.setattr(fabric.cuda, "device_count", lambda: 2)
    with pytest.raises(NotImplementedError, match="single-process multi-GPU replication"):
        fabric.nn.DataParallel(fabric.nn.Linear(2, 1))
    with pytest.raises(NotImplementedError, match=r"device_ids=\[0, 1\]"):
        fabric.nn.DataParallel(fabric.nn.Linear(2, 1), device_ids=[0, "cuda:1"])


@pytest.mark.cuda
def test_data_parallel_one_gpu():
    dp = fabric.nn.DataParallel(fabric.nn.Linear(2, 1), device_ids=[0])
    assert dp.module.weight.device == fabric.device("cuda", 0)
    y = dp(fabric.ones(3, 2))
    assert y.device == fabric.device("cuda", 0) and y.shape == (3, 1)


# --- SyncBatchNorm ------------------------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("momentum", [0.1, None])
def test_sync_batchnorm_without_process_group_matches_torch(momentum):
    import torch

    x = np.random.default_rng(4).standard_normal((6, 3, 4)).astype("float32")
    g = np.random.default_rng(5).standard_normal((6, 3, 4)).astype("float32")
    fb, tb = fabric.nn.SyncBatchNorm(3, momentum=momentum), torch.nn.SyncBatchNorm(3, momentum=momentum)
    assert repr(fb) == repr(tb)
    for train in (True, True, False):
        fb.train(train)
        tb.train(train)
        fx, tx = fabric.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        fy, ty = fb(fx), tb(tx)
        np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
        fy.backward(fabric.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
        _assert_state_equal(fb.state_dict(), tb.state_dict(), exact=False)


@pytest.mark.torch
def test_convert_sync_batchnorm_matches_torch():
    import torch

    def build(lib):
        m = lib.nn.Sequential(lib.nn.Conv2d(1, 2, 1), lib.nn.BatchNorm2d(2, momentum=None),
                              lib.nn.Sequential(lib.nn.BatchNorm1d(2, affine=False), lib.nn.ReLU()))
        m[2].eval()
        return m

    fm, tm = build(fabric), build(torch)
    bn_f = fm[1]
    fc = fabric.nn.SyncBatchNorm.convert_sync_batchnorm(fm, process_group="pg")
    tc = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tm, process_group="pg")
    assert repr(fc) == repr(tc)
    assert fc is fm and type(fc[1]) is fabric.nn.SyncBatchNorm and fc[1] is not bn_f
    assert fc[1].weight is bn_f.weight and fc[1].running_var is bn_f.running_var
    assert fc[1].num_batches_tracked is bn_f.num_batches_tracked and fc[1].process_group == "pg"
    assert not fc[2][0].training and fc[2][0].weight is None
    assert list(fc.state_dict()) == list(tc.state_dict())
    single = fabric.nn.SyncBatchNorm.convert_sync_batchnorm(fabric.nn.BatchNorm3d(4))
    assert type(single) is fabric.nn.SyncBatchNorm and single.num_features == 4


def test_sync_batchnorm_errors_and_world_of_one():
    import fabric.distributed as dist

    bn = fabric.nn.SyncBatchNorm(3)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        bn(fabric.ones(3))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be non-zero"):
        fabric.nn.SyncBatchNorm(0)(fabric.ones(2, 0))
    x = fabric.randn(5, 3, 2)
    ref = fabric.nn.BatchNorm1d(3)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        y = bn(x)
    finally:
        dist.destroy_process_group()
    np.testing.assert_array_equal(y.detach().numpy(), ref(x).detach().numpy())
    _assert_state_equal(bn.state_dict(), ref.state_dict())


def _sync_bn_worker(rank, port, world, momentum):
    import fabric.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        rng = np.random.default_rng(7)
        x = rng.standard_normal((6, 3, 4)) * 3 + 1
        g = rng.standard_normal((6, 3, 4))
        ref = fabric.nn.BatchNorm1d(3, momentum=momentum).double()
        sync = fabric.nn.SyncBatchNorm(3, momentum=momentum).double()
        with fabric.no_grad():
            for m in (ref, sync):
                m.weight.copy_(fabric.tensor([0.5, -1.0, 2.0]))
                m.bias.copy_(fabric.tensor([0.1, 0.2, -0.3]))
        rows = slice(rank * 3, rank * 3 + 3)  # each rank holds half of the batch
        for _step in range(2):
            fx = fabric.tensor(x, requires_grad=True)
            ry = ref(fx)
            ry.backward(fabric.tensor(g))
            lx = fabric.tensor(x[rows], requires_grad=True)
            ly = sync(lx)
            ly.backward(fabric.tensor(g[rows]))
            np.testing.assert_allclose(ly.detach().numpy(), ry.detach().numpy()[rows], rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(lx.grad.numpy(), fx.grad.numpy()[rows], rtol=1e-9, atol=1e-12)
            # weight and bias gradients are local: their sum over ranks is the full-batch gradient
            for p_sync, p_ref in ((sync.weight, ref.weight), (sync.bias, ref.bias)):
                total = p_sync.grad.clone()
                dist.all_reduce(total)
                np.testing.assert_allclose(total.numpy(), p_ref.grad.numpy(), rtol=1e-9, atol=1e-12)
            for k in ("running_mean", "running_var", "num_batches_tracked"):
                np.testing.assert_allclose(sync.state_dict()[k].numpy(), ref.state_dict()[k].numpy(), rtol=1e-10)
        sync.eval()
        ref.eval()
        np.testing.assert_allclose(sync(fabric.tensor(x[rows])).detach().numpy(),
                                   ref(fabric.tensor(x)).detach().numpy()[rows], rtol=1e-10)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("momentum", [0.1, None])
def test_sync_batchnorm_two_ranks_equal_full_batch(momentum):
    import socket

    import fabric.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_sync_bn_worker, args=(port, 2, momentum), nprocs=2, join=True)


def test_sync_batchnorm_function_in_one_process():
    """The synchronised kernel itself (a world of one makes its all_reduce the identity): values and gradients
    equal BatchNorm's; its backward is once-differentiable."""
    import fabric.distributed as dist
    from fabric.nn.modules import syncbatchnorm as sbn

    x = fabric.randn(5, 3, 2, dtype=fabric.float64, requires_grad=True)
    w = fabric.tensor([0.5, 2.0, -1.0], dtype=fabric.float64, requires_grad=True)
    b = fabric.tensor([0.1, 0.0, 0.3], dtype=fabric.float64, requires_grad=True)
    g = fabric.randn(5, 3, 2, dtype=fabric.float64)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        group = dist.group.WORLD
        mean, var, n = sbn._global_stats(x._data, group)
        invstd = 1.0 / np.sqrt(var + 1e-5)
        y = sbn._SyncBatchNormFn.apply(x, w, b, mean, invstd, n, group)
        gx, gw, gb = fabric.autograd.grad(y, (x, w, b), g, create_graph=True)
        with pytest.raises(RuntimeError):
            fabric.autograd.grad(gx.sum(), x)
    finally:
        dist.destroy_process_group()
    ref = fabric.nn.functional.batch_norm(x, None, None, w, b, True, 0.1, 1e-5)
    rx, rw, rb = fabric.autograd.grad(ref, (x, w, b), g)
    for mine, theirs in ((y, ref), (gx, rx), (gw, rw), (gb, rb)):
        np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
