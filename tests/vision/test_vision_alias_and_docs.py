"""``from torchvision import datasets, transforms`` under ``python -m fabric.run``
(the classic MNIST example, local IDX files), and the docstring examples of
fabric.vision and docs/vision.md."""
import doctest
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fabric
from fabric.vision.datasets import utils

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MNIST_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.optim as optim
    from torchvision import datasets, transforms

    torch.manual_seed(1)
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train = datasets.MNIST(sys.argv[1], train=True, download=False, transform=transform)
    test = datasets.MNIST(sys.argv[1], train=False, transform=transform)
    train_loader = torch.utils.data.DataLoader(train, batch_size=8, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test, batch_size=8)
    model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            correct += (model(data).argmax(dim=1) == target).sum().item()
    print(f"loss {loss.item():.4f} test {correct}/{len(test)}")
""")


def _alias_maps_torchvision() -> bool:
    code = ("import fabric, sys; fabric.install_torch_alias()\n"
            "try:\n    import torchvision\nexcept ImportError:\n    sys.exit(1)\n"
            "sys.exit(0 if torchvision.__name__.startswith('fabric.vision') or "
            "'fabric' in getattr(torchvision, '__file__', '') else 1)")
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120).returncode == 0


def test_classic_mnist_example_runs_under_fabric_run(tmp_path):
    if not _alias_maps_torchvision():
        pytest.skip("fabric._torch_alias does not map torchvision to fabric.vision yet (the alias helper's import "
                    "hook does)")
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 64), ("t10k", 16)):
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        images = np.zeros((n, 28, 28), np.uint8)
        for i, y in enumerate(labels):  # learnable: a bright bar whose row encodes the label
            images[i, 2 + 2 * y, :] = 255
        utils.write_idx(str(raw / f"{split}-images-idx3-ubyte.gz"), images)
        utils.write_idx(str(raw / f"{split}-labels-idx1-ubyte.gz"), labels)
    script = tmp_path / "mnist.py"
    script.write_text(MNIST_SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "fabric.run", str(script), str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    correct = int(out.stdout.split("test ")[1].split("/")[0])
    assert correct >= 14  # the bars are easy: nearly all test images right


MODULES = ["fabric.vision", "fabric.vision.transforms", "fabric.vision.transforms.functional",
           "fabric.vision.transforms.transforms", "fabric.vision.transforms._functional_tensor",
           "fabric.vision.transforms._functional_pil", "fabric.vision.transforms._presets",
           "fabric.vision.transforms.autoaugment", "fabric.vision.transforms.v2",
           "fabric.vision.datasets", "fabric.vision.datasets.utils", "fabric.vision.datasets.mnist",
           "fabric.vision.datasets.cifar", "fabric.vision.datasets.fakedata", "fabric.vision.datasets.folder",
           "fabric.vision.datasets.svhn", "fabric.vision.datasets.vision", "fabric.vision.ops",
           "fabric.vision.ops.boxes", "fabric.vision.ops.roi", "fabric.vision.ops.losses",
           "fabric.vision.ops.misc", "fabric.vision.utils", "fabric.vision.models", "fabric.vision.models._api",
           "fabric.vision.models.resnet", "fabric.vision.models.squeezenet", "fabric.vision.models.mobilenetv2",
           "fabric.vision.models.vgg", "fabric.vision.models.alexnet", "fabric.vision.models.densenet"]
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name):
    importlib.import_module(name)
    mod = sys.modules[name]
    res = doctest.testmod(mod, extraglobs={"fabric": fabric}, optionflags=FLAGS)
    assert res.failed == 0


def test_stochastic_depth_module_examples():
    importlib.import_module("fabric.vision.ops")
    res = doctest.testmod(sys.modules["fabric.vision.ops.stochastic_depth"], optionflags=FLAGS)
    assert res.failed == 0 and res.attempted > 0


def test_docs_examples():
    path = os.path.join(ROOT, "docs", "vision.md")
    res = doctest.testfile(path, module_relative=False, globs={"fabric": fabric}, optionflags=FLAGS)
    assert res.failed == 0
