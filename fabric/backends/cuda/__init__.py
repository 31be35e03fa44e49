"""CUDA kernels of the GPU backend.

``kernels/*.cu`` hold the CUDA C sources (``common.cuh`` is prepended to
each); :mod:`fabric.backends.cuda.launch` lists every kernel and dtype it is
built for, compiles them through ``cupy.RawModule`` and picks launch
geometry.  Nothing here imports CuPy until a kernel is needed.  See
``docs/cuda.md``.

Example::

    >>> from fabric.backends.cuda import KERNELS
    >>> sorted(KERNELS)[:2]
    ['activations.cu', 'conv.cu']
"""
from .launch import KERNELS, module_source, name_expressions

__all__ = ["KERNELS", "module_source", "name_expressions"]
