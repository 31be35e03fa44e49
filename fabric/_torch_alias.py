"""Run unmodified PyTorch scripts on fabric.

``import fabric as torch`` covers code that only uses attribute access
(``torch.nn.Linear``). Statements like ``import torch.nn as nn`` or
``from torch.utils.data import DataLoader`` name the *module* ``torch``, so
they need ``sys.modules`` entries: :func:`install_torch_alias` adds them
(``torch``, ``torch.nn``, ``torch.nn.functional``, ``torch.optim`` ...), and
``python -m fabric.run script.py`` runs a script with the alias installed.

Example::

    >>> import fabric
    >>> fabric.install_torch_alias()          # doctest: +SKIP
    >>> import torch.nn as nn                  # doctest: +SKIP
    >>> nn is fabric.nn                        # doctest: +SKIP
    True
"""
from __future__ import annotations

import importlib
import sys

_SUBMODULES = ("nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.rnn", "nn.modules", "nn.parameter",
               "optim", "optim.lr_scheduler", "optim.optimizer", "autograd", "autograd.functional",
               "autograd.grad_mode", "autograd.graph", "utils", "utils.data", "linalg", "cuda", "random",
               "backends", "serialization", "special", "testing", "distributions", "distributed", "nn.parallel",
               "multiprocessing",
               "optim.swa_utils", "autograd.variable",
               "func", "nn.utils.parametrize", "nn.utils.parametrizations", "nn.utils.stateless", "nn.utils.fusion",
               "amp", "cpu", "cpu.amp", "cuda.amp")


def install_torch_alias(force: bool = False) -> None:
    """Make ``import torch`` (and ``torch.nn`` ...) resolve to fabric.

    Raises RuntimeError if the real torch is already imported, unless
    ``force`` (then fabric replaces it in ``sys.modules``)."""
    import fabric

    current = sys.modules.get("torch")
    if current is not None and current is not fabric and not force:
        raise RuntimeError("the real 'torch' is already imported; install the alias before importing torch "
                           "(or pass force=True)")
    sys.modules["torch"] = fabric
    for name in _SUBMODULES:
        try:
            mod = importlib.import_module(f"fabric.{name}")
        except ImportError:
            continue
        sys.modules[f"torch.{name}"] = mod
