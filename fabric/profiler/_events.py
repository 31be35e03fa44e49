"""Profiler events, their averages, and the summary table in PyTorch's layout.

A :class:`FunctionEvent` is one recorded range (an op, a backward node, a
``record_function`` block, an optimizer step, a DataLoader fetch) with its
CPU interval, children, input shapes, memory and, on GPU, CUDA time.
``EventList.key_averages()`` groups them into :class:`FunctionEventAvg`
rows and ``table()`` prints them the way ``torch.profiler`` does::

    ----------  ------------  ------------  ------------  ...
          Name    Self CPU %      Self CPU   CPU total %  ...
    ----------  ------------  ------------  ------------  ...
     aten::mul        61.22%     863.064us        92.06%  ...
"""
from __future__ import annotations

import json
import os

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList"]

_SORT_KEYS = ("cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total", "device_time_total",
              "cpu_memory_usage", "cuda_memory_usage", "device_memory_usage", "self_cpu_memory_usage",
              "self_cuda_memory_usage", "self_device_memory_usage", "self_cpu_time_total", "self_cuda_time_total",
              "self_device_time_total", "count")


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us: float, total: float) -> str:
    if total == 0:
        return "NaN"
    return f"{us * 100.0 / total:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _Times:
    """Derived time fields shared by events and averages (microseconds)."""

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self) -> float:
        return self.device_time_total / max(self.count, 1)

    cuda_time = device_time

    @property
    def cuda_time_total(self) -> float:
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> float:
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self) -> int:
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.self_device_memory_usage

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    device_time_str = property(lambda self: _format_time(self.device_time))
    device_time_total_str = property(lambda self: _format_time(self.device_time_total))
    self_device_time_total_str = property(lambda self: _format_time(self.self_device_time_total))


