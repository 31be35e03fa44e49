"""The benchmark models, one definition for fabric and PyTorch (``lib`` is either module).

``build(lib, name)`` returns ``(model, optimizer, loss_fn)``; one training step is
``opt.zero_grad(); loss_fn().backward(); opt.step()``.  Shared by benchmarks/train.py
(steps/s against PyTorch) and benchmarks/profile_models.py (where the time goes).

  mlp      784-512-512-10, batch 128, Adam
  lenet    LeNet-5 on 1x32x32, batch 64, SGD momentum
  cifar    CIFAR-style CNN (3 conv+BatchNorm blocks, 3x32x32), batch 32, SGD momentum
  gpt      char-GPT, 4 layers, d 128, 4 heads, context 64, batch 32, AdamW, dropout 0.1
  lstm     nn.LSTM 32->128, T 50, batch 32, linear head, Adam
  encoder  TransformerEncoderLayer d 128, 4 heads, ff 512, T 64, batch 32, Adam
"""
from __future__ import annotations

import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("mlp", "lenet", "cifar", "gpt", "lstm", "encoder")


def _gpt_class(lib):
    if lib.__name__ == "fabric":
        sys.path.insert(0, os.path.join(HERE, "..", "examples"))
        import char_gpt
        return char_gpt.GPT
    with open(os.path.join(HERE, "..", "examples", "char_gpt.py")) as f:
        src = f.read()
    src = src.replace("import fabric as torch", "import torch").replace(
        "from fabric import nn", "from torch import nn").replace(
        "from fabric.nn import functional as F", "from torch.nn import functional as F")
    mod = types.ModuleType("char_gpt_torch")
    mod.__file__ = os.path.join(HERE, "..", "examples", "char_gpt.py")
    exec(compile(src, "char_gpt_torch", "exec"), mod.__dict__)
    return mod.GPT


def build(lib, name):
    """``(model, optimizer, loss_fn)`` for benchmark model ``name`` built with ``lib``."""
    nn = lib.nn
    F = nn.functional
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        x, y = lib.randn(128, 784), lib.randint(0, 10, (128,))
        return model, opt, lambda: F.cross_entropy(model(x), y)
    if name == "lenet":
        model = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
                              nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = lib.randn(64, 1, 32, 32), lib.randint(0, 10, (64,))
        return model, opt, lambda: F.cross_entropy(model(x), y)
    if name == "cifar":
        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]
        model = nn.Sequential(*block(3, 32), *block(32, 64), *block(64, 128), nn.Flatten(), nn.Linear(128 * 16, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = lib.randn(32, 3, 32, 32), lib.randint(0, 10, (32,))
        return model, opt, lambda: F.cross_entropy(model(x), y)
    if name == "gpt":
        model = _gpt_class(lib)(65, context=64, d_model=128, n_layer=4, n_head=4)
        opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
        x, y = lib.randint(0, 65, (32, 64)), lib.randint(0, 65, (32, 64))
        return model, opt, lambda: model(x, y)[1]
    if name == "lstm":
        rnn, head = nn.LSTM(32, 128, batch_first=True), nn.Linear(128, 10)
        model = nn.ModuleList([rnn, head])
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        x, y = lib.randn(32, 50, 32), lib.randint(0, 10, (32,))
        return model, opt, lambda: F.cross_entropy(head(rnn(x)[0][:, -1]), y)
    if name == "encoder":
        model = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, batch_first=True)
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        x = lib.randn(32, 64, 128)
        return model, opt, lambda: model(x).square().mean()
    raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
