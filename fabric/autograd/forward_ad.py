"""Forward-mode AD, as in ``torch.autograd.forward_ad``: dual tensors.

How tangents are computed here: by the double-vjp construction on the
reverse-mode graph, for every op at once.  ``make_dual`` returns a
differentiable alias of the primal (so ops on it record the usual graph) and
remembers its tangent; ``unpack_dual(y)`` computes ``J t`` as the vjp, at the
tangents ``t``, of ``u -> J^T u`` (itself a vjp with a dummy cotangent
``u``).  This is exact for every op whose backward is differentiable in its
incoming gradient, which every built-in backward is (they are written with
Tensor ops); no per-op JVP rule is needed, and the registry's ``jvp`` slots
stay empty.  Costs and differences from PyTorch:

* each ``unpack_dual`` of a non-dual tensor runs two backward passes over
  the graph between the duals and that tensor;
* dual tensors report ``requires_grad=True`` and ops on them must run with
  grad mode enabled (under ``no_grad`` no graph is recorded and the tangent
  is ``None``);
* a custom ``autograd.Function``'s ``jvp`` is not called: its ``backward``
  (which must be differentiable) gives the tangent.

Example::

    >>> import fabric
    >>> import fabric.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(fabric.tensor([1.0, 2.0]), fabric.tensor([1.0, 0.0]))
    ...     y = x * x.sum()
    ...     fwAD.unpack_dual(y).tangent
    tensor([4., 2.])
"""
from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_levels: list = []   # one dict per open level: id(dual) -> (dual, tangent)


def enter_dual_level() -> int:
    """Open a new forward AD level and return its index."""
    _levels.append({})
    return len(_levels) - 1


def exit_dual_level(*, level=None) -> None:
    """Close the innermost level (``level``, when given, must be it); its
    dual tensors lose their tangents."""
    if level is None:
        level = len(_levels) - 1
    if level != len(_levels) - 1 or level < 0:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _levels.pop().clear()


class dual_level:
    """Context manager for forward AD: ``with dual_level(): ...``."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _level(level):
    if level is None:
        level = len(_levels) - 1
    if level < 0 or level >= len(_levels):
        return None
    return _levels[level]


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor with value ``tensor`` and tangent ``tangent`` (same shape).

    Example::

        >>> import fabric
        >>> import fabric.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     y = fwAD.make_dual(fabric.tensor(0.5), fabric.tensor(2.0)).exp()
        ...     round(fwAD.unpack_dual(y).tangent.item(), 4)
        3.2974
    """
    from .grad_mode import enable_grad

    duals = _level(level)
    if duals is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tensor.shape != tangent.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    with enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else tensor.detach().requires_grad_(True)
    duals[id(dual)] = (dual, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """``(primal, tangent)`` from :func:`unpack_dual`."""

    primal: Any
    tangent: Any


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level``; the tangent is None
    when no dual tensor of the level influenced ``tensor``."""
    from . import grad as _grad
    from .grad_mode import enable_grad

    duals = _level(level)
    if duals is None or not tensor.requires_grad or not (tensor.is_floating_point() or tensor.is_complex()):
        return UnpackedDualTensor(tensor, None)
    own = duals.get(id(tensor))
    if own is not None and own[0] is tensor:
        return UnpackedDualTensor(tensor, own[1])
    entries = list(duals.values())
    if not entries:
        return UnpackedDualTensor(tensor, None)
    with enable_grad():
        u = tensor.detach().new_ones(tensor.shape).requires_grad_(True)  # any point: J^T u is linear in u; ones avoid
        # the kinks some backwards have at a zero gradient (a sign split, logcumsumexp)
        gs = _grad([tensor], [d for d, _ in entries], [u], retain_graph=True, create_graph=True, allow_unused=True)
        live = [(g, t) for g, (_, t) in zip(gs, entries) if g is not None and g.requires_grad]
        if not live:
            if any(g is not None for g in gs):  # connected, with a vjp that does not depend on u: a zero JVP
                return UnpackedDualTensor(tensor, tensor.detach().new_zeros(tensor.shape))
            return UnpackedDualTensor(tensor, None)
        create = any(t.requires_grad for _, t in live)
        (jv,) = _grad([g for g, _ in live], [u], [t for _, t in live], retain_graph=True, create_graph=create,
                      allow_unused=True)
    if jv is None:
        jv = tensor.detach().new_zeros(tensor.shape)
    return UnpackedDualTensor(tensor, jv)
