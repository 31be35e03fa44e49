"""Fixtures for the CUDA-path tests: the CPU harness (needs only g++) and
the helpers shared by the kernel tests."""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness


def pytest_configure(config):
    for marker in ("cuda: needs a CUDA device (cupy.is_available())",
                   "torch: needs torch installed", "slow: slow test"):
        config.addinivalue_line("markers", marker)


@pytest.fixture(scope="session")
def harness_modules():
    """Every kernel file built for the CPU harness, plain and race-checked (compiled in
    parallel, cached on disk)."""
    if not harness.have_compiler():
        pytest.skip("the CUDA CPU harness needs g++ and nm")
    from fabric.backends.cuda import launch

    files = list(launch.KERNELS)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        mods = list(pool.map(harness.module_for, files + files, [False] * len(files) + [True] * len(files)))
    return dict(zip(files, mods))
