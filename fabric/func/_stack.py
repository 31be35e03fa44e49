"""``stack_module_state``: the parameters and buffers of identical models stacked for ensembling."""
from __future__ import annotations

__all__ = ["stack_module_state"]


def stack_module_state(models):
    """``(params, buffers)``: dicts of each name's tensors of ``models``
    stacked along a new leading dimension; stacked parameters are new leaves
    that require grad when the originals do.

    Example::

        >>> import fabric
        >>> ms = [fabric.nn.Linear(3, 2) for _ in range(4)]
        >>> params, buffers = fabric.func.stack_module_state(ms)
        >>> params["weight"].shape, params["weight"].requires_grad
        (fabric.Size([4, 2, 3]), True)
    """
    from .. import stack

    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    model0_typ = type(models[0])
    if not all(type(m) is model0_typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def leaf(tensors, name):
        req = {t.requires_grad for t in tensors}
        if len(req) != 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        out = stack([t.detach() for t in tensors])
        if req.pop():
            out.requires_grad_()
        return out

    params = {k: leaf([dict(m.named_parameters())[k] for m in models], k)
              for k, _ in models[0].named_parameters()}
    buffers = {k: leaf([dict(m.named_buffers())[k] for m in models], k) for k, _ in models[0].named_buffers()}
    return params, buffers
