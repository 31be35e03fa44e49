"""``fabric.amp``: automatic mixed precision, as PyTorch's ``torch.amp``.

``autocast`` runs listed ops in float16 (matmul, linear, conv ...) or float32
(losses, softmax on CUDA ...) inside a region; ``GradScaler`` scales the loss
so float16 gradients do not underflow and skips steps with inf/NaN gradients.
fabric has no bfloat16 arithmetic: use ``dtype=fabric.float16``.  See
docs/amp.md for the op lists and the differences from PyTorch.

Example::

    >>> import fabric
    >>> with fabric.amp.autocast("cpu", dtype=fabric.float16):
    ...     fabric.mm(fabric.ones(2, 3), fabric.ones(3, 2)).dtype
    fabric.float16
"""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
