"""Per-op CPU time of the fused CPU ops: the NumPy reference backend against the numba kernels
(the ``cpu`` extra), on the benchmark models' shapes (GPT-sized activations, attention scores,
CIFAR-sized pooling, the MLP's Adam step).

CPU time (``time.process_time``) per call, one BLAS thread, after one warm-up call (numba's
compile or cache load): far less sensitive to a loaded machine than wall clock, though shared
caches still move it by ~15%.  The ratio column is numba / NumPy (below 1: the kernel wins).
This is the table of docs/performance.md ("the numba path was slower than NumPy").

    python benchmarks/kernels.py [--ops gelu,softmax] [--seconds 0.3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np


def cases():
    """name -> function of a backend, on fixed random inputs."""
    from fabric.backends.numpy_backend import NumpyBackend

    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    act, gact = f32(32 * 64, 512), f32(32 * 64, 512)           # GPT's MLP hidden layer
    rows, grows, w, b = f32(32 * 64, 128), f32(32 * 64, 128), f32(128), f32(128)
    att, gatt = f32(32, 4, 64, 64), f32(32, 4, 64, 64)       # attention scores
    causal = np.where(np.triu(np.ones((64, 64), bool), 1), np.float32(-np.inf), att)
    logits, target = f32(2048, 65), rng.integers(0, 65, 2048)
    planes = f32(32, 32, 32, 32)
    pooled, where = NumpyBackend().max_pool2d(planes, 2)
    gpool = f32(*pooled.shape)
    shapes = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]   # the MLP's parameters
    params, grads, m = ([f32(*s) for s in shapes] for _ in range(3))
    v = [np.abs(f32(*s)) for s in shapes]
    stats = NumpyBackend().layer_norm(rows, w, b)[1:]
    return {
        "gelu": lambda be: be.gelu(act),
        "gelu_backward": lambda be: be.gelu_backward(act, gact),
        "silu": lambda be: be.silu(act),
        "layer_norm": lambda be: be.layer_norm(rows, w, b),
        "layer_norm_backward": lambda be: be.layer_norm_backward(grows, rows, w, *stats),
        "softmax": lambda be: be.softmax(att, -1),
        "softmax_causal": lambda be: be.softmax(causal, -1),
        "softmax_backward": lambda be: be.softmax_backward(att, gatt, -1),
        "safe_softmax_": lambda be: be.safe_softmax_(att.copy()),
        "cross_entropy": lambda be: be.cross_entropy(logits, target),
        "max_pool2d": lambda be: be.max_pool2d(planes, 2),
        "max_pool2d_backward": lambda be: be.max_pool2d_backward(gpool, where, planes.shape),
        "adam_step": lambda be: be.adam_step(params, grads, m, v, None, 2),
    }


def cpu_ms(fn, seconds):
    fn()
    n, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        fn()
        n += 1
    return (time.process_time() - start) / n * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", default="", help="comma-separated subset (default: all)")
    p.add_argument("--seconds", type=float, default=0.3, help="CPU seconds per measurement")
    args = p.parse_args()
    import importlib.util

    from fabric.backends.numpy_backend import NumpyBackend

    if importlib.util.find_spec("numba") is None:
        sys.exit("needs numba (the cpu extra)")
    from fabric.backends.cpu_kernels.backend import NumbaBackend

    table = cases()
    names = args.ops.split(",") if args.ops else list(table)
    print(f"{'op':22s}{'NumPy ms':>10s}{'numba ms':>10s}{'ratio':>8s}")
    backends = (NumpyBackend(), NumbaBackend())
    for name in names:
        op = table[name]
        ref, kern = (cpu_ms(lambda be=be, op=op: op(be), args.seconds) for be in backends)
        print(f"{name:22s}{ref:10.3f}{kern:10.3f}{kern / ref:8.2f}", flush=True)


if __name__ == "__main__":
    main()
