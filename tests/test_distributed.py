"""fabric.distributed (gloo over sockets), DistributedDataParallel,
DistributedSampler and multiprocessing.spawn.

Multi-process tests spawn ranks on 127.0.0.1 with a free port; each worker
checks its numbers and raises on a mismatch, which ``spawn`` turns into an
exception here.  Every spawn has a deadline so that a bug cannot hang CI.
"""
from __future__ import annotations

import os
import socket
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import pytest

import fabric
import fabric.distributed as dist
import fabric.multiprocessing as mp

TIMEOUT = timedelta(seconds=20)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(fn, world, *args, deadline=60.0):
    ctx = mp.spawn(fn, args=(_free_port(), world, *args), nprocs=world, join=False)
    end = time.monotonic() + deadline
    while not ctx.join(timeout=max(0.0, end - time.monotonic())):
        if time.monotonic() >= end:
            for p in ctx.processes:
                p.kill()
            pytest.fail(f"spawned ranks did not finish within {deadline}s")


def _init_tcp(rank, port, world, timeout=TIMEOUT):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timeout)


def _rank_data(r, shape, dtype=np.float32):
    return np.random.default_rng(100 + r).standard_normal(shape).astype(dtype)


# --- collectives ---------------------------------------------------------------------------------------
def _collectives_worker(rank, port, world):
    _init_tcp(rank, port, world)
    assert dist.is_initialized() and dist.get_rank() == rank and dist.get_world_size() == world
    assert dist.get_backend() == "gloo"
    T = fabric.tensor

    # all_reduce SUM: rank-order sums, the same bits on every rank
    data = [_rank_data(r, (5, 7)) for r in range(world)]
    expect = data[0].copy()
    for d in data[1:]:
        expect += d
    t = T(data[rank])
    before = t._version
    work = dist.all_reduce(t, async_op=True)
    assert work.is_completed() and work.wait() and work.result()[0] is t
    assert t._version > before
    assert np.array_equal(t.numpy(), expect)
    everyone = [fabric.zeros(5, 7) for _ in range(world)]
    dist.all_gather(everyone, t)
    assert all(np.array_equal(e.numpy().view(np.int32), t.numpy().view(np.int32)) for e in everyone)
    for op, ref in [(dist.ReduceOp.PRODUCT, np.prod), (dist.ReduceOp.MIN, np.min), (dist.ReduceOp.MAX, np.max)]:
        t = T(data[rank].astype(np.float64))
        dist.all_reduce(t, op=op)
        np.testing.assert_allclose(t.numpy(), ref(np.stack(data).astype(np.float64), axis=0), rtol=1e-12)
    t = T(data[rank])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    np.testing.assert_allclose(t.numpy(), expect / world, rtol=1e-6)
    ints = [np.arange(6, dtype=np.int64) * (r + 3) for r in range(world)]
    for op, ufunc in [(dist.ReduceOp.SUM, np.add), (dist.ReduceOp.BAND, np.bitwise_and),
                      (dist.ReduceOp.BOR, np.bitwise_or), (dist.ReduceOp.BXOR, np.bitwise_xor)]:
        t = T(ints[rank])
        dist.all_reduce(t, op=op)
        assert t.dtype == fabric.int64 and np.array_equal(t.numpy(), ufunc.reduce(np.stack(ints), axis=0))
    # 0-d, empty, non-contiguous, large
    t = T(float(rank + 1))
    dist.all_reduce(t)
    assert t.shape == () and t.item() == sum(range(1, world + 1))
    t = fabric.zeros(0, 3)
    dist.all_reduce(t)
    base = T(data[rank])
    view = base.t()
    dist.all_reduce(view)
    assert np.array_equal(base.numpy(), expect)
    big = fabric.ones(300_001) * (rank + 1)
    dist.all_reduce(big)
    assert (big.numpy() == sum(range(1, world + 1))).all()

    # broadcast / reduce
    t = T(data[rank])
    dist.broadcast(t, src=1)
    assert np.array_equal(t.numpy(), data[1])
    t = T(data[rank])
    dist.reduce(t, dst=world - 1)
    assert np.array_equal(t.numpy(), expect if rank == world - 1 else data[rank])
    # all_gather_into_tensor (concatenated and stacked outputs)
    out = fabric.zeros(world * 5, 7)
    dist.all_gather_into_tensor(out, T(data[rank]))
    assert np.array_equal(out.numpy(), np.concatenate(data))
    out = fabric.zeros(world, 5, 7)
    dist.all_gather_into_tensor(out, T(data[rank]))
    assert np.array_equal(out.numpy(), np.stack(data))
    # gather / scatter
    gl = [fabric.zeros(5, 7) for _ in range(world)] if rank == 0 else None
    dist.gather(T(data[rank]), gl, dst=0)
    if rank == 0:
        assert all(np.array_equal(g.numpy(), d) for g, d in zip(gl, data))
    t = fabric.zeros(5, 7)
    dist.scatter(t, [T(d) for d in data] if rank == 1 else None, src=1)
    assert np.array_equal(t.numpy(), data[rank])
    # reduce_scatter(_tensor)
    chunks = [np.stack([_rank_data(r * 10 + c, (2, 3)) for c in range(world)]) for r in range(world)]
    out = fabric.zeros(2, 3)
    dist.reduce_scatter_tensor(out, T(chunks[rank].reshape(world * 2, 3)))
    ref = chunks[0][rank].copy()
    for c in chunks[1:]:
        ref += c[rank]
    assert np.array_equal(out.numpy(), ref)
    out = fabric.zeros(2, 3)
    dist.reduce_scatter(out, [T(c) for c in chunks[rank]])
    assert np.array_equal(out.numpy(), ref)
    # all_to_all
    inp = fabric.arange(world * 2) + 100 * rank
    out = fabric.zeros(world * 2, dtype=fabric.int64)
    dist.all_to_all_single(out, inp)
    assert out.tolist() == [100 * r + 2 * rank + k for r in range(world) for k in range(2)]
    outs = [fabric.zeros(1, dtype=fabric.int64) for _ in range(world)]
    dist.all_to_all(outs, [fabric.tensor([10 * rank + r]) for r in range(world)])
    assert [o.item() for o in outs] == [10 * r + rank for r in range(world)]

    # point to point: a ring, symmetric isend/irecv of 8 MB (would deadlock if sends blocked), any-source recv
    right, left = (rank + 1) % world, (rank - 1) % world
    got = fabric.zeros(3)
    if rank % 2 == 0:
        dist.send(fabric.full((3,), float(rank)), right)
        dist.recv(got, left)
    else:
        dist.recv(got, left)
        dist.send(fabric.full((3,), float(rank)), right)
    assert (got.numpy() == left).all()
    payload = fabric.full((2_000_000,), float(rank))
    box = fabric.zeros(2_000_000)
    works = [dist.isend(payload, right, tag=7), dist.irecv(box, left, tag=7)]
    for w in works:
        w.wait()
    assert works[1].is_completed() and (box.numpy() == left).all()
    ops = [dist.P2POp(dist.isend, fabric.tensor([rank]), right), dist.P2POp(dist.irecv, fabric.zeros(1, dtype=fabric.int64), left)]
    dist.batch_isend_irecv(ops)
    assert ops[1].tensor.item() == left
    if rank == 0:
        senders = set()
        for _ in range(world - 1):
            x = fabric.zeros(1)
            senders.add(dist.recv(x))
            assert x.item() == 42.0
        assert senders == set(range(1, world))
    else:
        dist.send(fabric.tensor([42.0]), 0)

    # objects
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "s": "x" * rank})
    assert objs == [{"rank": r, "s": "x" * r} for r in range(world)]
    lst = [rank, "a"] if rank == 1 else [None, None]
    dist.broadcast_object_list(lst, src=1)
    assert lst == [1, "a"]
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(rank * 2, gathered, dst=0)
    if rank == 0:
        assert gathered == [2 * r for r in range(world)]
    mine = [None]
    dist.scatter_object_list(mine, [f"to{r}" for r in range(world)] if rank == 0 else None, src=0)
    assert mine == [f"to{rank}"]

    # a subgroup of ranks 0 and world-1 (every rank creates it)
    sub = dist.new_group([0, world - 1])
    if rank in (0, world - 1):
        assert dist.get_rank(sub) == (0 if rank == 0 else 1) and dist.get_world_size(sub) == 2
        t = fabric.tensor([float(rank)])
        dist.all_reduce(t, group=sub)
        assert t.item() == world - 1
        t = fabric.tensor([float(rank)])
        dist.broadcast(t, group=sub, group_src=1)
        assert t.item() == world - 1
        assert dist.get_process_group_ranks(sub) == [0, world - 1]
    else:
        assert sub == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(fabric.zeros(1), group=sub) is None
        assert "does not belong to the given group" in str(caught[0].message)
    dist.barrier()

    # errors
    with pytest.raises(RuntimeError, match="invalid tensor size at index 0"):
        dist.all_gather([fabric.zeros(3) for _ in range(world)], fabric.zeros(2))
    with pytest.raises(ValueError, match="should not be the same as the rank of the current process"):
        dist.send(fabric.zeros(1), rank)
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type torch.Tensor"):
        dist.all_reduce(np.zeros(3))
    with pytest.raises(ValueError, match="must NOT be specified on non-destination ranks"):
        if rank != 0:
            dist.gather(fabric.zeros(1), [fabric.zeros(1)] * world, dst=0)
        else:
            raise ValueError("must NOT be specified on non-destination ranks")
    with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
        _init_tcp(rank, port, world)
    dist.barrier()
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_collectives_three_ranks():
    _run(_collectives_worker, 3)


