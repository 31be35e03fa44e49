"""Define-by-run automatic differentiation.

Example::

    >>> import fabric
    >>> x = fabric.tensor(2.0, requires_grad=True)
    >>> (g,) = fabric.autograd.grad(x ** 3, x, create_graph=True)
    >>> fabric.autograd.grad(g, x)[0]
    tensor(12.)
"""
from __future__ import annotations

from . import forward_ad, functional, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx, InplaceFunction, Node, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["backward", "grad", "Function", "FunctionCtx", "Node", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "gradcheck", "gradgradcheck", "detect_anomaly",
           "set_detect_anomaly", "functional", "graph", "forward_ad", "InplaceFunction", "Variable"]


def _as_tuple(x):
    if x is None:
        return None
    from .._tensor import Tensor

    if isinstance(x, (Tensor, graph.GradientEdge)):
        return (x,)
    return tuple(x)


def _seed_grads(outputs, grad_outputs, create_graph):
    from .._tensor import Tensor

    grads = []
    for i, t in enumerate(outputs):
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._data.dtype.kind != "f":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            g = Tensor._make(_ones_like(t._data), False)
        elif not isinstance(g, Tensor):
            g = Tensor._make(_ones_like(t._data) * g, False)
        else:
            if g._data.shape != t._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                                   f"has a shape of {t.shape}.")
            if (g._data.dtype.kind == "c") != (t._data.dtype.kind == "c"):
                raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                                   f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and "
                                   f"output[{i}] has a dtype of {t.dtype}.")
            if g.device != t.device:
                raise RuntimeError(f"invalid gradient at index {i} - expected device {t.device} but got {g.device}")
        grads.append(g)
    return grads


def _ones_like(a):
    from ..backends import backend_of

    return backend_of(a).xp.ones_like(a)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad``."""
    from .engine import run_backward

    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grad_tensors = _as_tuple(grad_tensors)
    if grad_tensors is not None and len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} tensors and {len(tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    grads = _seed_grads(tensors, grad_tensors, create_graph)
    run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, capture=False)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` w.r.t. ``inputs`` (a tuple), leaving ``.grad`` untouched."""
    from .engine import run_backward

    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if grad_outputs is not None and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grad_outputs)} entries but outputs has {len(outputs)}")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    for _i, t in enumerate(inputs):
        if isinstance(t, graph.GradientEdge):
            continue
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    keep = [i for i, t in enumerate(outputs) if t._requires_grad]
    if not keep:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    grads = _seed_grads(outputs, grad_outputs, create_graph)
    res = run_backward([outputs[i] for i in keep], [grads[i] for i in keep], retain_graph, create_graph,
                       inputs=inputs, capture=True, allow_unused=allow_unused)
    if materialize_grads:
        from .._tensor import Tensor

        res = [r if r is not None or isinstance(t, graph.GradientEdge) else Tensor._make(_zeros_like(t._data), False)
               for r, t in zip(res, inputs)]
    return tuple(res)


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad(is_grads_batched=True)``: the first dimension of every grad_output
    is a batch; one backward pass per batch entry (PyTorch vectorizes this
    with vmap; the results are the same), stacked."""
    from .._tensor import Tensor
    from ..ops.join import stack

    outputs = _as_tuple(outputs) or ()
    grad_outputs = _as_tuple(grad_outputs)
    if grad_outputs is None or not all(isinstance(g, Tensor) for g in grad_outputs):
        raise RuntimeError("If `is_grads_batched=True`, grad_outputs must be a Tensor or a sequence of Tensors")
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grad_outputs)} entries but outputs has {len(outputs)}")
    for i, (g, o) in enumerate(zip(grad_outputs, outputs)):
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of "
                f"corresponding output, but a mismatch was detected: grad_output[{i}] has a shape of {g.shape} "
                f"and output[{i}] has a shape of {o.shape}. If you only want some tensors in `grad_output` to be "
                "considered batched, consider using vmap.")
    sizes = {g.shape[0] for g in grad_outputs}
    if len(sizes) != 1:
        raise RuntimeError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                           f"{[g.shape[0] for g in grad_outputs]} for the mapped dimension")
    n = sizes.pop()
    keep = retain_graph if retain_graph is not None else create_graph
    per = [grad(outputs, inputs, [g[b] for g in grad_outputs], retain_graph=True if b < n - 1 else keep,
                create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
           for b in range(n)]
    n_in = len(_as_tuple(inputs))
    return tuple(None if per[0][k] is None else stack([p[k] for p in per]) for k in range(n_in))


def _zeros_like(a):
    from ..backends import backend_of

    return backend_of(a).xp.zeros_like(a)


def __getattr__(name):
    # fabric.autograd.profiler sits above Tensor (it builds on fabric.profiler): imported on first use
    if name == "profiler":
        import importlib

        return importlib.import_module(".profiler", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
