"""Decorators and markers that steer :func:`fabric.jit.script` (and are
harmless in eager code): ``ignore``, ``unused``, ``export``, ``Final``,
``Attribute``, ``annotate``, ``is_scripting``.

Model libraries decorate their modules with these names, so they must exist
and behave exactly like eager PyTorch outside scripting: they return their
argument unchanged and only leave a mark the script compiler reads.

Example::

    >>> import fabric
    >>> @fabric.jit.ignore
    ... def debug(x):
    ...     return x
    >>> fabric.jit.is_scripting()
    False
"""
from __future__ import annotations

from collections import namedtuple
from typing import Final  # noqa: F401  (fabric.jit.Final is typing.Final, as in PyTorch)


class FunctionModifiers:
    """How the script compiler treats a function (the value of ``fn._torchscript_modifier``)."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from an exported function / forward)"
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


def modifier_of(fn) -> str:
    """The modifier set on ``fn`` by ``ignore``/``unused``/``export`` (DEFAULT if none)."""
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "_torchscript_modifier", FunctionModifiers.DEFAULT)


def ignore(drop=False, **kwargs):
    """Leave a function as a Python call when its caller is scripted.

    ``@ignore`` keeps calling Python (such a module cannot be saved);
    ``@ignore(drop=True)`` behaves like :func:`unused`.

    Example::

        >>> import fabric
        >>> @fabric.jit.ignore
        ... def debug(x):
        ...     return x
        >>> debug(3)
        3
    """
    if callable(drop):
        drop._torchscript_modifier = FunctionModifiers.IGNORE
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        drop = drop_on_export

    def decorator(fn):
        fn._torchscript_modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE
        return fn

    return decorator


def unused(fn):
    """Replace a function by a raise in scripted code (scripts that never reach it still save).

    Example::

        >>> import fabric
        >>> @fabric.jit.unused
        ... def slow_path(x):
        ...     return x + 1
        >>> slow_path(1)
        2
    """
    if isinstance(fn, property):
        fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def export(fn):
    """Compile this method of a scripted module even if ``forward`` does not call it.

    Example::

        >>> import fabric
        >>> class M(fabric.nn.Module):
        ...     @fabric.jit.export
        ...     def double(self, x):
        ...         return x * 2
        >>> M().double(2)
        4
    """
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def is_scripting() -> bool:
    """True inside code compiled by :func:`fabric.jit.script` (the compiler folds the
    call to the constant True), False when Python runs the code.

    Example::

        >>> import fabric
        >>> fabric.jit.is_scripting()
        False
    """
    return False


def annotate(the_type, the_value):
    """Give the script compiler the type of ``the_value``; returns ``the_value``.

    Example::

        >>> import fabric
        >>> from typing import List
        >>> fabric.jit.annotate(List[int], [])
        []
    """
    return the_value


class Attribute(namedtuple("Attribute", ["value", "type"])):
    """``self.x = fabric.jit.Attribute(value, type)`` declares an attribute's type for scripting.
    Outside a ScriptModule it is a plain ``(value, type)`` pair, as in PyTorch.

    Example::

        >>> import fabric
        >>> fabric.jit.Attribute(3, int)
        Attribute(value=3, type=<class 'int'>)
    """

    __slots__ = ()


def jit_isinstance(obj, target_type) -> bool:
    """``fabric.jit.isinstance``: ``isinstance`` that understands ``List[int]``, ``Optional[Tensor]``,
    ``Dict[str, Tensor]`` ... (checks every element, as TorchScript's refinement does).

    Example::

        >>> import fabric
        >>> from typing import List
        >>> fabric.jit.isinstance([1, 2], List[int]), fabric.jit.isinstance([1.5], List[int])
        (True, False)
    """
    from .frontend import parse_annotation

    return parse_annotation(target_type).accepts(obj)


class ScriptWarning(Warning):
    """A warning about scripted code (``torch.jit.ScriptWarning``)."""
