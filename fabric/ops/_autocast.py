"""Autocast state, cast policy and the entry the dispatch path gives every listed op.

The state (enabled flag and lower-precision dtype per device type, cache flag,
nesting depth) is thread-local, as in PyTorch.  The module-level counter
:data:`active` is the number of (thread, device type) pairs with autocast on,
so with autocast off everywhere an op pays one attribute read.

Ops do not mention autocast.  An op whose name is on one of the policy lists
below is declared in the op registry (``ops/_registry.py``), which hands it to
:func:`entry`.  The first time autocast is enabled in the process, each such
op's code is recompiled from its own source with a *prologue* first, the
check ops used to write inline::

    if __fabric_autocast__.active and out is None:   # ``out is None`` when it has ``out=``
        _autocast_args = __fabric_autocast__.cast("mm", input, mat2)   # every parameter but ``out``
        if _autocast_args is not None:
            input, mat2 = _autocast_args
            return __fabric_autocast__.run_excluded(7, input, mat2, out=out)

``cast`` returns ``None`` when nothing applies (autocast off for the tensors'
device type, op not on that device's lists, inside an op that already
autocast), else the arguments cast per the op's policy; ``run_excluded`` runs
the op again on them with autocast excluded, as PyTorch's dispatcher excludes
the Autocast key below a wrapped op (an fp32 loss must not see its inner
matmul lowered to float16).  Why this shape: no wrapper frame is added to any
op (``benchmarks/overhead.py --calls`` is unchanged), a process that never
enables autocast pays nothing at all (not even at import), and after that the
cost is the one attribute read the inline checks paid.  The function object
stays the same, so every binding of it (``fabric.mm``, ``Tensor.mm``, ``from
.linalg import mm``) casts, and its file, line numbers and signature stay its
own.  ``__fabric_autocast__`` is this module, set in the op module's globals.
Where an op's source cannot be read (a frozen build), :func:`entry` returns a
wrapper with the same behaviour instead.

Policies follow PyTorch's op lists (aten/src/ATen/autocast_mode.{h,cpp}):
``lower`` casts floating inputs to the autocast dtype, ``fp32`` casts them to
float32, ``promote`` casts them to the widest floating type among them,
``keep`` casts nothing but runs the body without autocast (fabric ops that are
composite here but a single kernel in PyTorch), ``banned`` raises.  float64
tensors and tensors on another device type are never cast.  The CUDA ops that
PyTorch runs in float32 only when no ``dtype=`` is given (:data:`OPT_DTYPE`)
skip the prologue when one is.

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
import __future__

import ast
import functools
import inspect
import linecache
import os
import sys
import threading
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.grad_mode import state as _grad_state

__all__ = [
    "DEVICE_TYPES",
    "active",
    "cast",
    "clear_cache",
    "entry",
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
        self.cache = {}  # id(leaf) -> (leaf, its lower-precision cast): the weight-cast cache




state = _State()


def clear_cache() -> None:
    """Drop the cached weight casts (the outermost autocast region ends, or ``clear_autocast_cache``)."""
    state.cache.clear()


def is_enabled(device_type: str) -> bool:
    return state.enabled.get(device_type, False)


def set_enabled(device_type: str, enabled: bool) -> None:
    global active
    st = state.enabled
    was = st.get(device_type, False)
    st[device_type] = enabled
    if was != enabled:
        if enabled and not _installed:
            _install()
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


def _tensors(args):
    """The Tensors among ``args``, looking into lists and tuples (``einsum``'s operands, ``*tensors``)."""
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a)


def _eligible(a, cls):
    """Floating, not float64, on the autocast device type (PyTorch's ``is_eligible``)."""
    x = a._data
    return x.__class__ is cls and x.dtype.kind == "f" and x.dtype != _F64


def _target(op, args):
    """(fabric dtype, array class, policy) for ``op`` on ``args`` or None when autocast does not apply."""
    st = state
    if st.excluded:
        return None
    t = next(_tensors(args), None)
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
        for t in _tensors(args):
            if _eligible(t, cls) and t._data.dtype == _F32:
                return D.float32, cls, policy
    return low, cls, policy


