"""PyTorch's default DDP communication hooks and the bucket they receive.

A hook is ``hook(state, bucket) -> Future`` whose value is the bucket's
reduced flat gradient tensor; register one with
``DistributedDataParallel.register_comm_hook(state, hook)``.  DDP's own
reduction is :func:`allreduce_hook`.

Example (run in each rank)::

    from fabric.distributed.algorithms.ddp_comm_hooks import default_hooks
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
"""
from __future__ import annotations

from .... import distributed as dist
from ...._dtype import float16
from ...._tensor import Tensor

__all__ = ["GradBucket", "allreduce_hook", "fp16_compress_hook"]


class GradBucket:
    """The gradients of one DDP bucket, flattened into one tensor (``torch.distributed.GradBucket``)."""

    def __init__(self, index: int, buffer: Tensor, is_last: bool, params, offsets):
        self._index, self._buffer, self._is_last = index, buffer, is_last
        self._params, self._offsets = list(params), list(offsets)

    def index(self) -> int:
        return self._index

    def buffer(self) -> Tensor:
        return self._buffer

    def set_buffer(self, buffer: Tensor) -> None:
        self._buffer = buffer

    def is_last(self) -> bool:
        return self._is_last

    def parameters(self) -> list:
        return list(self._params)

    def gradients(self) -> list:
        """Views of the flat buffer in each parameter's shape."""
        flat = self._buffer
        return [flat[a:b].view(p.shape) for p, a, b in zip(self._params, self._offsets, self._offsets[1:])]


def _group(process_group):
    return process_group if process_group is not None else dist.group.WORLD


def allreduce_hook(process_group, bucket: GradBucket):
    """Divide by the world size, then all-reduce SUM (DDP's default behaviour)."""
    group = _group(process_group)
    tensor = bucket.buffer()
    tensor.div_(group.size())
    work = dist.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def fp16_compress_hook(process_group, bucket: GradBucket):
    """All-reduce the bucket in float16 (half the traffic), then cast back to the bucket's dtype."""
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(float16).div_(group.size())
    work = dist.all_reduce(compressed, group=group, async_op=True)

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer

    return work.get_future().then(decompress)
