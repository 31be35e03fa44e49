"""``torch.backends.mps``: fabric has no Metal backend.

Example::

    >>> import fabric
    >>> fabric.backends.mps.is_available(), fabric.backends.mps.is_built()
    (False, False)
"""
from __future__ import annotations

__all__ = ["is_available", "is_built", "is_macos_or_newer", "is_macos13_or_newer", "get_name", "get_core_count"]


def is_available() -> bool:
    """False: fabric runs on NumPy (CPU) and CuPy (CUDA) only."""
    return False


def is_built() -> bool:
    """False: fabric has no MPS support to build."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    """Whether this is macOS ``major.minor`` or newer (False elsewhere)."""
    import platform

    release = platform.mac_ver()[0]
    if not release:
        return False
    parts = [int(p) for p in release.split(".")[:2]] + [0]
    return (parts[0], parts[1]) >= (major, minor)


def is_macos13_or_newer(minor: int = 0) -> bool:
    return is_macos_or_newer(13, minor)


def get_name() -> str:
    raise RuntimeError("MPS backend is not available: fabric has no Metal support")


def get_core_count() -> int:
    raise RuntimeError("MPS backend is not available: fabric has no Metal support")
