"""The docstring examples of fabric.func, forward_ad, graph and checkpoint run."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["fabric.func", "fabric.func._transforms", "fabric.func._vmap",
                                    "fabric.func._batched", "fabric.func._rules", "fabric.ops._batching",
                                    "fabric.func._stack", "fabric.func._functional_call",
                                    "fabric.autograd.forward_ad", "fabric.autograd.graph",
                                    "fabric.utils.checkpoint"])
def test_docstring_examples(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
