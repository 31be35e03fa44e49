"""``install_torch_alias`` / ``python -m fabric.run``: unmodified PyTorch
scripts (``import torch.nn as nn`` ...) run on fabric."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset
    from torch.optim.lr_scheduler import StepLR
    torch.manual_seed(0)
    X = torch.randn(64, 5)
    y = (X.sum(1) > 0).long()
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = StepLR(opt, 1, 0.9)
    for xb, yb in DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True):
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        sched.step()
    print(type(torch).__name__, torch.__name__, nn.Linear.__module__.split(".")[0])
    print(round(float(model(X).sum()), 5))
""")


def _run(args, tmp_path):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    env = dict(os.environ)
    return subprocess.run([sys.executable, *args, str(path)], capture_output=True, text=True, env=env, timeout=120)


def test_fabric_run_executes_torch_script(tmp_path):
    out = _run(["-m", "fabric.run"], tmp_path)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first == "module fabric fabric"


def test_alias_refuses_when_real_torch_is_loaded():
    code = ("import sys, types; sys.modules['torch'] = types.ModuleType('torch'); import fabric\n"
            "try:\n    fabric.install_torch_alias()\nexcept RuntimeError as e:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "refused", out.stderr


@pytest.mark.torch
def test_same_numbers_as_torch(tmp_path):
    ours = _run(["-m", "fabric.run"], tmp_path)
    theirs = _run([], tmp_path)
    assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout.splitlines()[1] == theirs.stdout.splitlines()[1]
