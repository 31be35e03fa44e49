"""One rank of the NCCL engine's tests: ``python nccl_worker.py SCENARIO RANK WORLD STORE_PATH``.

With ``FAKE=1`` in the environment it runs on the fake CuPy (tests/cuda/fake_cupy.py) and the
fake NCCL beside this file, one fake device per rank; otherwise on the real CuPy and NCCL, on
device ``RANK % device_count``.  Prints ``OK <rank>`` when every check passed.

Scenarios: ``collectives`` (every operation, checked against values computed here),
``mismatch`` (ranks disagree on a count), ``timeout`` (rank 1 never joins a barrier, nor an
all_reduce waited on with ``TORCH_NCCL_BLOCKING_WAIT=1``), ``ddp``.
"""
import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.environ.get("FAKE") == "1"
if FAKE:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cuda"))
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402


def check(cond, what):
    if not cond:
        raise AssertionError(f"rank {os.environ.get('RANK')}: {what}")


def raises(exc, fn, text=""):
    try:
        fn()
    except exc as e:
        check(text in str(e), f"{exc.__name__} without {text!r}: {e}")
        return
    raise AssertionError(f"rank {os.environ.get('RANK')}: {fn} did not raise {exc.__name__}")


def collectives(fabric, dist, r, n):
    dev = "cuda"
    everyone = np.arange(n, dtype=np.float64)

    def host(t):
        return t.cpu().numpy()

    # all_reduce: every op NCCL has, float/int/bool, blocking and async, non-contiguous
    for op, ref in [(dist.ReduceOp.SUM, everyone.sum()), (dist.ReduceOp.MAX, n - 1), (dist.ReduceOp.MIN, 0),
                    (dist.ReduceOp.PRODUCT, np.prod(everyone + 1)), (dist.ReduceOp.AVG, everyone.mean())]:
        t = fabric.full((3,), float(r + 1 if op == dist.ReduceOp.PRODUCT else r), device=dev)
        dist.all_reduce(t, op=op)
        check(np.allclose(host(t), ref), f"all_reduce {op}: {host(t)}")
    ti = fabric.tensor([r, r + 1], dtype=fabric.int64, device=dev)
    dist.all_reduce(ti, op=dist.ReduceOp.AVG)
    check(host(ti).tolist() == [int(everyone.sum()) // n, int((everyone + 1).sum()) // n], f"int avg {host(ti)}")
    tb = fabric.tensor([r == 0, False], device=dev)
    dist.all_reduce(tb)
    check(host(tb).tolist() == [True, False], f"bool sum {host(tb)}")
    th = fabric.full((4,), 0.5, dtype=fabric.float16, device=dev)
    dist.all_reduce(th)
    check(host(th).dtype == np.float16 and np.all(host(th) == 0.5 * n), "float16 all_reduce")
    nc = fabric.ones(4, 6, device=dev)[:, ::2]
    dist.all_reduce(nc)
    check(np.all(host(nc) == n), "non-contiguous all_reduce")
    raises(ValueError, lambda: dist.all_reduce(fabric.ones(2, dtype=fabric.int32, device=dev), op=dist.ReduceOp.BAND),
           "Cannot use ReduceOp.BAND with NCCL")
    raises(RuntimeError, lambda: dist.all_reduce(fabric.ones(2)), "No backend type associated with device type cpu")

    # async: the host does not wait; reading before wait() is a race the fake catches
    t = fabric.full((1000,), float(r), device=dev)
    w = dist.all_reduce(t, async_op=True)
    if FAKE:
        raises(RuntimeError, lambda: host(t), "never waited")
    w.wait()
    check(np.all(host(t) == everyone.sum()) and w.is_completed(), "async all_reduce")
    check(t._version >= 1, "version bumped")
    fut = dist.all_reduce(fabric.ones(2, device=dev), async_op=True).get_future()
    check(np.all(host(fut.wait()[0]) == n), "future")

    # the collectives run on the engine's own stream, which waits for the caller's
    if FAKE:
        import fake_nccl

        import fabric.cuda

        engine = dist.group.WORLD._engine
        streams = {s for _, s in fake_nccl.calls}
        check(streams == {engine.stream.ptr} and engine.stream.ptr != fabric.cuda.current_stream().cuda_stream,
              f"streams {streams}")
        # the collective waits for the caller's stream: an asynchronous copy queued there (on a side
        # stream) runs before NCCL reads the buffer
        side = fabric.cuda.Stream()
        with fabric.cuda.stream(side):
            x = fabric.full((5,), float(r)).pin_memory().to(dev, non_blocking=True)
            w = dist.all_reduce(x, async_op=True)
            while not w.is_completed():     # polls the collective's event: its stream runs first
                pass
            check(np.all(host(x) == everyone.sum()), f"all_reduce ordered after the side stream's copy {host(x)}")

    # broadcast / reduce
    b = fabric.full((2, 3), float(r), device=dev)
    dist.broadcast(b, src=n - 1)
    check(np.all(host(b) == n - 1), "broadcast")
    rd = fabric.full((3,), float(r + 1), device=dev)
    dist.reduce(rd, dst=0)
    check(np.all(host(rd) == ((everyone + 1).sum() if r == 0 else r + 1)), f"reduce {host(rd)}")

    # gathers and scatters
    outs = [fabric.zeros(2, device=dev) for _ in range(n)]
    dist.all_gather(outs, fabric.full((2,), float(r), device=dev))
    check([host(o)[0] for o in outs] == list(everyone), "all_gather")
    cat = fabric.zeros(2 * n, device=dev)
    dist.all_gather_into_tensor(cat, fabric.full((2,), float(r), device=dev))
    check(host(cat).tolist() == np.repeat(everyone, 2).tolist(), "all_gather_into_tensor")
    rs = fabric.zeros(2, device=dev)
    dist.reduce_scatter_tensor(rs, fabric.arange(2.0 * n, device=dev))
    check(host(rs).tolist() == [2.0 * r * n, (2.0 * r + 1) * n], f"reduce_scatter_tensor {host(rs)}")
    rsl = fabric.zeros(3, device=dev)
    dist.reduce_scatter(rsl, [fabric.full((3,), float(i), device=dev) for i in range(n)])
    check(np.all(host(rsl) == r * n), "reduce_scatter")
    gl = [fabric.zeros(2, device=dev) for _ in range(n)] if r == 0 else None
    dist.gather(fabric.full((2,), float(r), device=dev), gl, dst=0)
    if r == 0:
        check([host(g)[0] for g in gl] == list(everyone), "gather")
    sc = fabric.zeros(3, device=dev)
    dist.scatter(sc, [fabric.full((3,), float(i * 10), device=dev) for i in range(n)] if r == 1 else None, src=1)
    check(np.all(host(sc) == r * 10), "scatter")
    a2a = fabric.zeros(n, device=dev)
    dist.all_to_all_single(a2a, fabric.arange(float(n), device=dev) + 100 * r)
    check(host(a2a).tolist() == [100.0 * p + r for p in range(n)], f"all_to_all_single {host(a2a)}")
    outl = [fabric.zeros(1, device=dev) for _ in range(n)]
    dist.all_to_all(outl, [fabric.full((1,), float(10 * r + p), device=dev) for p in range(n)])
    check([host(o)[0] for o in outl] == [10.0 * p + r for p in range(n)], "all_to_all")
    dist.barrier()

    # point to point: a ring, blocking and batched
    nxt, prv = (r + 1) % n, (r - 1) % n
    got = fabric.zeros(4, device=dev)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, fabric.full((4,), float(r), device=dev), nxt),
                                    dist.P2POp(dist.irecv, got, prv)])
    check(len(works) == 2 and np.all(host(got) == prv), "batch_isend_irecv ring")
    if r == 0:
        dist.send(fabric.arange(3.0, device=dev), dst=1)
    elif r == 1:
        buf = fabric.zeros(3, device=dev)
        check(dist.recv(buf, src=0) == 0 and host(buf).tolist() == [0.0, 1.0, 2.0], "send/recv")
    raises(RuntimeError, lambda: dist.recv(fabric.zeros(1, device=dev)), "recvAnysource")

    # objects travel through device memory, as in PyTorch
    objs = [{"rank": r}, "x" * (r + 1)] if r == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    check(objs == [{"rank": 0}, "x"], f"broadcast_object_list {objs}")
    gathered = [None] * n
    dist.all_gather_object(gathered, ("r", r, "y" * r))
    check(gathered == [("r", p, "y" * p) for p in range(n)], f"all_gather_object {gathered}")
    go = [None] * n if r == 0 else None
    dist.gather_object({"me": r}, go, dst=0)
    if r == 0:
        check(go == [{"me": p} for p in range(n)], "gather_object")
    so = [None]
    dist.scatter_object_list(so, [f"to {p}" for p in range(n)] if r == 0 else None, src=0)
    check(so == [f"to {r}"], "scatter_object_list")

    # subgroups get their own communicator
    sub = dist.new_group([0, n - 1])
    if r in (0, n - 1):
        s = fabric.full((2,), float(r), device=dev)
        dist.all_reduce(s, group=sub)
        check(np.all(host(s) == n - 1) and sub._engine is not dist.group.WORLD._engine, "subgroup all_reduce")
    dist.barrier()

    if FAKE:   # a buffer on another device than the communicator's: refused at the call, nothing queued
        import fake_nccl

        other = fabric.ones(2, device=f"cuda:{(r + 1) % n}")
        raises(fake_nccl.NcclError, lambda: dist.all_reduce(other), "the communicator on device")
        t = fabric.full((2,), 1.0, device=dev)
        dist.all_reduce(t)
        check(np.all(host(t) == n), "still in step after a refused call")


