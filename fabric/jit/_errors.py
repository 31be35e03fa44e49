"""Exceptions and warnings of ``fabric.jit`` (PyTorch's classes and names)."""
from __future__ import annotations


class Error(RuntimeError):
    """An error raised by code compiled with ``fabric.jit.script`` (``torch.jit.Error``)."""


class TracerWarning(Warning):
    """A trace hard-coded something it cannot follow: a Python value read from a
    tensor (``.item()``, ``bool()``, ``len()``, a shape), so the traced graph
    may be wrong for other inputs."""

    @staticmethod
    def ignore_lib_warnings():
        import warnings

        warnings.filterwarnings("ignore", category=TracerWarning, module="fabric.(?!jit)")


class TracingCheckError(Exception):
    """``check_trace`` found that re-running the trace disagrees with Python."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n" + graph_diff_error + "\n"
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across invocations. This often "
                             "indicates that the tracer has encountered untraceable code.\n"
                             + tensor_compare_error + "\n")
        super().__init__(self.message)
