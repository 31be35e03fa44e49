"""The jit docs stay true: docstring examples pass and the docs/graph.md jit example runs."""
import doctest
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("module", ["fabric.jit._modifiers", "fabric.jit._futures", "fabric.jit._state",
                                    "fabric.jit.frontend", "fabric.jit._script", "fabric.jit._trace",
                                    "fabric.jit._serialization", "fabric.jit._freeze", "fabric.jit._settings", "fabric.jit",
                                    "fabric.compiler"])
def test_docstring_examples(module):
    import importlib

    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_graph_doc_jit_example_runs(tmp_path):
    with open(os.path.join(ROOT, "docs", "graph.md")) as fh:
        text = fh.read()
    section = text[text.index("## jit: TorchScript's API on the same graph"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    env = dict(os.environ, PYTHONPATH=ROOT)
    script = tmp_path / "example.py"      # script() reads source: run from a file, not -c
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "range_loop" in out.stdout and "cond" in out.stdout