def ddp(fabric, dist, r, n):
    """DistributedDataParallel on the NCCL engine: buckets in device memory, all-reduced on the
    communication stream during backward; the result equals one process on the global batch.
    A parameter unused on every rank keeps grad None (find_unused_parameters); join() with uneven
    inputs (rank r has 2 + r batches) runs its shadow collectives on device tensors and ends with one
    model (its gradients are checked against PyTorch's semantics under MPI, join_worker.py)."""
    from fabric import nn
    from fabric.nn.parallel import DistributedDataParallel as DDP

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.unused = nn.Linear(4, 8), nn.Linear(8, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.fc2(fabric.tanh(self.fc1(x)))

    def make():
        fabric.manual_seed(0)
        return Net().to(dtype=fabric.float64, device="cuda")

    g = np.random.default_rng(7)
    xs = [fabric.tensor(g.standard_normal((4 * n, 4)), device="cuda") for _ in range(3)]
    ys = [fabric.tensor(g.standard_normal((4 * n, 2)), device="cuda") for _ in range(3)]
    def sgd(module):    # (the fused optimizer kernels cannot run on the fake CuPy)
        with fabric.no_grad():
            for p in module.parameters():
                if p.grad is not None:
                    p -= 0.1 * p.grad
                    p.grad = None

    ref = make()
    model = DDP(make(), find_unused_parameters=True, bucket_cap_mb=0.0001)   # several buckets
    check(len(model._buckets) > 1 and model._xp is not np, "several buckets, in device memory")
    for x, y in zip(xs, ys):
        ((ref(x) - y) ** 2).mean().backward()
        sgd(ref)
        ((model(x[4 * r:4 * (r + 1)]) - y[4 * r:4 * (r + 1)]) ** 2).mean().backward()
        check(model.module.unused.weight.grad is None, "grad of a parameter unused everywhere stays None")
        sgd(model)
    for p, q in zip(model.module.parameters(), ref.parameters()):
        check(np.allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-12, atol=1e-12),
              "DDP on NCCL equals the global batch")

    model = DDP(make(), find_unused_parameters=True)
    with model.join():
        for i in range(2 + r):
            ((model(xs[i % 3][4 * r:4 * (r + 1)]) - ys[i % 3][4 * r:4 * (r + 1)]) ** 2).mean().backward()
            sgd(model)
    everyone = [None] * n
    dist.all_gather_object(everyone, [p.detach().cpu().numpy() for p in model.module.parameters()])
    check(all(all(np.array_equal(a, b) for a, b in zip(everyone[0], other)) for other in everyone),
          "one model on every rank after join")