# --- DistributedDataParallel ---------------------------------------------------------------------------
def _make_model(seed):
    fabric.manual_seed(seed)
    return fabric.nn.Sequential(fabric.nn.Linear(4, 8), fabric.nn.Tanh(), fabric.nn.Linear(8, 1))


def _full_batch():
    g = np.random.default_rng(0)
    return fabric.tensor(g.standard_normal((8, 4)).astype(np.float32)), \
        fabric.tensor(g.standard_normal((8, 1)).astype(np.float32))


def _reference_training(steps):
    model = _make_model(0)
    opt = fabric.optim.SGD(model.parameters(), lr=0.1)
    x, y = _full_batch()
    for _ in range(steps):
        opt.zero_grad()
        fabric.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def _check_same_on_all_ranks(arrays):
    flat = fabric.tensor(np.concatenate([a.reshape(-1) for a in arrays]))
    gathered = [fabric.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    for g in gathered:
        assert np.array_equal(g.numpy().view(np.uint32), flat.numpy().view(np.uint32))


def _ddp_worker(rank, port, world):
    from fabric.nn.parallel import DistributedDataParallel as DDP

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group("gloo", timeout=TIMEOUT)    # env://
    F = fabric.nn.functional
    x, y = _full_batch()
    shard = slice(rank * 8 // world, (rank + 1) * 8 // world)

    # 3 steps on shards == 3 steps on the full batch (rank 1 starts from other weights: DDP broadcasts rank 0's)
    for as_view in (False, True):
        model = DDP(_make_model(rank), gradient_as_bucket_view=as_view, bucket_cap_mb=1e-5)
        assert len(model._buckets) > 1
        opt = fabric.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            F.mse_loss(model(x[shard]), y[shard]).backward()
            opt.step()
        mine = [p.detach().numpy() for p in model.module.parameters()]
        for a, b in zip(mine, _reference_training(3)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        _check_same_on_all_ranks(mine)
        assert next(iter(model.state_dict())) == "module.0.weight"

    # no_sync: two local micro-batches, averaged by the second (synchronised) backward
    model = DDP(_make_model(0))
    ref = _make_model(0)
    micro = [slice(rank * 4, rank * 4 + 2), slice(rank * 4 + 2, rank * 4 + 4)]
    with model.no_sync():
        F.mse_loss(model(x[micro[0]]), y[micro[0]]).backward()
    local = [p.grad.numpy().copy() for p in model.module.parameters()]
    F.mse_loss(model(x[micro[1]]), y[micro[1]]).backward()
    for r in range(world):
        for m in range(2):
            s = slice(r * 4 + 2 * m, r * 4 + 2 * m + 2)
            F.mse_loss(ref(x[s]), y[s]).backward()
    for p, q, loc in zip(model.module.parameters(), ref.parameters(), local):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() / world, rtol=1e-5, atol=1e-7)
        assert not np.allclose(loc, q.grad.numpy() / world)   # no_sync really stayed local

    # buffers follow rank 0 before each forward
    class Scaled(fabric.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = fabric.nn.Linear(4, 1)
            self.register_buffer("scale", fabric.ones(1))

        def forward(self, inp):
            return self.lin(inp) * self.scale

    model = DDP(Scaled())
    model.module.scale.fill_(rank + 1.0)            # the replicas drift apart ...
    model(x[shard])                                 # ... and forward first copies rank 0's buffers
    assert model.module.scale.item() == 1.0
    model.module.scale.fill_(rank + 1.0)
    with fabric.no_grad():
        model(x[shard])                             # the previous forward synced grads: buffers sync too
    assert model.module.scale.item() == 1.0
    model.module.scale.fill_(rank + 1.0)
    with fabric.no_grad():
        model(x[shard])                             # after a no-grad forward PyTorch skips the buffer sync
    assert model.module.scale.item() == rank + 1.0

    # unused parameters
    class Branchy(fabric.nn.Module):
        def __init__(self):
            super().__init__()
            self.used = fabric.nn.Linear(4, 1)
            self.unused = fabric.nn.Linear(4, 1)

        def forward(self, inp):
            return self.used(inp)

    model = DDP(Branchy(), find_unused_parameters=True)
    for _ in range(2):
        model.zero_grad()
        model(x[shard]).sum().backward()
        assert model.module.unused.weight.grad is None and model.module.used.weight.grad is not None
    _check_same_on_all_ranks([model.module.used.weight.grad.numpy()])
    model = DDP(Branchy())
    model(x[shard]).sum().backward()
    with pytest.raises(RuntimeError, match="Expected to have finished reduction in the prior iteration"):
        model(x[shard])
    dist.destroy_process_group()


def test_ddp_matches_single_process_training():
    _run(_ddp_worker, 2)


# --- failures: dead and silent peers, spawn errors -----------------------------------------------------
def _faulty_peers_worker(rank, port, world):
    _init_tcp(rank, port, world)
    with_dead = dist.new_group([0, 1], timeout=timedelta(seconds=5))
    with_silent = dist.new_group([0, 2], timeout=timedelta(seconds=0.5))
    if rank == 1:
        os._exit(0)          # leaves without a word
    if rank == 2:
        time.sleep(2.0)      # alive, but never joins the collective
        return
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="connection to rank 1 closed"):
        dist.all_reduce(fabric.ones(10), group=with_dead)
    assert time.monotonic() - start < 4
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"timed out after 0.5s .* waiting on rank\(s\) \[2\]"):
        dist.all_reduce(fabric.ones(10), group=with_silent)
    assert time.monotonic() - start < 2.0


def test_dead_or_silent_peer_raises_instead_of_hanging():
    _run(_faulty_peers_worker, 3, deadline=30)


def _raising(rank, _port, _world):
    if rank == 1:
        raise ValueError("bad things on rank 1")


def _exiting(rank, _port, _world):
    if rank == 0:
        sys.exit(3)
    time.sleep(5)


def test_spawn_reports_child_errors():
    with pytest.raises(mp.ProcessRaisedException, match="bad things on rank 1") as info:
        _run(_raising, 2)
    assert "-- Process 1 terminated with the following error:" in str(info.value)
    assert "Traceback" in str(info.value) and info.value.error_index == 1
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        _run(_exiting, 2)


# --- in-process: stores, init errors, world of one -----------------------------------------------------
def test_tcp_store():
    server = dist.TCPStore("127.0.0.1", 0, 1, is_master=True, timeout=timedelta(seconds=5))
    client = dist.TCPStore("127.0.0.1", server.port, timeout=timedelta(seconds=0.3))
    server.set("k", "v")
    assert client.get("k") == b"v"
    assert client.add("n", 2) == 2 and server.add("n", 5) == 7 and client.get("n") == b"7"
    assert client.check(["k", "n"]) and not client.check(["zz"])
    client.wait(["k"])
    assert client.compare_set("k", "v", "w") == b"w" and client.compare_set("k", "v", "x") == b"w"
    assert client.delete_key("k") and not client.check(["k"])
    with pytest.raises(dist.DistStoreError, match="wait timeout after 300ms, keys: /missing"):
        client.get("missing")
    with pytest.raises(RuntimeError):
        client.wait(["missing"], timedelta(seconds=0.1))
    pre = dist.PrefixStore("p", client)
    pre.set("a", b"1")
    assert server.get("p/a") == b"1" and pre.get("a") == b"1"
    client.close()
    server.close()


def test_file_and_hash_store(tmp_path):
    path = str(tmp_path / "store")
    a, b = dist.FileStore(path, 2), dist.FileStore(path, 2)
    a.set("x", b"hello")
    assert b.get("x") == b"hello" and b.add("c", 3) == 3 and a.add("c", 1) == 4
    assert a.delete_key("x") and not b.check(["x"])
    b.set_timeout(timedelta(seconds=0.2))
    with pytest.raises(dist.DistStoreError):
        b.get("x")
    a.close()
    b.close()
    assert not os.path.exists(path)
    h = dist.HashStore()
    h.set("k", "v")
    assert h.get("k") == b"v" and h.add("i", 4) == 4 and h.num_keys() == 2


def test_init_errors(monkeypatch):
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="env:// rendezvous: environment variable RANK expected, but not set"):
        dist.init_process_group("gloo")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError, match="environment variable MASTER_ADDR expected, but not set"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="tcp:// rendezvous: rank parameter missing"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1234", world_size=2)
    with pytest.raises(RuntimeError, match="NCCL"):
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1234", world_size=1, rank=0)
    with pytest.raises(AssertionError, match="Cannot specify both init_method and store."):
        dist.init_process_group("gloo", init_method="env://", store=dist.HashStore())
    with pytest.raises(ValueError, match="Invalid backend: 'foo'"):
        dist.init_process_group("foo")
    assert not dist.is_initialized() and dist.is_available()


