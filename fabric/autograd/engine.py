"""The reverse-mode engine: runs the recorded graph backwards.

Nodes run in dependency order (a node runs once every consumer of its
outputs has contributed); among ready nodes the most recently created runs
first, as in PyTorch.  Iterative throughout: no recursion limit.
"""
from __future__ import annotations

import heapq
import itertools
import warnings
from typing import Any

from .function import _FREED, AccumulateGrad, _edge
from .grad_mode import any_thread as _any_thread
from .grad_mode import state as _state
from .observe import hook as _hook

Tensor: Any = None  # set by fabric._tensor


class _GraphTask:
    """The backward pass now running (for ``autograd.graph.register_multi_grad_hook``):
    ``current`` is ``(id, nodes reached, nodes needed or None, whether it is a plain
    backward() without inputs=)`` or None (reentrant checkpoint needs the last)."""

    current: Any = None
    ids = itertools.count()


def will_execute(node) -> bool:
    """Whether the running backward pass will run ``node``."""
    task = _GraphTask.current
    if task is None:
        return False
    return node in task[1] and (task[2] is None or node in task[2])


def _set_tensor_class(cls):
    global Tensor
    Tensor = cls


def _root_edge(t):
    if t.grad_fn is not None:
        return _edge(t)
    if not t._requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    return (t._grad_accumulator_node(), 0)


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, capture=False,
                 allow_unused=False):
    """Backpropagate from ``tensors`` seeded with ``grad_tensors``.

    With ``capture`` (``autograd.grad``) returns the gradients of ``inputs``
    and leaves every ``.grad`` untouched; otherwise accumulates into leaves
    (only those in ``inputs`` when given).
    """
    roots = []
    for i, t in enumerate(tensors):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(_root_edge(t))

    # Dependency counts over the reachable graph (iterative DFS).
    deps = {}
    stack = list(dict.fromkeys(fn for fn, _ in roots))  # several roots may share a node
    seen = set(stack)
    get = deps.get
    while stack:
        node = stack.pop()
        for e in node._edges:
            if e is not None:
                nxt = e[0]
                deps[nxt] = get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)

    capture_at = None   # (node, output_nr) -> input position
    if inputs is not None:
        capture_at = {}
        for i, t in enumerate(inputs):
            if t.__class__ is not Tensor and isinstance(t, tuple):  # an autograd.graph.GradientEdge
                key = (t[0], t[1])
            elif t.grad_fn is not None:
                key = _edge(t)
            elif t._requires_grad:
                key = (t._grad_accumulator_node(), 0)
            else:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture_at.setdefault(key, []).append(i)
        needed = _needed_nodes(seen, deps, {k[0] for k in capture_at})
    else:
        needed = None
    results = [None] * (len(inputs) if inputs is not None else 0)

    # Seed the buffers; a virtual root feeds the real ones.
    buffers = {}
    for (fn, nr), g in zip(roots, grad_tensors):
        buf = buffers.get(fn)
        if buf is None:
            buf = buffers[fn] = [None] * _n_outputs(fn)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    ready = []
    for fn, _ in roots:
        if deps.get(fn, 0) == 0 and fn in buffers and not any(fn is r[1] for r in ready):
            heapq.heappush(ready, (-fn._seq, fn))

    prev_mode = _state.enabled
    _state.enabled = create_graph
    prev_task = _GraphTask.current
    _GraphTask.current = (next(_GraphTask.ids), seen, needed, not capture and inputs is None)
    pop, push = heapq.heappop, heapq.heappush
    buffers_get = buffers.get
    try:
        while ready:
            node = pop(ready)[1]
            grads = buffers.pop(node, None)
            if grads is None:
                grads = [None] * _n_outputs(node)
            if needed is not None and node not in needed:
                _release_edges(node, deps, ready, retain_graph)
                continue
            if node._pre_hooks:
                grads = _run_pre_hooks(node, grads)
            if capture_at is not None:
                for k, g in enumerate(grads):
                    pos = capture_at.get((node, k))
                    if pos is not None:
                        for p in pos:
                            results[p] = g if results[p] is None or g is None else results[p] + g
            if node.__class__ is AccumulateGrad:
                if not capture and (capture_at is None or (node, 0) in capture_at):
                    if _hook.observer is None:
                        _accumulate(node.variable, grads[0], create_graph)
                    else:  # profiler / trace_ops see the leaf's node too
                        _hook.observer.run("backward", node, grads, _accumulate, node.variable, grads[0], create_graph)
                continue
            if (grads[0] is None if len(grads) == 1 else all(g is None for g in grads)):
                _release_edges(node, deps, ready, retain_graph)
                continue
            in_grads = _call_node(node, grads)
            if not retain_graph and node._saved is not None:
                node._saved = _FREED
            for e, g in zip(node._edges, in_grads):
                if e is None:
                    continue
                nxt = e[0]
                if g is not None:
                    buf = buffers_get(nxt)
                    if buf is None:
                        meta = nxt._output_meta
                        if meta is None:
                            buffers[nxt] = [g]
                        else:
                            buf = buffers[nxt] = [None] * len(meta)
                            buf[e[1]] = g
                    else:
                        nr = e[1]
                        old = buf[nr]
                        buf[nr] = g if old is None else old + g
                left = deps[nxt] - 1
                if left == 0:
                    del deps[nxt]
                    push(ready, (-nxt._seq, nxt))
                else:
                    deps[nxt] = left
    finally:
        _state.enabled = prev_mode
        _GraphTask.current = prev_task

    if not capture and inputs is not None:
        for t, r in zip(inputs, results):  # non-leaf inputs of backward(inputs=...) keep their grad
            if isinstance(t, Tensor) and t.grad_fn is not None and r is not None:
                _accumulate(t, r, create_graph)
    if capture:
        for r in results:
            if r is None and not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior.")
        return results
    return None


