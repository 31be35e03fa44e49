"""DDP communication hooks and the bucket overlap, in a world of one process
(no MPI needed): the hooks' protocol, chaining futures, and that each
bucket's reduction starts during backward, not after it."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
import fabric.distributed as dist
from fabric.distributed.algorithms.ddp_comm_hooks import default_hooks
from fabric.nn.parallel import DistributedDataParallel as DDP


@pytest.fixture
def world_of_one():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _model():
    fabric.manual_seed(0)
    return fabric.nn.Sequential(fabric.nn.Linear(4, 32), fabric.nn.ReLU(), fabric.nn.Linear(32, 32),
                                fabric.nn.ReLU(), fabric.nn.Linear(32, 2))


def test_future_then_runs_when_waited(world_of_one):
    t = fabric.ones(2)
    calls = []
    fut = dist.all_reduce(t, async_op=True).get_future()
    chained = fut.then(lambda f: calls.append(1) or f.value()[0] * 3)
    assert calls == [] and chained.done()
    assert chained.wait().tolist() == [3.0, 3.0] and calls == [1]
    assert chained.value().tolist() == [3.0, 3.0] and calls == [1]


def test_buckets_start_during_backward(world_of_one):
    """The first bucket (last layer) is handed to the hook while earlier layers' gradients do not exist yet."""
    ddp = DDP(_model(), bucket_cap_mb=0.0001)
    seen = []

    def hook(state, bucket):
        seen.append((bucket.index(), [p.grad is None for p in ddp.module.parameters()], bucket.is_last()))
        return default_hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, hook)
    ddp(fabric.randn(3, 4)).sum().backward()
    assert len(seen) == len(ddp._buckets) > 2
    assert seen[0][0] == 0 and any(seen[0][1]), "bucket 0 must start before backward reaches the first layer"
    assert seen[-1][2] and not any(s[2] for s in seen[:-1])
    assert all(p.grad is not None for p in ddp.module.parameters())


def test_hook_result_becomes_the_gradient(world_of_one):
    ddp = DDP(_model())
    ref = _model()
    x = fabric.randn(5, 4)
    ref(x).sum().backward()

    def doubling(state, bucket):
        state.append(bucket.index())
        for g in bucket.gradients():
            assert g.shape in [tuple(p.shape) for p in bucket.parameters()]
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return fut.then(lambda f: f.value()[0] * 2)

    calls = []
    ddp.register_comm_hook(calls, doubling)
    ddp(x).sum().backward()
    assert calls == list(range(len(ddp._buckets)))
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), 2 * q.grad.numpy(), rtol=1e-6)


def test_fp16_compress_hook(world_of_one):
    ddp = DDP(_model())
    ref = _model()
    x = fabric.randn(5, 4)
    ref(x).sum().backward()
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    ddp(x).sum().backward()
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        want = q.grad.numpy().astype(np.float16).astype(np.float32)
        np.testing.assert_allclose(p.grad.numpy(), want, rtol=0, atol=0)
        assert p.grad.dtype == fabric.float32


def test_register_comm_hook_once(world_of_one):
    ddp = DDP(_model())
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(TypeError, match="callable"):
        DDP(_model()).register_comm_hook(None, 3)


def test_mpi_backend_without_mpi_launcher_is_clear(monkeypatch):
    from fabric.distributed import _mpi

    monkeypatch.setattr(_mpi, "available", lambda: False)
    with pytest.raises(RuntimeError, match="fabric-dl\\[mpi\\]"):
        dist.init_process_group("mpi")
    assert not dist.is_initialized()
