"""``SparseAdam``: Adam whose moments and parameter change only at the rows a
sparse gradient touches (for ``nn.Embedding(sparse=True)``)."""
from __future__ import annotations

import math

from .._tensor import Tensor
from ..backends import backend_of
from .optimizer import Optimizer, ParamsT

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """PyTorch's ``torch.optim.SparseAdam`` (lazy Adam on sparse gradients).

    Example::

        >>> import fabric
        >>> emb = fabric.nn.Embedding(10, 3, sparse=True)
        >>> opt = fabric.optim.SparseAdam(emb.parameters(), lr=0.1)
        >>> emb(fabric.tensor([1, 2])).sum().backward()
        >>> opt.step()
    """

    _sparse_grads = True

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not lr > 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps > 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params = [[i, j] for i, g in enumerate(self.param_groups) for j, p in enumerate(g["params"])
                         if p.is_sparse]
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")

    def _step_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps = float(group["lr"]), group["eps"]
        for p in self._params_with_grad(group):
            grad = p._grad
            if not grad.is_sparse:
                raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
            grad = grad.coalesce()
            xp = backend_of(p._data).xp
            st = self.state[p]
            if len(st) == 0:
                st["step"] = 0
                st["exp_avg"] = Tensor._make(xp.zeros_like(p._data), False)
                st["exp_avg_sq"] = Tensor._make(xp.zeros_like(p._data), False)
            st["step"] += 1
            step = st["step"]
            where = tuple(grad._idx._data)  # the touched positions (rows for an embedding)
            g = grad._vals._data
            if group["maximize"]:
                g = -g
            m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
            m_new = m[where] + (g - m[where]) * (1 - beta1)
            v_new = v[where] + (g * g - v[where]) * (1 - beta2)
            m[where] = m_new
            v[where] = v_new
            step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            p._data[where] -= (step_size * (m_new / (xp.sqrt(v_new) + eps))).astype(p._data.dtype, copy=False)
            p._bump_version()