def _release_edges(node, deps, ready, retain_graph):
    if not retain_graph and node._saved is not None:
        node._saved = _FREED
    for e in node._edges:
        if e is None:
            continue
        nxt = e[0]
        left = deps[nxt] - 1
        deps[nxt] = left
        if left == 0:
            heapq.heappush(ready, (-nxt._seq, nxt))


def _needed_nodes(order, deps, targets):
    """Nodes from which some target is reachable (only those must run)."""
    indeg = dict(deps)
    topo = []
    stack = [n for n in order if indeg.get(n, 0) == 0]
    while stack:
        n = stack.pop()
        topo.append(n)
        for e in n._edges:
            if e is not None:
                indeg[e[0]] -= 1
                if indeg[e[0]] == 0:
                    stack.append(e[0])
    needed = set()
    for n in reversed(topo):
        if n in targets or any(e is not None and e[0] in needed for e in n._edges):
            needed.add(n)
    return needed


def _n_outputs(node):
    meta = node._output_meta
    return 1 if meta is None else len(meta)


def _run_pre_hooks(node, grads):
    grads = list(grads)
    for nr, fn in list(node._pre_hooks.values()):
        if nr is None:  # node pre-hook: sees all output grads
            res = fn(tuple(grads))
            if res is not None:
                grads = list(res)
        elif grads[nr] is not None:
            res = fn(grads[nr])
            if res is not None:
                grads[nr] = res
    return grads


def _call_node(node, grads):
    """Run one node's backward and fix up its results centrally: undo
    broadcasting, cast to each input's dtype, run node hooks, check anomalies."""
    if _hook.observer is not None and _hook.observer.claim():  # profiler / trace_ops (autograd/observe.py)
        return _hook.observer.call("backward", node, grads, _call_node, node, grads)
    meta = node._output_meta
    if meta is not None and node.materialize_grads:
        ref = next(g for g in grads if g is not None)
        grads = [g if g is not None or m is None else _zeros(ref, m) for g, m in zip(grads, meta)]
    if node._conj_wrap and _has_complex(grads):
        out = _conj_backward(node, grads)
    else:
        out = node._fn.backward(node, *grads)
    if out.__class__ is not tuple:
        out = (out,) if not isinstance(out, list) else tuple(out)
    edges = node._edges
    if len(out) != len(edges):
        if len(out) > len(edges) and all(g is None for g in out[len(edges):]):
            out = out[:len(edges)]
        else:
            raise RuntimeError(f"function {type(node).__name__} returned an incorrect number of gradients "
                               f"(expected {len(edges)}, got {len(out)})")
    input_meta = node._input_meta
    if input_meta is None and not node._hooks and not (_any_thread.anomaly and _state.anomaly):
        return out  # a fast-path node: grads already have their inputs' shapes and dtypes
    fixed = list(out)
    for i, g in enumerate(out):
        if g is None:
            continue
        if edges[i] is None:
            fixed[i] = None
            continue
        gd = g._data if isinstance(g, Tensor) else _not_a_tensor(node, i, g)
        if input_meta is None:
            continue
        shape, dt = input_meta[i]
        if gd.shape != shape:
            g = _sum_to(g, shape, node, i)
        if gd.dtype != dt:
            if gd.dtype.kind == "c" and dt.kind != "c":
                g = g.real  # a real input's gradient is the real part (PyTorch's handle_r_to_c)
            if g._data.dtype != dt:
                g = g.to(_dtype_of(dt))
        fixed[i] = g
    if node._hooks:
        for hook in list(node._hooks.values()):
            res = hook(tuple(fixed), tuple(grads))
            if res is not None:
                fixed = list(res)
    if _state.anomaly and _state.anomaly_check_nan:
        _check_anomaly(node, fixed)
    return fixed


