"""Training-step throughput: fabric vs PyTorch on the same machine, same run.

Models (identical code for both libraries, ``lib`` is ``fabric`` or ``torch``):
  mlp    784-512-512-10, batch 128, Adam
  lenet  LeNet-5 on 1x32x32, batch 64, SGD momentum
  gpt    char-GPT, 4 layers, d 128, 4 heads, context 64, batch 32, AdamW

Each (library, model) runs in its own subprocess so peak memory (max RSS) is
its own. Run: python benchmarks/train.py [--steps N] [--models mlp,lenet,gpt]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))


def build(lib, name):
    nn = lib.nn
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        x, y = lib.randn(128, 784), lib.randint(0, 10, (128,))
        return model, opt, lambda: nn.functional.cross_entropy(model(x), y)
    if name == "lenet":
        model = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
                              nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = lib.randn(64, 1, 32, 32), lib.randint(0, 10, (64,))
        return model, opt, lambda: nn.functional.cross_entropy(model(x), y)
    if name == "gpt":
        if lib.__name__ == "fabric":
            import char_gpt
            GPT = char_gpt.GPT
        else:
            import types

            with open(os.path.join(HERE, "..", "examples", "char_gpt.py")) as f:
                src = f.read()
            src = src.replace("import fabric as torch", "import torch").replace(
                "from fabric import nn", "from torch import nn").replace(
                "from fabric.nn import functional as F", "from torch.nn import functional as F")
            mod = types.ModuleType("char_gpt_torch")
            mod.__file__ = os.path.join(HERE, "..", "examples", "char_gpt.py")
            exec(compile(src, "char_gpt_torch", "exec"), mod.__dict__)
            GPT = mod.GPT
        model = GPT(65, context=64, d_model=128, n_layer=4, n_head=4)
        opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
        x, y = lib.randint(0, 65, (32, 64)), lib.randint(0, 65, (32, 64))
        return model, opt, lambda: model(x, y)[1]
    raise ValueError(name)


def run_one(libname, name, steps, warmup):
    lib = __import__(libname)
    if libname == "torch":
        lib.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    lib.manual_seed(0)
    model, opt, loss_fn = build(lib, name)

    def step():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"steps_per_s": steps / dt, "peak_mb": peak_mb}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--models", default="mlp,lenet,gpt")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_one(args.child[0], args.child[1], args.steps, args.warmup)
        return
    try:
        import torch  # noqa: F401
        libs = ["fabric", "torch"]
    except ImportError:
        libs = ["fabric"]
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', '(unset)')}")
    print(f"{'model':8s}" + "".join(f"{lib + ' steps/s':>18s}{lib + ' peak MB':>16s}" for lib in libs)
          + ("   fabric/torch" if len(libs) == 2 else ""))
    for name in args.models.split(","):
        row = f"{name:8s}"
        rates = []
        for lib in libs:
            out = subprocess.run([sys.executable, __file__, "--child", lib, name, "--steps", str(args.steps),
                                  "--warmup", str(args.warmup)], capture_output=True, text=True)
            if out.returncode != 0:
                row += f"{'error':>18s}{'':>16s}"
                print(out.stderr[-2000:], file=sys.stderr)
                rates.append(None)
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rates.append(r["steps_per_s"])
            row += f"{r['steps_per_s']:18.2f}{r['peak_mb']:16.0f}"
        if len(rates) == 2 and all(rates):
            row += f"   {rates[0] / rates[1]:.2f}x"
        print(row)


if __name__ == "__main__":
    main()