def main():
    scenario, rank, world, store_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    os.environ["RANK"] = str(rank)
    if FAKE:
        import fake_cupy
        import fake_nccl

        ctx = fake_cupy.installed(n_devices=world)
        ctx.__enter__()
        fake_nccl.install()
        fake_cupy.Blocking.host_wait_s = 30.0
    import fabric
    import fabric.cuda
    import fabric.distributed as dist

    fabric.cuda.set_device(rank % fabric.cuda.device_count())
    timeout = datetime.timedelta(seconds=2 if scenario == "timeout" else 60)
    dist.init_process_group("nccl", init_method=f"file://{store_path}", rank=rank, world_size=world,
                            timeout=timeout)
    check(dist.get_backend() == "nccl" and dist.group.WORLD.name() == "nccl", "backend")
    if scenario in ("collectives", "ddp"):
        (collectives if scenario == "collectives" else ddp)(fabric, dist, rank, world)
        dist.destroy_process_group()
    elif scenario == "mismatch":
        t = fabric.ones(3 + rank, device="cuda")
        dist.all_reduce(t)
        try:
            t.cpu()
        except RuntimeError as e:
            check("differs between ranks" in str(e), str(e))
            print(f"OK {rank}", flush=True)
            os._exit(0)
        raise AssertionError("a count mismatch went unnoticed")
    elif scenario == "timeout":
        sub = dist.new_group([0, 1])     # a second communicator, for the second way of waiting
        if rank == 1:
            import time

            time.sleep(6)      # past rank 0's two timeouts, then gone
            os._exit(0)
        for what in ("barrier", "blocking wait"):
            try:
                if what == "barrier":
                    dist.barrier()                                  # a host wait
                else:
                    os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"    # Work.wait() blocks the host
                    dist.all_reduce(fabric.ones(2, device="cuda"), group=sub)
            except RuntimeError as e:
                check(type(e).__name__ == "DistBackendError" and "timeout" in str(e), str(e))
                continue
            raise AssertionError(f"{what} returned without its peer")
        print(f"OK {rank}", flush=True)
        os._exit(0)
    print(f"OK {rank}", flush=True)


if __name__ == "__main__":
    main()
