"""Fused CUDA kernels against the unfused chain of CuPy calls they replace.

Run on a machine with an NVIDIA GPU and CuPy (``pip install cupy-cuda12x``)::

    python benchmarks/gpu.py [--repeat 20] [--dtype float32] [--small]

Without a device it prints why and exits 0.  Each row times the same work
twice on the GPU, with CUDA events, after warm-up (kernel compilation is not
timed): **fused** is fabric's CUDA backend as it is (``CupyBackend``'s
RawKernels); **unfused** is the same backend with every fused method replaced
by its reference twin from ``fabric/backends/fused.py`` run on CuPy arrays
(each step a separate CuPy kernel).  Rows: softmax + cross-entropy forward and
backward, layer norm forward and backward, GELU forward and backward, an Adam
step over a GPT's parameter group, conv2d forward and backward (im2col/col2im),
and a whole char-GPT training step (forward, backward, AdamW).  Reported: the
median and best milliseconds of ``--repeat`` runs, and unfused / fused.

``--fake`` runs everything on the fake device of ``tests/cuda/fake_cupy.py``
(NumPy arrays, kernels executed by the g++ CPU harness) with tiny sizes: it
checks that the script works, its times mean nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import statistics
import sys

import numpy as np

import fabric
from fabric import nn
from fabric.backends import Backend
from fabric.nn import functional as F

FUSED_METHODS = ("softmax", "softmax_backward", "log_softmax", "log_softmax_backward", "cross_entropy",
                 "cross_entropy_backward", "layer_norm", "layer_norm_backward", "rms_norm", "rms_norm_backward",
                 "gelu", "gelu_backward", "silu", "silu_backward", "bias_act", "bias_act_backward", "dropout",
                 "embedding_backward", "im2col", "col2im", "max_pool2d", "max_pool2d_backward", "sgd_step",
                 "adam_step")


@contextlib.contextmanager
def unfused(be):
    """Every fused method of backend ``be`` replaced by its reference twin (on CuPy arrays)."""
    for name in FUSED_METHODS:
        setattr(be, name, functools.partial(getattr(Backend, name), be))
    try:
        yield
    finally:
        for name in FUSED_METHODS:
            delattr(be, name)


def time_ms(fn, repeat, warmup=3):
    """Median and best GPU time of ``fn()`` in milliseconds (CUDA events)."""
    for _ in range(warmup):
        fn()
    fabric.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = fabric.cuda.Event(enable_timing=True), fabric.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)


# --- the cases: each returns a zero-argument step on the device ----------------------------
def case_softmax_ce(be, dt, small):
    n, c = (64, 50) if small else (8192, 4096)
    xp = be.xp
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.standard_normal((n, c)).astype(dt))
    t = xp.asarray(rng.integers(0, c, n))
    g = xp.ones((n,), dt)

    def step():
        _loss, saved = be.cross_entropy(x, t, None, -100, 0.1)
        be.cross_entropy_backward(saved, t, None, -100, 0.1, g)
    return f"softmax + cross-entropy fwd+bwd ({n}x{c})", step


def case_layer_norm(be, dt, small):
    rows, cols = (64, 40) if small else (16384, 1024)
    xp = be.xp
    rng = np.random.default_rng(1)
    x = xp.asarray(rng.standard_normal((rows, cols)).astype(dt))
    w, b = xp.ones((cols,), dt), xp.zeros((cols,), dt)
    gy = xp.asarray(rng.standard_normal((rows, cols)).astype(dt))

    def step():
        _y, mean, rstd = be.layer_norm(x, w, b, 1e-5)
        be.layer_norm_backward(gy, x, w, mean, rstd, True)
    return f"layer norm fwd+bwd ({rows}x{cols})", step


def case_gelu(be, dt, small):
    n = 4096 if small else 1 << 24
    xp = be.xp
    x = xp.asarray(np.random.default_rng(2).standard_normal(n).astype(dt))
    gy = xp.ones_like(x)

    def step():
        be.gelu(x, "none")
        be.gelu_backward(x, gy, "none")
    return f"GELU (erf) fwd+bwd ({n:,} elements)", step


def _gpt_shapes(small):
    d, layers, vocab, ctx = (32, 1, 65, 16) if small else (384, 6, 65, 256)
    shapes = [(vocab, d), (ctx, d)]
    for _ in range(layers):
        shapes += [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    return shapes + [(d,), (d,), (vocab, d)]


def case_adam(be, dt, small):
    if np.dtype(dt) == np.float16:
        return None
    xp = be.xp
    shapes = _gpt_shapes(small)
    rng = np.random.default_rng(3)
    params = [xp.asarray(rng.standard_normal(s).astype(dt)) for s in shapes]
    grads = [xp.asarray(rng.standard_normal(s).astype(dt)) for s in shapes]
    m = [xp.zeros(s, dt) for s in shapes]
    v = [xp.zeros(s, dt) for s in shapes]
    total = sum(math.prod(s) for s in shapes)

    def step():
        be.adam_step(params, grads, m, v, None, 3, lr=1e-3, weight_decay=0.1, decoupled_weight_decay=True)
    return f"AdamW step ({len(shapes)} tensors, {total / 1e6:.1f}M params)", step


def case_conv(be, dt, small):
    n, c, hw = (2, 4, 8) if small else (32, 64, 32)
    fabric.manual_seed(0)
    conv = nn.Conv2d(c, c, 3, padding=1).to(device="cuda", dtype=_fabric_dtype(dt))
    x = fabric.randn(n, c, hw, hw, device="cuda", dtype=_fabric_dtype(dt), requires_grad=True)

    def step():
        conv(x).sum().backward()
    return f"conv2d 3x3 fwd+bwd ({n}x{c}x{hw}x{hw}, {c} out)", step


class _Block(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(dropout))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = self.drop(F.softmax(att.masked_fill(~mask[:t, :t], float("-inf")), dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.drop(self.proj(y))
        return x + self.mlp(self.ln2(x))


class _GPT(nn.Module):
    """The char-GPT of examples/char_gpt.py (positions made on the input's device)."""

    def __init__(self, vocab, ctx, d, layers, heads, dropout=0.1):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([_Block(d, heads, dropout) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", fabric.tril(fabric.ones(ctx, ctx, dtype=fabric.bool)), persistent=False)

    def forward(self, idx, targets):
        t = idx.size(1)
        x = self.tok(idx) + self.pos(fabric.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x, self.mask)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def case_char_gpt(be, dt, small):
    if np.dtype(dt) != np.float32:
        return None
    vocab, ctx, d, layers, heads, batch = (65, 16, 32, 1, 2, 2) if small else (65, 256, 384, 6, 6, 32)
    fabric.manual_seed(0)
    model = _GPT(vocab, ctx, d, layers, heads).to("cuda")
    opt = fabric.optim.AdamW(model.parameters(), lr=3e-4)
    idx = fabric.randint(0, vocab, (batch, ctx), device="cuda")
    tgt = fabric.randint(0, vocab, (batch, ctx), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        model(idx, tgt).backward()
        opt.step()
    return f"char-GPT training step ({layers}x{d}, ctx {ctx}, batch {batch})", step


CASES = [case_softmax_ce, case_layer_norm, case_gelu, case_adam, case_conv, case_char_gpt]


def _fabric_dtype(dt):
    return {"float16": fabric.float16, "float32": fabric.float32, "float64": fabric.float64}[np.dtype(dt).name]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--dtype", default="float32", choices=["float16", "float32", "float64"])
    p.add_argument("--small", action="store_true", help="tiny sizes (a quick check)")
    p.add_argument("--fake", action="store_true", help="run on tests/cuda/fake_cupy (CPU harness): checks the script")
    args = p.parse_args(argv)
    if args.fake:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path[:0] = [os.path.join(here, "..", "tests", "cuda")]
        import fake_cupy

        with fake_cupy.installed(kernels="harness"):
            return _run(args.repeat, args.dtype, small=True,
                        note="fake device (NumPy + CPU harness): times mean nothing")
    if not fabric.cuda.is_available():
        print(f"benchmarks/gpu.py needs a CUDA device: {fabric.cuda.unavailable_reason()}.")
        print("Install CuPy for your CUDA version (pip install cupy-cuda12x) on a machine with an NVIDIA GPU.")
        return 0
    return _run(args.repeat, args.dtype, args.small)


def _run(repeat, dtype, small, note="") -> int:
    from fabric.backends import get_cupy_backend

    be = get_cupy_backend()
    dt = np.dtype(dtype)
    props = fabric.cuda.get_device_properties()
    print(f"device: {props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs)"
          f"{' - ' + note if note else ''}")
    print(f"dtype {dt.name}, median / best of {repeat} runs, milliseconds")
    print(f"{'case':58s} {'fused':>16s} {'unfused':>16s} {'unfused/fused':>14s}")
    for make in CASES:
        built = make(be, dt, small)
        if built is None:
            continue
        name, step = built
        fused_med, fused_best = time_ms(step, repeat)
        with unfused(be):
            plain_med, plain_best = time_ms(step, repeat)
        print(f"{name:58s} {fused_med:7.3f} /{fused_best:7.3f} {plain_med:7.3f} /{plain_best:7.3f} "
              f"{plain_med / fused_med:13.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
