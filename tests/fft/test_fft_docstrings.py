"""The docstring examples of fabric.fft, the stft, the window functions and fabric.signal run and hold."""
from __future__ import annotations

import doctest
import importlib

import pytest

import fabric

MODULES = ["fabric.fft", "fabric.fft._core", "fabric.fft._transforms", "fabric.fft._helpers", "fabric.fft._stft",
           "fabric.fft._batching", "fabric.ops.spectral", "fabric.signal", "fabric.signal.windows",
           "fabric.signal.windows.windows"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"fabric": fabric},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
