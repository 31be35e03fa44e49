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


# --- the import hook: every torch.<path> is the fabric module of that path ----------------------------------------

def _alias_run(code: str, env_extra=None) -> subprocess.CompletedProcess:
    """Run ``code`` in a clean interpreter with the alias installed (never in this process:
    the alias changes sys.path and PYTHONPATH for every later child)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    prelude = "import fabric\nfabric.install_torch_alias()\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=120)


def test_deep_paths_give_the_same_module_and_class_objects():
    out = _alias_run("""
        import sys
        import torch
        from torch.utils.data.sampler import Sampler, RandomSampler
        from torch.utils.data.dataloader import DataLoader, default_collate
        from torch.utils.data.dataset import TensorDataset
        import torch.nn.modules.module
        from torch.nn.modules.linear import Linear
        from torch.nn.modules.container import Sequential
        from torch.optim.adam import Adam
        from torch.optim.adamw import AdamW
        from torch.optim.sgd import SGD
        from torch.optim.optimizer import Optimizer
        from torch.distributions.normal import Normal
        from torch.autograd.function import Function
        import torch.backends.cudnn
        import torch.nn.utils.spectral_norm
        import torch.distributions.bernoulli   # not imported by fabric itself until now
        checks = [
            sys.modules["torch.distributions.bernoulli"] is sys.modules["fabric.distributions.bernoulli"],
            torch.nn.modules.module.Module is torch.nn.Module is fabric.nn.Module,
            sys.modules["torch.nn.modules.module"] is sys.modules["fabric.nn.modules.module"],
            Sampler is torch.utils.data.Sampler is fabric.data.Sampler,
            DataLoader is fabric.data.DataLoader and default_collate is fabric.utils.data.default_collate,
            Linear is torch.nn.Linear and Sequential is torch.nn.Sequential,
            Adam is torch.optim.Adam and AdamW is torch.optim.AdamW and SGD is torch.optim.SGD,
            Optimizer is torch.optim.Optimizer, Normal is torch.distributions.Normal,
            Function is torch.autograd.Function, torch.backends.cudnn is fabric.backends.cudnn,
            callable(torch.nn.utils.spectral_norm) and not isinstance(torch.nn.utils.spectral_norm, type(sys)),
            torch.nn.__spec__.name == "fabric.nn",
        ]
        print(checks)

        class Block(torch.nn.modules.module.Module):  # the issue's silently wrong case
            def __init__(self):
                super().__init__()
                self.lin = Linear(2, 2)

            def forward(self, x):
                return self.lin(x)

        seq = torch.nn.Sequential(Block(), torch.nn.ReLU())
        print(sorted(seq.state_dict()), tuple(seq(torch.ones(1, 2)).shape))
        """)
    assert out.returncode == 0, out.stderr
    checks, rest = out.stdout.splitlines()
    assert "False" not in checks, checks
    assert rest == "['0.lin.bias', '0.lin.weight'] (1, 2)"


def test_missing_pytorch_module_raises_an_import_error_naming_it():
    out = _alias_run("""
        for name in ("torch.ao.quantization", "torch.nn.modules.no_such_module"):
            try:
                __import__(name)
            except ImportError as e:
                print(type(e).__name__, e.name, "|", e)
        """)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first.startswith("ModuleNotFoundError torch.ao |")
    assert "fabric does not implement the PyTorch module torch.ao" in first
    assert second.startswith("ModuleNotFoundError torch.nn.modules.no_such_module |")


def test_import_errors_inside_fabric_are_not_disguised(tmp_path):
    # a fabric module that fails for its own reasons (a missing optional dependency) reports that reason
    (tmp_path / "broken_example.py").write_text("import some_missing_dependency_xyz\n")
    out = _alias_run(f"""
        fabric.nn.__path__.append({str(tmp_path)!r})
        try:
            import torch.nn.broken_example
        except ImportError as e:
            print(type(e).__name__, e.name)
        """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ModuleNotFoundError some_missing_dependency_xyz"


def test_torchvision_maps_to_fabric_vision_generically():
    # the rule is one table entry; exercised through a stand-in root so it runs whether or not fabric.vision exists
    out = _alias_run("""
        from fabric import _torch_alias
        print(_torch_alias.fabric_module_name("torchvision.transforms.functional"))
        _torch_alias.ROOTS["torchstandin"] = "fabric.nn"
        import torchstandin.modules.linear as lin
        print(lin is fabric.nn.modules.linear)
        try:
            import fabric.vision
        except ImportError:
            print("no fabric.vision")
        else:
            import torchvision
            print(torchvision is fabric.vision)
        """)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == ["fabric.vision.transforms.functional", "True"]
    assert lines[2] in ("no fabric.vision", "True")


def test_uninstall_restores_plain_imports():
    out = _alias_run("""
        import os, sys
        from fabric import _torch_alias
        _torch_alias.uninstall_torch_alias()
        print("torch" in sys.modules, _torch_alias.SHIM_DIR in sys.path,
              _torch_alias.SHIM_DIR in os.environ.get("PYTHONPATH", ""))
        """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False False False"


def test_shim_alone_makes_a_fresh_interpreter_import_fabric(tmp_path):
    # what a spawned child or a launcher's worker does: it only has PYTHONPATH
    from fabric._torch_alias import SHIM_DIR

    env = dict(os.environ)
    env["PYTHONPATH"] = SHIM_DIR + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", "import torch, torch.nn.functional as F; print(torch.__name__, "
                          "F.__name__)"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fabric fabric.nn.functional"


def test_fabric_run_dash_m_runs_a_module(tmp_path):
    (tmp_path / "mod_under_test.py").write_text("import torch\nprint(torch.__name__)\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "fabric.run", "-m", "mod_under_test"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fabric"


def test_alias_docstrings():
    import doctest

    from fabric import _torch_alias

    assert doctest.testmod(_torch_alias).failed == 0
