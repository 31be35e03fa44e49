"""docs/tools.md and docs/teaching.md stay true: the former's code blocks run
in order, the latter's examples are doctests with their printed output."""
from __future__ import annotations

import doctest
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_tools_page_runs(tmp_path, monkeypatch, capsys):
    with open(os.path.join(ROOT, "docs", "tools.md")) as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    has_tb = True
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        has_tb = False
    monkeypatch.chdir(tmp_path)
    env: dict = {}
    for code in blocks:
        if "tensorboard" in code and not has_tb:
            continue
        exec(compile(code, "docs/tools.md", "exec"), env)
    out = capsys.readouterr().out
    assert "Self CPU time total:" in out and "[---" in out and "├─Linear: 1-1" in out
    assert (tmp_path / "trace.json").exists()


def test_teaching_tutorial():
    pytest.importorskip("fabric")
    result = doctest.testfile(os.path.join(ROOT, "docs", "teaching.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10 and result.failed == 0


@pytest.mark.parametrize("module", ["fabric.autograd.observe", "fabric.autograd.profiler", "fabric.profiler",
                                    "fabric.utils.benchmark", "fabric.utils.benchmark.common",
                                    "fabric.utils.benchmark.timer", "fabric.utils.benchmark.compare",
                                    "fabric.utils._summary", "fabric.viz", "fabric._display", "fabric._teaching",
                                    "fabric._progress", "fabric.utils.tensorboard", "fabric.utils.tensorboard.writer",
                                    "fabric.utils.tensorboard.summary"])
def test_docstring_examples(module, monkeypatch):
    import importlib

    if module.startswith("fabric.utils.tensorboard"):
        pytest.importorskip("tensorboard")
    monkeypatch.setenv("FABRIC_PROGRESS", "0")
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
