"""Top-level names PyTorch also has, built from existing ops.

* functional ops PyTorch exposes at the top level (``torch.conv2d``,
  ``torch.dropout``, ``torch.layer_norm`` ...), taken from ``nn.functional``;
* composite math ops (``diff``, ``cov``, ``isin``, ``gcd`` ...), differentiable
  where PyTorch's are, because they are compositions of fabric ops;
* global switches that fabric accepts for compatibility (deterministic
  algorithms, float32 matmul precision, ``compile``).

Example::

    >>> import fabric
    >>> fabric.diff(fabric.tensor([1, 4, 9, 16]))
    tensor([3, 5, 7])
"""
from __future__ import annotations

import math

import numpy as np

from . import _dtype as D
from ._tensor import Tensor
from .backends import _flags

_FUNCTIONAL = ("adaptive_avg_pool1d adaptive_max_pool1d alpha_dropout avg_pool1d batch_norm bilinear "
               "binary_cross_entropy_with_logits celu celu_ conv1d conv2d conv3d conv_transpose1d conv_transpose2d "
               "conv_transpose3d cosine_embedding_loss cosine_similarity ctc_loss dropout embedding embedding_bag "
               "feature_alpha_dropout group_norm hardshrink hinge_embedding_loss instance_norm kl_div layer_norm "
               "margin_ranking_loss max_pool1d max_pool1d_with_indices max_pool2d max_pool3d pairwise_distance pdist "
               "pixel_shuffle pixel_unshuffle poisson_nll_loss prelu rms_norm rrelu rrelu_ selu selu_ threshold "
               "threshold_ triplet_margin_loss").split()

__all__ = ["detach", "is_signed", "is_complex", "typename", "diff", "isin",
           "cov", "corrcoef", "dist", "unravel_index", "trapezoid", "trapz", "cumulative_trapezoid",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "compile", "get_default_device", "set_default_device", "to_dlpack",
           "FloatTensor", "DoubleTensor",
           "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor",
           "BoolTensor"] + _FUNCTIONAL


def __getattr__(name):  # the functional aliases resolve lazily (nn imports fabric)
    if name in _FUNCTIONAL:
        from .nn import functional as F

        return getattr(F, name)
    raise AttributeError(name)


def detach(input):
    return input.detach()


def is_signed(input) -> bool:
    return input.is_signed()


def is_complex(input) -> bool:
    return input.is_complex()


def typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__module__ + "." + type(obj).__qualname__


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along ``dim`` (bool inputs use xor, as PyTorch)."""
    from .ops import cat, logical_xor, narrow

    x = input
    if prepend is not None or append is not None:
        parts = ([prepend] if prepend is not None else []) + [x] + ([append] if append is not None else [])
        parts = [p if isinstance(p, Tensor) else x.new_tensor(p).expand(
            *[s if i != (dim % x.ndim) else 1 for i, s in enumerate(x.shape)]) for p in parts]
        x = cat(parts, dim)
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        a, b = narrow(x, dim, 1, size - 1), narrow(x, dim, 0, size - 1)
        x = logical_xor(a, b) if x.dtype is D.bool else a - b
    return x


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is in ``test_elements`` (a bool tensor)."""
    from .backends import backend_of

    e = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    t = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    xp = backend_of(e).xp
    return Tensor._make(xp.isin(e, t, assume_unique=assume_unique, invert=invert), False)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows of ``input`` (variables) over its columns (observations)."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("fabric.cov does not support fweights/aweights yet")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if not x.is_floating_point():
        x = x.to(D.get_default_dtype())
    n = x.shape[1]
    xc = x - x.mean(1, keepdim=True)
    c = (xc @ xc.t()) / max(n - correction, 0)
    return c.squeeze() if input.ndim < 2 else c


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input``."""
    from .ops import clamp

    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    return clamp(c / d[:, None] / d[None, :], -1, 1)


def dist(input, other, p=2):
    """p-norm of ``input - other``."""
    from .linalg import vector_norm

    return vector_norm(input - other, p)


def unravel_index(indices, shape):
    """Tuple of coordinate tensors for flat ``indices`` into ``shape``."""
    idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got " + str(idx.dtype))
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = math.prod(shape)
    if ((idx < -total) | (idx >= total)).any():
        raise RuntimeError("'indices' must be in range [-prod(shape), prod(shape) - 1]")
    coords = np.unravel_index(np.where(idx < 0, idx + total, idx), shape)
    return tuple(Tensor._make(np.asarray(c, dtype=np.int64), False) for c in coords)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Trapezoidal rule along ``dim``."""
    from .ops import narrow

    n = y.shape[dim]
    if n == 0:
        return y.sum(dim)
    left, right = narrow(y, dim, 0, n - 1), narrow(y, dim, 1, n - 1)
    if x is None:
        return ((left + right) * (0.5 * (1.0 if dx is None else dx))).sum(dim)
    spacing = diff(x, dim=dim if x.ndim == y.ndim else -1)
    return ((left + right) * spacing * 0.5).sum(dim)


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    from .ops import narrow

    n = y.shape[dim]
    left, right = narrow(y, dim, 0, max(n - 1, 0)), narrow(y, dim, 1, max(n - 1, 0))
    if x is None:
        return ((left + right) * (0.5 * (1.0 if dx is None else dx))).cumsum(dim)
    return ((left + right) * diff(x, dim=dim if x.ndim == y.ndim else -1) * 0.5).cumsum(dim)


