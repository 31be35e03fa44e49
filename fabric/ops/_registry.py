"""The op registry: one declaration per op.

An op is declared once, next to its definition, with the :func:`declare_op`
decorator (or :func:`declare`, for ops built from a table): its public name,
whether PyTorch has it as a Tensor method (or only as one: ``top_level=False``),
its in-place variant, aliases, and its autocast policy.  From the declarations
come the modules' ``__all__`` entries (:func:`public_names`), every Tensor
method that is an op (:func:`tensor_methods`, installed by ``ops/_methods.py``;
there is no hand-kept list), ``fabric.ops``' list of Tensor-only methods
(:func:`method_only_names`) and, for an op on autocast's policy lists, its
autocast cast (``ops._autocast.entry``; the op's own code never mentions
autocast).  The declaration also has the (empty) slots that later work fills
per op: a batching rule for ``vmap``, a forward-mode (JVP) rule, an ONNX
lowering and a fusion class.

Example::

    >>> from fabric.ops import _registry
    >>> d = _registry.REGISTRY["exp2"]
    >>> d.method, d.inplace, d.autocast
    ('exp2', 'exp2_', None)
    >>> _registry.REGISTRY["exp"].autocast   # CUDA autocast runs exp in float32
    'exp'
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["OpDecl", "REGISTRY", "declare", "declare_op", "method_only_names", "public_names", "tensor_methods"]


@dataclass(eq=False)
class OpDecl:
    """What fabric knows about one op (see the module docstring)."""

    name: str
    function: Callable[..., Any]
    module: str
    method: str | None = None            # Tensor method name (None: no method)
    method_function: Callable[..., Any] | None = None  # the method when it is not ``function`` (argument order)
    top_level: bool = True               # False: a Tensor method only (PyTorch has no torch.<name>)
    inplace: str | None = None           # in-place variant's name (a method too)
    inplace_function: Callable[..., Any] | None = None
    aliases: tuple[str, ...] = ()        # other public names of the same function (and in-place variant)
    autocast: str | None = None          # the op's name in amp's policy tables; None: autocast never casts it
    # Slots for the functional-transform, export and fusion work (filled per op; None: not yet written).
    vmap: Callable[..., Any] | None = None       # batching rule
    jvp: Callable[..., Any] | None = None        # forward-mode derivative
    onnx: Callable[..., Any] | None = None       # ONNX lowering
    fusion: str | None = None                    # fusion class, e.g. "elementwise", "reduction"


REGISTRY: dict[str, OpDecl] = {}  # keyed by the name under ``fabric`` ("exp", "special.erfcx")


@functools.cache
def _policy_ops() -> frozenset[str]:
    from ._autocast import POLICIES

    return frozenset(op for table in POLICIES.values() for op in table)


def _key(name: str, module: str) -> str:
    """The op's name under ``fabric``: ``exp``, ``special.erfcx``, ``nn.functional.linear`` (private parts skipped)."""
    if module.startswith("fabric.ops.") or module == "fabric.ops":
        return name
    space = ".".join(p for p in module.removeprefix("fabric.").split(".") if not p.startswith("_"))
    return f"{space}.{name}" if space else name


