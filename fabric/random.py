"""Random number generation: ``manual_seed``, ``Generator``, RNG state.

The CPU generator reproduces PyTorch's CPU streams (mt19937 and PyTorch's
transformations, see ``fabric/_rng.py``), so the same seed gives the same
numbers as PyTorch for ``rand``, ``randn``, ``randint``, ``randperm`` and the
``nn.init`` functions built on them.

Example::

    >>> import fabric
    >>> _ = fabric.manual_seed(0)
    >>> a = fabric.rand(3)
    >>> _ = fabric.manual_seed(0)
    >>> bool((fabric.rand(3) == a).all())
    True
"""
from __future__ import annotations

import numpy as np

from ._device import as_device

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator", "fork_rng"]


class Generator:
    """A random stream for one device (``fabric.Generator(device="cpu")``)."""

    def __init__(self, device="cpu"):
        from ._rng import MT19937Generator

        self.device = as_device(device)
        if self.device.type == "cpu":
            self._impl = MT19937Generator()
        else:
            from .backends import backend_for

            self._impl = backend_for(self.device).make_generator(self.device.index or 0)

    def manual_seed(self, seed) -> Generator:
        seed = int(seed)
        if seed < -(1 << 63) or seed >= (1 << 64):
            raise RuntimeError("Overflow when unpacking long long")
        self._impl.manual_seed(seed & ((1 << 64) - 1))
        return self

    def initial_seed(self) -> int:
        return self._impl.initial_seed()

    def seed(self) -> int:
        return self._impl.seed()

    def get_state(self):
        from ._tensor import Tensor

        return Tensor._make(np.asarray(self._impl.get_state(), dtype=np.uint8).copy(), False)

    def set_state(self, new_state) -> Generator:
        from ._tensor import Tensor

        arr = new_state._data if isinstance(new_state, Tensor) else np.asarray(new_state)
        if getattr(arr, "dtype", None) != np.uint8:
            raise TypeError(f"expected a uint8 (ByteTensor) RNG state, got {getattr(arr, 'dtype', type(arr))}")
        self._impl.set_state(np.asarray(arr))
        return self

    def __repr__(self):
        return f"<fabric.Generator object on {self.device}>"


default_generator = None


def _default():
    global default_generator
    if default_generator is None:
        default_generator = Generator("cpu")
    return default_generator


def generator_for(generator, device=None):
    """The stream an op draws from: ``generator`` if given, else the
    default generator of the device."""
    if generator is not None:
        return generator._impl
    if device is not None and device.type == "cuda":
        from . import cuda

        return cuda._default_generator(device.index or 0)._impl
    return _default()._impl


def manual_seed(seed) -> Generator:
    """Seed every device's default generator; returns the CPU one."""
    g = _default().manual_seed(seed)
    from . import cuda

    cuda._seed_all_if_initialized(int(seed))
    return g


def seed() -> int:
    """Seed from a non-deterministic source (every device); returns the seed."""
    s = _default().seed()
    from . import cuda

    cuda._seed_all_if_initialized(s)
    return s


def initial_seed() -> int:
    return _default().initial_seed()


def get_rng_state():
    """The CPU generator's state as a uint8 tensor."""
    return _default().get_state()


def set_rng_state(new_state) -> None:
    _default().set_state(new_state)


class fork_rng:
    """Restore the CPU and CUDA RNG states on exit (CUDA: ``devices``, default
    every device, when CUDA is available)."""

    def __init__(self, devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
        self.enabled = enabled
        self.devices = devices

    def __enter__(self):
        if self.enabled:
            from . import cuda

            self.state = get_rng_state()
            devices = self.devices
            if devices is None:
                devices = range(cuda.device_count())
            self.cuda_states = [(d, cuda.get_rng_state(d)) for d in devices]

    def __exit__(self, *exc):
        if self.enabled:
            from . import cuda

            set_rng_state(self.state)
            for d, state in self.cuda_states:
                cuda.set_rng_state(state, d)
