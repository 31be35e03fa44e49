"""Activation checkpointing, as in ``torch.utils.checkpoint``: run a block
without keeping its intermediate activations and recompute them in backward.

Two variants, as in PyTorch:

* ``use_reentrant=False`` (recommended): the forward runs normally under
  :class:`fabric.autograd.graph.saved_tensors_hooks` whose pack hook stores
  only an index; the first unpack in backward re-runs the block (with the
  RNG state of the forward) under a second pair of hooks that collect what
  it saves, and hands each node its recomputed tensor.  Works with
  ``autograd.grad``, inputs that do not require grad, keyword arguments,
  ``context_fn``, the determinism check and early stop.
* ``use_reentrant=True``: a custom Function whose forward runs the block
  under ``no_grad`` and whose backward re-runs it with grad enabled on
  detached inputs and calls ``autograd.backward`` inside backward.  As in
  PyTorch it needs a plain ``backward()`` (not ``autograd.grad`` or
  ``inputs=``) and at least one input that requires grad.

Autocast state is not recorded for the recomputation (run the backward pass
under the same autocast context if the block relies on it).

Example::

    >>> import fabric
    >>> from fabric.utils.checkpoint import checkpoint
    >>> x = fabric.tensor([1.0, 2.0], requires_grad=True)
    >>> y = checkpoint(lambda t: (t.sin() * t).sum(), x, use_reentrant=False)
    >>> y.backward(); x.grad
    tensor([1.3818, 0.0770])
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any

from .. import autograd
from .._tensor import Tensor
from ..autograd import Function
from ..autograd.engine import _GraphTask

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "detach_variable",
           "noop_context_fn", "set_checkpoint_early_stop", "set_checkpoint_debug_enabled"]

_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


class CheckpointError(RuntimeError):
    """Raised when the recomputation does not reproduce the forward pass."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Detached copies of the tensors in tuple ``inputs`` keeping their ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


class _Globals:
    early_stop: bool | None = None   # set_checkpoint_early_stop overrides checkpoint's early_stop


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Within this context, non-reentrant checkpoints stop recomputing as
    soon as every needed tensor is recomputed (``True``) or always run the
    whole function (``False``), whatever ``early_stop`` they are given."""
    prev = _Globals.early_stop
    _Globals.early_stop = enable
    try:
        yield
    finally:
        _Globals.early_stop = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Accepted for compatibility: fabric's checkpoint errors carry no extra debug trace."""
    yield


# --- RNG state --------------------------------------------------------------

def _rng_state(args):
    """The CPU generator state and that of every CUDA device an argument lives on."""
    from .. import random as _random

    cuda = sorted({a.device.index or 0 for a in args if isinstance(a, Tensor) and a.device.type == "cuda"})
    cuda_states = []
    if cuda:
        from .. import cuda as _cuda

        cuda_states = [(i, _cuda.get_rng_state(i)) for i in cuda]
    return _random.get_rng_state(), cuda_states


def _set_rng_state(state):
    from .. import random as _random

    cpu, cuda_states = state
    _random.set_rng_state(cpu)
    if cuda_states:
        from .. import cuda as _cuda

        for i, s in cuda_states:
            _cuda.set_rng_state(s, i)


@contextlib.contextmanager
def _rng_restored(state):
    """Run the block with the generators at ``state``, then put back the current state."""
    if state is None:
        yield
        return
    current = _current_like(state)
    _set_rng_state(state)
    try:
        yield
    finally:
        _set_rng_state(current)


def _current_like(state):
    from .. import random as _random

    if not state[1]:
        return _random.get_rng_state(), []
    from .. import cuda as _cuda

    return _random.get_rng_state(), [(i, _cuda.get_rng_state(i)) for i, _ in state[1]]


# --- use_reentrant=True -------------------------------------------------------

