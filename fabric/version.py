"""``torch.version``: fabric's version, the PyTorch version it follows, and
the CUDA runtime it runs on (through CuPy).

``__version__`` is fabric's own version; :data:`pytorch` names the PyTorch
release whose semantics fabric implements (its specification). ``cuda`` is
the CUDA runtime version CuPy was built for (``'12.4'``), None without CuPy;
it is looked up on first access. ``git_version`` is ``'Unknown'`` (as in a
PyTorch built outside git); ``hip``, ``rocm`` and ``xpu`` are None.

Example::

    >>> import fabric
    >>> fabric.version.pytorch
    '2.13.0'
"""
from __future__ import annotations

from . import __version__

__all__ = [  # noqa: F822  (cuda is looked up on first access, by __getattr__)
    "__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu", "pytorch"]

pytorch = "2.13.0"
debug = False
git_version = "Unknown"
hip = None
rocm = None
xpu = None


def _cuda_version():
    try:
        import cupy
    except ImportError:
        return None
    try:
        v = cupy.cuda.runtime.runtimeGetVersion()
    except Exception:
        try:
            v = cupy.cuda.get_local_runtime_version()
        except Exception:
            return None
    return f"{v // 1000}.{v % 1000 // 10}"


def __getattr__(name):
    if name == "cuda":
        value = globals()["cuda"] = _cuda_version()
        return value
    raise AttributeError(f"module 'fabric.version' has no attribute '{name}'")