@pytest.fixture
def world_of_one():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_world_of_one(world_of_one):
    t = fabric.tensor([1.0, 2.0])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [1.0, 2.0]
    out = [fabric.zeros(2)]
    dist.all_gather(out, t)
    assert out[0].tolist() == [1.0, 2.0]
    from fabric.nn.parallel import DistributedDataParallel as DDP

    model = DDP(fabric.nn.Linear(3, 2))
    model(fabric.ones(4, 3)).sum().backward()
    assert model.module.weight.grad.tolist() == [[4.0] * 3] * 2
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DDP(fabric.nn.ReLU())
    with pytest.raises(ValueError, match="device_ids and output_device arguments only work"):
        DDP(fabric.nn.Linear(1, 1), device_ids=[0])


def test_module_paths():
    import importlib

    from fabric import _torch_alias

    for name in ("distributed", "nn.parallel", "multiprocessing"):
        assert _torch_alias.fabric_module_name("torch." + name) == "fabric." + name
        importlib.import_module("fabric." + name)
    assert fabric.nn.parallel.DistributedDataParallel is fabric.nn.parallel.distributed.DistributedDataParallel
    import fabric.utils.data.distributed as ud

    assert ud.DistributedSampler is fabric.utils.data.DistributedSampler is fabric.data.DistributedSampler


