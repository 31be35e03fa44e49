"""``nn.utils.parametrizations``: ready-made parametrizations built on
:mod:`fabric.nn.utils.parametrize` (``weight_norm``, ``spectral_norm``).

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v: Tensor, pow: float, dim: int) -> Tensor:
    """torch.norm_except_dim: the ``pow``-norm of ``v`` over every dimension
    but ``dim``, kept with size 1; ``dim == -1`` means the norm of all of
    ``v`` (a 0-d tensor), as in PyTorch."""
    from ... import linalg
    if dim == -1:
        return linalg.vector_norm(v, pow)
    dim = dim % v.dim()
    others = tuple(d for d in range(v.dim()) if d != dim)
    if not others:
        return linalg.vector_norm(v.reshape(-1, 1), pow, dim=1)
    return linalg.vector_norm(v, pow, dim=others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """torch._weight_norm: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / _norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` with the norm
    taken over every dimension but ``dim`` (``dim=None``: the whole tensor).
    ``g`` is ``parametrizations.<name>.original0`` and ``v`` is
    ``original1``; old ``<name>_g``/``<name>_v`` state dicts still load.

    Example::

        >>> import fabric
        >>> from fabric import nn
        >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
        >>> m.parametrizations.weight.original0.shape
        fabric.Size([2, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            # Same draws, in the same order, as PyTorch: identical u, v.
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place (PyTorch writes them with out=), and
        # cloned in forward so two forwards can share one backward.
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.H.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by
    ``n_power_iterations`` steps of power iteration per training forward
    (buffers ``parametrizations.<name>.0._u`` / ``._v``, drawn from the
    global RNG exactly as PyTorch does).  ``dim`` defaults to 1 for
    ``ConvTranspose*d`` and 0 otherwise.

    Example::

        >>> import fabric
        >>> from fabric import nn
        >>> m = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3))
        >>> float(fabric.linalg.matrix_norm(m.weight, 2)) < 1.01
        True
    """
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
