"""``Compare``: measurements as a table, one per ``label``: a row per
``sub_label`` (or stmt) and thread count, a column per ``description``, the
medians in one unit — laid out as PyTorch's ``Compare`` prints them::

    [--------- add ----------]
              |  plain  |  mul
    1 threads: ---------------
          3   |   3.0   |  2.7
          30  |         |  2.4

    Times are in microseconds (us).
"""
from __future__ import annotations

import collections
import enum
import math

from .common import Measurement, ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["Compare", "Colorize"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


class _Column:
    """One description's cells: a common number format for all of them."""

    def __init__(self, grouped, scale, trim, highlight):
        self.grouped = grouped
        flat = [m for g in grouped for m in g]
        self.scale = scale
        self.trim = trim
        self.highlight = highlight and any(m.has_warnings for m in flat if m)
        lead = [int(math.ceil(math.log10(m.median / scale))) if m else None for m in flat]
        unit_digits = max(d for d in lead if d is not None)
        decimals = min(max(m.significant_figures - d, 0) for d, m in zip(lead, flat, strict=True) if m is not None
                       and d is not None) if trim else 1
        length = unit_digits + decimals + (1 if decimals else 0)
        self.template = f"{{:>{length}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def cell(self, value, sigfigs, spread):
        if value is None:
            return " " * len(self.cell(1, sigfigs, None))
        if self.trim:
            value = trim_sigfig(value, sigfigs)
        return self.template.format(value, f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else "")


def _color(segment, value, best):
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


def _table(results, colorize, trim, highlight) -> str:
    label = results[0].label
    unit, scale = select_unit(min(r.median for r in results))

    def row_key(m):
        return (m.num_threads, m.env, m.as_row_name)

    rows = ordered_unique(row_key(m) for m in results)
    rows.sort(key=lambda k: k[:2])  # stable: statements keep their order within a thread count and env
    cols = ordered_unique(m.description for m in results)
    grid = [[None] * len(cols) for _ in rows]
    rpos = {k: i for i, k in enumerate(rows)}
    cpos = {k: j for j, k in enumerate(cols)}
    for m in results:
        grid[rpos[row_key(m)]][cpos[m.description]] = m

    envs = {m.env for m in results}
    render_env = len(envs) > 1
    env_len = max(len(e) for e in envs) if render_env else 0
    groups, group_of, separators, show_env = [], [], [], []
    prior_threads, prior_env = -1, ""
    for (threads, env, _), row in zip(rows, grid, strict=True):
        new_group = threads != prior_threads
        if new_group:
            prior_threads, prior_env = threads, ""
            groups.append([])
        groups[-1].append(row)
        group_of.append(len(groups) - 1)
        separators.append(threads if new_group else None)
        show_env.append(render_env and env != prior_env)
        prior_env = env
    columns = [_Column([tuple(r[j] for r in g) for g in groups], scale, trim, highlight) for j in range(len(cols))]

    strings = [[""] + [c or "" for c in cols]]
    for i, row in enumerate(grid):
        first = next(m for m in row if m is not None)
        env = (f"({first.env})" if show_env[i] else "").ljust(env_len + 4)
        cells = ["  " + env + first.as_row_name]
        for m, col in zip(row, columns, strict=True):
            if m is None:
                cells.append(col.cell(None, 1, None))
            else:
                spread = m.iqr / m.median if m.has_warnings else None
                cells.append(col.cell(m.median / scale, m.significant_figures, spread))
        strings.append(cells)
    width = max(len(s) for s in strings)
    for s in strings:
        s.extend([""] * (width - len(s)))
    col_widths = [max(len(s[k]) for s in strings) for k in range(width)]
    lines = ["  |  ".join(s.center(w) for s, w in zip(strings[0], col_widths, strict=True))]
    overall = len(lines[0])
    for i, (s, row) in enumerate(zip(strings[1:], grid, strict=True)):
        if separators[i] is not None:
            lines.append(f"{separators[i]} threads: ".ljust(overall, "-"))
        if colorize is Colorize.ROWWISE:
            best = [min(m.median for m in row if m is not None)] * len(row)
        elif colorize is Colorize.COLUMNWISE:
            best = [min((m.median for m in c.grouped[group_of[i]] if m is not None), default=None) for c in columns]
        else:
            best = [None] * len(row)
        out = [s[0].ljust(col_widths[0])]
        for text, w, m, b in zip(s[1:], col_widths[1:], row, best, strict=True):
            text = text.center(w)
            if colorize is not Colorize.NONE and m is not None and b is not None:
                text = _color(text, m.median, b)
            out.append(text)
        lines.append("  |  ".join(out))
    warn = highlight and any(m.has_warnings for m in results)
    head = f"[{(' ' + (label or '') + ' ').center(overall - 2, '-')}]"
    tail = f"\nTimes are in {unit_to_english(unit)}s ({unit}).\n"
    if warn:
        tail += "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
    return head + "\n" + "\n".join(lines) + "\n" + tail


class Compare:
    """Tables of many measurements (see the module docstring).

    Example::

        >>> from fabric.utils.benchmark import Compare
        >>> from fabric.utils.benchmark.common import Measurement, TaskSpec
        >>> ms = [Measurement(1, [t * 1e-6] * 4, TaskSpec("x", "", label="add", sub_label=s, description=d))
        ...       for s, d, t in [("3", "plain", 3.0), ("3", "mul", 2.7), ("30", "mul", 2.4)]]
        >>> print(Compare(ms))
        [--------- add ----------]
                  |  plain  |  mul
        1 threads: ---------------
              3   |   3.0   |  2.7
              30  |         |  2.4
        <BLANKLINE>
        Times are in microseconds (us).
        <BLANKLINE>
    """

    def __init__(self, results: list) -> None:
        self._results: list = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def _render(self) -> list:
        merged = Measurement.merge(self._results)
        by_label = collections.defaultdict(list)
        for m in merged:
            by_label[m.label].append(m)
        return [_table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings)
                for group in by_label.values()]
