"""Graph inspection names, as in ``torch.autograd.graph``."""
from __future__ import annotations

from .function import Node, RemovableHandle

__all__ = ["Node", "RemovableHandle"]
