"""The op registry: one declaration per op.

An op is declared once, next to its definition, with :func:`declare`: its
public name, whether PyTorch has it as a Tensor method, its in-place variant,
aliases, and its autocast policy.  From the declarations come the modules'
``__all__`` entries (:func:`public_names`), the Tensor methods and in-place
methods (:func:`tensor_methods`, installed by ``ops/_methods.py``) and the
autocast cast the op's shared entry applies (:func:`autocast_name`, read by
``ops._autocast.cast``).  The declaration also has the (empty) slots that later
work fills per op: a batching rule for ``vmap``, a forward-mode (JVP) rule, an
ONNX lowering and a fusion class.

Example::

    >>> from fabric.ops import _registry
    >>> d = _registry.REGISTRY["exp2"]
    >>> d.method, d.inplace, d.autocast
    ('exp2', 'exp2_', None)
    >>> _registry.REGISTRY["exp"].autocast   # CUDA autocast runs exp in float32
    'exp'
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["OpDecl", "REGISTRY", "declare", "public_names", "tensor_methods"]


@dataclass(eq=False)
class OpDecl:
    """What fabric knows about one op (see the module docstring)."""

    name: str
    function: Callable[..., Any]
    module: str
    method: str | None = None            # Tensor method name (None: no method)
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


def _policy_ops() -> frozenset[str]:
    from ._autocast import POLICIES

    return frozenset(op for table in POLICIES.values() for op in table)


def declare(function: Callable[..., Any], *, name: str | None = None, method: bool = True,
            inplace: Callable[..., Any] | None = None, aliases: tuple[str, ...] = (),
            fusion: str | None = None, autocast: bool = True, vmap: Callable[..., Any] | None = None,
            jvp: Callable[..., Any] | None = None) -> OpDecl:
    """Register ``function`` as the op ``name`` (default: its ``__name__``) and return the declaration.

    ``method``: PyTorch has it as ``Tensor.<name>``; ``inplace``: the function of ``name_`` (always a
    Tensor method when given).  The autocast policy is the one the tables of ``ops/_autocast.py``
    give ``name``; ``autocast=False`` records none, for an op whose entry does not apply it yet.
    ``vmap``: the op's batching rule (see ``fabric/func/_batched.py``); ``jvp``: its forward-mode rule (the
    ``jvp`` of its Function, which ``autograd.forward_ad`` calls on the recorded node).
    """
    name = name or function.__name__
    module = function.__module__
    key = name if module.startswith("fabric.ops.") else f"{module.removeprefix('fabric.')}.{name}"  # special.i0e
    if key in REGISTRY:
        raise RuntimeError(f"op {key!r} is declared twice ({REGISTRY[key].module} and {module})")
    decl = OpDecl(name, function, module, method=name if method else None,
                  inplace=(name + "_") if inplace is not None else None, inplace_function=inplace,
                  aliases=tuple(aliases), autocast=name if autocast and name in _policy_ops() else None, fusion=fusion,
                  vmap=vmap, jvp=jvp)
    REGISTRY[key] = decl
    return decl


def public_names(module: str) -> list[str]:
    """The names the ops declared in ``module`` add to its ``__all__``."""
    out = []
    for d in REGISTRY.values():
        if d.module != module:
            continue
        out.append(d.name)
        if d.inplace:
            out.append(d.inplace)
        for alias in d.aliases:
            out.append(alias)
            if d.inplace:
                out.append(alias + "_")
    return out


def tensor_methods() -> dict[str, Callable[..., Any]]:
    """``{method name: function}`` for every declared op PyTorch has as a Tensor method."""
    out: dict[str, Callable[..., Any]] = {}
    for d in REGISTRY.values():
        names = ((d.name,) + d.aliases) if d.method else ()
        for n in names:
            out[n] = d.function
        if d.inplace_function is not None:
            for n in (d.name,) + d.aliases:
                out[n + "_"] = d.inplace_function
    return out
