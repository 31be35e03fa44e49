"""``fabric.autograd.profiler``: PyTorch's legacy profiler API on top of
:mod:`fabric.profiler` (one recorder serves both).

Example::

    >>> import fabric
    >>> x = fabric.ones(3, requires_grad=True)
    >>> with fabric.autograd.profiler.profile(record_shapes=True) as prof:
    ...     y = (x * 2).sum()
    >>> [e.name for e in prof.function_events]
    ['aten::mul', 'aten::sum']
"""
from __future__ import annotations

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, _Session, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile(_Session):
    """``torch.autograd.profiler.profile``: records while the block runs;
    ``table()``, ``key_averages()``, ``export_chrome_trace()`` afterwards."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None):
        super().__init__(record_shapes, profile_memory, with_stack, bool(use_cuda) or use_device == "cuda")
        self.enabled = enabled
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_recording()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop_recording(keep=True)
        return False

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False) -> str:
        return self.events().table(sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                                   max_name_column_width=max_name_column_width,
                                   max_shapes_column_width=max_shapes_column_width, header=header,
                                   top_level_events_only=top_level_events_only)

    def __str__(self) -> str:
        return self.table()
