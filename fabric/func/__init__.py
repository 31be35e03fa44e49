"""``torch.func``: composable function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``,
``hessian``, ``linearize`` (see ``_transforms``: built on the reverse-mode
engine, forward products by double vjp), ``vmap`` (see ``_vmap``: the
per-example fallback until ops get batching rules), ``functional_call`` and
``stack_module_state``.  They compose: ``vmap(grad(f))``,
``jacrev(jacrev(f))``, ``vmap(jacfwd(f))``.

Example::

    >>> import fabric
    >>> from fabric.func import grad, vmap
    >>> vmap(grad(lambda x: (x ** 3).sum()))(fabric.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[ 3., 12.],
            [27., 48.]])
"""
from __future__ import annotations

from ._functional_call import functional_call
from ._rules import install as _install_rules
from ._stack import stack_module_state
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._vmap import vmap, vmap_fallback_ops

_install_rules()

__all__ = ["grad", "grad_and_value", "vmap", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp",
           "functional_call", "stack_module_state", "replace_all_batch_norm_modules_", "functionalize",
           "vmap_fallback_ops"]


def functionalize(func, *, remove: str = "mutations"):
    """Not supported: fabric does not trace programs to remove mutations."""
    raise NotImplementedError("fabric.func.functionalize is not supported (fabric has no graph tracer)")


def replace_all_batch_norm_modules_(root):
    """Stop BatchNorm modules under ``root`` from tracking running statistics
    (so they can run under vmap), in place; returns ``root``."""
    from ..nn.modules.batchnorm import _BatchNorm

    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root
