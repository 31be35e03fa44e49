"""``repr`` of tensors, formatted like PyTorch's.

Example::

    >>> import fabric
    >>> fabric.tensor([[1.0, 2.5], [3.0, 4.0]])
    tensor([[1.0000, 2.5000],
            [3.0000, 4.0000]])
"""
from __future__ import annotations

import math

import numpy as np

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Like ``torch.set_printoptions``."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile == "default":
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80
    elif profile == "short":
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 2, 1000, 2, 80
    elif profile == "full":
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, math.inf, 3, 80
    if precision is not None:
        PRECISION = precision
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = edgeitems
    if linewidth is not None:
        LINEWIDTH = linewidth
    SCI_MODE = sci_mode


class _Formatter:
    """Picks one format for all elements (integer-valued floats, fixed, or scientific)."""

    def __init__(self, values: np.ndarray):
        self.kind = values.dtype.kind
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if self.kind == "b":
            self.max_width = max((len(str(bool(v))) for v in values), default=1)
            return
        if self.kind in "iu":
            self.max_width = max((len(str(int(v))) for v in values), default=1)
            return
        # PyTorch sizes columns from the nonzero finite values only (so -0. is not padded for)
        finite = values[np.isfinite(values) & (values != 0)].astype(np.float64)
        if finite.size == 0:
            return
        nonzero = np.abs(finite)
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if SCI_MODE is None:
            self.sci_mode = bool(nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8
                                 or nonzero.min() < 1e-4)
        else:
            self.sci_mode = SCI_MODE
        if self.sci_mode:
            strs = [f"{v:.{PRECISION}e}" for v in finite]
        elif self.int_mode:
            strs = [f"{v:.0f}." for v in finite]
        else:
            strs = [f"{v:.{PRECISION}f}" for v in finite]
        self.max_width = max(len(s) for s in strs)

    def format(self, v) -> str:
        if self.kind == "b":
            s = str(bool(v))
        elif self.kind in "iu":
            s = str(int(v))
        elif not np.isfinite(v):
            s = _special(v)
        elif self.sci_mode:
            s = f"{float(v):.{PRECISION}e}"
        elif self.int_mode:
            s = f"{float(v):.0f}."
        else:
            s = f"{float(v):.{PRECISION}f}"
        return s.rjust(self.max_width)


class _ComplexFormatter:
    """PyTorch's complex layout: one formatter for the real parts (padded),
    one for the imaginary parts (unpadded, signed, followed by ``j``)."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)
        self.max_width = self.real.max_width + self.imag.max_width + 1

    def format(self, v) -> str:
        v = complex(v)
        imag = (self.imag.format(v.imag) + "j").lstrip()
        return self.real.format(v.real) + (imag if imag[0] in "+-" else "+" + imag)


def _special(v) -> str:
    v = float(v)
    if math.isnan(v):
        return "nan"
    return "inf" if v > 0 else "-inf"


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements that will be printed (edges only when summarizing)."""
    if a.ndim == 0:
        return a.reshape(1)
    if a.shape[0] > 2 * EDGEITEMS:
        parts = [_summarized(a[i]) for i in list(range(EDGEITEMS)) + list(range(a.shape[0] - EDGEITEMS, a.shape[0]))]
    else:
        parts = [_summarized(a[i]) for i in range(a.shape[0])]
    return np.concatenate(parts) if parts else a.reshape(-1)


def _format_rec(a, fmt, indent, summarize):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        items = [fmt.format(v) for v in a.tolist()] if not summarize or a.shape[0] <= 2 * EDGEITEMS else (
            [fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."] +
            [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
        per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = [_format_rec(a[i], fmt, indent + 1, summarize) for i in range(EDGEITEMS)] + ["..."] + [
            _format_rec(a[i], fmt, indent + 1, summarize) for i in range(n - EDGEITEMS, n)]
    else:
        rows = [_format_rec(a[i], fmt, indent + 1, summarize) for i in range(n)]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def tensor_repr(t, prefix="tensor(") -> str:
    from ._tensor import Tensor  # noqa: F401

    data = t._data
    host = data if isinstance(data, np.ndarray) else t._to_host_numpy()
    if host.dtype.kind == "f" and host.dtype != np.float64 and host.dtype != np.float32:
        host = host.astype(np.float32)
    summarize = host.size > THRESHOLD
    indent = len(prefix)
    suffixes = []
    if host.size == 0 and host.shape != (0,):
        body = "[]"
        suffixes.append(f"size={tuple(host.shape)}")
    elif host.size == 0:
        body = "[]"
    else:
        values = _summarized(host) if summarize else host.reshape(-1)
        fmt = _ComplexFormatter(values) if host.dtype.kind == "c" else _Formatter(values)
        body = _format_rec(host, fmt, indent, summarize)
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    from . import _dtype as D

    dt = t.dtype
    default = D.get_default_dtype()
    shown = not (dt is default or dt is D.int64 or dt is D.bool or dt is D.to_complex(default)) or (
        host.size == 0 and dt is not default)
    if shown and not (host.size == 0 and dt is default):
        suffixes.append(f"dtype={dt!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    # PyTorch's _add_suffixes: each suffix goes on a new line when it would pass the line width
    last_line_len = len(text) - text.rfind("\n") + 1
    parts = [text]
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    return "".join(parts) + ")"
