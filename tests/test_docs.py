"""Docs stay true: docs/ops.md matches the registry, the README's example runs,
and docstring examples of the core modules pass."""
from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ops_doc_is_generated_from_the_registry():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_ops_doc.py"), "--check"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


def test_readme_example_runs():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    code = re.search(r"## Ten lines\n\n```python\n(.*?)```", text, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    values = [float(v) for v in out.stdout.strip().strip("[]").split(",")]
    assert [round(v, 1) for v in values] == [1.0, -2.0, 0.5]


@pytest.mark.parametrize("module", ["fabric._tensor", "fabric._dtype", "fabric._device", "fabric._creation",
                                    "fabric._formatting", "fabric.autograd", "fabric.autograd.function",
                                    "fabric.autograd.grad_mode", "fabric.autograd.functional",
                                    "fabric.autograd.gradcheck", "fabric.serialization", "fabric.random",
                                    "fabric.optim.lr_scheduler", "fabric.optim.optimizer", "fabric.optim.lbfgs",
                                    "fabric.ops.arith", "fabric.ops.inplace", "fabric.ops.convert", "fabric.ops.attributes"])
def test_docstring_examples(module):
    import importlib

    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
