"""Layer 1: every kernel and dtype instantiation compiles with NVRTC, driven
exactly as cupy.RawModule drives it, for sm_75, sm_80 and sm_90 - no GPU
needed (`.ci/cuda_check.sh` installs CuPy and the NVRTC wheels)."""
from __future__ import annotations

import inspect

import pytest

from fabric.backends.cuda import launch


def _nvrtc():
    try:
        from cupy.cuda import compiler, nvrtc

        nvrtc.getVersion()
        return compiler
    except Exception as e:
        pytest.skip(f"CuPy with NVRTC is not installed ({type(e).__name__}: {e}); "
                    "run .ci/cuda_check.sh to install it")


def _compile(source, name, name_expressions, arch):
    compiler = _nvrtc()
    prog = compiler._NVRTCProgram(source, name, name_expressions=name_expressions, method="cubin")
    return prog.compile(launch.nvrtc_options(arch))


@pytest.mark.parametrize("arch", ["75", "80", "90"])
@pytest.mark.parametrize("file", list(launch.KERNELS))
def test_every_instantiation_compiles(file, arch):
    cubin, mapping = _compile(launch.module_source(file), file, launch.name_expressions(file), arch)
    assert cubin[:4] == b"\x7fELF"
    assert set(mapping) == set(launch.name_expressions(file))
    assert all(m.startswith("_Z") for m in mapping.values())


def test_broken_kernel_reports_nvrtc_message():
    compiler = _nvrtc()
    src = launch.module_source("softmax.cu").replace("const A ninf = -fb_inf<A>();", "const A ninf = -INFINITY;")
    with pytest.raises(compiler.CompileException) as info:
        _compile(src, "softmax.cu", launch.name_expressions("softmax.cu"), "80")
    msg = str(info.value)
    assert 'identifier "INFINITY" is undefined' in msg
    assert "softmax.cu(" in msg          # the #line directive points at the .cu file


def test_cmath_is_rejected_like_on_the_gpu():
    compiler = _nvrtc()
    with pytest.raises(compiler.CompileException, match="cmath"):
        _compile("#include <cmath>\n__global__ void k() {}", "k.cu", None, "80")


def test_options_follow_cupy():
    """Every option we add is one CuPy's own compile path adds (drift check)."""
    compiler = _nvrtc()
    opts = launch.nvrtc_options("80")
    from cupy._core.core import assemble_cupy_compiler_options

    assert opts[:len(assemble_cupy_compiler_options(()))] == assemble_cupy_compiler_options(())
    src = inspect.getsource(compiler._compile_with_cache_cuda) + inspect.getsource(
        compiler._compile_using_nvrtc_no_warning) + inspect.getsource(compiler._get_arch_for_options_for_nvrtc)
    for extra in ("-ftz=true", "--device-as-default-execution-space", "-arch=sm_"):
        assert extra in src
    assert any(o.startswith("--std=c++") for o in opts)


def test_cuda12_extra_installs_what_runtime_compilation_needs():
    """`pip install fabric[cuda12]` on a machine with only a driver must be able to compile
    the kernels: CuPy, NVRTC and the runtime headers (cuda_fp16.h) all come from the extra,
    and .ci/cuda_check.sh installs exactly the extra (so CI proves it)."""
    import os

    import tomllib

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["cuda12"]
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip() for r in extra}
    assert {"cupy-cuda12x", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime-cu12"} <= names
    with open(os.path.join(root, ".ci", "cuda_check.sh"), encoding="utf-8") as f:
        script = f.read()
    assert '["cuda12"]' in script and "nvidia-cuda" not in script.split("python -m pip install")[1].split("\n")[0]
