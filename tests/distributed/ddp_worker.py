"""Run under ``mpiexec -n N`` (or by the launcher): DDP on the MPI engine
gives every rank the gradients of single-process training on the whole
batch, with the default hook, the fp16 compression hook and no_sync.
Prints ``OK <rank> <hidden fraction>``."""
import os
import sys

import numpy as np

import fabric
import fabric.distributed as dist
from fabric.distributed.algorithms.ddp_comm_hooks import default_hooks
from fabric.nn.parallel import DistributedDataParallel as DDP


def model():
    fabric.manual_seed(0)
    return fabric.nn.Sequential(fabric.nn.Linear(8, 64), fabric.nn.Tanh(), fabric.nn.Linear(64, 64),
                                fabric.nn.Tanh(), fabric.nn.Linear(64, 3))


def main(hook):
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    fabric.manual_seed(1)
    x, y = fabric.randn(4 * n, 8), fabric.randn(4 * n, 3)
    ref = model()
    ((ref(x) - y) ** 2).mean().backward()
    ddp = DDP(model(), bucket_cap_mb=0.004)   # several buckets
    if hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    shard = slice(4 * r, 4 * r + 4)
    ((ddp(x[shard]) - y[shard]) ** 2).mean().backward()
    tol = 2e-3 if hook == "fp16" else 1e-6
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        err = np.abs(p.grad.numpy() - q.grad.numpy()).max()
        if err > tol:
            raise AssertionError(f"rank {r}: gradient differs by {err}")
    # no_sync accumulates locally, the next synced backward averages the sum
    ddp.zero_grad()
    with ddp.no_sync():
        ((ddp(x[shard]) - y[shard]) ** 2).mean().backward()
    ((ddp(x[shard]) - y[shard]) ** 2).mean().backward()
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        err = np.abs(p.grad.numpy() - 2 * q.grad.numpy()).max()
        if err > 2 * tol:
            raise AssertionError(f"rank {r}: no_sync gradient differs by {err}")
    if os.environ.get("FABRIC_MPI_PROGRESS_THREAD") == "1":   # the progress thread ran, and stopped
        import threading
        import time

        time.sleep(0.05)
        if any(t.name == "fabric-mpi-progress" for t in threading.enumerate()):
            raise AssertionError(f"rank {r}: the MPI progress thread outlived backward")
        if ddp.process_group._engine._probe_comm is None:
            raise AssertionError(f"rank {r}: the MPI progress thread never started")
    dist.destroy_process_group()
    os.write(1, f"OK {r}\n".encode())  # one write: the ranks share the pipe


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "default")
