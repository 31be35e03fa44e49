"""Per-op Python overhead on tiny tensors, fabric vs raw NumPy vs PyTorch.

Run: python benchmarks/overhead.py   (torch is used when installed)

Times are microseconds per op (best of several repeats). "grad" means the
inputs require grad, so the op records an autograd node.
"""
from __future__ import annotations

import argparse
import os
import platform
import timeit

import numpy as np

import fabric

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

CASES = [
    ("a + b", "a + b"),
    ("a * b", "a * b"),
    ("exp", "a.exp()"),
    ("sum", "a.sum()"),
    ("a @ b (4x4)", "m @ m2"),
    ("x[1:3]", "a[1:3]"),
    ("reshape", "a.reshape(2, 2)"),
]
NP_CASES = {"a + b": "a + b", "a * b": "a * b", "exp": "np.exp(a)", "sum": "a.sum()", "a @ b (4x4)": "m @ m2",
            "x[1:3]": "a[1:3]", "reshape": "a.reshape(2, 2)"}


def _time(stmt, env, number):
    return min(timeit.repeat(stmt, globals=env, number=number, repeat=7)) / number * 1e6


def _env(lib, grad):
    if lib == "numpy":
        return {"np": np, "a": np.ones(4, np.float32), "b": np.ones(4, np.float32),
                "m": np.ones((4, 4), np.float32), "m2": np.ones((4, 4), np.float32)}
    mod = fabric if lib == "fabric" else torch
    return {"a": mod.ones(4, requires_grad=grad), "b": mod.ones(4, requires_grad=grad),
            "m": mod.ones(4, 4, requires_grad=grad), "m2": mod.ones(4, 4, requires_grad=grad)}


def _chain(mod, n=1000, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        x = mod.ones(4, requires_grad=True)
        t0 = timeit.default_timer()
        y = x
        for _ in range(n):
            y = y * 1.0001
        y.sum().backward()
        best = min(best, timeit.default_timer() - t0)
    return best * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--number", type=int, default=20000)
    args = p.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not installed'}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    libs = ["fabric"] + (["torch"] if torch else [])
    header = f"{'op':14s} {'numpy':>8s}" + "".join(f" {lib + (' grad' if g else ''):>12s}"
                                                   for g in (False, True) for lib in libs)
    print("time per op, microseconds")
    print(header)
    for name, stmt in CASES:
        row = f"{name:14s} {_time(NP_CASES[name], _env('numpy', False), args.number):8.2f}"
        for grad in (False, True):
            for lib in libs:
                row += f" {_time(stmt, _env(lib, grad), args.number):12.2f}"
        print(row)
    row = f"{'1000-op chain fwd+bwd (ms)':30s}" + "".join(f" {lib}: {_chain(fabric if lib == 'fabric' else torch):.2f}"
                                                          for lib in libs)
    print(row)


if __name__ == "__main__":
    main()
