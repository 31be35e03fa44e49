"""``fabric.jit``: TorchScript's API on fabric's one graph IR (``fabric.fx``).

- markers for scripting: ``ignore``, ``unused``, ``export``, ``is_scripting``,
  ``is_tracing``, ``Final``, ``Attribute``, ``annotate``;
- ``fork`` / ``wait`` with :class:`Future`;
- ``script`` (a typed Python subset with real control flow), ``trace`` /
  ``trace_module`` (concrete tracing), ``ScriptModule`` / ``ScriptFunction``,
  ``freeze``, ``optimize_for_inference``;
- ``save`` / ``load``: a zip of the graph as JSON plus tensors, loadable
  without the model's Python class.

Example::

    >>> import fabric
    >>> fabric.jit.is_scripting(), fabric.jit.is_tracing()
    (False, False)
"""
from __future__ import annotations

from . import frontend  # noqa: F401
from ._errors import Error, TracerWarning, TracingCheckError
from ._freeze import freeze, optimize_for_inference, run_frozen_optimizations
from ._futures import Future, fork, wait
from ._modifiers import (  # noqa: F401
    Attribute,
    Final,
    FunctionModifiers,
    ScriptWarning,
    annotate,
    export,
    ignore,
    is_scripting,
    unused,
)
from ._modifiers import jit_isinstance as isinstance
from ._script import RecursiveScriptModule, ScriptFunction, ScriptModule, script  # noqa: F401
from ._serialization import load, save
from ._settings import (
    enable_onednn_fusion,
    fuser,
    interface,
    onednn_fusion_enabled,
    optimized_execution,
    script_if_tracing,
    set_fusion_strategy,
)
from ._state import is_tracing
from ._trace import trace, trace_module

__all__ = ["Attribute", "Error", "Final", "Future", "annotate", "export", "fork", "ignore", "is_scripting",
           "is_tracing", "unused", "wait", "TracerWarning", "TracingCheckError", "ScriptModule", "ScriptFunction",
           "script", "trace", "trace_module", "save", "load", "freeze", "optimize_for_inference",
           "run_frozen_optimizations", "isinstance", "ScriptWarning", "enable_onednn_fusion", "fuser", "interface",
           "onednn_fusion_enabled", "optimized_execution", "script_if_tracing", "set_fusion_strategy"]
