"""docs/compat.md is generated from PyTorch's public package tree and stays current.

``tools/gen_compat_doc.py`` walks torch 2.13's modules (the inventory, kept in
``tools/torch_inventory.json``), imports each path under fabric's torch alias
in a clean interpreter, and renders the coverage. These tests fail when the
inventory no longer matches the installed torch, when a module is not one
object under its torch and fabric names, when a fabric module fails to import,
or when docs/compat.md differs from what fabric now has (rerun
``python tools/gen_compat_doc.py``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import gen_compat_doc  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def inventory():
    with open(gen_compat_doc.INVENTORY) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def report():
    return gen_compat_doc.coverage()


def test_inventory_matches_the_installed_torch(inventory):
    import torch

    if torch.__version__.split("+")[0] != inventory["torch"]:
        pytest.skip(f"the inventory is of torch {inventory['torch']}, torch {torch.__version__} is installed")
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_compat_doc.py"), "--print-inventory"],
                         capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    fresh = json.loads(out.stdout)
    stale = "tools/torch_inventory.json is stale: run python tools/gen_compat_doc.py --inventory"
    assert sorted(fresh["modules"]) == sorted(inventory["modules"]), stale
    for path, info in fresh["modules"].items():
        kept = inventory["modules"][path]
        # a torch module that needs an optional package (tensorboard ...) lists its names only where that is installed
        if "torch_import_error" not in info and "torch_import_error" not in kept:
            assert info["names"] == kept["names"], f"{path}: {stale}"


def test_every_present_module_is_one_object_and_imports_cleanly(report):
    errors = {p: r["error"] for p, r in report.items() if r["status"] == "error"}
    assert not errors
    split = [p for p, r in report.items() if r["status"] == "present" and not r["same_object"]]
    assert not split


def test_public_names_exist_or_are_listed_as_missing(inventory, report):
    with open(gen_compat_doc.DOC) as f:
        doc = f.read()
    assert doc == gen_compat_doc.render(inventory, report), "docs/compat.md is stale: run python tools/gen_compat_doc.py"
    for r in report.values():
        if r["status"] == "present":
            for name in r["missing"]:
                assert f"`{name}`" in doc


def test_core_paths_are_present(report):
    for path in ("torch", "torch.nn", "torch.nn.modules.module", "torch.nn.functional", "torch.optim.adam",
                 "torch.optim.adamw", "torch.utils.data", "torch.utils.data.sampler", "torch.utils.data.dataloader",
                 "torch.distributions.normal", "torch.backends.cudnn", "torch.backends.cuda", "torch.accelerator",
                 "torch.version", "torch.multiprocessing", "torch.autograd.function"):
        assert report[path]["status"] == "present", path
