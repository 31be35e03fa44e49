"""PyTorch-compatible CPU random number generation, in pure NumPy.

After ``gen.manual_seed(s)`` every method of :class:`MT19937Generator`
returns the same numbers, bit for bit, as the matching PyTorch 2.x CPU op
after ``torch.manual_seed(s)``, and leaves the stream where PyTorch leaves
it, so that interleaved calls stay in step::

    >>> MT19937Generator(0).uniform((3,), np.float32)     # torch.rand(3)
    array([0.4962566 , 0.7682218 , 0.08847743], dtype=float32)
    >>> MT19937Generator(0).randint(0, 10, (4,))          # torch.randint(0, 10, (4,))
    array([4, 9, 3, 0])

How PyTorch draws, and how this module reproduces it
----------------------------------------------------
* The engine is mt19937 seeded with ``init_genrand(seed & 0xffffffff)``.
  NumPy's ``MT19937`` with ``_legacy_seeding`` produces the identical raw
  stream, so every op makes one ``random_raw(n)`` call.  ``random64`` is two
  draws, the first one the high word.
* ``uniform_``: float32/float16 use 24 bits (``(u32 & 0xffffff) * 2**-24``),
  float64 53 bits of ``random64``; then ``x * (to - from) + from`` in the
  op-math type, and a result that rounds to ``to`` becomes ``from``.
* ``normal_`` on >= 16 contiguous elements: all uniforms are drawn first, a
  Box-Muller transform runs on each block of 16 (8 pairs), and when the size
  is not a multiple of 16 the last 16 outputs are recomputed from 16 fresh
  uniforms.  float16 draws 16 per block instead (see ``_normal_fill``).
  Smaller or non-contiguous tensors use the per-element double Box-Muller of
  ``at::normal_distribution``, which caches the second value of each pair in
  the generator (the cache is part of :meth:`get_state`).
* ``bernoulli_(float p)``, ``exponential_``, ``geometric_``, ``cauchy_``,
  ``log_normal_``, ``multinomial`` and ``poisson`` draw one double (53 bits)
  per uniform.  ``bernoulli_(p tensor)`` draws a float (24 bits) unless ``p``
  is float64.  PyTorch 2.13 does not route ``bernoulli_(float)`` or
  ``exponential_`` through MKL's VSL (that path is compiled only into
  fbcode builds since pytorch#132395), so there is no MCG31 stream to
  emulate: dropout masks come from the mt19937 stream like everything else.
* ``random_``/``randint``: ``u % range + from`` with ``u`` a 32-bit draw when
  ``range < 2**28`` and a ``random64`` otherwise.
* ``randperm(n)`` for ``n < 2**32 / 20``: Fisher-Yates,
  ``swap(r[i], r[i + u32 % (n - i)])`` for ``i < n - 1``; the swap chain is
  resolved with sorting and pointer jumping instead of a Python loop.

Bit-exact floating point
------------------------
PyTorch's kernels are compiled with contraction of ``a * b + c`` into FMA and
call the C library's ``log``/``sin``/... .  Both are reproduced exactly:

* FMA is emulated with error-free transformations (``_fma64``, ``_fma32``).
* libm results come from ``math`` (which calls the same libm).  For speed,
  large arrays are evaluated in 80-bit long double and only the results that
  lie near a rounding boundary go through ``math`` (``_libm``).
* float32 ``normal_`` on x86-64 uses the AVX2 kernel (Cephes polynomials from
  ``avx_mathfun.h``), whose every operation, including the multiply-adds the
  compiler fused, is replayed in float32 (``_avx2_log``, ``_avx2_sincos``).
  Draws of at least ``normal_kernel.MIN_ELEMENTS`` run its numba twin
  (``normal_kernel.py``, one pass instead of ~150 array passes per element)
  when numba is installed, with bit-identical results.

The build flavour matters: on x86-64 PyTorch dispatches to its AVX2/AVX512
kernels (fused multiply-adds, AVX2 ``normal_``); with
``ATEN_CPU_CAPABILITY=default`` or on a CPU without AVX2 it runs the generic
kernels (no fusion, scalar ``logf``/``sinf``/``cosf`` ``normal_``).  The
flavour is detected at import, honours ``ATEN_CPU_CAPABILITY``, and can be
changed with :func:`set_kernel_flavor`.  On other architectures (aarch64) the
flavour is a best guess (fused, scalar ``normal_``) and has not been checked
against PyTorch.

What is not reproduced
----------------------
* bfloat16 needs the optional ``ml_dtypes`` package (NumPy has no such
  dtype); without it only float16/32/64 and the integer dtypes exist.
* ``multinomial`` without replacement when ``num_samples`` exceeds the number
  of non-zero probabilities: PyTorch's ``topk`` orders the tied zeros in an
  unspecified way; here the lower index comes first.
* ``randperm`` for ``n >= 2**32 / 20`` is exact but runs a Python loop.
* ``poisson`` is exact but samples element by element in Python
  (rejection sampling consumes a data-dependent number of draws).
* Threads: one generator must not be used from several threads at once.
* Argument errors raise RuntimeError (NotImplementedError, a subclass, for
  unsupported dtypes), as PyTorch does; messages are PyTorch's where cheap.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .libm import kernel_flavor, set_kernel_flavor
    from .mt19937 import MT19937Generator
    from .philox import PhiloxGenerator

__all__ = [
    "MT19937Generator",
    "PhiloxGenerator",
    "kernel_flavor",
    "set_kernel_flavor",
]

# Loaded on first use: `import fabric` imports only philox.py (the dropout reference uses its Philox
# function), not the CPU generator's libm emulation (ctypes) until a CPU random op runs.
_HOME = {"MT19937Generator": "mt19937", "PhiloxGenerator": "philox", "kernel_flavor": "libm",
         "set_kernel_flavor": "libm"}


def __getattr__(name):
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
