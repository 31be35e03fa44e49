"""Training-step throughput: fabric (NumPy path), fabric with the numba CPU kernels
(the ``cpu`` extra) and PyTorch, on the same machine, in the same run.

Models: see benchmarks/models.py (mlp, lenet, cifar, gpt, lstm, encoder); identical code for
every library.  Each (library, model) runs in its own subprocess, so peak memory (max RSS)
is its own; ``--rounds`` alternates the processes and reports medians (the ratio is the
median of the per-round ratios).  Steady-state figures exclude the first ``--warmup``
steps; the first step's time is reported on its own (for ``fabric+numba`` it holds the
kernels' compilation, or their load from the on-disk cache; ``--cold`` starts from an
empty numba cache).

    python benchmarks/train.py [--steps N] [--rounds 3] [--models mlp,lenet] [--cold]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import models  # noqa: E402

LIBS = {"fabric": ("fabric", "0"), "fabric+numba": ("fabric", "1"), "torch": ("torch", None)}


def run_one(libname, name, steps, warmup):
    lib = __import__(libname)
    if libname == "torch":
        lib.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    lib.manual_seed(0)
    model, opt, loss_fn = models.build(lib, name)

    def step():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()

    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    for _ in range(max(warmup - 1, 0)):
        step()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t0
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / steps
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"steps_per_s": steps / dt, "peak_mb": peak_mb, "first_s": first, "faults": faults}))


def _available(libs):
    # looked up, not imported: a child's ru_maxrss starts from its parent's RSS at fork time
    # (Linux keeps the high-water mark across exec), so the parent stays small
    import importlib.util

    out = []
    for lib in libs:
        module, kernels = LIBS[lib]
        if importlib.util.find_spec(module) is None or (kernels == "1" and importlib.util.find_spec("numba") is None):
            continue
        out.append(lib)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--models", default="mlp,lenet,cifar,gpt,lstm,encoder")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--cold", action="store_true", help="empty numba cache (first step = compile time)")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_one(args.child[0], args.child[1], args.steps, args.warmup)
        return
    libs = _available(args.libs.split(","))
    cache = tempfile.mkdtemp(prefix="numba-cache-") if args.cold else None
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', '(unset)')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}; "
          f"median of {args.rounds} round(s) of {args.steps} steps")
    print(f"{'model':8s} {'library':13s}{'steps/s':>10s}{'peak MB':>9s}{'faults/step':>12s}{'1st step s':>11s}"
          f"{'vs torch':>10s}")
    for name in args.models.split(","):
        results = {lib: [] for lib in libs}
        for _ in range(args.rounds):
            for lib in libs:
                module, kernels = LIBS[lib]
                env = dict(os.environ)
                if kernels is not None:
                    env["FABRIC_CPU_KERNELS"] = kernels
                if cache:
                    env["NUMBA_CACHE_DIR"] = cache
                out = subprocess.run([sys.executable, __file__, "--child", module, name, "--steps", str(args.steps),
                                      "--warmup", str(args.warmup)], capture_output=True, text=True, env=env)
                if out.returncode != 0:
                    print(out.stderr[-2000:], file=sys.stderr)
                    continue
                results[lib].append(json.loads(out.stdout.strip().splitlines()[-1]))
        torch_rates = [r["steps_per_s"] for r in results.get("torch", [])]
        for lib in libs:
            rs = results[lib]
            if not rs:
                print(f"{name:8s} {lib:13s}{'error':>10s}")
                continue
            med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            ratio = ""
            if lib != "torch" and len(torch_rates) == len(rs) and torch_rates:
                ratio = f"{statistics.median(r['steps_per_s'] / t for r, t in zip(rs, torch_rates)):.2f}x"
            print(f"{name:8s} {lib:13s}{med['steps_per_s']:10.2f}{med['peak_mb']:9.0f}{med['faults']:12.0f}"
                  f"{med['first_s']:11.2f}{ratio:>10s}")


if __name__ == "__main__":
    main()
