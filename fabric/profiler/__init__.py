"""``fabric.profiler``: PyTorch's profiler API over fabric's dispatch hook.

Every op (forward, and each backward node as ``autograd::engine::evaluate_function:
<Node>`` around ``<Node>``), optimizer step (``Optimizer.step#SGD.step``),
DataLoader fetch and ``record_function`` block is recorded with its name,
input shapes (``record_shapes``), self and total CPU time, memory its outputs
allocated (``profile_memory``), the Python stack (``with_stack``) and, for
ops on CuPy arrays with ``ProfilerActivity.CUDA``, the GPU time measured
between CuPy events.  Nothing is recorded, and nothing costs, outside a
profile (see :mod:`fabric.autograd.observe`).

Example::

    >>> import fabric
    >>> from fabric.profiler import profile, record_function, ProfilerActivity
    >>> x = fabric.randn(8, 8, requires_grad=True)
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     with record_function("model"):
    ...         y = (x @ x).relu().sum()
    ...     y.backward()
    >>> sorted({e.key for e in prof.key_averages()})[:3]
    ['MmBackward0', 'ReluBackward0', 'SumBackward0']
    >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))  # doctest: +SKIP
"""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable

from ..autograd import observe
from ._events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent", "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    @property
    def name(self) -> str:  # PyTorch's enum prints as ProfilerActivity.CPU
        return self._name_


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """CPU always; CUDA where CuPy sees a device."""
    from .. import cuda

    acts = {ProfilerActivity.CPU}
    if cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The action for each step: skip ``skip_first`` steps, then cycles of
    ``wait`` idle, ``warmup`` recorded-and-dropped and ``active`` recorded
    steps (the last one saves the trace), ``repeat`` times (0: forever).
    ``skip_first_wait`` skips the first cycle's wait.

    Example::

        >>> s = schedule(wait=1, warmup=1, active=2)
        >>> [s(i).name for i in range(5)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """An ``on_trace_ready`` that writes ``<worker>.<time>.pt.trace.json[.gz]``
    into ``dir_name`` (TensorBoard's profile plugin and Perfetto read it)."""
    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler


class _Session:
    """What the new and the legacy profile share: a recorder, its events, summaries."""

    def __init__(self, record_shapes, profile_memory, with_stack, use_cuda):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.use_cuda = use_cuda
        self._recorder = None
        self._step_hooks = ()
        self._events = None
        self._trace_start_ns = 0

    def _start_recording(self) -> None:
        from ..optim import optimizer
        from ._recorder import Recorder

        rec = self._recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack, self.use_cuda)
        open_steps = {}

        def pre(opt, args, kwargs):
            name = type(opt).__name__
            open_steps[id(opt)] = rec.begin_range(f"Optimizer.step#{name}.step", "python_function")

        def post(opt, args, kwargs):
            token = open_steps.pop(id(opt), None)
            if token is not None:
                rec.end_range(token)

        self._step_hooks = (optimizer.register_optimizer_step_pre_hook(pre),
                            optimizer.register_optimizer_step_post_hook(post))
        observe.add_observer(rec)

    def _stop_recording(self, keep: bool) -> None:
        rec = self._recorder
        if rec is None:
            return
        observe.remove_observer(rec)
        for h in self._step_hooks:
            h.remove()
        self._step_hooks = ()
        self._recorder = None
        if keep:
            self._events = EventList(rec.events(), use_device="cuda" if self.use_cuda else None,
                                     profile_memory=self.profile_memory, trace_start_ns=rec.start_wall_ns)
            self._trace_start_ns = rec.start_wall_ns

    def events(self) -> EventList:
        """Every recorded event (``FunctionEvent``), in start order."""
        if self._events is None:
            raise AssertionError("Profiler didn't finish running")
        return self._events

    function_events = property(events)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events grouped by name (and input shapes, or the top ``n`` stack frames)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        return self.events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total

    def export_chrome_trace(self, path: str) -> None:
        """Write a Chrome/Perfetto trace (JSON; gzipped when ``path`` ends in ``.gz``)."""
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write ``frame;frame;...;op value`` lines (flame graph input); needs ``with_stack=True``."""
        if metric not in ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total"):
            raise ValueError(f"metric should be one of: self_cpu_time_total, self_cuda_time_total, got {metric}")
        attr = metric.replace("cuda", "device")
        with open(path, "w") as f:
            for e in self.events():
                if e.stack and getattr(e, attr) > 0:
                    frames = ";".join(reversed(e.stack))
                    f.write(f"{frames};{e.name} {int(getattr(e, attr))}\n")


class profile(_Session):
    """``torch.profiler.profile``: a context manager (or ``start()``/``stop()``)
    recording fabric's ops; ``step()`` advances ``schedule`` and
    ``on_trace_ready(prof)`` runs at the end of each active span."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None, on_trace_ready: Callable | None = None,
                 record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        acts = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            warnings.warn("The use_cuda parameter is deprecated, use activities instead", FutureWarning,
                          stacklevel=2)
            acts.add(ProfilerActivity.CUDA)
        super().__init__(record_shapes, profile_memory, with_stack, ProfilerActivity.CUDA in acts)
        self.activities = acts
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None  # ProfilerStep#N ranges, as PyTorch adds them
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._step_range = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> None:
        self.step_num = 0
        self.current_action = self.schedule(0)
        if self.current_action is not ProfilerAction.NONE:
            self._start_recording()
            self._open_step()

    def stop(self) -> None:
        action = self.current_action
        self._close_step()
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._finish()
        else:
            self._stop_recording(keep=False)
        self.current_action = ProfilerAction.NONE

    def step(self) -> None:
        """Mark the end of a training step; moves through ``schedule``."""
        prev = self.current_action
        self.step_num += 1
        new = self.current_action = self.schedule(self.step_num)
        self._close_step()
        if prev is ProfilerAction.RECORD_AND_SAVE or (prev is ProfilerAction.RECORD and new is ProfilerAction.NONE):
            self._finish()
        elif prev is ProfilerAction.WARMUP and new is not ProfilerAction.WARMUP:
            self._stop_recording(keep=False)  # warm-up events are dropped
        if new is not ProfilerAction.NONE and self._recorder is None:
            self._start_recording()
        if self._recorder is not None:
            self._open_step()

    def _open_step(self) -> None:
        if self.record_steps:
            self._step_range = self._recorder.begin_range(f"ProfilerStep#{self.step_num}")

    def _close_step(self) -> None:
        if self._step_range is not None and self._recorder is not None:
            self._recorder.end_range(self._step_range)
        self._step_range = None

    def _finish(self) -> None:
        self._stop_recording(keep=True)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)


class record_function:
    """Label a block (or, as a decorator, a function) in the profile; free
    when nothing profiles.

    Example::

        >>> with record_function("my_block"):
        ...     pass
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._opened = None

    def __enter__(self):
        d = observe.hook.observer
        if d is not None:
            self._opened = d.open("region", self.name, ())
        return self

    def __exit__(self, *exc):
        opened, self._opened = self._opened, None
        if opened is not None:
            for o, token in reversed(opened):
                o.end(token, None)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper

