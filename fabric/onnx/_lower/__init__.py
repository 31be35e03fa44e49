"""Lowering the fx graph IR to ONNX: one rule per ``call_function`` target, ``call_method`` name and
``call_module`` class, kept in three tables (``FUNCTIONS``, ``METHODS``, ``MODULES``) that the rule
modules fill when imported.  See ``_core`` for the shared helpers."""
from __future__ import annotations

from . import attention, control_flow, elementwise, layers, onnx_ops, recurrent, shapes  # noqa: F401  (they register rules)
from ._core import FUNCTIONS, METHODS, MODULES, Lowering, UnsupportedOperatorError  # noqa: F401
