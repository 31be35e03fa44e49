"""Distributed benchmarks: all_reduce bus bandwidth and DDP step time.

Engines compared, each in its own set of processes on this machine's loopback:
  mpi     fabric on MPI (mpi4py + the mpich wheel, started by mpiexec)
  tcp     fabric's pure-Python TCP transport (``FABRIC_DISTRIBUTED_ENGINE=gloo``)
  mpi+thread  (DDP table) MPI with ``FABRIC_MPI_PROGRESS_THREAD=1``: a thread drives MPI's
          progress while bucket all-reduces are in flight
  torch   PyTorch's gloo backend (the peer; only where torch is installed)

Tables:
  all_reduce  float32 messages of 1 KB ... ``--max-mb`` MB: median time and bus
              bandwidth ``2 (n - 1) / n * bytes / time`` (NCCL-tests' definition)
  ddp         the MLP and char-GPT of benchmarks/models.py (their optimizers), one step
              (forward + backward + step) at the global batch on 1 rank and split over
              n ranks; the fraction of the gradient all-reduce hidden under backward,
              by time: ``1 - (step - step_without_comm) / allreduce_alone``, and by a
              load-independent count: the bytes of the bucket all-reduces already
              complete when backward ended (DDP's ``_comm_stats``).

Run: python benchmarks/distributed.py [--ranks 2,4] [--max-mb 256] [--rounds 5]
     python benchmarks/distributed.py --quick      (2 ranks, up to 1 MB, one short round: a smoke run)
Rounds alternate the engines process by process; medians are reported.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# --- worker side ------------------------------------------------------------------------------------
def _lib(name):
    if name == "torch":
        import torch

        return torch
    import fabric

    return fabric


def _time(fn, reps):
    fn()
    best = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best.append(time.perf_counter() - start)
    return statistics.median(best)


def worker_allreduce(lib_name, sizes, out):
    lib = _lib(lib_name)
    dist = lib.distributed
    dist.init_process_group("gloo")
    n = dist.get_world_size()
    rows = []
    for nbytes in sizes:
        t = lib.ones(nbytes // 4)
        reps = max(3, min(50, int(2e8 // max(nbytes, 1))))
        dist.barrier()
        seconds = _time(lambda t=t: dist.all_reduce(t), reps)
        rows.append((nbytes, seconds, 2 * (n - 1) / n * nbytes / seconds / 1e9))
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def _model(lib, name):
    """benchmarks/models.py's model and optimizer, its global batch, and the loss of a shard through DDP."""
    sys.path.insert(0, HERE)
    import models

    lib.manual_seed(0)
    model, opt, _ = models.build(lib, name)
    F = lib.nn.functional
    if name == "mlp":
        return model, opt, lib.randn(128, 784), lib.randint(0, 10, (128,)), lambda m, x, y: F.cross_entropy(m(x), y)
    if name == "gpt":
        return model, opt, lib.randint(0, 65, (32, 64)), lib.randint(0, 65, (32, 64)), lambda m, x, y: m(x, y)[1]
    raise ValueError(f"no DDP case for {name!r}")


def worker_ddp(lib_name, model_name, out, steps, bucket_cap_mb=None):
    lib = _lib(lib_name)
    dist = lib.distributed
    dist.init_process_group("gloo")
    n, r = dist.get_world_size(), dist.get_rank()
    model, opt, x, y, loss = _model(lib, model_name)
    per = x.shape[0] // n
    xs, ys = x[r * per:(r + 1) * per], y[r * per:(r + 1) * per]   # this rank's shard of the global batch
    ddp = lib.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)

    def step():
        opt.zero_grad()
        loss(ddp, xs, ys).backward()
        opt.step()

    def step_local():
        opt.zero_grad()
        with ddp.no_sync():
            loss(ddp, xs, ys).backward()
        opt.step()

    flat = lib.cat([p.detach().reshape(-1) for p in model.parameters()])
    dist.barrier()
    t_step = _time(step, steps)
    stats = list(getattr(ddp, "_comm_stats", [0, 0]))
    t_local = _time(step_local, steps)
    t_comm = _time(lambda: dist.all_reduce(flat), steps) if n > 1 else 0.0
    if r == 0:
        with open(out, "w") as f:
            json.dump({"step": t_step, "local": t_local, "comm": t_comm,
                       "done_early": stats[1] / stats[0] if stats[0] else 0.0}, f)
    dist.destroy_process_group()


