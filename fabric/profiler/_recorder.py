"""The profiler's observer: turns dispatches into :class:`FunctionEvent` s.

It is registered with :mod:`fabric.autograd.observe` while a profile is
recording.  Each op, backward node and region becomes an event with its CPU
interval on its thread's stack (the enclosing range is its parent); with
``record_shapes`` the input shapes and dtypes, with ``profile_memory`` the
bytes its outputs allocated (CPU arrays that own their memory; on GPU the
change of CuPy's pool), with ``with_stack`` the caller's Python frames, and
for ops on CuPy arrays, when CUDA is profiled, the GPU time between two
CuPy events recorded on the current stream around the op.
"""
from __future__ import annotations

import os
import threading
import time
import traceback

import numpy as np

from ..autograd.observe import Observer, event_name
from ._events import FunctionEvent

_FABRIC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# PyTorch's "Input type" names (C++ scalar types)
_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
               "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
               "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
               "complex128": "c10::complex<double>"}


def _shape_and_type(a, tensor_cls):
    if isinstance(a, tensor_cls):
        d = a._data
        return list(d.shape), _TYPE_NAMES.get(d.dtype.name, d.dtype.name)
    if isinstance(a, (bool, int, float, complex)):
        return [], "Scalar"
    if isinstance(a, (list, tuple)) and a and all(isinstance(t, tensor_cls) for t in a):
        return [list(t._data.shape) for t in a], "TensorList"
    return [], ""


def _arrays_of(result, tensor_cls):
    if isinstance(result, tensor_cls):
        yield result._data
    elif isinstance(result, (tuple, list)):
        for r in result:
            if isinstance(r, tensor_cls):
                yield r._data


def _on_gpu(args, tensor_cls) -> bool:
    return any(isinstance(a, tensor_cls) and a._data.__class__ is not np.ndarray for a in args)


def _user_stack():
    """The caller's frames outside fabric, innermost first, as PyTorch shows them."""
    frames = traceback.extract_stack()[:-3]
    out = [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)
           if not os.path.abspath(f.filename).startswith(_FABRIC_DIR)]
    return out


class _Open:
    """An event being recorded, with what ``end`` needs."""

    __slots__ = ("event", "t0", "cuda", "pool0", "child_outs", "inner")

    def __init__(self, event, t0):
        self.event = event
        self.t0 = t0
        self.cuda = None
        self.pool0 = None
        self.child_outs = None
        self.inner = None


