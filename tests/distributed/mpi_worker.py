"""Run under ``mpiexec -n N``: every collective of fabric.distributed on the
MPI engine, checked against values computed locally.  Prints ``OK <rank>``.

Used by tests/distributed/test_mpi.py; runnable by hand:
``mpiexec -n 3 python tests/distributed/mpi_worker.py``.
"""
import os
import sys

import numpy as np

import fabric
import fabric.distributed as dist


def check(cond, what):
    if not cond:
        raise AssertionError(f"rank {dist.get_rank()}: {what}")


def main(backend):
    dist.init_process_group(backend)
    r, n = dist.get_rank(), dist.get_world_size()
    check(dist.get_backend() == backend, f"backend {dist.get_backend()}")
    check(dist.group.WORLD.name() == "mpi", "engine")
    everyone = np.arange(n, dtype=np.float64)

    # all_reduce: every op, float and int, blocking and async, non-contiguous
    for op, ref in [(dist.ReduceOp.SUM, everyone.sum()), (dist.ReduceOp.MAX, n - 1), (dist.ReduceOp.MIN, 0),
                    (dist.ReduceOp.PRODUCT, np.prod(everyone + 1)), (dist.ReduceOp.AVG, everyone.mean())]:
        t = fabric.full((3,), float(r + 1 if op == dist.ReduceOp.PRODUCT else r))
        dist.all_reduce(t, op=op)
        check(np.allclose(t.numpy(), ref), f"all_reduce {op}: {t}")
    ti = fabric.tensor([r, r], dtype=fabric.int64)
    dist.all_reduce(ti, op=dist.ReduceOp.AVG)
    check(ti.tolist() == [int(everyone.sum()) // n] * 2, f"int avg {ti}")
    tb = fabric.tensor([r == 0, False])
    dist.all_reduce(tb)
    check(tb.tolist() == [True, False], f"bool sum {tb}")
    tx = fabric.tensor([5, 3], dtype=fabric.int32)
    dist.all_reduce(tx, op=dist.ReduceOp.BXOR)
    check(tx.tolist() == ([5, 3] if n % 2 else [0, 0]), f"bxor {tx}")
    big = fabric.ones(4, 6)[:, ::2]       # non-contiguous
    dist.all_reduce(big)
    check(np.all(big.numpy() == n), "non-contiguous all_reduce")
    w = dist.all_reduce(t := fabric.full((1000,), float(r)), async_op=True)
    w.wait()
    check(w.is_completed() and np.all(t.numpy() == everyone.sum()), "async all_reduce")
    check(t._version >= 1, "version bumped")

    # broadcast / reduce
    t = fabric.full((2, 2), float(r))
    dist.broadcast(t, src=n - 1)
    check(np.all(t.numpy() == n - 1), f"broadcast {t}")
    t = fabric.full((2,), float(r + 1))
    dist.reduce(t, dst=0)
    check(np.all(t.numpy() == (everyone + 1).sum()) if r == 0 else np.all(t.numpy() == r + 1), f"reduce {t}")

    # gathers
    outs = [fabric.zeros(2) for _ in range(n)]
    dist.all_gather(outs, fabric.full((2,), float(r)))
    check([o.tolist() for o in outs] == [[float(i)] * 2 for i in range(n)], "all_gather")
    out = fabric.zeros(n * 2)
    dist.all_gather_into_tensor(out, fabric.full((2,), float(r)))
    check(out.tolist() == [float(i) for i in range(n) for _ in range(2)], f"all_gather_into_tensor {out}")
    gl = [fabric.zeros(1) for _ in range(n)] if r == 0 else None
    dist.gather(fabric.tensor([float(r)]), gl, dst=0)
    if r == 0:
        check([g.item() for g in gl] == list(map(float, range(n))), "gather")
    t = fabric.zeros(2)
    dist.scatter(t, [fabric.full((2,), float(i * 10)) for i in range(n)] if r == 1 % n else None, src=1 % n)
    check(t.tolist() == [r * 10.0] * 2, f"scatter {t}")

    # reduce-scatter, all-to-all
    o = fabric.zeros(2)
    dist.reduce_scatter(o, [fabric.full((2,), float(i + r)) for i in range(n)])
    check(o.tolist() == [float(n * r + everyone.sum())] * 2, f"reduce_scatter {o}")
    o = fabric.zeros(1)
    dist.reduce_scatter_tensor(o, fabric.arange(float(n)) + r)
    check(o.item() == n * r + everyone.sum(), "reduce_scatter_tensor")
    o = fabric.zeros(n)
    dist.all_to_all_single(o, fabric.arange(float(n)) + 100 * r)
    check(o.tolist() == [100.0 * i + r for i in range(n)], f"all_to_all_single {o}")
    outs = [fabric.zeros(1) for _ in range(n)]
    dist.all_to_all(outs, [fabric.tensor([float(100 * r + i)]) for i in range(n)])
    check([x.item() for x in outs] == [100.0 * i + r for i in range(n)], "all_to_all")

    # point to point (a ring), any-source receive, batch
    nxt, prv = (r + 1) % n, (r - 1) % n
    if n > 1:
        recv = fabric.zeros(3)
        ws = dist.batch_isend_irecv([dist.P2POp(dist.isend, fabric.full((3,), float(r)), nxt),
                                     dist.P2POp(dist.irecv, recv, prv)])
        check(all(w.is_completed() for w in ws) and recv.tolist() == [float(prv)] * 3, f"ring {recv}")
        if r == 0:
            got = set()
            for _ in range(n - 1):
                buf = fabric.zeros(1)
                got.add(dist.recv(buf))
                check(buf.item() == 7.0, "recv any")
            check(got == set(range(1, n)), f"senders {got}")
        else:
            dist.send(fabric.tensor([7.0]), dst=0)

    # object collectives
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "s": "x" * r})
    check(objs == [{"rank": i, "s": "x" * i} for i in range(n)], f"all_gather_object {objs}")
    lst = [r, "hello"] if r == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    check(lst == [0, "hello"], "broadcast_object_list")
    got = [None]
    dist.scatter_object_list(got, [f"to{i}" for i in range(n)] if r == 0 else None, src=0)
    check(got == [f"to{r}"], f"scatter_object_list {got}")
    gathered = [None] * n if r == 0 else None
    dist.gather_object(r * 2, gathered, dst=0)
    if r == 0:
        check(gathered == [2 * i for i in range(n)], "gather_object")

    # subgroups get their own communicator
    sub = dist.new_group([0, n - 1]) if n > 1 else dist.new_group([0])
    if r in (0, n - 1):
        t = fabric.tensor([float(r)])
        dist.all_reduce(t, group=sub)
        check(t.item() == float(n - 1 if n > 1 else 0), f"subgroup {t}")
        check(sub._engine is not None and sub._engine.comm != dist.group.WORLD._engine.comm, "own communicator")
    else:
        check(sub == dist.GroupMember.NON_GROUP_MEMBER, "non-member")
    dist.barrier()
    dist.destroy_process_group()
    os.write(1, f"OK {r}\n".encode())  # one write: the ranks share the pipe


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mpi")
