"""Progress bars for fabric's own long loops (dataset downloads, ``update_bn``,
saving large checkpoints), drawn by tqdm when it is installed.

By default a bar appears only on a terminal and only once a loop has run
for two seconds, so short loops, logs and tests stay quiet.  The environment
variable ``FABRIC_PROGRESS`` overrides this: ``0`` never draws, ``1``
always draws (at once, on stderr even when it is not a terminal).

Example::

    >>> from fabric._progress import progress
    >>> sum(progress(range(4), desc="counting"))
    6
    >>> with progress(total=10, unit="B") as bar:
    ...     bar.update(10)
"""
from __future__ import annotations

import os

__all__ = ["progress"]


class _NoBar:
    """What ``progress`` returns without tqdm: iterates, counts, draws nothing."""

    def __init__(self, iterable=None):
        self._iterable = iterable
        self.n = 0

    def __iter__(self):
        return iter(self._iterable if self._iterable is not None else ())

    def update(self, n=1) -> None:
        self.n += n

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress(iterable=None, *, total=None, desc: str | None = None, unit: str = "it", file=None,
             min_total: int = 0):
    """``iterable`` (or, without one, a bar to ``update(n)`` by hand) with a
    progress bar where one should be drawn (see the module docstring); no bar
    when ``total`` is below ``min_total``."""
    mode = os.environ.get("FABRIC_PROGRESS", "")
    if mode == "0" or (total is not None and total < min_total):
        return _NoBar(iterable)
    try:
        from tqdm.auto import tqdm  # pyright: ignore[reportMissingImports] (optional)
    except ImportError:
        return _NoBar(iterable)
    forced = mode == "1"
    return tqdm(iterable, total=total, desc=desc, unit=unit, unit_scale=unit == "B", leave=False, file=file,
                disable=False if forced else None, delay=0 if forced else 2.0)
