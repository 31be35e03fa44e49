"""``torch.backends.cudnn``: fabric has no cuDNN (``is_available()`` is
False); the flags are kept so scripts that set them run unchanged.

``deterministic = True`` asks fabric's kernels for deterministic results, like
``fabric.use_deterministic_algorithms(True)`` (PyTorch keeps the two switches
apart and so does fabric: setting one does not change what the other reads).
``allow_tf32`` is recorded only: fabric's GPU convolutions are matrix products,
governed by ``backends.cuda.matmul.allow_tf32``. ``enabled``, ``benchmark``,
``benchmark_limit`` and ``depthwise_kernel`` change nothing.

Example::

    >>> import fabric
    >>> fabric.backends.cudnn.benchmark = True
    >>> with fabric.backends.cudnn.flags(enabled=False):
    ...     fabric.backends.cudnn.enabled
    False
    >>> fabric.backends.cudnn.benchmark = False
"""
from __future__ import annotations

from ._flags import FlagModule, flag, make_flag_module, swap_flags

__all__ = ["is_available", "version", "is_acceptable", "set_flags", "flags"]


def version():
    """The cuDNN version fabric uses: None, as fabric calls no cuDNN."""
    return None


def is_available() -> bool:
    """False: fabric runs its own kernels, not cuDNN's."""
    return False


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor``: False without cuDNN."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    """Set the flags given (not None); returns the old values, in this order."""
    module = _module()
    orig = (module.enabled, module.benchmark, module.benchmark_limit, module.deterministic, module.allow_tf32,
            module.fp32_precision, module.depthwise_kernel)
    for name, value in zip(("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
                            "fp32_precision", "depthwise_kernel"),
                           (_enabled, _benchmark, _benchmark_limit, _deterministic, _allow_tf32, _fp32_precision,
                            _depthwise_kernel)):
        if value is not None:
            setattr(module, name, value)
    return orig


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """Context manager: the flags for the ``with`` block (PyTorch's defaults
    here are those of ``flags()``, e.g. ``enabled=False``), restored after."""
    return swap_flags(_module(), enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                      deterministic=deterministic, allow_tf32=allow_tf32, fp32_precision=fp32_precision,
                      depthwise_kernel=depthwise_kernel)


def _module():
    import sys

    return sys.modules[__name__]


class CudnnModule(FlagModule):
    enabled = flag("enabled", True, "Whether cuDNN may be used (recorded only).")
    benchmark = flag("benchmark", False, "Autotune convolution algorithms (recorded only).")
    benchmark_limit = flag("benchmark_limit", 10, "How many algorithms benchmark mode tries (recorded only).")
    deterministic = flag("deterministic", False, "Ask for deterministic kernels (see backends._flags).")
    allow_tf32 = flag("allow_tf32", True, "TF32 in convolutions (recorded only; see cuda.matmul.allow_tf32).")
    fp32_precision = flag("fp32_precision", "none", "PyTorch 2.9+'s precision switch (recorded only).")
    depthwise_kernel = flag("depthwise_kernel", "auto", "Depthwise convolution kernel choice (recorded only).")


make_flag_module(__name__, CudnnModule)
