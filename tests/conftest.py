"""Shared test configuration: markers skip cleanly when torch or a CUDA
device is missing; hypothesis gets a CI-sized profile."""
from __future__ import annotations

import os

import pytest

try:
    from hypothesis import settings

    settings.register_profile("ci", max_examples=30, deadline=None)
    settings.register_profile("dev", max_examples=15, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover
    pass


def _has_torch():
    try:
        import torch  # noqa: F401
        return True
    except Exception:
        return False


def _has_cuda():
    try:
        import fabric

        return fabric.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    has_torch = _has_torch()
    has_cuda = _has_cuda()
    skip_torch = pytest.mark.skip(reason="torch is not installed")
    skip_cuda = pytest.mark.skip(reason="no CUDA device (cupy.is_available() is False)")
    for item in items:
        if item.get_closest_marker("torch") is not None and not has_torch:
            item.add_marker(skip_torch)
        if item.get_closest_marker("cuda") is not None and not has_cuda:
            item.add_marker(skip_cuda)


@pytest.fixture(autouse=True)
def _seed_and_defaults():
    import fabric

    prev = fabric.get_default_dtype()
    yield
    fabric.set_default_dtype(prev)
