"""fabric: PyTorch's programming model in readable Python on NumPy and CuPy.

Example::

    >>> import fabric as torch
    >>> x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x ** 2).sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])
"""
# (no `from __future__ import annotations` here: it would put `annotations` in fabric's namespace)

# The PyTorch release whose API fabric follows, with fabric's own version (the fabric-dl distribution's) as
# the local label: scripts that compare torch.__version__ with "2.0" under the alias take PyTorch 2's branches.
__version__ = "2.13.0+fabric.0.1.0"

import builtins as _builtins
import warnings as _warnings

# NumPy reports overflow, 0/0 ... inside fabric's kernels as RuntimeWarnings attributed to fabric's modules;
# PyTorch computes inf/nan silently, so do we (a filter costs nothing per op, unlike np.errstate).
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"fabric\.")

from . import _dtype
from ._dtype import (  # noqa: F401
    dtype, float16, half, bfloat16, float32, float, float64, double, int8, int16, short, int32, int, int64, long,
    uint8, bool, complex64, cfloat, complex128, cdouble, get_default_dtype, set_default_dtype,
    get_default_complex_dtype, promote_types, can_cast, finfo, iinfo,
)
from ._device import device  # noqa: F401
from ._layout import (  # noqa: F401
    layout, memory_format, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc, jagged,
    contiguous_format, channels_last, channels_last_3d, preserve_format,
)
from math import e, inf, nan, pi  # noqa: F401  (torch.pi ... are Python floats too)
newaxis = None
from ._tensor import Tensor, Size  # noqa: F401
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled  # noqa: F401
from .autograd.grad_mode import is_inference_mode_enabled  # noqa: F401
from . import autograd, backends, cuda, ops, random  # noqa: F401
from .ops import *  # noqa: F401,F403
from ._creation import *  # noqa: F401,F403
from ._errors import OutOfMemoryError  # noqa: F401
from ._random_ops import *  # noqa: F401,F403
from .random import manual_seed, seed, initial_seed, get_rng_state, set_rng_state, Generator  # noqa: F401
from ._formatting import set_printoptions  # noqa: F401
import fabric.linalg as linalg  # noqa: E402,F401  (`from . import linalg` would get fabric.ops.linalg)
import fabric.sparse as sparse  # noqa: E402,F401
from .sparse import sparse_coo_tensor, sparse_csr_tensor, spmm  # noqa: E402,F401
from .serialization import save, load  # noqa: F401
from ._torch_alias import install_torch_alias, uninstall_torch_alias  # noqa: F401
from ._device import get_default_device, set_default_device  # noqa: E402,F401
from .backends._flags import (  # noqa: E402,F401
    use_deterministic_algorithms, are_deterministic_algorithms_enabled, set_float32_matmul_precision,
    get_float32_matmul_precision,
)
from ._threads import set_num_threads, get_num_threads, set_num_interop_threads, get_num_interop_threads  # noqa: F401,E501
from . import nn, optim  # noqa: F401,E402
from .nn.functional import (  # noqa: E402,F401  (torch's top-level aliases of functional ops)
    adaptive_avg_pool1d, adaptive_max_pool1d, alpha_dropout, avg_pool1d, batch_norm, bilinear,
    binary_cross_entropy_with_logits, celu, celu_, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
    conv_transpose3d, cosine_embedding_loss, cosine_similarity, ctc_loss, dropout, embedding, embedding_bag,
    feature_alpha_dropout, group_norm, hardshrink, hinge_embedding_loss, instance_norm, kl_div, layer_norm,
    margin_ranking_loss, max_pool1d, max_pool1d_with_indices, max_pool2d, max_pool3d, pairwise_distance, pdist,
    pixel_shuffle, pixel_unshuffle, poisson_nll_loss, prelu, rms_norm, rrelu, rrelu_, selu, selu_, threshold,
    threshold_, triplet_margin_loss,
)
from . import data, utils  # noqa: F401,E402
from . import multiprocessing  # noqa: F401,E402
from . import distributions  # noqa: E402,F401
from . import special, testing  # noqa: E402,F401
from . import amp, cpu  # noqa: E402,F401
from . import func  # noqa: E402,F401
from . import fft  # noqa: E402,F401
from .fft._stft import stft, istft  # noqa: E402,F401
from . import signal  # noqa: E402,F401
from . import jit, compiler  # noqa: E402,F401
from . import accelerator, version  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from ._teaching import explain, trace_ops  # noqa: E402,F401
from .amp import GradScaler  # noqa: E402,F401
from .amp.autocast_mode import (  # noqa: E402,F401
    autocast, is_autocast_enabled, set_autocast_enabled, get_autocast_dtype, set_autocast_dtype,
    is_autocast_cache_enabled, set_autocast_cache_enabled, clear_autocast_cache, autocast_increment_nesting,
    autocast_decrement_nesting, is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype,
    set_autocast_cpu_dtype, get_autocast_gpu_dtype, set_autocast_gpu_dtype,
)
from ._dtype import result_type as _result_type


def result_type(tensor1, tensor2):
    """The dtype PyTorch's type promotion gives for ``tensor1 op tensor2``."""
    return _result_type(tensor1, tensor2)


def compile(model=None, **kwargs):
    """``torch.compile``: see :func:`fabric._dynamo.compile` (imported on first use, with ``fabric.fx``)."""
    from ._dynamo import compile as impl

    return impl(model, **kwargs)


def is_tensor(obj) -> _builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input) -> _builtins.bool:
    return input.is_floating_point()


def numel(input) -> _builtins.int:
    return input.numel()


# --- softmax family (nn activations engineer): fabric.softmax / fabric.log_softmax and the
# Tensor methods; implemented in fabric.nn.functional._activation (stable, fused kernels).
from .nn.functional._activation import _softmax as softmax, _log_softmax as log_softmax  # noqa: E402,F401

ops.install_tensor_methods()  # the Tensor methods declared above ops (softmax, prelu, uniform_ ...)


def __getattr__(name):
    """Graph capture (``fabric.fx``, ``export``, ``onnx``, ``compiler``), imported on first use."""
    if name in ("fx", "export", "onnx", "compiler"):  # graph capture: imported on first use
        import importlib
        return importlib.import_module(f"fabric.{name}")
    raise AttributeError(f"module 'fabric' has no attribute '{name}'")
