"""What a measurement is: :class:`TaskSpec` (what was timed) and
:class:`Measurement` (the times, their median and IQR, printed as PyTorch
prints them).

Example::

    >>> from fabric.utils.benchmark.common import Measurement, TaskSpec
    >>> m = Measurement(100, [2.0e-4, 2.2e-4, 2.1e-4, 2.05e-4], TaskSpec("x + y", "pass"))
    >>> print(m)  # doctest: +ELLIPSIS
    <fabric.utils.benchmark.common.Measurement object at 0x...>
    x + y
      Median: 2.08 us
      IQR:    0.09 us (2.04 to 2.12)
      4 measurements, 100 runs per measurement, 1 thread
"""
from __future__ import annotations

import collections
import dataclasses
import math
import textwrap
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer runs (everything but its globals)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """Times of one statement: ``raw_times[i]`` is the time of
    ``number_per_run`` runs; ``times``, ``median``, ``mean`` and ``iqr`` are
    per run, in seconds."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self) -> None:
        self._sorted_times: tuple = ()
        self._warnings: tuple = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:  # title, label, stmt ... read through to the TaskSpec
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """Digits the interquartile spread supports (1 to 4); ``Compare`` trims to it."""
        self._lazy_init()
        n = len(self._sorted_times)
        inner = self._sorted_times[n // 4:int(math.ceil(3 * n / 4))]
        std = float(np.std(inner)) if inner else 0.0
        ci = max(1.645 * std / math.sqrt(len(inner)) if inner else 0.0, _MIN_CONFIDENCE_INTERVAL)
        return min(max(int(math.floor(math.log10(self._median / ci))), 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            t = np.asarray(self._sorted_times, dtype=np.float64)
            self._median = float(np.quantile(t, 0.5))
            self._mean = float(t.mean())
            self._p25 = float(np.quantile(t, 0.25))
            self._p75 = float(np.quantile(t, 0.75))

            def warn(msg):
                rel = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {rel:.1f}% of the median measurement.\n"
                                   f"           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                warn("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                warn("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        threads = self.task_spec.num_threads
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lo, hi = self._p25 / scale, self._p75 / scale
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({lo:.2f} to {hi:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(line for line in "\n".join(lines).strip().splitlines())

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list:
        """One Measurement per TaskSpec, times extrapolated to one run each."""
        grouped = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].append(m)
        return [Measurement(1, [t for m in group for t in m.times], spec) for spec, group in grouped.items()]


def select_unit(t: float) -> tuple:
    """The unit (ns, us, ms, s) that gives ``t`` seconds one to three leading digits."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3) if t > 0 else -3, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(math.ceil(math.log10(abs(x))))
    scale = 10 ** (magnitude - n)
    return float(np.round(x / scale) * scale)


def ordered_unique(elements: Iterable) -> list:
    return list(dict.fromkeys(elements))