def declare(function: Callable[..., Any], *, name: str | None = None, method: bool | Callable[..., Any] = True,
            inplace: Callable[..., Any] | None = None, aliases: tuple[str, ...] = (),
            fusion: str | None = None, autocast: bool | str = True, namespace: str | None = None,
            top_level: bool = True, vmap: Callable[..., Any] | None = None,
            jvp: Callable[..., Any] | None = None) -> OpDecl:
    """Register ``function`` as the op ``name`` (default: its ``__name__``) and return the declaration.

    ``method``: PyTorch has it as ``Tensor.<name>`` (a function: the method, where its arguments are in
    another order than the function's, as ``Tensor.where(condition, y)``); ``inplace``: the function of
    ``name_`` (always a Tensor method when given).  The autocast policy is the one the tables of
    ``ops/_autocast.py`` give ``name`` (or the table name ``autocast`` when it is a string:
    ``"linalg_vecdot"``); ``autocast=False`` records none.  When a policy applies, ``declaration.function``
    is the op with its autocast entry (``ops._autocast.entry``), which the caller binds as the public
    function.  ``namespace``: where the op is public under ``fabric`` ("" for ``fabric.<name>``, "special"
    ...) when that is not what its module's path says.  ``top_level=False``: a Tensor method only, as
    ``Tensor.cumsum_`` (PyTorch has no ``torch.cumsum_``): ``fabric.ops`` keeps it out of its ``__all__``.
    ``vmap``: the op's batching rule (see ``fabric/func/_batched.py``); ``jvp``: its forward-mode rule (the
    ``jvp`` of its Function, which ``autograd.forward_ad`` calls on the recorded node).
    """
    name = name or function.__name__
    module = function.__module__
    key = _key(name, module) if namespace is None else f"{namespace}.{name}".lstrip(".")
    if key in REGISTRY:
        raise RuntimeError(f"op {key!r} is declared twice ({REGISTRY[key].module} and {module})")
    policy = autocast if isinstance(autocast, str) else name if autocast else None
    if policy is not None and policy not in _policy_ops():
        if isinstance(autocast, str):
            raise ValueError(f"declare({name!r}): {autocast!r} is on no autocast list")
        policy = None
    if policy is not None:
        from ._autocast import entry

        function = entry(function, policy)
    decl = OpDecl(name, function, module, method=name if method else None,
                  method_function=method if callable(method) else None,
                  inplace=(name + "_") if inplace is not None else None, inplace_function=inplace,
                  aliases=tuple(aliases), autocast=policy, fusion=fusion, top_level=top_level, vmap=vmap, jvp=jvp)
    REGISTRY[key] = decl
    return decl


def declare_op(*, name: str | None = None, method: bool | Callable[..., Any] = True,
               inplace: Callable[..., Any] | None = None, aliases: tuple[str, ...] = (), fusion: str | None = None,
               autocast: bool | str = True, namespace: str | None = None, top_level: bool = True,
               vmap: Callable[..., Any] | None = None, jvp: Callable[..., Any] | None = None
               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """:func:`declare` as a decorator: the decorated name is bound to the declared function.

    Example::

        >>> from fabric.ops._registry import REGISTRY, declare_op
        >>> @declare_op(name="example_double", method=False)
        ... def double(input):
        ...     return input * 2
        >>> REGISTRY["example_double"].function is double
        True
        >>> del REGISTRY["example_double"]
    """
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        return declare(function, name=name, method=method, inplace=inplace, aliases=aliases, fusion=fusion,
                       autocast=autocast, namespace=namespace, top_level=top_level, vmap=vmap, jvp=jvp).function

    return decorate


def public_names(module: str) -> list[str]:
    """The names the ops declared in ``module`` add to its ``__all__`` (not those public in another namespace,
    such as ``fabric.linalg.inv``, whose module keeps its own name for them)."""
    out = []
    for key, d in REGISTRY.items():
        if d.module != module or key != d.name:
            continue
        out.append(d.name)
        if d.inplace:
            out.append(d.inplace)
        for alias in d.aliases:
            out.append(alias)
            if d.inplace:
                out.append(alias + "_")
    return out


def method_only_names() -> frozenset[str]:
    """The declared ops that are Tensor methods only (``top_level=False``)."""
    return frozenset(d.name for d in REGISTRY.values() if not d.top_level)


def tensor_methods() -> dict[str, Callable[..., Any]]:
    """``{method name: function}`` for every declared op PyTorch has as a Tensor method."""
    out: dict[str, Callable[..., Any]] = {}
    for d in REGISTRY.values():
        names = ((d.name,) + d.aliases) if d.method else ()
        for n in names:
            out[n] = d.method_function or d.function
        if d.inplace_function is not None:
            for n in (d.name,) + d.aliases:
                out[n + "_"] = d.inplace_function
    return out
