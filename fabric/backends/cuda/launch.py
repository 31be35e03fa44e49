"""Loading and launching the CUDA kernels.

The kernel sources are ``kernels/*.cu``; each is compiled as one
``cupy.RawModule`` per device, with ``common.cuh`` prepended and one name
expression per (kernel template, dtype) of the :data:`KERNELS` table.  The
same source text (:func:`module_source`) and name expressions
(:func:`name_expressions`) feed the NVRTC compile check and the CPU test
harness, so all three see exactly what the GPU runs.

Example::

    >>> from fabric.backends.cuda import launch
    >>> launch.name_expression("softmax_fwd", "float16")
    'softmax_fwd<__half>'
    >>> launch.kernel_file("adam_step")
    'optim.cu'
"""
from __future__ import annotations

import functools
import math
import os
import threading
from dataclasses import dataclass

import numpy as np

KERNEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
PRELUDE = "common.cuh"

CTYPES = {"float16": "__half", "float32": "float", "float64": "double"}
ALL = ("float16", "float32", "float64")
FLOATS = ("float32", "float64")

# file -> ((kernel template, dtypes it is instantiated for), ...)
KERNELS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "softmax.cu": (("softmax_fwd", ALL), ("softmax_bwd", ALL),
                   ("log_softmax_fwd", ALL), ("log_softmax_bwd", ALL)),
    "cross_entropy.cu": (("cross_entropy_fwd", ALL), ("cross_entropy_bwd", ALL)),
    "norms.cu": (("layer_norm_fwd", ALL), ("layer_norm_bwd", ALL), ("layer_norm_bwd_params", ALL),
                 ("rms_norm_fwd", ALL), ("rms_norm_bwd", ALL), ("rms_norm_bwd_params", ALL)),
    "activations.cu": (("gelu_fwd", ALL), ("gelu_bwd", ALL), ("silu_fwd", ALL), ("silu_bwd", ALL),
                       ("bias_act_fwd", ALL), ("bias_act_bwd", ALL)),
    "dropout.cu": (("dropout_fwd", ALL),),
    "embedding.cu": (("embedding_bwd", ALL), ("embedding_bwd_sorted", ALL)),
    "conv.cu": (("im2col_fwd", ALL), ("im2col_bwd", ALL)),
    "pool.cu": (("max_pool2d_fwd", ALL), ("max_pool2d_bwd", ALL)),
    "optim.cu": (("sgd_step", FLOATS), ("adam_step", FLOATS)),
}

ACT_CODES = {"none": 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}


def name_expression(kernel: str, dtype) -> str:
    """The template instantiation NVRTC is asked for, e.g. ``'gelu_fwd<float>'``."""
    return f"{kernel}<{CTYPES[np.dtype(dtype).name]}>"


def name_expressions(file: str) -> list[str]:
    """Every instantiation compiled for ``file``."""
    return [name_expression(k, dt) for k, dts in KERNELS[file] for dt in dts]


@functools.cache
def kernel_file(kernel: str) -> str:
    """The .cu file that defines ``kernel``."""
    for file, entries in KERNELS.items():
        if any(k == kernel for k, _ in entries):
            return file
    raise KeyError(f"no CUDA kernel named {kernel!r}")


def supports(kernel: str, dtype) -> bool:
    """Whether ``kernel`` is instantiated for ``dtype``."""
    dts = dict(KERNELS[kernel_file(kernel)])[kernel]
    return np.dtype(dtype).name in dts


def _read(name: str) -> str:
    with open(os.path.join(KERNEL_DIR, name), encoding="utf-8") as f:
        return f.read()


def module_source(file: str) -> str:
    """The exact text compiled for ``file``: the prelude, then the file (a
    ``#line`` directive keeps compiler messages pointing at the .cu line)."""
    return f'{_read(PRELUDE)}\n#line 1 "{file}"\n{_read(file)}'


def nvrtc_options(arch: str | int) -> tuple[str, ...]:
    """The NVRTC options CuPy uses for a RawModule compiled for ``sm_<arch>``
    (``cupy.cuda.compiler._compile_with_cache_cuda`` + ``_compile_using_nvrtc``)."""
    from cupy._core.core import assemble_cupy_compiler_options

    return assemble_cupy_compiler_options(()) + (
        "-ftz=true", f"-arch=sm_{arch}", "--device-as-default-execution-space")


