"""``fabric.fx.Node``: one operation in a :class:`~fabric.fx.Graph`.

Example::

    >>> from fabric import fx
    >>> g = fx.Graph()
    >>> x = g.placeholder("x")
    >>> y = g.call_method("relu", (x,))
    >>> _ = g.output(y)
    >>> list(x.users), y.args
    ([relu], (x,))
"""
from __future__ import annotations

import builtins
import operator
import types
from collections.abc import Callable
from typing import Any

__all__ = ["Node", "map_arg", "map_aggregate", "Argument"]

Argument = Any
_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")


def _qualified_name(fn) -> str:
    """``fabric.relu``, ``operator.add``, ``fabric.nn.functional.linear`` ..."""
    if getattr(fn, "__module__", None) == "_operator" or fn in _OPERATOR_FUNCS:
        return f"operator.{fn.__name__}"
    if isinstance(fn, types.BuiltinFunctionType) and getattr(builtins, fn.__name__, None) is fn:
        return f"builtins.{fn.__name__}"
    from ._patch import public_name
    public = public_name(fn)
    if public:
        return public
    mod = getattr(fn, "__module__", None) or "__main__"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    return f"{mod}.{name}"


_OPERATOR_FUNCS = {getattr(operator, n) for n in dir(operator) if not n.startswith("_")}


def _format_target(target) -> str:
    return target if isinstance(target, str) else _qualified_name(target)


class Node:
    """A node: ``op``, ``target``, ``args``, ``kwargs``, ``name``, ``users``, ``meta``."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict, return_type=None):
        if op not in _OPS:
            raise ValueError(f"unknown node op {op!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is required")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict = {}
        self._update_args_kwargs(map_arg(args, lambda n: n), map_arg(kwargs, lambda n: n))

    # --- linked list --------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move ``x`` right before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Move ``x`` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # --- arguments ------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a) -> None:
        self._update_args_kwargs(map_arg(a, lambda n: n), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k) -> None:
        self._update_args_kwargs(self._args, map_arg(k, lambda n: n))

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs = tuple(new_args), dict(new_kwargs)
        self._input_nodes = {}
        map_arg(self._args, self._input_nodes.setdefault)
        map_arg(self._kwargs, self._input_nodes.setdefault)
        for n in self._input_nodes:
            n.users.setdefault(self)

    def update_arg(self, idx: int, arg) -> None:
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg) -> None:
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Make this node read ``new_input`` wherever it read ``old_input``."""
        def swap(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable = lambda user: True, *,
                              propagate_meta: bool = False) -> list[Node]:
        """Every user of this node reads ``replace_with`` instead; returns the changed users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    @property
    def stack_trace(self) -> str | None:
        """Where the traced code made this node (set when ``Tracer.record_stack_traces`` is True)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # --- printing -----------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def _pretty_print_target(self) -> str:
        return _format_target(self.target)

    def format_node(self) -> str:
        """One line of ``print(graph)``: ``%name : [num_users=N] = op[target=...](args = ..., kwargs = ...)``."""
        if self.op == "placeholder":
            default = f"(default={self.args[0]!r})" if self.args else ""
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : [num_users={len(self.users)}] = get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]!r}"
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self._pretty_print_target()}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def is_impure(self) -> bool:
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return bool(getattr(self.target, "_fx_impure", False))
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__")
        return self.op == "call_module"


def _format_arg(arg) -> str:
    if isinstance(arg, Node):
        return f"%{arg.name}"
    if isinstance(arg, tuple):
        inner = ", ".join(_format_arg(a) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, str):
        return arg
    return repr(arg) if not callable(arg) else _format_target(arg)


def map_aggregate(a, fn: Callable):
    """Apply ``fn`` to every leaf of a nested tuple/list/dict/slice structure."""
    t = type(a)
    if t is tuple or (isinstance(a, tuple) and not hasattr(a, "_fields")):
        return tuple(map_aggregate(e, fn) for e in a)
    if isinstance(a, tuple):  # namedtuple
        return t(*(map_aggregate(e, fn) for e in a))
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn: Callable):
    """Apply ``fn`` to every :class:`Node` inside the nested argument ``a``.

    Example::

        >>> from fabric import fx
        >>> g = fx.Graph(); x = g.placeholder("x")
        >>> fx.map_arg((x, [1, x]), lambda n: n.name)
        ('x', [1, 'x'])
    """
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)
