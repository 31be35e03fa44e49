"""Instance normalisation: ``InstanceNorm1d/2d/3d`` and lazy variants.

Each sample's channels are normalised over their spatial dims; by default
no affine parameters and no running statistics (as in PyTorch).

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.InstanceNorm1d(3)(fabric.randn(2, 3, 5)).shape
    fabric.Size([2, 3, 5])
"""
from __future__ import annotations

import warnings

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0
    _allowed: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)

    def _check_input_dim(self, input):
        if input.dim() not in self._allowed:
            raise ValueError(f"expected {self._allowed[0]}D or {self._allowed[1]}D input (got {input.dim()}D input)")

    def _get_no_batch_dim(self):
        return self._no_batch_dim

    def _handle_no_batch_input(self, input):
        return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        version = local_metadata.get("version", None)
        if version is None and not self.track_running_stats:
            keys = [prefix + n for n in ("running_mean", "running_var") if prefix + n in state_dict]
            if keys:
                klass = self.__class__.__name__
                names = " and ".join(f'"{k}"' for k in keys)
                error_msgs.append(f"Unexpected running stats buffer(s) {names} for {klass} with "
                                  "track_running_stats=False. If state_dict is a checkpoint saved before 0.4.0, this "
                                  f"may be expected because {klass} does not track running stats by default since "
                                  "0.4.0. Please remove these keys from state_dict. If the running stats are actually "
                                  f"needed, instead set track_running_stats=True in {klass} to enable them. See the "
                                  f"documentation of {klass} for details.")
                for k in keys:
                    state_dict.pop(k)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._get_no_batch_dim()
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self._get_no_batch_dim():
            return self._handle_no_batch_input(input)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over ``(N, C, L)`` or ``(C, L)`` inputs."""

    _no_batch_dim, _allowed = 2, (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over ``(N, C, H, W)`` or ``(C, H, W)`` inputs."""

    _no_batch_dim, _allowed = 3, (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""

    _no_batch_dim, _allowed = 4, (4, 5)


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """:class:`InstanceNorm1d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim, _allowed = 2, (2, 3)


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """:class:`InstanceNorm2d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim, _allowed = 3, (3, 4)


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """:class:`InstanceNorm3d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim, _allowed = 4, (4, 5)