class FunctionEvent(_Times):
    """One recorded range.  Times are microseconds since the profiler started.

    ``kind`` is ``"cpu_op"`` (an op or a backward node), ``"user_annotation"``
    (``record_function``) or ``"python_function"`` (optimizer steps,
    DataLoader fetches), as in PyTorch's chrome traces.
    """

    count = 1

    def __init__(self, id, name, thread, start_us, kind="cpu_op", input_shapes=None, input_types=None, stack=None,
                 sequence_nr=-1, device_type="CPU"):
        self.id = id
        self.name = self.key = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = start_us
        self.kind = kind
        self.input_shapes = input_shapes
        self.input_types = input_types
        self.stack = stack or []
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.cpu_children: list = []
        self.cpu_parent = None
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.device_measured = None    # CUDA time measured around this op (CuPy events), microseconds
        self.device_start_us = None    # when its GPU work began, on the CPU clock
        self.is_async = False
        self.node_id = -1

    @property
    def time_range(self):
        return (self.start_us, self.end_us)

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        """CUDA time measured around this op, else the sum of its children's."""
        if self.device_measured is not None:
            return self.device_measured
        return sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self) -> float:
        if self.device_measured is None:
            return 0.0
        return max(self.device_measured - sum(c.device_time_total for c in self.cpu_children), 0.0)

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def device_memory_usage(self) -> int:
        return self.self_device_memory_usage + sum(c.device_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_Times):
    """The sum of events that share a key (name, and shapes or stack when grouped by them)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.input_shapes = None
        self.stack = []
        self.cpu_parent = None
        self.is_async = False
        self.node_id = -1

    def add(self, other) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.cpu_parent = other.cpu_parent
        self.count += other.count
        for f in ("cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
                  "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} self_cuda_time={self.self_device_time_total_str} "
                f"cuda_time={self.device_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} cuda_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of events with PyTorch's summaries: ``key_averages``, ``table``,
    ``total_average``, ``export_chrome_trace``."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False, trace_start_ns=0):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._trace_start_ns = trace_start_ns

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        groups: dict = {}
        for e in self:
            key = (e.key,)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            groups.setdefault(key, FunctionEventAvg()).add(e)
        return EventList(groups.values(), use_device=self._use_device, profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None) -> str:
        return _build_table(self, sort_by, row_limit, max_src_column_width, max_name_column_width,
                            max_shapes_column_width, header, top_level_events_only, time_unit,
                            self._use_device, self._profile_memory)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        _write_chrome_trace(self, path, self._trace_start_ns, self._profile_memory)


def _time_str(us, unit):
    if unit == "s":
        return f"{us / 1e6:.3f}s"
    if unit == "ms":
        return f"{us / 1e3:.3f}ms"
    if unit == "us":
        return f"{us:.3f}us"
    return _format_time(us)


def _build_table(events, sort_by, row_limit, max_src_width, max_name_width, max_shapes_width, header,
                 top_level_only, time_unit, use_device, profile_memory) -> str:
    """PyTorch's ``EventList.table`` layout: right-aligned 12-wide columns
    two spaces apart, a dashed rule above and below the header and at the
    end, then the self CPU (and CUDA) time totals."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device")
        if attr not in _SORT_KEYS and not hasattr(events[0], attr):
            raise AttributeError(f"'FunctionEventAvg' object has no attribute '{attr}'")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    dev = (use_device or "cuda").upper()

    name_w = max(len(e.key) for e in events) + 4
    if max_name_width is not None:
        name_w = min(name_w, max_name_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if has_device_mem:
            headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    widths = [(name_w, ">")] + [(12, ">")] * (len(headers) - 1)
    if has_shapes:
        shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
        if max_shapes_width is not None:
            shapes_w = min(shapes_w, max_shapes_width)
        headers.append("Input Shapes")
        widths.append((shapes_w, ">"))
    if stacks:
        src_w = max(len(s) for st in stacks for s in st) + 4
        if max_src_width is not None:
            src_w = min(src_w, max_src_width)
        headers.append("Source Location")
        widths.append((src_w, "<"))
    row_format = "".join("{: " + align + str(w) + "}  " for w, align in widths)
    rule = "".join("-" * w + "  " for w, _ in widths)
    line_length = sum(w + 2 for w, _ in widths) - 2

    total_cpu = sum(e.self_cpu_time_total for e in events)
    total_dev = sum(e.self_device_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [rule, row_format.format(*headers), rule]

    def trim(path, width):
        if len(path) > width:
            path = path[len(path) - width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_width is not None and len(name) >= max_name_width - 3:
            name = name[:max_name_width - 3] + "..."
        row = [name, _format_share(e.self_cpu_time_total, total_cpu), _time_str(e.self_cpu_time_total, time_unit),
               _format_share(e.cpu_time_total, total_cpu), _time_str(e.cpu_time_total, time_unit),
               _time_str(e.cpu_time, time_unit)]
        if has_device_time:
            row += [_time_str(e.self_device_time_total, time_unit), _format_share(e.self_device_time_total, total_dev),
                    _time_str(e.device_time_total, time_unit), _time_str(e.device_time, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                row += [_format_memory(e.device_memory_usage), _format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if stacks:
            row.append(trim(e.stack[0], src_w) if e.stack else "")
        out.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                out.append(row_format.format(*(blank + [trim(entry, src_w)])))
            out.append(row_format.format(*(blank + [""])))
    out.append(rule)
    out.append(f"Self CPU time total: {_time_str(total_cpu, time_unit)}")
    if has_device_time:
        out.append(f"Self {dev} time total: {_time_str(total_dev, time_unit)}")
    return "\n".join(out) + "\n"


def chrome_trace(events, trace_start_ns=0, profile_memory=False) -> dict:
    """The events as a Chrome trace-event JSON object (chrome://tracing,
    https://ui.perfetto.dev): complete ("X") events per thread on the CPU
    track, GPU ranges on a "GPU" track, allocations as "[memory]" instants."""
    pid = os.getpid()
    base = 0.0  # times are relative to the profiler's start; baseTimeNanoseconds holds its wall-clock time
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
           {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}}]
    for tid in sorted({e.thread for e in events}):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} (python)"}})
    has_gpu = False
    for i, e in enumerate(events):
        args = {"External id": e.id, "Ev Idx": i}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.input_shapes is not None:
            args["Input Dims"] = e.input_shapes
            args["Input type"] = e.input_types
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        out.append({"ph": "X", "cat": e.kind, "name": e.name, "pid": pid, "tid": e.thread, "ts": base + e.start_us,
                    "dur": e.cpu_time_total, "args": args})
        if e.self_cpu_memory_usage and profile_memory:
            out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid,
                        "tid": e.thread, "ts": base + e.end_us,
                        "args": {"Bytes": e.self_cpu_memory_usage, "Device Type": 0, "Device Id": -1}})
        if e.device_start_us is not None and e.device_time_total > 0 and not e.cpu_children:
            has_gpu = True
            out.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": "GPU 0", "tid": "stream 0",
                        "ts": base + e.device_start_us, "dur": e.device_time_total, "args": {"External id": e.id}})
    if has_gpu:
        out.append({"ph": "M", "name": "process_name", "pid": "GPU 0", "tid": 0, "args": {"name": "GPU 0"}})
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": int(trace_start_ns),
            "traceEvents": out}


def _write_chrome_trace(events, path, trace_start_ns, profile_memory) -> None:
    data = json.dumps(chrome_trace(events, trace_start_ns, profile_memory))
    if str(path).endswith(".gz"):
        import gzip

        with gzip.open(path, "wt") as f:
            f.write(data)
    else:
        with open(path, "w") as f:
            f.write(data)