def use_deterministic_algorithms(mode, *, warn_only=False) -> None:
    """Ask for deterministic algorithms (PyTorch's switch): fabric's CPU ops are deterministic; on CUDA,
    ``True`` switches embedding and max-pool backward from atomics to sort + segment sums (docs/cuda.md).
    ``backends.cudnn.deterministic`` is a separate flag, as in PyTorch."""
    _flags.use_deterministic_algorithms(mode, warn_only=warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _flags.are_deterministic_algorithms_enabled()


def set_float32_matmul_precision(precision: str) -> None:
    """'highest' computes float32 matmuls in float32; 'high' and 'medium'
    allow TF32 on the GPU (the same switch as ``backends.cuda.matmul.allow_tf32``)."""
    _flags.set_float32_matmul_precision(precision)


def get_float32_matmul_precision() -> str:
    return _flags.get_float32_matmul_precision()


def compile(model=None, **kwargs):
    """``torch.compile``: see :func:`fabric._dynamo.compile` (imported on first use, with ``fabric.fx``)."""
    from ._dynamo import compile as impl

    return impl(model, **kwargs)


def get_default_device():
    from ._device import cpu

    return cpu


def set_default_device(device) -> None:
    from ._device import as_device

    if device is not None and as_device(device).type != "cpu":
        raise NotImplementedError("fabric.set_default_device supports only 'cpu'; pass device= explicitly instead")


def to_dlpack(tensor):
    return tensor.__dlpack__()


class _LegacyTensorType(type):
    """The legacy typed constructors (``fabric.FloatTensor`` ...): calling one
    makes a CPU tensor of its dtype, ``isinstance`` checks dtype and device,
    and ``Tensor.type(fabric.LongTensor)`` converts."""

    def __call__(cls, *args, device=None):
        from ._creation import empty

        return empty(0, dtype=cls._legacy_dtype, device=device).new(*args)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls._legacy_dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class 'fabric.{cls.__name__}'>"


def _legacy_type(name, dtype):
    return _LegacyTensorType(name, (), {"_legacy_dtype": dtype, "dtype": dtype, "__module__": "fabric",
                                        "__doc__": f"Legacy constructor of {dtype} CPU tensors, e.g. "
                                                   f"``fabric.{name}([1, 2])``."})


FloatTensor = _legacy_type("FloatTensor", D.float32)
DoubleTensor = _legacy_type("DoubleTensor", D.float64)
HalfTensor = _legacy_type("HalfTensor", D.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", D.bfloat16)
LongTensor = _legacy_type("LongTensor", D.int64)
IntTensor = _legacy_type("IntTensor", D.int32)
ShortTensor = _legacy_type("ShortTensor", D.int16)
CharTensor = _legacy_type("CharTensor", D.int8)
ByteTensor = _legacy_type("ByteTensor", D.uint8)
BoolTensor = _legacy_type("BoolTensor", D.bool)


# Tensor methods of these functions: installed from here, above Tensor (fabric/_tensor.py imports nothing above ops).
Tensor.diff = diff
Tensor.cov = cov
Tensor.corrcoef = corrcoef
Tensor.dist = dist
