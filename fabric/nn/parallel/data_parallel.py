"""``DataParallel``: PyTorch's single-process data-parallel wrapper.

On a machine without a usable GPU PyTorch's ``DataParallel`` just wraps the
module: ``forward`` calls it directly, ``.module`` is the wrapped module and
``state_dict()`` keys carry the ``module.`` prefix.  fabric does the same, and
with exactly one CUDA device it moves the module there and runs it on inputs
moved to that device, as PyTorch does.  Splitting a batch over several GPUs in
one process (replicating the module per device, scatter/gather) is not
implemented: asking for more than one device raises NotImplementedError — use
:class:`DistributedDataParallel` (one process per device) instead.

Example::

    >>> import fabric
    >>> model = fabric.nn.DataParallel(fabric.nn.Linear(2, 1))
    >>> list(model.state_dict())
    ['module.weight', 'module.bias']
    >>> model(fabric.ones(3, 2)).shape
    fabric.Size([3, 1])
"""
from __future__ import annotations

from itertools import chain

from ... import cuda
from ..._device import device as _device
from ..._tensor import Tensor
from ..modules.module import Module

__all__ = ["DataParallel"]


def _to_device(obj, dev):
    """``obj`` with every Tensor inside (tuples, lists, dicts, namedtuples) moved to ``dev``."""
    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o, dev) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, dev) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, dev)) for k, v in obj.items())
    return obj


class DataParallel(Module):
    """Wrap ``module`` for single-process data parallelism (see the module
    docstring for what runs where).

    Example::

        >>> import fabric
        >>> dp = fabric.nn.DataParallel(fabric.nn.Linear(2, 1))
        >>> isinstance(dp.module, fabric.nn.Linear)
        True
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0) -> None:
        super().__init__()
        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        device_ids = [cuda._index(d) for d in device_ids]
        if len(device_ids) > 1:
            raise NotImplementedError(
                f"fabric.nn.DataParallel over several GPUs (device_ids={device_ids}) is not implemented: it needs "
                "single-process multi-GPU replication (replicate/scatter/parallel_apply/gather). Use "
                "fabric.nn.parallel.DistributedDataParallel with one process per GPU, or DataParallel with one "
                "device id.")
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = device_ids
        self.output_device = cuda._index(output_device)
        self.src_device_obj = _device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        return self.module(*_to_device(inputs, self.src_device_obj), **_to_device(kwargs, self.src_device_obj))
