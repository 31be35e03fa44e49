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

from enum import Enum, auto

import numpy as np

from ..._tensor import Tensor
from ...autograd import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _householder_product(V: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product written with differentiable Tensor
    ops: the first ``k`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i
    v_i^H``, ``v_i`` the ``i``-th column of ``V`` below the diagonal with a
    unit diagonal.  One rank-1 update per reflector, O(n k^2)."""
    from ... import _creation
    n, k = V.size(-2), tau.size(-1)
    eye = _creation.eye(n, k, dtype=V.dtype, device=V.device)
    Vl = V[..., :k].tril(-1) + eye
    Q = eye.expand(*V.shape[:-2], n, k)
    for i in reversed(range(k)):
        v = Vl[..., :, i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mH @ Q))
    return Q


def _geqrf(A: Tensor):
    """torch.geqrf (LAPACK's compact QR: reflectors below the diagonal, R on
    and above it, and tau) via NumPy's ``qr(mode='raw')``, on the host; only
    used once, without gradients, by ``orthogonal``'s right_inverse."""
    from ... import _creation
    h, tau = np.linalg.qr(A.detach().cpu().numpy(), mode="raw")
    return (_creation.tensor(np.ascontiguousarray(np.swapaxes(h, -1, -2)), device=A.device),
            _creation.tensor(tau, device=A.device))


def _is_orthogonal(Q, eps=None):
    from ... import _creation
    from ..._dtype import finfo
    from ...ops import allclose
    n, k = Q.size(-2), Q.size(-1)
    Id = _creation.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * finfo(Q.dtype).eps
    return allclose(Q.mH @ Q, Id, atol=eps)


def _make_orthogonal(A):
    """The Q of the QR decomposition of ``A`` with its columns' signs fixed
    so that diag(R) > 0 (PyTorch: geqrf + householder_product; LAPACK's
    geqrf is what linalg.qr runs, so Q and R are the same)."""
    from ... import linalg
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization=True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        from ... import _creation, linalg
        from ...ops import add, cat
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:
                Id = _creation.eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(add(Id, A, alpha=-0.5), add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        from ... import _creation, randn
        from ...ops import cat
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        with no_grad():
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1)
                sign = d.sign()
                # a zero tau means the reflector is the identity: flip, as PyTorch
                sign = sign * (1 - 2 * (tau == 0.0).to(sign.dtype))
                d.copy_(sign)
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                # Same draw as PyTorch: completes Q to a square orthogonal base.
                N = randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            neg_Id = _creation.zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain the matrix (or batch of matrices) ``module.<name>`` to be
    orthogonal (unitary), through ``orthogonal_map``: ``"matrix_exp"``
    (default for square or complex weights), ``"cayley"`` or
    ``"householder"`` (default otherwise).  With ``use_trivialization``
    (default) a buffer ``base`` holds the current orthogonal matrix and the
    original starts at ``-I``, as in PyTorch.

    Example::

        >>> import fabric
        >>> from fabric import nn
        >>> m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))
        >>> bool(fabric.allclose(m.weight @ m.weight.T, fabric.eye(3), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex()
                          else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


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
