"""The few runtime helpers scripted graphs call besides fabric's ops.

They are ordinary functions so a graph that uses them still prints as
readable Python and can be saved (they are on ``jit.save``'s allow-list).
"""
from __future__ import annotations

import builtins

from ._errors import Error

# exceptions a scripted ``raise`` may name (anything else becomes fabric.jit.Error)
_EXCEPTIONS = {name: getattr(builtins, name) for name in (
    "Exception", "RuntimeError", "ValueError", "TypeError", "IndexError", "KeyError", "AssertionError",
    "NotImplementedError", "ZeroDivisionError", "ArithmeticError", "StopIteration")}


def raise_exception(kind: str, message: str):
    """``raise kind(message)`` from scripted code (``kind`` is a builtin exception's name)."""
    raise _EXCEPTIONS.get(kind, Error)(message)


def assert_(cond, message: str = ""):
    """A scripted ``assert cond, message``."""
    if not cond:
        raise AssertionError(message)


def unused_called(name: str):
    """Body of a function marked ``@fabric.jit.unused`` that the scripted code reached."""
    raise Error(f"The function '{name}' is marked @torch.jit.unused and cannot be run from scripted code")


def list_construct(*items) -> list:
    """A fresh list each time the graph runs (a scripted list literal)."""
    return list(items)


def dict_construct(keys: tuple, values: tuple) -> dict:
    """A fresh dict each time the graph runs (a scripted dict literal)."""
    return dict(zip(keys, values))


def is_none(x) -> bool:
    return x is None


def is_not_none(x) -> bool:
    return x is not None


def format_string(template: str, *values) -> str:
    """A scripted f-string: ``template.format(*values)``."""
    return template.format(*values)
