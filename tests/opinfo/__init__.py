"""The op test registry: one :class:`OpInfo` entry per op drives the generic
tests in ``tests/test_ops.py`` (forward vs NumPy reference, method vs
function, in-place vs out-of-place, gradcheck/gradgradcheck in float64 and,
where torch is installed, forward and gradients vs PyTorch).

Each family of ops lists its entries in its own module (``core.py``,
``pointwise.py`` ...) as ``OPS``; ``ALL_OPS`` gathers them.  Adding an op
means adding one entry.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FLOATS = (np.float32, np.float64)
INTS = (np.int64, np.int32)
COMPLEX = (np.complex64, np.complex128)
ALL_NUMERIC = FLOATS + INTS


@dataclass
class SampleInput:
    """``op(input, *args, **kwargs)``. NumPy arrays anywhere in input/args
    (also inside lists) become fabric / torch tensors."""

    input: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    name: str = ""
    grad: bool = True  # whether gradcheck should run on this sample

    def __repr__(self):
        def d(v):
            if isinstance(v, np.ndarray):
                return f"array{v.shape}:{v.dtype}{'' if v.flags.c_contiguous else ':nc'}"
            if isinstance(v, (list, tuple)):
                return type(v)(d(x) for x in v)
            return repr(v)
        return f"Sample({self.name or ''} {d(self.input)}, args={d(self.args)}, kwargs={self.kwargs})"


@dataclass
class OpInfo:
    name: str                                   # fabric.<name> (use dots for submodules: "linalg.inv")
    ref: Callable | None                        # NumPy reference: ref(*arrays, **kwargs) -> array(s)
    sample_inputs: Callable                     # sample_inputs(dtype, rng) -> list[SampleInput]
    dtypes: tuple = FLOATS
    complex_dtypes: tuple = ()                  # complex dtypes: forward, gradcheck (complex128) and torch parity
    differentiable: bool = True
    method: str | None = None                   # Tensor method name, "" for none; default: same as name
    inplace: str | None = None                  # in-place method name (e.g. "add_")
    torch_name: str | None = None               # torch.<name> if different; "" to skip the torch comparison
    gradgrad: bool = True
    atol: float = 1e-5
    rtol: float = 1.3e-6
    grad_atol: float = 1e-5
    grad_rtol: float = 1e-3
    check_dtype: bool = True                    # result dtype equals torch's
    notes: str = ""                             # for docs/ops.md: differences from PyTorch
    output_index: int | None = None             # ops returning tuples: which output to compare/differentiate

    def __post_init__(self):
        if self.method is None:
            self.method = self.name if "." not in self.name else ""
        if self.torch_name is None:
            self.torch_name = self.name

    def resolve(self, module):
        obj = module
        for part in self.name.split("."):
            obj = getattr(obj, part)
        return obj


# --- sample helpers --------------------------------------------------------

def make(rng, shape, dtype, low=-2.0, high=2.0, noncontig=False, away_from=None, positive=False):
    """A random array; ``noncontig`` returns a transposed/strided view with
    the same logical shape; ``away_from`` keeps values 0.1 away from kinks."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":  # real part as a float sample (so ``positive`` keeps off the branch cuts), imag in range
        re = make(rng, shape, np.float64, low, high, away_from=away_from, positive=positive)
        a = re + 1j * rng.uniform(low, high, size=shape)
    elif dtype.kind == "f":
        if positive:
            low, high = max(low, 0.1), max(high, 0.5)
        a = rng.uniform(low, high, size=shape)
        if away_from is not None:
            for k in np.atleast_1d(away_from):
                close = np.abs(a - k) < 0.1
                a = np.where(close, a + 0.2 * np.sign(a - k + 1e-12), a)
    elif dtype.kind == "b":
        a = rng.random(shape) > 0.5
    else:
        lo = int(low) if not positive else 1
        a = rng.integers(lo, max(int(high), lo + 1) + 1, size=shape)
    a = np.asarray(a, dtype=dtype)
    if noncontig and a.ndim >= 1:
        if a.ndim >= 2:
            b = np.ascontiguousarray(np.swapaxes(a, -1, -2))
            a = np.swapaxes(b, -1, -2)
        else:
            b = np.empty(a.shape[0] * 2, dtype)
            b[::2] = a
            a = b[::2]
    return a


def unary_samples(low=-2.0, high=2.0, positive=False, away_from=None):
    """Standard shapes for an elementwise unary op: 0-d, empty, 1-d, 2-d,
    non-contiguous, and 3-d."""
    def gen(dtype, rng):
        kw = dict(low=low, high=high, positive=positive, away_from=away_from)
        return [
            SampleInput(make(rng, (), dtype, **kw), name="0d"),
            SampleInput(make(rng, (0,), dtype, **kw), name="empty"),
            SampleInput(make(rng, (5,), dtype, **kw), name="1d"),
            SampleInput(make(rng, (3, 4), dtype, **kw), name="2d"),
            SampleInput(make(rng, (4, 3), dtype, noncontig=True, **kw), name="noncontig"),
            SampleInput(make(rng, (2, 3, 2), dtype, **kw), name="3d"),
        ]
    return gen


def binary_samples(low=-2.0, high=2.0, positive_rhs=False, away_from=None, rhs_scalar=2.5):
    """Broadcasting pairs for an elementwise binary op, incl. 0-d, empty,
    non-contiguous and a Python scalar right-hand side."""
    def gen(dtype, rng):
        def m(shape, rhs=False, nc=False):
            return make(rng, shape, dtype, low=low, high=high, positive=positive_rhs and rhs,
                        away_from=away_from if rhs else None, noncontig=nc)
        out = [
            SampleInput(m((3, 4)), (m((3, 4), True),), name="same"),
            SampleInput(m((3, 4)), (m((4,), True),), name="broadcast_rhs"),
            SampleInput(m((3, 1)), (m((1, 4), True),), name="broadcast_both"),
            SampleInput(m(()), (m((), True),), name="0d"),
            SampleInput(m((2, 3)), (m((), True),), name="0d_rhs"),
            SampleInput(m((0, 3)), (m((3,), True),), name="empty"),
            SampleInput(m((4, 3), nc=True), (m((4, 3), True, nc=True),), name="noncontig"),
        ]
        if rhs_scalar is not None:
            out.append(SampleInput(m((3, 2)), (rhs_scalar,), name="scalar_rhs"))
        return out
    return gen


FAMILIES = ("core", "pointwise", "reductions", "shape", "indexing", "linalg", "more", "fft")


def all_ops():
    ops = []
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"{__name__}.{fam}")
        except ModuleNotFoundError as e:
            if e.name == f"{__name__}.{fam}":
                continue
            raise
        ops.extend(mod.OPS)
    return ops


ALL_OPS = all_ops()
