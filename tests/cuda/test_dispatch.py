"""Layer 3 without a device: everything falls back or fails cleanly."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fabric.backends import cupy_backend as cupy_backend_module
from fabric.backends.cuda import launch


def _cupy_without_device():
    try:
        import cupy
    except Exception:
        pytest.skip("CuPy is not installed")
    if cupy.is_available():
        pytest.skip("a CUDA device is present")
    return cupy


def test_backend_construction_raises_clearly_without_device():
    _cupy_without_device()
    with pytest.raises(RuntimeError, match="no usable CUDA device"):
        cupy_backend_module.CupyBackend()


def test_backend_lookup_raises_clearly_without_device(monkeypatch):
    _cupy_without_device()
    import fabric
    from fabric import backends

    monkeypatch.setattr(backends, "_cupy_instance", None)
    # importing the submodule must not shadow the accessor
    import fabric.backends.cupy_backend
    with pytest.raises(RuntimeError, match="no usable CUDA device"):
        backends.get_cupy_backend()
    with pytest.raises(RuntimeError, match="no usable CUDA device"):
        backends.backend_for(fabric.device("cuda"))


def test_missing_cupy_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)     # import cupy -> ImportError
    with pytest.raises(RuntimeError, match="needs CuPy"):
        cupy_backend_module.CupyBackend()


def test_importing_fabric_does_not_import_cupy():
    code = ("import sys, fabric, fabric.backends, fabric.backends.cupy_backend, fabric.backends.cuda.launch; "
            "print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cuda_is_not_available_without_device():
    import fabric

    try:
        import cupy
        if cupy.is_available():
            pytest.skip("a CUDA device is present")
    except Exception:
        pass
    assert fabric.cuda.is_available() is False


def test_kernel_table_is_consistent():
    import os

    files = {f for f in os.listdir(launch.KERNEL_DIR) if f.endswith(".cu")}
    assert files == set(launch.KERNELS)
    for file in launch.KERNELS:
        src = launch.module_source(file)
        for kernel, dtypes in launch.KERNELS[file]:
            assert f"__global__ void {kernel}(" in src
            assert all(dt in launch.CTYPES for dt in dtypes)
    assert launch.supports("softmax_fwd", np.float16) and not launch.supports("adam_step", np.float16)


def test_geometry_helpers():
    lim = launch.Limits(max_block=512, max_grid=100)
    assert launch.rows_config(1000, 65, lim) == ((100,), (32,))
    assert launch.rows_config(3, 4096, lim) == ((3,), (512,))
    assert launch.elementwise_config(10, lim) == ((1,), (256,))
    assert launch.cache_config(100, 4, 2, lim) == (1, 800)
    assert launch.cache_config(10 ** 6, 4, 1, lim) == (0, 0)
    assert launch.chunk_table([5, 0, 11], 4).tolist() == [0, 2, 2, 5]
