"""Exceptions of ``fabric.compile`` (``torch._dynamo.exc``'s names; all are ``RuntimeError``)."""
from __future__ import annotations

__all__ = ["TorchDynamoException", "Unsupported", "InvalidBackend", "BackendCompilerFailed"]


class TorchDynamoException(RuntimeError):
    """Base class of the compiler's errors."""


class Unsupported(TorchDynamoException):
    """Raised under ``fullgraph=True`` when the code cannot be captured as one graph (a graph break)."""


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available backends.")


class BackendCompilerFailed(TorchDynamoException):
    def __init__(self, backend_fn, inner_exception):
        self.backend_name = getattr(backend_fn, "__name__", "?")
        self.inner_exception = inner_exception
        super().__init__(f"backend={self.backend_name!r} raised:\n{type(inner_exception).__name__}: "
                         f"{inner_exception}")
