"""Autocast state and cast policy: the one place ops ask "what dtype do I run in?".

The state (enabled flag and lower-precision dtype per device type, cache flag,
nesting depth) is thread-local, as in PyTorch.  Ops read the module-level
counter :data:`active` first: it is the number of (thread, device type) pairs
with autocast on, so with autocast off everywhere an op pays one attribute
read.  Two ways for an op to take part:

* hot leaf ops call :func:`cast` inline at the top of their public function::

      if _amp.active and (c := _amp.cast("mm", input, mat2)):
          input, mat2 = c

  ``cast`` returns ``None`` when nothing applies (autocast off for the
  tensors' device type, op not on that device's lists, inside an op that
  already autocast), else the arguments cast per the op's policy.
* composite ops (whose body calls other listed ops) call themselves again
  with the cast arguments and autocast excluded, as PyTorch's dispatcher
  excludes the Autocast key below a wrapped op (an fp32 loss must not see its
  inner matmul lowered to float16)::

      if _amp.active and (c := _amp.cast("cdist", x1, x2, p, compute_mode)):
          with _amp.excluded():
              return cdist(*c)

Policies follow PyTorch's op lists (aten/src/ATen/autocast_mode.{h,cpp}):
``lower`` casts floating inputs to the autocast dtype, ``fp32`` casts them to
float32, ``promote`` casts them to the widest floating type among them,
``keep`` casts nothing but runs the body without autocast (fabric ops that are
composite here but a single kernel in PyTorch), ``banned`` raises.  float64
tensors and tensors on another device type are never cast.

Example::

    >>> import fabric
    >>> from fabric.ops import _autocast as _policy
    >>> a = fabric.ones(2, 2)
    >>> _policy.cast("mm", a, a) is None          # autocast is off
    True
    >>> with fabric.autocast("cpu", dtype=fabric.float16):
    ...     [t.dtype for t in _policy.cast("mm", a, a)]
    [fabric.float16, fabric.float16]
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor

__all__ = [
    "DEVICE_TYPES",
    "active",
    "cast",
    "excluded",
    "get_dtype",
    "is_enabled",
    "set_dtype",
    "set_enabled",
    "state",
]

# Device types torch.autocast accepts, with their default lower-precision dtype.  Only "cpu" and "cuda"
# tensors exist in fabric; the others keep state (scripts may query them) and never cast anything.
DEVICE_TYPES = {"cpu": D.bfloat16, "cuda": D.float16, "xpu": D.float16, "mps": D.float16, "hpu": D.bfloat16,
                "mtia": D.float16, "maia": D.bfloat16, "xla": D.bfloat16, "ipu": D.float16}

active = 0  # (thread, device type) pairs with autocast enabled, process-wide
_active_lock = threading.Lock()


class _State(threading.local):
    def __init__(self):
        self.enabled = {}  # device type -> bool
        self.dtype = {}  # device type -> fabric dtype (absent: the device's default)
        self.cache_enabled = True
        self.nesting = 0
        self.excluded = 0  # > 0 inside an op that already autocast


state = _State()


def is_enabled(device_type: str) -> bool:
    return state.enabled.get(device_type, False)


def set_enabled(device_type: str, enabled: bool) -> None:
    global active
    st = state.enabled
    was = st.get(device_type, False)
    st[device_type] = enabled
    if was != enabled:
        with _active_lock:
            active += 1 if enabled else -1


def get_dtype(device_type: str):
    return state.dtype.get(device_type, DEVICE_TYPES[device_type])


def set_dtype(device_type: str, dtype) -> None:
    state.dtype[device_type] = dtype


class excluded:
    """Run a block with autocast excluded (what the body of an autocast op sees)."""

    __slots__ = ()

    def __enter__(self):
        state.excluded += 1

    def __exit__(self, *exc):
        state.excluded -= 1


LOWER, FP32, PROMOTE, KEEP, BANNED = "lower", "fp32", "promote", "keep", "banned"


def _table(**groups):
    return {op: policy for policy, ops in groups.items() for op in ops.split()}


# CUDA: AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE (treated as fp32 when the
# op's dtype argument is None), norm (fp32_append_dtype), AT_FORALL_PROMOTE, binary_cross_entropy banned.
_CUDA = _table(
    lower="conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d prelu addmm addmv addr "
          "matmul einsum mm mv linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot lstm_cell "
          "gru_cell rnn_tanh_cell rnn_relu_cell scaled_dot_product_attention",
    fp32="acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus layer_norm "
         "group_norm norm cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss cross_entropy "
         "hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
         "multilabel_margin_loss soft_margin_loss triplet_margin_loss multi_margin_loss "
         "binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp interpolate "
         "prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum",
    promote="addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add",
    banned="binary_cross_entropy",
)

# CPU: TORCH_LIBRARY_IMPL(aten, AutocastCPU).  einsum / tensordot / multi_dot / chain_matmul / inner are
# composite in PyTorch and reach mm/bmm there, so they come out in the lower dtype too.
_CPU = _table(
    lower="conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear matmul conv_tbc conv_transpose1d "
          "conv_transpose2d conv_transpose3d prelu scaled_dot_product_attention einsum tensordot linalg_multi_dot "
          "chain_matmul",
    fp32="avg_pool3d binary_cross_entropy grid_sampler prod quantile nanquantile stft cdist trace cholesky "
         "cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d "
         "max_unpool3d adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d "
         "replication_pad3d mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss poisson_nll_loss "
         "smooth_l1_loss cross_entropy l1_loss huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss "
         "multi_margin_loss ctc_loss kl_div multilabel_margin_loss binary_cross_entropy_with_logits linalg_cond "
         "linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv "
         "linalg_householder_product linalg_tensorinv linalg_tensorsolve geqrf qr svd triangular_solve "
         "fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d linalg_qr linalg_cholesky_ex linalg_svd "
         "linalg_eig linalg_eigh linalg_lstsq linalg_inv_ex",
    promote="stack cat index_copy",
    keep="bilinear",
)

POLICIES = {"cpu": _CPU, "cuda": _CUDA}

_BCE_BANNED = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
               "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
               "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
               "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
               "safe to autocast.")

BF16_ERROR = ("fabric's autocast cannot run in bfloat16: NumPy and CuPy have no bfloat16 arithmetic, so fabric's "
              "matmul/conv kernels would compute in float32 and not follow autocast's dtypes. Pass "
              "dtype=fabric.float16 instead (e.g. fabric.autocast('cpu', dtype=fabric.float16); note that 'cpu' "
              "autocast defaults to bfloat16 in PyTorch), or enabled=False.")

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _first_tensor(args):
    for a in args:
        if isinstance(a, Tensor):
            return a
        if isinstance(a, (list, tuple)):
            for t in a:
                if isinstance(t, Tensor):
                    return t
    return None


def _eligible(a, cls):
    """Floating, not float64, on the autocast device type (PyTorch's ``is_eligible``)."""
    x = a._data
    return x.__class__ is cls and x.dtype.kind == "f" and x.dtype != _F64


def _target(op, args):
    """(fabric dtype, array class, policy) for ``op`` on ``args`` or None when autocast does not apply."""
    st = state
    if st.excluded:
        return None
    t = _first_tensor(args)
    if t is None:
        return None
    cls = t._data.__class__
    dev = "cpu" if cls is np.ndarray else "cuda"
    if not st.enabled.get(dev, False):
        return None
    policy = POLICIES[dev].get(op)
    if policy is None:
        return None
    if policy == FP32:
        return D.float32, cls, policy
    if policy == KEEP:
        return None, cls, policy
    if policy == BANNED:
        raise RuntimeError(_BCE_BANNED)
    low = st.dtype.get(dev, DEVICE_TYPES[dev])
    if low is not D.float16:
        raise RuntimeError(BF16_ERROR)
    if policy == PROMOTE:  # widest eligible floating type, float64 ignored (PyTorch's ``prioritize``)
        for a in args:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, Tensor) and _eligible(t, cls) and t._data.dtype == _F32:
                    return D.float32, cls, policy
    return low, cls, policy


def _cast_one(a, dtype, cls):
    if isinstance(a, Tensor):
        if _eligible(a, cls) and a._data.dtype != dtype.np:
            return a.to(dtype)
        return a
    if isinstance(a, (list, tuple)) and any(isinstance(t, Tensor) for t in a):
        return type(a)(_cast_one(t, dtype, cls) for t in a)
    return a


def cast(op, *args) -> Any:
    """``args`` cast per ``op``'s autocast policy, or None when autocast does not apply here.

    Non-tensor arguments (None, numbers, lists of tensors) pass through; lists and tuples of tensors are cast
    element-wise.  The casts are ``Tensor.to`` calls, so gradients flow back in each input's own dtype."""
    tgt = _target(op, args)
    if tgt is None:
        return None
    dtype, cls, _ = tgt
    if dtype is None:
        return args
    return tuple(_cast_one(a, dtype, cls) for a in args)