# --------------------------------------------------------------------------
# launch geometry
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Limits:
    """Launch limits of a kernel provider: the largest block the launchers
    use, the most blocks a grid-stride launch gets, the dynamic shared
    memory a block may use without opting in, the elementwise block, and the
    chunk of a tensor one block updates in the multi-tensor optimizer steps."""
    max_block: int = 512
    max_grid: int = 65535
    max_shared: int = 44 * 1024     # of the 48 KiB default: static __shared__ needs the rest
    elementwise_block: int = 256
    chunk_size: int = 16384         # optimizer elements per block: ~4 blocks per SM for a 10M-parameter group
    warp_row_max: int = 1024        # softmax rows up to this many columns: one warp per row


def elementwise_config(n: int, limits: Limits) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) for a grid-stride loop over ``n`` items."""
    block = limits.elementwise_block
    return (max(1, min(-(-n // block), limits.max_grid)),), (block,)


def rows_config(rows: int, cols: int, limits: Limits) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) for one block per row: about four columns per thread,
    a whole number of warps (the block reductions need it)."""
    want = -(-max(cols, 1) // 4)
    block = min(limits.max_block, max(32, 32 * -(-want // 32)))
    return (max(1, min(rows, limits.max_grid)),), (block,)


ROW_BLOCK, ROW_BLOCK_CACHED, ROW_WARP = 0, 1, 2   # the row kernels' `mode` (common.cuh)


def row_mode_config(rows: int, cols: int, itemsize: int, copies: int, limits: Limits):
    """``(mode, grid, block, shared bytes)`` for the softmax kernels: a warp per row
    (several rows per block) for rows of at most ``limits.warp_row_max`` columns,
    else a block per row, with the row cached in shared memory where it fits."""
    if cols <= limits.warp_row_max:
        block = max(32, min(limits.max_block, 128) // 32 * 32)
        per_block = block // 32
        return ROW_WARP, (max(1, min(-(-rows // per_block), limits.max_grid)),), (block,), 0
    cached, smem = cache_config(cols, itemsize, copies, limits)
    grid, block = rows_config(rows, cols, limits)
    return (ROW_BLOCK_CACHED if cached else ROW_BLOCK), grid, block, smem


def cache_config(cols: int, itemsize: int, copies: int, limits: Limits) -> tuple[int, int]:
    """(cached flag, dynamic shared bytes) for caching ``copies`` rows in shared memory."""
    need = cols * itemsize * copies
    return (1, need) if 0 < need <= limits.max_shared else (0, 0)


def chunk_table(sizes: list[int], chunk_size: int) -> np.ndarray:
    """``chunk_offsets`` for the multi-tensor kernels: index of each tensor's
    first chunk, plus the total (len(sizes) + 1 entries, int64)."""
    counts = [max(0, math.ceil(s / chunk_size)) for s in sizes]
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


# --------------------------------------------------------------------------
# RawModule cache (GPU)
# --------------------------------------------------------------------------
class CupyKernels:
    """Compiles and caches the kernel modules per device and hands out
    launchable ``cupy.RawKernel`` objects: ``kernels.get("softmax_fwd", dtype)``.
    This is the GPU kernel provider of :class:`fabric.backends.cupy_backend.KernelOps`."""

    def __init__(self, cupy):
        self.cupy = cupy
        self._modules: dict[tuple[int, str], object] = {}
        self._lock = threading.Lock()
        self._limits: dict[int, Limits] = {}

    @property
    def limits(self) -> Limits:
        dev = self.cupy.cuda.Device()
        lim = self._limits.get(dev.id)
        if lim is None:
            sms = dev.attributes.get("MultiProcessorCount", 80)
            lim = self._limits[dev.id] = Limits(max_block=512, max_grid=sms * 32)
        return lim

    def module(self, file: str):
        dev = self.cupy.cuda.Device().id
        key = (dev, file)
        mod = self._modules.get(key)
        if mod is None:
            with self._lock:
                mod = self._modules.get(key)
                if mod is None:
                    mod = self.cupy.RawModule(code=module_source(file),
                                              name_expressions=name_expressions(file))
                    self._modules[key] = mod
        return mod

    def get(self, kernel: str, dtype):
        return self.module(kernel_file(kernel)).get_function(name_expression(kernel, dtype))

    def pointer_tables(self, *lists):
        """One device array of data pointers per list of arrays (one copy to the device)."""
        n = len(lists[0])
        host = np.array([a.data.ptr for lst in lists for a in lst], dtype=np.uint64)
        dev = self.cupy.asarray(host)
        return [dev[i * n:(i + 1) * n] for i in range(len(lists))]
