"""Flatten nested tuples, lists and dicts of values into leaves and back (what
the transforms accept as inputs and outputs)."""
from __future__ import annotations

from typing import Any


def tree_flatten(tree) -> tuple[list, Any]:
    """``(leaves, spec)``: ``tree_unflatten(leaves, spec)`` rebuilds ``tree``."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        return (type(tree), [_flatten(t, leaves) for t in tree])
    if hasattr(tree, "_fields") and isinstance(tree, tuple):  # namedtuple
        return (type(tree), [_flatten(t, leaves) for t in tree])
    if isinstance(tree, dict):
        return (dict, [(k, _flatten(v, leaves)) for k, v in tree.items()])
    leaves.append(tree)
    return None


def tree_unflatten(leaves, spec):
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it, spec):
    if spec is None:
        return next(it)
    kind, children = spec
    if kind is dict:
        return {k: _unflatten(it, c) for k, c in children}
    items = [_unflatten(it, c) for c in children]
    if kind in (tuple, list):
        return kind(items)
    return kind(*items)  # namedtuple


def broadcast_prefix(prefix, tree, what: str) -> list:
    """One entry of ``prefix`` per leaf of ``tree``: a leaf of ``prefix`` (an
    int or None) applies to the whole subtree it stands for."""
    out: list = []
    _broadcast(prefix, tree, out, what)
    return out


def _broadcast(prefix, tree, out, what):
    if prefix is None or isinstance(prefix, int):
        n = len(tree_flatten(tree)[0])
        out.extend([prefix] * n)
        return
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)) and len(prefix) == len(tree):
        for p, t in zip(prefix, tree):
            _broadcast(p, t, out, what)
        return
    if isinstance(prefix, dict) and isinstance(tree, dict) and set(prefix) == set(tree):
        for k in tree:
            _broadcast(prefix[k], tree[k], out, what)
        return
    raise ValueError(f"vmap({what}): the structure of {what} does not match the structure of its inputs: "
                     f"{what} is {prefix!r}")