def _cast_one(a, dtype, cls):
    if isinstance(a, Tensor):
        if not _eligible(a, cls) or a._data.dtype == dtype.np:
            return a
        # PyTorch's weight-cast cache: a float32 leaf that requires grad (a parameter) is cast to the
        # lower-precision dtype once per outermost autocast region, so its uses share one ToCopy node
        # (only while grad mode is on: a cast made under no_grad has no node to share).
        if dtype is D.float16 and a._requires_grad and a.grad_fn is None and a._base is None \
                and a._data.dtype == _F32 and state.cache_enabled and _grad_state.enabled:
            hit = state.cache.get(id(a))
            if hit is not None and hit[0] is a:
                return hit[1]
            r = a.to(dtype)
            state.cache[id(a)] = (a, r)
            return r
        return a.to(dtype)
    if isinstance(a, (list, tuple)) and next(_tensors(a), None) is not None:
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


# CUDA's AT_FORALL_FP32_SET_OPT_DTYPE: float32 only when the call gives no ``dtype=``.
OPT_DTYPE = frozenset("prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum".split())

_GLOBAL = "__fabric_autocast__"  # this module, as the prologue finds it in the op's module globals
_ARGS = "_autocast_args"
_entries: list[tuple[Callable[..., Any], str, Callable[..., Any]]] = []  # (body, policy, public function)
_installed = False
_install_lock = threading.Lock()


def _prologue(args: ast.arguments, policy: str, index: int) -> str:
    """The source of the lines an op listed as ``policy`` with parameters ``args`` runs first (entry ``index``)."""
    positional = [a.arg for a in args.posonlyargs + args.args]
    keyword = [a.arg for a in args.kwonlyargs]
    star = [args.vararg.arg] if args.vararg else []
    names = positional + star + keyword + ([args.kwarg.arg] if args.kwarg else [])
    cast_names = [n for n in names if n != "out"]
    call = [str(index), *positional, *("*" + n for n in star), *(f"{n}={n}" for n in keyword)]
    if args.kwarg:
        call.append("**" + args.kwarg.arg)
    guard = f"{_GLOBAL}.active"
    if "out" in names:
        guard += " and out is None"
    if policy in OPT_DTYPE and "dtype" in names:
        guard += " and dtype is None"
    targets = ", ".join(cast_names) + ("," if len(cast_names) == 1 else "")
    return (f"if {guard}:\n"
            f"    {_ARGS} = {_GLOBAL}.cast({policy!r}, {', '.join(cast_names)})\n"
            f"    if {_ARGS} is not None:\n"
            f"        {targets} = {_ARGS}\n"
            f"        return {_GLOBAL}.run_excluded({', '.join(call)})\n")


def run_excluded(index: int, *args, **kwargs) -> Any:
    """Call entry ``index``'s public function on already cast arguments with autocast excluded."""
    with excluded():
        return _entries[index][2](*args, **kwargs)


def _located(node, line):
    node.lineno = node.end_lineno = line
    node.col_offset = node.end_col_offset = 0
    return node


def _source(body: Callable[..., Any]) -> str | None:
    """The source lines of function ``body`` (decorators included), or None when they cannot be read."""
    code = body.__code__
    lines = linecache.getlines(code.co_filename, body.__globals__)[code.co_firstlineno - 1:]
    if hasattr(code, "co_positions"):  # Python 3.11: the last line any instruction spans ends the def
        last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
        lines = lines[:last - code.co_firstlineno + 1]
    elif lines:
        lines = inspect.getblock(lines)
    text = "".join(lines)
    return text if text.lstrip().startswith(("def ", "@")) else None


