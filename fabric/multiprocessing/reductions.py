"""How tensors cross process boundaries: as handles to shared memory.

:func:`init_reductions` registers :func:`reduce_tensor` with
``multiprocessing``'s pickler (the one ``Queue``, ``SimpleQueue``, ``Pipe``
and spawn/forkserver ``Process`` arguments use; ordinary ``pickle`` and
``fabric.save`` are not affected). A CPU tensor then travels as the file
descriptor of its shared-memory segment plus its shape, strides, offset and
dtype; the receiver maps the same memory, so writes on either side are seen
by the other (this is how Hogwild training shares a model):

* a tensor in a shared segment (``share_memory_()``, ``Module.share_memory()``,
  or one received this way) is sent as it is;
* any other CPU tensor is first moved into shared memory, as PyTorch does
  (the sender's tensor becomes shared); a view, or a DataLoader batch, is
  copied into a new segment instead (the sender's tensor is unchanged);
* a tensor that requires grad and is not a leaf is refused with PyTorch's
  error; ``requires_grad`` travels, ``.grad`` does not;
* CUDA tensors travel as copies (fabric has no CUDA IPC handles yet).

The descriptor is passed as multiprocessing passes any descriptor
(``SCM_RIGHTS`` through the sender's resource sharer, or the spawned child's
inherited descriptors): as in PyTorch's ``file_descriptor`` strategy, the
sender must stay alive until the receiver has taken a queued tensor.
Segments have no name, so nothing is left behind when processes end.

Example::

    >>> import fabric, multiprocessing
    >>> a, b = multiprocessing.Pipe()
    >>> t = fabric.zeros(3)
    >>> a.send(t); u = b.recv()
    >>> u += 1
    >>> t
    tensor([1., 1., 1.])
"""
from __future__ import annotations

from multiprocessing.context import get_spawning_popen
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from .. import _shared_memory as shared_memory
from .._tensor import Tensor

__all__ = ["reduce_tensor", "rebuild_tensor", "init_reductions", "get_sharing_strategy", "set_sharing_strategy",
           "get_all_sharing_strategies"]

_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set:
    """The strategies fabric supports: ``{'file_descriptor'}``."""
    return {"file_descriptor"}


def get_sharing_strategy() -> str:
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Only ``'file_descriptor'``: fabric's segments are unnamed, so the
    ``'file_system'`` strategy (named files) is not offered."""
    if new_strategy not in get_all_sharing_strategies():
        raise AssertionError(f"sharing strategy {new_strategy!r} is not supported by fabric "
                             f"(supported: {sorted(get_all_sharing_strategies())})")


def _shared_array(t: Tensor):
    """The tensor's array in a shared segment (moving or copying it there)."""
    arr = t._data
    if shared_memory.segment_of(arr) is None:
        if t._base is None and not shared_memory.in_shared_mapping(arr):
            t.share_memory_()
            arr = t._data
        else:  # a view, or already in a mapping without a descriptor: copy, keeping the order of strides
            segment = shared_memory.new_segment(arr.nbytes)
            copy = np.ndarray(arr.shape, arr.dtype, buffer=segment, strides=np.empty_like(arr).strides)
            copy[...] = arr
            arr = copy
    return arr


def reduce_tensor(t: Tensor):
    """``multiprocessing``'s pickling of a Tensor (see the module docstring)."""
    if t._requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does "
                           "not support crossing process boundaries.  If you just want to transfer the data, call "
                           "detach() on the tensor before serializing (e.g., putting it on the queue).")
    if t._data.__class__ is not np.ndarray or not shared_memory.available:
        return t.__reduce_ex__(5)
    arr = _shared_array(t)
    found = shared_memory.segment_of(arr)
    assert found is not None  # _shared_array put it in a segment
    segment, offset = found
    popen = get_spawning_popen()
    if popen is not None:
        # a spawn/forkserver launch passes the descriptor itself, later: the segment (a copy may have no other
        # owner) must stay open until then, so the Process's Popen keeps it
        popen.__dict__.setdefault("_fabric_segments", []).append(segment)
    state = dict(t.__dict__) if hasattr(t, "__dict__") else None
    return rebuild_tensor, (type(t), DupFd(segment.fd), segment.size, offset, arr.shape, arr.strides, arr.dtype,
                            t._requires_grad, state)


def rebuild_tensor(cls, handle, size, offset, shape, strides, dtype, requires_grad, state=None):
    """The receiving side: map the segment and view the tensor's elements in it."""
    segment = shared_memory.attach(handle.detach(), size)
    arr = np.ndarray(shape, dtype, buffer=segment, offset=offset, strides=strides)
    t = Tensor._make(arr, False)
    if cls is not Tensor:
        t = cls(t, requires_grad)
        if state:
            t.__dict__.update(state)
    elif requires_grad:
        t._requires_grad = True
    return t


def _tensor_types():
    seen, todo = [], [Tensor]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


def init_reductions() -> None:
    """Register :func:`reduce_tensor` for Tensor and its subclasses known now (``nn.Parameter`` ...)."""
    from ..nn import parameter  # noqa: F401  (Parameter is a subclass to register)

    for cls in _tensor_types():
        ForkingPickler.register(cls, reduce_tensor)
