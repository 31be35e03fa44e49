"""``torch.backends.opt_einsum``: whether ``einsum`` plans its contraction
order with the ``opt_einsum`` package. fabric's ``einsum`` always uses
NumPy's own path optimizer; ``enabled`` and ``strategy`` are recorded.

Example::

    >>> import fabric
    >>> fabric.backends.opt_einsum.enabled == fabric.backends.opt_einsum.is_available()
    True
"""
from __future__ import annotations

import sys

from ._flags import FlagModule, make_flag_module, swap_flags

__all__ = ["is_available", "get_opt_einsum", "set_flags", "flags"]


def is_available() -> bool:
    """Whether the ``opt_einsum`` package can be imported."""
    return get_opt_einsum() is not None


def get_opt_einsum():
    """The ``opt_einsum`` package, or None."""
    try:
        import opt_einsum
    except ImportError:
        return None
    return opt_einsum


class OptEinsumModule(FlagModule):
    @property
    def enabled(self) -> bool:
        """Plan contractions with opt_einsum (default: whether it is installed)."""
        return self._state.get("enabled", is_available())

    @enabled.setter
    def enabled(self, value) -> None:
        if not isinstance(value, bool):
            raise ValueError(f"enabled must be a bool, but got {type(value).__name__}")
        self._state["enabled"] = value

    @property
    def strategy(self):
        """``'auto'``, ``'greedy'`` or ``'optimal'`` (None without opt_einsum)."""
        return self._state.get("strategy", "auto") if is_available() else None

    @strategy.setter
    def strategy(self, value) -> None:
        if not is_available():
            raise ValueError(f"opt_einsum is not available, so setting `strategy` to {value} will not be "
                             "meaningful. First install opt_einsum, then set strategy.")
        if value not in ("auto", "greedy", "optimal"):
            raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}")
        self._state["strategy"] = value


def set_flags(_enabled=None, _strategy=None):
    module = sys.modules[__name__]
    orig = (module.enabled, module.strategy if is_available() else None)
    if _enabled is not None:
        module.enabled = _enabled
    if _strategy is not None:
        module.strategy = _strategy
    return orig


def flags(enabled=None, strategy=None):
    return swap_flags(sys.modules[__name__], enabled=enabled, strategy=strategy)


make_flag_module(__name__, OptEinsumModule)
