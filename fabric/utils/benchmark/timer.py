"""``Timer``: ``timeit`` with PyTorch's measurement loops.

``blocked_autorange`` first grows the block size until one block is long
enough that the timer's own cost is negligible, then times blocks until
``min_run_time`` has passed; ``adaptive_autorange`` keeps going until the
IQR is within ``threshold`` of the median.  On a CUDA device the clock
synchronizes the device first, so GPU work is counted.

Example::

    >>> import fabric
    >>> from fabric.utils.benchmark import Timer
    >>> t = Timer("x + y", globals={"x": fabric.ones(3), "y": fabric.ones(3)}, label="add")
    >>> m = t.timeit(100)
    >>> m.number_per_run, len(m.times), m.median > 0
    (100, 1, True)
"""
from __future__ import annotations

import enum
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from .common import Measurement, TaskSpec

__all__ = ["Timer", "timer", "Language"]


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def timer() -> float:
    """``timeit.default_timer``, after synchronizing the CUDA device when one is in use."""
    from ... import cuda

    if cuda.is_available() and cuda.is_initialized():
        cuda.synchronize()
    return timeit.default_timer()


class Timer:
    """Time ``stmt`` after ``setup`` with ``globals``; ``label``,
    ``sub_label``, ``description`` and ``env`` name the result in ``Compare``."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer: Callable = timer,
                 globals: dict | None = None, label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: Language | str = Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("fabric's Timer runs Python statements only (it has no C++ front end)")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        self._globals = dict(globals or {})
        self._globals.setdefault("fabric", __import__("fabric"))
        self._globals.setdefault("torch", self._globals["fabric"])  # PyTorch snippets name the module torch
        if global_setup:
            exec(global_setup, self._globals)
        stmt = _dedent(stmt)
        setup = _dedent(setup)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def _threads(self):
        from ... import _threads

        return _NumThreads(_threads, self._task_spec.num_threads)

    def timeit(self, number: int = 1000000) -> Measurement:
        """``number`` runs as one measurement (after a short warm-up)."""
        with self._threads():
            self._timeit(max(number // 100, 2))
            return Measurement(number_per_run=number, raw_times=[self._timeit(number)], task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _estimate_block_size(self, min_run_time: float) -> int:
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._timeit(number)
            if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or taken > min_run_time:
                return number
            if number * 10 > 2147483647:
                return number
            number *= 10

    def _loop(self, number, stop, min_run_time, max_run_time=None, callback=None) -> list:
        total, times, can_stop = 0.0, [], False
        while total < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total += spent
            if callback:
                callback(number, spent)
            can_stop = stop(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback: Callable | None = None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of runs, block size chosen so the timer's cost is negligible,
        until ``min_run_time`` seconds have been measured."""
        with self._threads():
            number = self._estimate_block_size(min_run_time)
            times = self._loop(number, lambda t: True, min_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable | None = None) -> Measurement:
        """Like ``blocked_autorange``, and keep measuring until IQR/median <
        ``threshold`` (with at least four blocks) or ``max_run_time`` has passed."""
        with self._threads():
            number = self._estimate_block_size(min_run_time=0.05)

            def converged(times):
                return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(threshold)

            times = self._loop(number, converged, min_run_time, max_run_time, callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(self, *args: Any, **kwargs: Any):
        raise NotImplementedError("collect_callgrind needs PyTorch's valgrind bindings; fabric does not provide them")


class _NumThreads:
    def __init__(self, threads_module, n):
        self._m, self._n = threads_module, n

    def __enter__(self):
        self._prior = self._m.get_num_threads()
        if self._n != self._prior:
            self._m.set_num_threads(self._n)

    def __exit__(self, *exc):
        if self._m.get_num_threads() != self._prior:
            self._m.set_num_threads(self._prior)


def _dedent(src: str) -> str:
    import textwrap

    return textwrap.dedent(src).strip() if "\n" in src else src
