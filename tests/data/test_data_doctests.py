"""The examples in fabric.data's docstrings and in docs/data.md run and print what they show."""
import doctest
import importlib
import os

import pytest

import fabric

MODULES = ["fabric.data", "fabric.data.dataset", "fabric.data.sampler", "fabric.data.distributed",
           "fabric.data._collate", "fabric.data.dataloader", "fabric.data._worker", "fabric.data._shm",
           "fabric.data._pin", "fabric.data._fetch", "fabric.data.transforms", "fabric.data.datasets",
           "fabric.data.datasets._utils", "fabric.data.datasets.mnist", "fabric.data.datasets.digits",
           "fabric.utils"]
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, extraglobs={"fabric": fabric}, optionflags=FLAGS)
    assert res.failed == 0


def test_docs_examples():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "data.md")
    res = doctest.testfile(os.path.abspath(path), module_relative=False, globs={"fabric": fabric},
                           optionflags=FLAGS)
    assert res.failed == 0
