"""Where a training step's time goes, per benchmark model — load-independent counts.

For each model (benchmarks/models.py): a cProfile of ``--steps`` training steps after
``--warmup``, its self time grouped into BLAS (matmul/dot/einsum), elementwise and
reduction passes (NumPy ufuncs and array methods), RNG, array allocation/copies, and
Python (fabric's own interpreted code), plus minor page faults per step
(``getrusage``), which count fresh memory being touched and do not depend on load.
cProfile's own per-call cost inflates the Python share; compare shares between
versions, not the absolute milliseconds.

    python benchmarks/profile_models.py [--models lenet,gpt] [--steps 5] [--top 12]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import models

BLAS = ("matmul", "dot", "einsum", "tensordot", "vecdot", "inner")
ALLOC = ("empty", "zeros", "ones", "full", "copy", "astype", "ascontiguousarray", "array", "concatenate",
         "stack", "pad", "copyto", "broadcast_to", "where")
GEMM_HOSTS = ("matmul", "_conv_flat", "_conv_transpose_flat", "_conv_weight_flat", "_bmm", "bmm", "baddbmm",
              "addmm", "linear")
RNG = ("random", "philox", "standard_normal", "uniform", "integers", "bernoulli", "_rng")


def category(func) -> str:
    filename, _line, name = func
    text = f"{filename}:{name}"
    if any(k in name for k in BLAS) and filename == "~":
        return "BLAS"
    if any(k in text for k in RNG):
        return "RNG"
    if filename == "~":
        if any(f"'{k}'" in name or f".{k}}}" in name or name.endswith(f" {k}>") for k in ALLOC):
            return "alloc/copy"
        return "elementwise/reduce"
    if "numba" in filename or "cpu_kernels" in filename:
        return "compiled kernels"
    if name in GEMM_HOSTS or (filename.endswith("_linear.py") and name in ("forward", "backward")):
        return "BLAS"   # the `@` operator runs inside these functions and cProfile charges it to them
    return "python"


def profile(name, steps, warmup, top):
    import fabric

    fabric.manual_seed(0)
    model, opt, loss_fn = models.build(fabric, name)

    def step():
        opt.zero_grad()
        loss_fn().backward()
        opt.step()

    for _ in range(warmup):
        step()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        step()
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / steps
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    st = pstats.Stats(prof)
    groups: dict[str, float] = {}
    rows = []
    for func, (_cc, nc, tt, _ct, _callers) in st.stats.items():
        cat = category(func)
        groups[cat] = groups.get(cat, 0.0) + tt
        rows.append((tt, nc, cat, func))
    total = sum(groups.values())
    calls = sum(r[1] for r in rows) / steps
    print(f"\n== {name}: {faults:,.0f} minor page faults/step, {calls:,.0f} profiled calls/step, "
          f"profiled {1e3 * total / steps:.1f} ms/step")
    for cat, tt in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {cat:20s} {100 * tt / total:5.1f}%")
    rows.sort(reverse=True)
    for tt, nc, cat, (fn, line, fname) in rows[:top]:
        where = fname if fn == "~" else f"{os.path.relpath(fn) if fn.startswith('/') else fn}:{line}({fname})"
        print(f"    {100 * tt / total:5.1f}% {nc // steps:6d}/step  {cat:18s} {where[-90:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(models.MODELS))
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args()
    import fabric.backends as fb
    print(f"CPU backend: {type(fb.cpu_backend).__name__}")
    for name in args.models.split(","):
        profile(name, args.steps, args.warmup, args.top)


if __name__ == "__main__":
    main()