@pytest.mark.parametrize("module", ["fabric.distributed", "fabric.distributed.store",
                                    "fabric.distributed.distributed_c10d", "fabric.nn.parallel",
                                    "fabric.nn.parallel.distributed", "fabric.data.distributed"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


# --- DistributedSampler vs torch -----------------------------------------------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_distributed_sampler_matches_torch(shuffle, drop_last):
    import torch.utils.data as tud

    from fabric.utils.data.distributed import DistributedSampler

    for n in (0, 1, 7, 10, 23):
        for replicas in (1, 3, 4):
            for rank in range(replicas):
                ours = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=3, drop_last=drop_last)
                theirs = tud.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=3,
                                                drop_last=drop_last)
                for epoch in range(3):
                    ours.set_epoch(epoch)
                    theirs.set_epoch(epoch)
                    assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_defaults(world_of_one):
    from fabric.utils.data import DistributedSampler

    s = DistributedSampler(range(5), shuffle=False)
    assert s.num_replicas == 1 and s.rank == 0 and list(s) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(5), num_replicas=2, rank=3)


# --- the launcher ------------------------------------------------------------------------------------------
def test_launcher_runs_ranks_and_reports_failures(tmp_path):
    import subprocess

    ok = tmp_path / "ok.py"
    ok.write_text("import os, torch, torch.distributed as dist\n"
                  "dist.init_process_group('gloo')\n"
                  "t = torch.tensor([dist.get_rank() + 1.0]); dist.all_reduce(t)\n"
                  "line = f\"rank{os.environ['RANK']}/{os.environ['WORLD_SIZE']} local{os.environ['LOCAL_RANK']} "
                  "sum{t.item()} {type(t).__module__}\\n\"\n"
                  "os.write(1, line.encode())  # one write: the ranks share the pipe\n"
                  "dist.destroy_process_group()\n")
    out = subprocess.run([sys.executable, "-m", "fabric.distributed.run", "--nproc-per-node", "2", "--torch-alias",
                          str(ok)], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n"))[-2:] == ["rank0/2 local0 sum3.0 fabric._tensor",
                                                  "rank1/2 local1 sum3.0 fabric._tensor"]
    bad = tmp_path / "bad.py"
    bad.write_text("import os, sys, time\nif os.environ['RANK'] == '1': sys.exit(3)\ntime.sleep(30)\n")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "fabric.distributed.run", "--nproc-per-node", "2", str(bad)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 3 and "local rank 1 exited with code 3" in out.stderr
    assert time.monotonic() - start < 20