def _has_complex(grads):
    return any(g is not None and g._data.dtype.kind == "c" for g in grads)


def _conj_backward(node, grads):
    """PyTorch's gradient for a holomorphic op ``y = f(z)`` is ``gy * conj(f'(z))``:
    the op's real formula ``gy * f'(z)`` run on ``conj(gy)``, then conjugated."""
    out = node._fn.backward(node, *[None if g is None else g.conj() for g in grads])
    if out.__class__ is not tuple:
        out = (out,) if not isinstance(out, list) else tuple(out)
    return tuple(g.conj() if isinstance(g, Tensor) else g for g in out)


def _not_a_tensor(node, i, g):
    raise TypeError(f"function {type(node).__name__} returned a gradient of type {type(g).__name__} at index {i}; "
                    "expected a Tensor or None")


def _sum_to(g, shape, node, i):
    gshape = g._data.shape
    lead = len(gshape) - len(shape)
    ok = lead >= 0 and all(s == 1 or s == gs for s, gs in zip(shape, gshape[lead:]))
    if not ok:
        if g._data.size == _prod(shape):
            return g.reshape(shape)
        raise RuntimeError(f"Function {type(node).__name__} returned an invalid gradient at index {i} - got "
                           f"{list(gshape)} but expected shape compatible with {list(shape)}")
    dims = tuple(range(lead)) + tuple(lead + k for k, s in enumerate(shape) if s == 1 and gshape[lead + k] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    if lead:
        g = g.reshape(shape)
    return g


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _zeros(ref, meta):
    from ..backends import backend_of

    shape, dt = meta
    return Tensor._make(backend_of(ref._data).xp.zeros(shape, dt), False)


def _dtype_of(np_dtype):
    from .._dtype import from_numpy_dtype

    return from_numpy_dtype(np_dtype)


def _accumulate(var, g, create_graph):
    if g is None or var is None:  # var None: the leaf is gone, nobody can read its grad
        return
    hooks = var._hooks_dict()
    if hooks:
        for fn in list(hooks.values()):
            res = fn(g)
            if res is not None:
                g = res
    if var._grad is None:
        if create_graph or g.is_sparse:  # a sparse gradient (fabric/sparse) is stored as it comes
            var._grad = g
        else:
            gd = g._data
            if g._base is not None or g.grad_fn is not None or not gd.flags.owndata:
                gd = gd.copy()
            var._grad = Tensor._make(gd, False)
    elif g.is_sparse and not var._grad.is_sparse:
        var._grad = g + var._grad  # sparse + dense is dense
    elif create_graph or var._grad._requires_grad or var._grad.is_sparse:
        var._grad = var._grad + g
    else:
        var._grad._data += g._data
        var._grad._bump_version()
    post = var._post_accumulate_hooks()
    if post:
        for fn in list(post.values()):
            fn(var)


def _check_anomaly(node, grads):
    from ..backends import backend_of

    for i, g in enumerate(grads):
        if g is None or g._data.dtype.kind not in "fc":
            continue
        xp = backend_of(g._data).xp
        if not bool(xp.isfinite(g._data).all()):
            if node._trace:
                warnings.warn("Error detected in " + type(node).__name__ + ". Traceback of forward call "
                              "that caused the error:\n" + "".join(node._trace), stacklevel=2)
            bad = "nan" if bool(xp.isnan(g._data).any()) else "inf"
            raise RuntimeError(f"Function '{type(node).__name__}' returned {bad} values in its {i}th output.")