# --- driver side -------------------------------------------------------------------------------------
def _launch(engine, n, args, timeout=1800):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    me = [os.path.abspath(__file__)] + args
    if engine.startswith("mpi"):
        if engine == "mpi+thread":    # DDP drives MPI's progress from a thread during backward
            env["FABRIC_MPI_PROGRESS_THREAD"] = "1"
        mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        cmd = [mpiexec if os.access(mpiexec, os.X_OK) else shutil.which("mpiexec"), "-n", str(n),
               sys.executable, *me]
    elif engine == "tcp":
        env["FABRIC_DISTRIBUTED_ENGINE"] = "gloo"
        cmd = [sys.executable, "-m", "fabric.distributed.run", "--engine", "gloo", "--nproc-per-node", str(n), *me]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n), *me]
    subprocess.run(cmd, env=env, check=True, timeout=timeout, stdout=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--max-mb", type=float, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--engines", default="mpi,tcp,torch")
    p.add_argument("--skip-ddp", action="store_true")
    p.add_argument("--bucket-cap-mb", type=float, default=None,
                   help="DDP's bucket_cap_mb (default: PyTorch's 25 MB after a 1 MB first bucket); smaller buckets "
                        "start during backward and can be hidden under it")
    p.add_argument("--quick", action="store_true", help="2 ranks, messages up to 1 MB, one round of 2 steps")
    p.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.quick:
        a.ranks, a.max_mb, a.rounds, a.steps = "2", 1, 1, 1
    if a.worker:
        kind, *rest = a.worker
        if kind == "allreduce":
            worker_allreduce(rest[0], [int(s) for s in rest[2].split(",")], rest[1])
        else:
            worker_ddp(rest[0], rest[2], rest[1], int(rest[3]), float(rest[4]) if len(rest) > 4 else None)
        return
    engines = [e for e in a.engines.split(",") if (e != "torch" or _has_torch()) and (e != "mpi" or _has_mpi())]
    sizes, s = [], 1024
    while s <= a.max_mb * 2 ** 20:
        sizes.append(s)
        s *= 8 if s < 2 ** 20 else 4
    tmp = tempfile.mkdtemp()
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', '(unset)')}")
    for n in [int(r) for r in a.ranks.split(",")]:
        results = {e: [] for e in engines}
        for _ in range(a.rounds):
            for e in engines:
                out = os.path.join(tmp, f"ar_{e}_{n}.json")
                lib = "torch" if e == "torch" else "fabric"
                _launch(e, n, ["--worker", "allreduce", lib, out, ",".join(map(str, sizes))])
                with open(out) as f:
                    results[e].append(json.load(f))
        print(f"\nall_reduce, {n} ranks: median time (ms) / bus bandwidth (GB/s)")
        print("| bytes | " + " | ".join(engines) + " |")
        print("|---|" + "---|" * len(engines))
        for i, nbytes in enumerate(sizes):
            cells = []
            for e in engines:
                t = statistics.median(r[i][1] for r in results[e])
                bw = statistics.median(r[i][2] for r in results[e])
                cells.append(f"{t * 1e3:.3f} / {bw:.2f}")
            print(f"| {_fmt(nbytes)} | " + " | ".join(cells) + " |")
        if a.skip_ddp:
            continue
        print(f"\nDDP, {n} ranks vs 1 (global batch fixed): step ms, speed-up, hidden fraction of all-reduce")
        print("| model | engine | 1 rank | n ranks | speed-up | all-reduce hidden (time) | bytes done before "
              "backward ended |")
        print("|---|---|---|---|---|---|---|")
        note = "(tcp runs each bucket's all-reduce synchronously inside backward: its bytes count as done, " \
               "nothing overlaps)"
        for model in ("mlp", "gpt"):
            for e in [x for x in engines if x != "torch"] + (["mpi+thread"] if "mpi" in engines else []):
                runs = {}
                for ranks in (1, n):
                    vals = []
                    for _ in range(a.rounds):
                        out = os.path.join(tmp, f"ddp_{e}_{ranks}.json")
                        cap = [] if a.bucket_cap_mb is None else [str(a.bucket_cap_mb)]
                        _launch(e, ranks, ["--worker", "ddp", "fabric", out, model, str(a.steps), *cap])
                        with open(out) as f:
                            vals.append(json.load(f))
                    runs[ranks] = {k: statistics.median(v[k] for v in vals) for k in vals[0]}
                one, many = runs[1]["step"], runs[n]
                hidden = 1 - (many["step"] - many["local"]) / many["comm"] if many["comm"] > 0 else float("nan")
                print(f"| {model} | {e} | {one * 1e3:.1f} | {many['step'] * 1e3:.1f} | {one / many['step']:.2f}x | "
                      f"{max(0.0, min(1.0, hidden)):.0%} | {many['done_early']:.0%} |")
        if "tcp" in engines:
            print(note)


def _fmt(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TB"


def _has_mpi():
    sys.path.insert(0, ROOT)
    from fabric.distributed.run import _mpiexec

    return _mpiexec() is not None


def _has_torch():
    try:
        import torch  # noqa: F401

        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
