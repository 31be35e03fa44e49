"""Higher-order control-flow ops: how the graph IR represents ``if`` and loops.

A graph holds control flow as a ``call_function`` node whose target is one of
these functions; its branch/body functions are sub-``GraphModule``s read by
``get_attr`` nodes (as ``torch.export`` represents ``torch.cond``).  Called on
tensors they simply run, so generated code that contains them is plain Python.
Branches and bodies take every value they need as arguments and return tuples.

Example::

    >>> import fabric
    >>> from fabric.fx.control_flow import cond, while_loop, range_loop
    >>> cond(fabric.tensor(True), lambda x: (x + 1,), lambda x: (x - 1,), (fabric.tensor(1.0),))
    (tensor(2.),)
    >>> while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2), (0, fabric.tensor(1.0)))
    (3, tensor(8.))
    >>> range_loop(0, 4, 1, lambda i, acc: (acc + i,), (fabric.tensor(0),))
    (tensor(6),)
"""
from __future__ import annotations

__all__ = ["cond", "while_loop", "range_loop"]


def _as_bool(pred) -> bool:
    from .._tensor import Tensor
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"cond: the predicate must have exactly one element, got shape {tuple(pred.shape)}")
        return bool(pred.item())
    return bool(pred)


def _as_tuple(out, what: str) -> tuple:
    if isinstance(out, tuple):
        return out
    if isinstance(out, list):
        return tuple(out)
    raise TypeError(f"{what} must return a tuple, got {type(out).__name__}")


def _recording(args):
    """The proxy among ``args`` when called while tracing (the op then becomes one graph node)."""
    from ._patch import find_proxy
    return find_proxy(args, {})


def cond(pred, true_fn, false_fn, operands: tuple):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``; both return tuples of one structure."""
    p = _recording((pred, tuple(operands)))
    if p is not None:
        return p.tracer.create_proxy("call_function", cond, (pred, true_fn, false_fn, tuple(operands)), {})
    fn = true_fn if _as_bool(pred) else false_fn
    return _as_tuple(fn(*operands), "cond branch")


def while_loop(cond_fn, body_fn, carried: tuple):
    """``while cond_fn(*c): c = body_fn(*c)``; returns ``c``."""
    carried = tuple(carried)
    p = _recording((carried,))
    if p is not None:
        return p.tracer.create_proxy("call_function", while_loop, (cond_fn, body_fn, carried), {})
    while _as_bool(cond_fn(*carried)):
        new = _as_tuple(body_fn(*carried), "while_loop body")
        if len(new) != len(carried):
            raise RuntimeError(f"while_loop body returned {len(new)} values for {len(carried)} loop-carried values")
        carried = new
    return carried


def range_loop(start, stop, step, body_fn, carried: tuple):
    """``for i in range(start, stop, step): c = body_fn(i, *c)``; returns ``c``."""
    carried = tuple(carried)
    p = _recording((start, stop, step, carried))
    if p is not None:
        return p.tracer.create_proxy("call_function", range_loop, (start, stop, step, body_fn, carried), {})
    for i in range(int(start), int(stop), int(step)):
        new = _as_tuple(body_fn(i, *carried), "range_loop body")
        if len(new) != len(carried):
            raise RuntimeError(f"range_loop body returned {len(new)} values for {len(carried)} loop-carried values")
        carried = new
    return carried


for _f in (cond, while_loop, range_loop):
    _f._fx_no_wrap = True
