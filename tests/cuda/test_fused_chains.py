"""fabric.compile's fused pointwise chains as CUDA source (fabric._dynamo.fusion.cuda_source): every chain of
the fusion tests' graphs compiles with NVRTC, and runs on the CPU harness against the NumPy binding."""
from __future__ import annotations

import harness
import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric._dynamo import fusion
from fabric.backends.cuda import launch


def _chains():
    """The fused chains of small graphs like those of tests/compile/test_fusion.py."""
    graphs = {
        "gelu_mlp": lambda x, w, b: F.silu(F.gelu(x * w + b) * 0.5 + fabric.sigmoid(x)) - (x * w).relu() / 3,
        "lstm_cell": lambda f, c, i, g: fabric.sigmoid(f) * c + fabric.sigmoid(i) * fabric.tanh(g),
        "exp_log_div": lambda x, w, b: fabric.log(x * x + 1) / (w * w + 1) - (-b).exp() * 0.25,
    }
    out = {}
    for name, fn in graphs.items():
        f = fabric.compile(fn)
        args = [fabric.randn(5) for _ in range(fn.__code__.co_argcount)]
        f(*args)
        (entry,) = f._fabric_compiled.cache.values()
        (node,) = [v for v in entry.fn.__globals__.values() if isinstance(v, fusion.FusedPointwise)]
        out[name] = node.chain
    return out


CHAINS = _chains()


def _nvrtc():
    try:
        from cupy.cuda import compiler, nvrtc

        nvrtc.getVersion()
        return compiler
    except Exception as e:
        pytest.skip(f"CuPy with NVRTC is not installed ({type(e).__name__}: {e}); run .ci/cuda_check.sh")


def _kinds(chain):
    return [None] + [i for i in range(chain.n_inputs) if chain.used[i]]


def _module_source(chain, dtype):
    """One translation unit with the chain's forward and gradient kernels (the helpers once)."""
    helpers = fusion._CUDA_HELPERS
    names, bodies = [], []
    for wanted in _kinds(chain):
        src, kname = fusion.cuda_source(chain, dtype, wanted)
        assert src.startswith(helpers)
        names.append(kname)
        bodies.append(src[len(helpers):])
    return helpers + "".join(bodies), names


@pytest.mark.parametrize("arch", ["75", "90"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(CHAINS))
def test_fused_chain_sources_compile_with_nvrtc(name, dtype, arch):
    compiler = _nvrtc()
    src, _ = _module_source(CHAINS[name], dtype)
    prog = compiler._NVRTCProgram(src, f"fused_{name}.cu", name_expressions=None, method="cubin")
    cubin, _ = prog.compile(launch.nvrtc_options(arch))
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.skipif(not harness.have_compiler(), reason="the CUDA CPU harness needs g++ and nm")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(CHAINS))
def test_fused_chain_kernels_on_the_cpu_harness(name, dtype):
    chain = CHAINS[name]
    rng = np.random.default_rng(0)
    n = 300                                       # more than one grid-stride round with 2 blocks of 64
    xs = [rng.standard_normal(n).astype(dtype) for _ in range(chain.n_inputs)]
    g = rng.standard_normal(n).astype(dtype)
    want_y = np.asarray(fusion._kernel(chain, "numpy", "forward")(*xs))
    want_g = fusion._kernel(chain, "numpy", "backward_full")(*xs, g)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    src, names = _module_source(chain, dtype)
    module = harness.HarnessModule(src, names, name=f"fused_{name}_{np.dtype(dtype).name}")
    for wanted, kname in zip(_kinds(chain), names):
        kernel = module.get_function(kname)
        out = np.zeros(n, dtype)
        args = (*xs, out, np.int64(n)) if wanted is None else (*xs, g, out, np.int64(n))
        kernel((2,), (64,), args)
        np.testing.assert_allclose(out, want_y if wanted is None else want_g[wanted], **tol)
