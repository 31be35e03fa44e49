"""``fabric.device``: where a tensor's memory lives ("cpu", "cuda", "cuda:N").

Example::

    >>> import fabric
    >>> fabric.device("cuda:1")
    device(type='cuda', index=1)
"""
from __future__ import annotations

__all__ = ["device", "cpu", "as_device"]


class device:
    __slots__ = ("type", "index")

    _cache: dict = {}

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            return type
        key = (type, index)
        hit = cls._cache.get(key)
        if hit is not None:
            return hit
        if isinstance(type, int) and index is None:
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() expects a string like 'cpu' or 'cuda:0', got {type!r}")
        name = type
        if ":" in name:
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was passed explicitly: "
                                   f"{name}")
            name, _, idx = name.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if name not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}"
            )
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", index)
        cls._cache[key] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


cpu = device("cpu")


def as_device(d) -> device:
    """Normalise a device argument (str, int, device); None means cpu.
    A bare "cuda" resolves to the current CUDA device."""
    if d is None:
        return cpu
    if d.__class__ is not device:
        d = device(d)
    if d.type == "cuda" and d.index is None:
        from . import cuda

        return device("cuda", cuda.current_device())
    return d


# --- the default device --------------------------------------------------------------------------------------------

def get_default_device():
    return cpu


def set_default_device(device) -> None:
    if device is not None and as_device(device).type != "cpu":
        raise NotImplementedError("fabric.set_default_device supports only 'cpu'; pass device= explicitly instead")
