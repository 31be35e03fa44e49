"""``fabric.utils.data`` *is* :mod:`fabric.data` (PyTorch's name for it).

This module replaces itself in ``sys.modules`` with ``fabric.data`` and
registers the submodules under the alias too, so every spelling gives the same
objects: ``import fabric.utils.data``, ``from fabric.utils.data import
DataLoader``, ``from fabric.utils.data.dataloader import default_collate``.

Example::

    >>> import fabric
    >>> fabric.utils.data.DataLoader is fabric.data.DataLoader
    True
"""
from __future__ import annotations

import sys

import fabric.data as _data

for _name, _module in list(sys.modules.items()):
    if _name.startswith("fabric.data."):
        sys.modules["fabric.utils.data." + _name[len("fabric.data."):]] = _module
sys.modules[__name__] = _data
