"""Forward + backward time of common layers, fabric next to PyTorch.

Run: python benchmarks/nn_layers.py [--repeat 20] [--threads N]

fabric runs twice where numba is installed: on the NumPy reference path and with the
numba CPU kernels (the ``cpu`` extra), their first call (compile, or load from the
on-disk cache) reported apart.

Each row builds the same layer in fabric and (when installed) PyTorch, runs
``y = layer(x); y.backward(g)`` with the input requiring grad, and reports
the median and the best of ``--repeat`` timed runs (after warm-up), in
milliseconds, and the ratio fabric / torch (of the medians).  A layer fabric
does not have yet is skipped with a note.  ``--threads`` sets PyTorch's
intra-op threads (default: its own default); NumPy's BLAS threads follow
the usual environment variables (OPENBLAS_NUM_THREADS, ...), printed in the
header together with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import statistics
import time

import numpy as np

import fabric

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def _cases():
    """(name, constructor(nn), input shape, extra kwargs for the forward call)."""
    return [
        ("Linear 784->512, batch 128", lambda nn: nn.Linear(784, 512), (128, 784)),
        ("Conv2d 3->64 3x3 pad 1, 32x32, batch 32", lambda nn: nn.Conv2d(3, 64, 3, padding=1), (32, 3, 32, 32)),
        ("LSTM 32->128, seq 50, batch 32", lambda nn: nn.LSTM(32, 128, batch_first=True), (32, 50, 32)),
        ("TransformerEncoderLayer d 128, seq 64, batch 32",
         lambda nn: nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, batch_first=True),
         (32, 64, 128)),
        ("LayerNorm 128, (32, 64, 128)", lambda nn: nn.LayerNorm(128), (32, 64, 128)),
        ("GELU, (32, 64, 512)", lambda nn: nn.GELU(), (32, 64, 512)),
        ("Softmax dim -1, (32, 4, 64, 64)", lambda nn: nn.Softmax(-1), (32, 4, 64, 64)),
        ("MaxPool2d 2, (32, 32, 32, 32)", lambda nn: nn.MaxPool2d(2), (32, 32, 32, 32)),
    ]


@contextlib.contextmanager
def _cpu_backend(kernels: bool):
    """fabric's CPU backend for the block: the NumPy reference or the numba kernels."""
    import fabric.backends as fb
    from fabric.backends.numpy_backend import NumpyBackend

    saved = fb.cpu_backend
    if kernels:
        from fabric.backends.cpu_kernels.backend import NumbaBackend
        fb.cpu_backend = NumbaBackend()
    else:
        fb.cpu_backend = NumpyBackend()
    try:
        yield
    finally:
        fb.cpu_backend = saved


def _time_layer(lib, make, shape, repeat, warmup=3):
    lib.manual_seed(0)
    layer = make(lib.nn)
    x = lib.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(np.float32)).requires_grad_(True)

    def step():
        out = layer(x)
        y = out[0] if isinstance(out, tuple) else out
        y.backward(lib.ones_like(y))

    t0 = time.perf_counter()
    step()
    first = (time.perf_counter() - t0) * 1e3
    for _ in range(warmup - 1):
        step()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, min(times) * 1e3, first


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's default)")
    p.add_argument("--only", default=None, help="run only rows whose name contains this text")
    args = p.parse_args()
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    env = ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in _ENV)
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ + f' ({torch.get_num_threads()} threads)' if torch else 'not installed'}, "
          f"{os.cpu_count()} CPUs")
    print(env)
    has_numba = importlib.util.find_spec("numba") is not None
    print(f"forward+backward, ms: median (best) of {args.repeat}; fabric+numba: the cpu extra's kernels "
          f"({'first call, compile or cache load, in the last column' if has_numba else 'numba not installed'})")
    print(f"{'layer':48s} {'fabric':>16s} {'fabric+numba':>16s} {'torch':>16s} {'fabric/torch':>13s}"
          f" {'numba/torch':>12s} {'1st call ms':>12s}")
    for name, make, shape in _cases():
        if args.only and args.only not in name:
            continue
        cls = name.split()[0]
        if not hasattr(fabric.nn, cls):
            print(f"{name:48s} skipped: fabric.nn.{cls} is not available yet")
            continue
        with _cpu_backend(False):
            f_med, f_best, _ = _time_layer(fabric, make, shape, args.repeat)
        row = f"{name:48s} {f_med:8.2f} ({f_best:5.2f})"
        n_med = None
        if has_numba:
            with _cpu_backend(True):
                n_med, n_best, n_first = _time_layer(fabric, make, shape, args.repeat)
            row += f" {n_med:8.2f} ({n_best:5.2f})"
        else:
            row += f" {'-':>16s}"
        if torch is not None:
            t_med, t_best, _ = _time_layer(torch, make, shape, args.repeat)
            row += f" {t_med:8.2f} ({t_best:5.2f}) {f_med / t_med:12.2f}x"
            if n_med is not None:
                row += f" {n_med / t_med:11.2f}x {n_first:12.1f}"
        print(row)


if __name__ == "__main__":
    main()
