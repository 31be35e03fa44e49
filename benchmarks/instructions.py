"""Instructions per training step, counted by valgrind's callgrind: a load-independent
measure for a shared machine where wall-clock timings mean little.

Runs each model (benchmarks/models.py) under ``valgrind --tool=callgrind`` twice, for
``W`` and for ``W + S`` steps, and reports ``(Ir(W+S) - Ir(W)) / S`` for the NumPy path
and the numba-kernel path (``FABRIC_CPU_KERNELS=0/1``), with one BLAS thread
(``OPENBLAS_NUM_THREADS=1``: idle BLAS threads spin, and callgrind counts the spinning).
Slow (valgrind runs ~50x slower); needs valgrind.

    python benchmarks/instructions.py [--models lenet,gpt] [--warmup 2] [--steps 3]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = """
import sys; sys.path.insert(0, {here!r})
import fabric, models
fabric.manual_seed(0)
model, opt, loss_fn = models.build(fabric, {name!r})
for _ in range({n}):
    opt.zero_grad(); loss_fn().backward(); opt.step()
"""


def instructions(name, n, kernels, tmp):
    out = os.path.join(tmp, f"cg.{name}.{n}.{kernels}")
    env = dict(os.environ, FABRIC_CPU_KERNELS=kernels, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c",
                    CHILD.format(here=HERE, name=name, n=n)], env=env, check=True, capture_output=True)
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise RuntimeError(f"no instruction total in {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="lenet,gpt")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--paths", default="0,1", help="FABRIC_CPU_KERNELS values to count")
    args = p.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind")
    tmp = tempfile.mkdtemp(prefix="callgrind-")
    print(f"{'model':8s}{'path':>8s}{'instructions/step':>20s}")
    for name in args.models.split(","):
        for k in args.paths.split(","):
            a = instructions(name, args.warmup, k, tmp)
            b = instructions(name, args.warmup + args.steps, k, tmp)
            path = "numba" if k == "1" else "numpy"
            print(f"{name:8s}{path:>8s}{(b - a) / args.steps / 1e6:17.1f} M", flush=True)


if __name__ == "__main__":
    main()