def _with_prologue(body: Callable[..., Any], policy: str, index: int) -> types.CodeType:
    """``body``'s code compiled again from its source with the autocast prologue first."""
    code = body.__code__
    first, text = code.co_firstlineno, _source(body)
    if text is None:
        raise RuntimeError(f"autocast: the source of {body.__qualname__} changed or vanished since import")
    # Parsed where it stands, so line numbers are the file's; a nested def is put under an ``if``.
    head = "\n" * (first - 1) if not text[:1].isspace() else "\n" * (first - 2) + "if 1:\n"
    tree = ast.parse(head + text)
    fdef = tree.body[0]
    if isinstance(fdef, ast.If):
        fdef = fdef.body[0]
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != code.co_name:
        raise RuntimeError(f"autocast: no def of {body.__qualname__} at {code.co_filename}:{first}")
    fdef.decorator_list = []
    # The prologue's lines are numbered from the def line (a traceback inside it points there).
    pro = ast.parse("\n" * (fdef.lineno - 1) + _prologue(fdef.args, policy, index)).body
    doc = 1 if (isinstance(fdef.body[0], ast.Expr) and isinstance(fdef.body[0].value, ast.Constant)
                and isinstance(fdef.body[0].value.value, str)) else 0
    fdef.body[doc:doc] = pro
    # Compiled inside a function whose parameters are the op's free variables, so a closure's names stay free.
    params = [_located(ast.arg(arg=n), fdef.lineno) for n in code.co_freevars]
    outer = _located(ast.FunctionDef(name="_autocast_scope", args=ast.arguments(
        posonlyargs=[], args=params, kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef], decorator_list=[], returns=None), fdef.lineno)
    setattr(outer, "type_params", [])  # noqa: B010  (a field from Python 3.12 on; unused before)
    compiled = compile(ast.Module(body=[outer], type_ignores=[]), code.co_filename, "exec", dont_inherit=True,
                       flags=code.co_flags & __future__.annotations.compiler_flag)
    scope = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new = next(c for c in scope.co_consts if isinstance(c, types.CodeType) and c.co_name == code.co_name)
    if new.co_freevars != code.co_freevars:
        raise RuntimeError(f"autocast: recompiling {body.__qualname__} changed its free variables")
    return new


def _install() -> None:
    """Give every declared op its prologue (the first time autocast is enabled)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        for index, (body, policy, _) in enumerate(_entries):
            _install_one(body, policy, index)
        _installed = True


def _install_one(body, policy, index):
    try:
        code = _with_prologue(body, policy, index)
    except (RuntimeError, SyntaxError) as e:  # the file was edited since import (a live session)
        warnings.warn(f"{e}; {body.__module__}.{body.__qualname__} runs without autocast until reloaded",
                      RuntimeWarning, stacklevel=4)
        return
    body.__globals__.setdefault(_GLOBAL, sys.modules[__name__])
    body.__code__ = code


def _wrapped(function: Callable[..., Any], policy: str) -> Callable[..., Any]:
    """The entry of an op whose source cannot be read: a wrapper that casts and calls ``function``."""
    sig = inspect.signature(function)
    has_out, opt_dtype = "out" in sig.parameters, policy in OPT_DTYPE and "dtype" in sig.parameters

    @functools.wraps(function)
    def op(*args, **kwargs):
        if not active:
            return function(*args, **kwargs)
        bound = sig.bind(*args, **kwargs)
        a = bound.arguments
        if (has_out and a.get("out") is not None) or (opt_dtype and a.get("dtype") is not None):
            return function(*args, **kwargs)
        names = [n for n in a if n != "out"]
        cast_args = cast(policy, *(a[n] for n in names))
        if cast_args is None:
            return function(*args, **kwargs)
        a.update(zip(names, cast_args))
        with excluded():
            return function(*bound.args, **bound.kwargs)

    return op


def entry(function: Callable[..., Any], policy: str) -> Callable[..., Any]:
    """Make ``function`` the op ``policy`` of the autocast lists and return what to bind as the public op.

    The result is ``function`` itself: when autocast is first enabled, the code of the function it wraps
    (``inspect.unwrap``) is recompiled from source with the autocast prologue first (see the module
    docstring), so every binding of it (``fabric.mm``, ``Tensor.mm``, ``from .linalg import mm``) casts.
    Only where the source cannot be read (a frozen build) is the result a wrapper.

    Example::

        >>> import fabric
        >>> with fabric.autocast("cpu", dtype=fabric.float16):   # the first time installs the prologues
        ...     y = fabric.matmul(fabric.ones(2, 2), fabric.ones(2, 2))
        >>> y.dtype, fabric.matmul.__code__.co_names[:2]
        (fabric.float16, ('__fabric_autocast__', 'active'))
    """
    body = inspect.unwrap(function)
    if not isinstance(body, types.FunctionType) or not os.path.isfile(body.__code__.co_filename):
        return _wrapped(function, policy)  # no source file (a frozen or zipped build): a wrapper instead
    with _install_lock:
        _entries.append((body, policy, function))
        if _installed:
            _install_one(body, policy, len(_entries) - 1)
    return function
