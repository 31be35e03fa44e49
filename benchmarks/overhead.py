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


def _time_interleaved(stmts_envs, number, rounds):
    """Best time per run of each (stmt, env), measured in alternating rounds
    so that a slow spell of this shared machine hits every library alike."""
    timers = [timeit.Timer(stmt, globals=env) for stmt, env in stmts_envs]
    best = [float("inf")] * len(timers)
    for _ in range(rounds):
        for i, t in enumerate(timers):
            best[i] = min(best[i], t.timeit(number) / number * 1e6)
    return best


def _env(lib, grad):
    if lib == "numpy":
        return {"np": np, "a": np.ones(4, np.float32), "b": np.ones(4, np.float32),
                "m": np.ones((4, 4), np.float32), "m2": np.ones((4, 4), np.float32)}
    mod = fabric if lib == "fabric" else torch
    return {"a": mod.ones(4, requires_grad=grad), "b": mod.ones(4, requires_grad=grad),
            "m": mod.ones(4, 4, requires_grad=grad), "m2": mod.ones(4, 4, requires_grad=grad)}


def _chain_once(mod, n):
    x = mod.ones(4, requires_grad=True)
    t0 = timeit.default_timer()
    y = x
    for _ in range(n):
        y = y * 1.0001
    y.sum().backward()
    return timeit.default_timer() - t0


def _chains(mods, n=1000, rounds=15):
    best = [float("inf")] * len(mods)
    for _ in range(rounds):
        for i, mod in enumerate(mods):
            best[i] = min(best[i], _chain_once(mod, n))
    return [b * 1e3 for b in best]


def count_calls(stmt, env, runs=10):
    """Python function calls (and C calls) one run of ``stmt`` makes: a
    machine-independent check that a change left an op's code path as it was."""
    import sys

    code = compile(stmt, "<case>", "eval")
    eval(code, env)  # first run: caches, lazy imports
    n = [0]

    def tracer(frame, event, arg):
        if event in ("call", "c_call"):
            n[0] += 1

    sys.setprofile(tracer)
    try:
        for _ in range(runs):
            eval(code, env)
    finally:
        sys.setprofile(None)
    return n[0] / runs


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--number", type=int, default=5000, help="runs per timing")
    p.add_argument("--rounds", type=int, default=15, help="alternating timings per case; the best counts")
    p.add_argument("--calls", action="store_true",
                   help="count fabric's calls per op instead of timing (stable on a loaded machine)")
    args = p.parse_args()
    if args.calls:
        print(f"{'op':14s} {'calls':>6s} {'grad':>6s}")
        for name, stmt in CASES:
            print(f"{name:14s}" + "".join(f" {count_calls(stmt, _env('fabric', g)):6.1f}" for g in (False, True)))
        return
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not installed'}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    libs = ["fabric"] + (["torch"] if torch else [])
    header = f"{'op':14s} {'numpy':>8s}" + "".join(f" {lib + (' grad' if g else ''):>12s}"
                                                   for g in (False, True) for lib in libs)
    print("time per op, microseconds (best of alternating rounds)")
    print(header)
    for name, stmt in CASES:
        runs = [(NP_CASES[name], _env("numpy", False))]
        runs += [(stmt, _env(lib, grad)) for grad in (False, True) for lib in libs]
        times = _time_interleaved(runs, args.number, args.rounds)
        print(f"{name:14s}" + "".join(f" {t:{8 if i == 0 else 12}.2f}" for i, t in enumerate(times)))
    chains = _chains([fabric if lib == "fabric" else torch for lib in libs])
    print(f"{'1000-op chain fwd+bwd (ms)':30s}" + "".join(f" {lib}: {c:.2f}" for lib, c in zip(libs, chains)))


if __name__ == "__main__":
    main()
