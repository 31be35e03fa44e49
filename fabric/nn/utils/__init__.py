"""``nn.utils``: gradient clipping and parameter/vector conversion.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> nn.utils.parameters_to_vector(nn.Linear(2, 2).parameters()).shape
    fabric.Size([6])
"""
from __future__ import annotations

from . import (  # noqa: F401  # noqa: F401,E402
    clip_grad,
    convert_parameters,
    fusion,
    parametrizations,
    parametrize,
    rnn,
    stateless,
)
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import (  # noqa: F401
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
    skip_init,
)
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
