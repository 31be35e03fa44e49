"""fabric.compile vs eager (and torch.compile vs torch eager) on training steps, CPU.

Models come from benchmarks/models.py (lenet, gpt, mlp; identical code for both
libraries), plus ``cell``: a hand-written LSTM cell unrolled over 16 steps (b64,
h128), whose gate arithmetic is the kind of pointwise chain fabric.compile fuses.  Variants, each in its own subprocess:

  fabric         eager fabric
  fabric.compile fabric.compile(model) (captured fx graph, passes, lean executor)
  torch          eager PyTorch (when installed)
  torch.compile  torch.compile(model) (inductor; reported as an error if it cannot build here)

Three measures: steps/s (wall clock: run it on an idle machine); with
``--profile`` the Python function calls per step counted by cProfile — a
load-independent measure of interpreter overhead (fabric variants only); with
``--instructions`` the instructions per step counted by valgrind's callgrind
(``(Ir(W+S) - Ir(W)) / S`` with one BLAS thread, as benchmarks/instructions.py;
fabric variants only, slow).

Run: python benchmarks/compile.py [--steps N] [--models lenet,gpt] [--profile | --instructions]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

VARIANTS = ("fabric", "fabric.compile", "torch", "torch.compile")


def run_one(variant, name, steps, warmup, profile):
    from models import build
    libname = variant.split(".")[0]
    lib = __import__(libname)
    if libname == "torch":
        lib.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    lib.manual_seed(0)
    model, opt = _cell(lib) if name == "cell" else build(lib, name)[:2]
    x, y = _inputs(lib, name)
    step_model = lib.compile(model) if variant.endswith(".compile") else model

    def loss_fn():
        if name == "gpt":
            return step_model(x, y)[1]
        return lib.nn.functional.cross_entropy(step_model(x), y)

    def step():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        return loss

    t0 = time.perf_counter()
    first = float(step())
    compile_s = time.perf_counter() - t0
    for _ in range(warmup):
        step()
    out = {"first_loss": first, "first_step_s": compile_s}
    if profile == "untimed":
        for _ in range(steps):
            step()
        return
    if profile:
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(steps):
            step()
        pr.disable()
        out["calls_per_step"] = pstats.Stats(pr).total_calls / steps
    else:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        out["steps_per_s"] = steps / (time.perf_counter() - t0)
    print(json.dumps(out))


def callgrind_per_step(variant, name, warmup, steps):
    """Instructions per steady-state step of ``variant`` under callgrind (one BLAS thread)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    counts = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (0, steps):
            out = os.path.join(tmp, f"cg.{n}")
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                   "--child", variant, name, "--steps", str(n), "--warmup", str(warmup), "--untimed"]
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            with open(out) as f:
                totals = [re.match(r"(?:summary|totals):\s+(\d+)", line) for line in f]
            counts.append(max(int(m.group(1)) for m in totals if m))
    return (counts[1] - counts[0]) / steps


def _cell(lib, d_in=32, hidden=128, steps=16):
    """``(model, optimizer)``: an LSTM cell written with tensor ops, unrolled, then a linear head."""
    nn = lib.nn

    class Cell(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp, self.rec, self.head = nn.Linear(d_in, 4 * hidden), nn.Linear(hidden, 4 * hidden), \
                nn.Linear(hidden, 10)

        def forward(self, x):
            h = c = lib.zeros(x.shape[0], hidden)
            for t in range(steps):
                i, f, g, o = (self.inp(x[:, t]) + self.rec(h)).chunk(4, 1)
                c = lib.sigmoid(f) * c + lib.sigmoid(i) * lib.tanh(g)
                h = lib.sigmoid(o) * lib.tanh(c)
            return self.head(h)

    model = Cell()
    return model, lib.optim.SGD(model.parameters(), lr=0.01)


def _inputs(lib, name):
    lib.manual_seed(1)
    if name == "cell":
        return lib.randn(64, 16, 32), lib.randint(0, 10, (64,))
    if name == "gpt":
        return lib.randint(0, 65, (32, 64)), lib.randint(0, 65, (32, 64))
    if name == "lenet":
        return lib.randn(64, 1, 32, 32), lib.randint(0, 10, (64,))
    return lib.randn(128, 784), lib.randint(0, 10, (128,))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--models", default="lenet,gpt")
    p.add_argument("--profile", action="store_true", help="count Python calls per step instead of timing")
    p.add_argument("--instructions", action="store_true", help="count instructions per step (callgrind)")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    p.add_argument("--untimed", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_one(args.child[0], args.child[1], args.steps, args.warmup, "untimed" if args.untimed else args.profile)
        return
    if args.instructions:
        print(f"{'model':8s}{'fabric':>18s}{'fabric.compile':>18s}   eager/compile (instructions)")
        for name in args.models.split(","):
            ir = {v: callgrind_per_step(v, name, args.warmup, args.steps) for v in VARIANTS[:2]}
            print(f"{name:8s}{ir['fabric']:18.3e}{ir['fabric.compile']:18.3e}"
                  f"   {ir['fabric'] / ir['fabric.compile']:20.2f}x")
        return
    try:
        import torch  # noqa: F401
        variants = VARIANTS
    except ImportError:
        variants = VARIANTS[:2]
    if args.profile:
        variants = VARIANTS[:2]
    measure = "calls_per_step" if args.profile else "steps_per_s"
    print(f"{'model':8s}" + "".join(f"{v:>18s}" for v in variants) + "   compile/eager (fabric)"
          + ("   compile/eager (torch)" if "torch" in variants else ""))
    for name in args.models.split(","):
        vals = {}
        for v in variants:
            cmd = [sys.executable, __file__, "--child", v, name, "--steps", str(args.steps),
                   "--warmup", str(args.warmup)] + (["--profile"] if args.profile else [])
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{v} {name}: " + out.stderr.strip().splitlines()[-1][:300], file=sys.stderr)
                continue
            vals[v] = json.loads(out.stdout.strip().splitlines()[-1])[measure]
        row = f"{name:8s}" + "".join(f"{vals[v]:18.1f}" if v in vals else f"{'error':>18s}" for v in variants)
        for a, b in (("fabric.compile", "fabric"), ("torch.compile", "torch")):
            if a in vals and b in vals:
                ratio = vals[b] / vals[a] if args.profile else vals[a] / vals[b]
                row += f"   {ratio:20.2f}x"
        print(row)


if __name__ == "__main__":
    main()