class CheckpointFunction(Function):
    """The reentrant variant (see module docstring)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng = _rng_state(args) if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        return run_function(*args)  # apply() runs forward under no_grad

    @staticmethod
    def backward(ctx, *grads):
        task = _GraphTask.current
        if task is not None and not task[3]:
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
                "`inputs` parameter to .backward(). To resolve this error, you can either set "
                "use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with _rng_restored(ctx.rng), autograd.enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd.backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, None) + tuple(d.grad if isinstance(d, Tensor) else None for d in detached)


# --- use_reentrant=False ------------------------------------------------------

class _StopRecomputation(Exception):
    pass


def _metadata(t):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


class _Frame:
    """One checkpointed call: what its forward saved (as metadata) and, once
    backward needs it, what the recomputation saved."""

    def __init__(self, fn, args, kwargs, rng, recompute_ctx, metadata_fn, early_stop):
        self.fn, self.rng = fn, rng
        self.args: Any = args
        self.kwargs: Any = kwargs
        self.recompute_ctx, self.metadata_fn, self.early_stop = recompute_ctx, metadata_fn, early_stop
        self.forward_meta: list = []
        self.recomputed: dict | None = None

    def pack(self, t):
        self.forward_meta.append(self.metadata_fn(t))
        return len(self.forward_meta) - 1

    def unpack(self, idx):
        if self.recomputed is None:
            self._recompute()
        assert self.recomputed is not None
        if idx not in self.recomputed:
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. "
                "If you are calling ctx.saved_tensors in backward, make sure to do so only once. Otherwise please "
                "open an issue with details on your use case.")
        return self.recomputed[idx]

    def _recompute(self):
        from ..autograd.graph import saved_tensors_hooks

        store: dict = {}
        n = len(self.forward_meta)

        def rpack(t):
            k = len(store)
            if k >= n:
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                      "than during the original forward pass.\n" + _DEBUG_TIP)
            store[k] = t
            if self.early_stop and k == n - 1:
                raise _StopRecomputation
            return k

        try:
            with _rng_restored(self.rng), autograd.enable_grad(), self.recompute_ctx, \
                    saved_tensors_hooks(rpack, store.__getitem__):
                self.fn(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass
        if len(store) != n:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {n}\nNumber of tensors saved during "
                f"recomputation: {len(store)}.\n" + _DEBUG_TIP)
        different = [(k, self.forward_meta[k], self.metadata_fn(t)) for k, t in store.items()
                     if self.metadata_fn(t) != self.forward_meta[k]]
        if different:
            detail = "".join(f"tensor at position {k}:\nsaved metadata: {a}\nrecomputed metadata: {b}\n"
                             for k, a, b in different)
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                  f"different metadata than during the forward pass.\n{detail}.\n" + _DEBUG_TIP)
        self.recomputed = store
        self.args = self.kwargs = None  # the frame no longer keeps the inputs alive


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, early_stop, args, kwargs):
    from ..autograd.graph import saved_tensors_hooks

    checks: dict[str, Any] = {"default": _metadata, "none": lambda _: None}
    if determinism_check not in checks:
        raise ValueError(f"determinism_check should be one of {list(checks)}, but got {determinism_check}")
    forward_ctx, recompute_ctx = context_fn()
    rng = _rng_state(args) if preserve else None
    if _Globals.early_stop is not None:
        early_stop = _Globals.early_stop
    frame = _Frame(function, args, kwargs, rng, recompute_ctx, checks[determinism_check], early_stop)
    with forward_ctx, saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


# --- entry points ------------------------------------------------------------

def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its activations; they
    are recomputed in backward (see the module docstring for the variants).
    ``preserve_rng_state=True`` (a keyword) replays the forward's random
    numbers in the recomputation.  ``debug`` is accepted and has no effect.

    Example::

        >>> import fabric
        >>> lin = fabric.nn.Linear(3, 3)
        >>> x = fabric.randn(2, 3, requires_grad=True)
        >>> out = fabric.utils.checkpoint.checkpoint(lin, x, use_reentrant=False)
        >>> out.sum().backward(); x.grad.shape
        fabric.Size([2, 3])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, early_stop, args,
                                         kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list or an ``nn.Sequential``) in ``segments``
    chunks, checkpointing every chunk but the last.

    Example::

        >>> import fabric
        >>> seq = fabric.nn.Sequential(fabric.nn.Linear(2, 2), fabric.nn.ReLU(), fabric.nn.Linear(2, 1))
        >>> x = fabric.randn(4, 2, requires_grad=True)
        >>> y = fabric.utils.checkpoint.checkpoint_sequential(seq, 2, x, use_reentrant=False)
        >>> y.shape
        fabric.Size([4, 1])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can "
            "pass use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run_function(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