class Recorder(Observer):
    """Collects events while registered; :meth:`events` returns them in start order."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, use_cuda=False):
        from .._tensor import Tensor

        self._tensor = Tensor
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.use_cuda = use_cuda
        self._tls = threading.local()
        self._lock = threading.Lock()
        self._events: list = []
        self._cuda_pending: list = []  # (event, start, end) CuPy events read once the profile stops
        self._next_id = 0
        self.start_ns = time.perf_counter_ns()
        self.start_wall_ns = time.time_ns()

    def _now_us(self) -> float:
        return (time.perf_counter_ns() - self.start_ns) / 1e3

    def _stack(self) -> list:
        st = getattr(self._tls, "stack", None)
        if st is None:
            st = self._tls.stack = []
        return st

    def _new_event(self, name, kind, args=None, seq=-1):
        shapes = types = None
        if self.record_shapes:
            shapes, types = [], []
        if self.record_shapes and args:
            pairs = [_shape_and_type(a, self._tensor) for a in args]
            shapes = [p[0] for p in pairs]
            types = [p[1] for p in pairs]
        stack = _user_stack() if self.with_stack else None
        with self._lock:
            eid = self._next_id
            self._next_id += 1
        ev = FunctionEvent(eid, name, threading.get_native_id(), 0.0, kind, shapes, types, stack, seq)
        st = self._stack()
        if st:
            ev.cpu_parent = st[-1].event
        return ev

    # --- Observer ---------------------------------------------------------------------------------
    def begin(self, kind, what, args):
        if kind == "backward":
            name = event_name(kind, what)
            outer = self.begin_range(f"autograd::engine::evaluate_function: {name}", "cpu_op")
            op = self._push(self._new_event(name, "cpu_op",
                                            [g for g in args if g is not None], getattr(what, "_seq", -1)))
            op.inner = outer
            return op
        if kind == "op":
            op = self._push(self._new_event(event_name(kind, what), "cpu_op", args))
            if self.profile_memory:  # an output that is an input array (in-place ops) is not new memory
                op.child_outs = {id(a._data) for a in args if isinstance(a, self._tensor)}
            if (self.use_cuda or self.profile_memory) and _on_gpu(args, self._tensor):
                self._start_gpu(op)
            return op
        return self.begin_range(str(what), "user_annotation" if kind == "region" else kind)

    def end(self, token, result):
        if token is None:
            return
        self._pop(token, result)
        if token.inner is not None:
            self._pop(token.inner, None)

    # --- ranges (record_function, optimizer steps) ------------------------------------------------
    def begin_range(self, name, kind="user_annotation"):
        return self._push(self._new_event(name, kind))

    def end_range(self, token):
        self._pop(token, None)

    # --- internals ------------------------------------------------------------------------------
    def _push(self, ev):
        op = _Open(ev, 0)
        self._stack().append(op)
        ev.start_us = self._now_us()
        op.t0 = ev.start_us
        return op

    def _pop(self, op, result):
        ev = op.event
        ev.end_us = self._now_us()
        st = self._stack()
        # close ranges left open by an exception inside this one (a step hook that never ran)
        while st and st[-1] is not op:
            inner = st.pop()
            inner.event.end_us = ev.end_us
            self._finish(inner, None)
        if st:
            st.pop()
        self._finish(op, result)

    def _finish(self, op, result):
        ev = op.event
        if op.cuda is not None:
            import cupy

            end = cupy.cuda.Event()
            end.record()
            self._cuda_pending.append((ev, op.cuda, end))
        if self.profile_memory and result is not None:
            self._count_memory(op, result)
        if op.pool0 is not None:
            import cupy

            delta = cupy.get_default_memory_pool().used_bytes() - op.pool0
            ev.self_device_memory_usage = delta - sum(c.device_memory_usage for c in ev.cpu_children)
        parent = ev.cpu_parent
        with self._lock:
            self._events.append(ev)
        if parent is not None:
            parent.cpu_children.append(ev)
            st = self._stack()
            if st and st[-1].event is parent and result is not None:
                outer = st[-1]
                if outer.child_outs is None:
                    outer.child_outs = set()
                outer.child_outs.update(id(a) for a in _arrays_of(result, self._tensor))

    def _count_memory(self, op, result):
        """Bytes of new CPU arrays among the outputs (views and arrays a
        nested op already counted are not new)."""
        seen = op.child_outs or ()
        total = 0
        for arr in _arrays_of(result, self._tensor):
            if arr.__class__ is np.ndarray and arr.base is None and id(arr) not in seen:
                total += arr.nbytes
        op.event.self_cpu_memory_usage = total

    def _start_gpu(self, op):
        import cupy

        if self.profile_memory:
            op.pool0 = cupy.get_default_memory_pool().used_bytes()
        if self.use_cuda:
            start = cupy.cuda.Event()
            start.record()
            op.cuda = start
            op.event.device_type = "CUDA"

    def events(self) -> list:
        """All finished events in start order, with CUDA times filled in."""
        if self._cuda_pending:
            import cupy

            pending, self._cuda_pending = self._cuda_pending, []
            pending[-1][2].synchronize()
            first_ev, first_start, _ = pending[0]
            for ev, start, end in pending:
                ev.device_measured = cupy.cuda.get_elapsed_time(start, end) * 1e3
                ev.device_start_us = first_ev.start_us + cupy.cuda.get_elapsed_time(first_start, start) * 1e3
        with self._lock:
            return sorted(self._events, key=lambda e: (e.start_us, e.id))
