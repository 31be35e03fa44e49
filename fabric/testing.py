"""``fabric.testing``: PyTorch's ``torch.testing`` (``assert_close``, ``make_tensor``).

:func:`assert_close` follows ``torch.testing.assert_close``: the same pair
rules (None, bools, Python/NumPy numbers, tensor-likes of directly related
types), the same default tolerances per dtype, recursion into sequences and
mappings, and the same error messages (dtypes and sizes print with fabric's
reprs, ``fabric.float32`` and ``fabric.Size([2])``).

Example::

    >>> import fabric
    >>> fabric.testing.assert_close(fabric.tensor([1.0, 2.0]), fabric.tensor([1.0, 2.0 + 1e-7]))
    >>> fabric.testing.assert_close(fabric.tensor([1.0, 2.0]), fabric.tensor([1.0, 2.5]))
    Traceback (most recent call last):
    ...
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)
"""
from __future__ import annotations

import cmath
import collections.abc
import contextlib
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dtype as D
from ._creation import as_tensor, empty
from ._dtype import promote_types
from ._random_ops import randint
from ._tensor import Tensor
from .ops import isclose
from .ops._util import xp_of

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# {dtype: (rtol, atol)}; any other dtype compares exactly.
_DTYPE_PRECISIONS = {
    D.float16: (0.001, 1e-5),
    D.bfloat16: (0.016, 1e-5),
    D.float32: (1.3e-6, 1e-5),
    D.float64: (1e-7, 1e-7),
    D.complex64: (1.3e-6, 1e-5),
    D.complex128: (1e-7, 1e-7),
}


class _ErrorMeta(Exception):
    """A comparison failure: the exception type to raise, its message and
    the position (``id``) of the failing item inside nested containers."""

    def __init__(self, type: type, msg: str, *, id: tuple = ()):
        super().__init__(msg)
        self.type = type
        self.msg = msg
        self.id = id

    def to_error(self, msg=None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """This pair type does not handle these inputs; try the next one."""


def _default_tolerances(*dtypes) -> tuple[float, float]:
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(*dtypes, rtol, atol, id=()):
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                     f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _mismatch_msg(*, identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0

    def line(kind, diff, idx, tol):
        text = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"

    if callable(identifier):
        identifier = identifier("Tensor-likes")
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += line("absolute", abs_diff, abs_idx, atol)
    msg += line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(identifier="Scalars", extra=f"Expected {expected} but got {actual}.", abs_diff=abs_diff,
                         abs_idx=None, atol=atol, rel_diff=rel_diff, rel_idx=None, rtol=rtol)


def _tensor_mismatch_msg(actual: Tensor, expected: Tensor, matches, *, rtol, atol) -> str:
    """PyTorch's report: count of mismatches, greatest absolute and relative
    difference among them (computed in the tensors' dtype, integers in int64)."""
    a, e, m = actual._data.reshape(-1), expected._data.reshape(-1), matches.reshape(-1)
    xp = xp_of(a)
    n = int(m.size)
    mismatches = n - int(m.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    if a.dtype.kind not in "fc":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = xp.abs(a - e)
        abs_diff[m] = 0
        if a.dtype.kind in "fc":
            rel_diff = abs_diff / xp.abs(e)
        else:  # int64 / int64 gives the default float dtype
            f = D.get_default_dtype().np
            rel_diff = abs_diff.astype(f) / xp.abs(e).astype(f)
        rel_diff[m] = 0
    abs_i, rel_i = int(xp.argmax(abs_diff)), int(xp.argmax(rel_diff))  # first NaN wins, as torch.max

    def unravel(i):
        return tuple(int(k) for k in np.unravel_index(i, matches.shape)) if matches.shape else ()

    return _mismatch_msg(identifier="Tensor-likes", extra=extra, abs_diff=abs_diff[abs_i].item(),
                         abs_idx=unravel(abs_i), atol=atol, rel_diff=rel_diff[rel_i].item(), rel_idx=unravel(rel_i),
                         rtol=rtol)


class _Pair:
    def __init__(self, actual, expected, *, id=(), **options):
        self.actual, self.expected, self.id = actual, expected, id

    def _fail(self, type, msg):
        raise _ErrorMeta(type, msg, id=self.id)


class _NonePair(_Pair):
    def __init__(self, actual, expected, **options):
        if not (actual is None or expected is None):
            raise _Unsupported
        super().__init__(actual, expected, **options)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual, expected, **options):
        if not all(isinstance(v, (bool, np.bool_)) for v in (actual, expected)):
            raise _Unsupported
        super().__init__(bool(actual), bool(expected), **options)

    def compare(self):
        if self.actual is not self.expected:
            self._fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


_NUMBER_DTYPES = {int: D.int64, float: D.float64, complex: None}


class _NumberPair(_Pair):

    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False, check_dtype=False,
                 **options):
        if not all(isinstance(v, (int, float, complex, np.number)) for v in (actual, expected)):
            raise _Unsupported
        actual, expected = (v.item() if isinstance(v, np.number) else v for v in (actual, expected))
        super().__init__(actual, expected, id=id)
        for v in (actual, expected):
            if type(v) not in _NUMBER_DTYPES:  # bool against a number: an internal error in PyTorch too
                raise RuntimeError(f"Originating a NumberPair() at item {''.join(str([i]) for i in id)} with "
                                   f"{type(actual).__name__}(): {actual} and {type(expected).__name__}(): {expected} "
                                   "failed: no dtype corresponds to a Python bool")
        self.rtol, self.atol = _tolerances(*[_NUMBER_DTYPES[type(v)] or D.float64 for v in (actual, expected)],
                                           rtol=rtol, atol=atol, id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            self._fail(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.")
        if a == e:
            return
        if self.equal_nan and cmath.isnan(a) and cmath.isnan(e):
            return
        abs_diff = abs(a - e)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(e):
            return
        self._fail(AssertionError, _scalar_mismatch_msg(a, e, rtol=self.rtol, atol=self.atol))


class _TensorLikePair(_Pair):
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, **options):
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        actual, expected = self._to_tensor(actual), self._to_tensor(expected)
        super().__init__(actual, expected, id=id)
        self.rtol, self.atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    @staticmethod
    def _to_tensor(value) -> Tensor:
        if isinstance(value, Tensor):
            return value
        try:
            return as_tensor(value)
        except Exception:
            raise _Unsupported from None

    def compare(self):
        a, e = self.actual, self.expected
        self._compare_attributes(a, e)
        if a.device != e.device:
            a, e = a.cpu(), e.cpu()
        if a.dtype != e.dtype:
            dtype = promote_types(a.dtype, e.dtype)
            a, e = a.to(dtype), e.to(dtype)
        self._compare_values(a, e)

    def _mismatch(self, name, a, e):
        self._fail(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.")

    def _compare_attributes(self, a, e):
        if a.shape != e.shape:
            self._mismatch("shape", a.shape, e.shape)
        if a.layout != e.layout:
            if self.check_layout:
                self._mismatch("layout", a.layout, e.layout)
        elif self.check_stride and a.stride() != e.stride():
            self._mismatch("stride()", a.stride(), e.stride())
        if self.check_device and a.device != e.device:
            self._mismatch("device", a.device, e.device)
        if self.check_dtype and a.dtype != e.dtype:
            self._mismatch("dtype", a.dtype, e.dtype)

    def _compare_values(self, a, e):
        matches = isclose(a, e, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)._data
        if bool(matches.all()):
            return
        if a.shape == ():
            msg = _scalar_mismatch_msg(a.item(), e.item(), rtol=self.rtol, atol=self.atol)
        else:
            msg = _tensor_mismatch_msg(a, e, matches, rtol=self.rtol, atol=self.atol)
        self._fail(AssertionError, msg)


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate_pairs(actual, expected, *, id=(), **options) -> list:
    """The pairs to compare, recursing through matching sequences and mappings."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and isinstance(expected, seq) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError,
                             f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", id=id)
        pairs = []
        for i in range(len(actual)):
            pairs.extend(_originate_pairs(actual[i], expected[i], id=(*id, i), **options))
        return pairs
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _ErrorMeta(AssertionError,
                             "The keys of the mappings do not match:\n"
                             f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                             f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}", id=id)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        pairs = []
        for k in keys:
            pairs.extend(_originate_pairs(actual[k], expected[k], id=(*id, k), **options))
        return pairs
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
    raise _ErrorMeta(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                                f"{type(expected)}.", id=id)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors (and NumPy arrays, Python numbers, nested sequences/mappings of
    them) are close when shapes (and, unless disabled, device, dtype, layout;
    stride when ``check_stride``) match and ``|actual - expected| <= atol +
    rtol * |expected|`` elementwise; infinities must be equal and NaNs are
    equal only with ``equal_nan``.  Default tolerances by dtype: float16
    1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32 1.3e-6/1e-5, float64 1e-7/1e-7,
    anything else exact.  ``msg`` (a string, or a callable given the report)
    replaces the report.

    Example::

        >>> fabric.testing.assert_close([fabric.tensor(1.0), 2], (fabric.tensor(1.0), 2))
        >>> fabric.testing.assert_close(1.0, 1)
        Traceback (most recent call last):
        ...
        AssertionError: The (d)types do not match: <class 'float'> != <class 'int'>.
    """
    __tracebackhide__ = True
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol, "equal_nan": equal_nan,
               "check_device": check_device, "check_dtype": check_dtype, "check_layout": check_layout,
               "check_stride": check_stride}
    try:
        pairs = _originate_pairs(actual, expected, **options)
    except _ErrorMeta as meta:
        raise meta.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _ErrorMeta as meta:
            raise meta.to_error(msg) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated in PyTorch (FutureWarning): :func:`assert_close` with
    looser defaults (float16 1e-3/1e-3, float32 1e-4/1e-5, float64
    1e-5/1e-8), ``equal_nan=True`` and no dtype check.

    Example::

        >>> import warnings; warnings.simplefilter("ignore", FutureWarning)
        >>> fabric.testing.assert_allclose(fabric.tensor([1.0]), [1.00001])
    """
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from ._creation import tensor

    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        table = {D.float16: (1e-3, 1e-3), D.float32: (1e-4, 1e-5), D.float64: (1e-5, 1e-8)}
        rtols, atols = zip(*[table.get(d, (0.0, 0.0)) for d in (actual.dtype, expected.dtype)])
        rtol, atol = max(rtols), max(atols)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)


_INTEGRAL = (D.uint8, D.int8, D.int16, D.int32, D.int64)
_FLOATING = (D.float16, D.bfloat16, D.float32, D.float64, D.complex64, D.complex128)  # complex: both parts


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format=None) -> Tensor:
    """A tensor of ``shape`` with values uniform in ``[low, high)``, as
    ``torch.testing.make_tensor`` (defaults: bool [0, 2), unsigned [0, 10),
    signed integers [-9, 10), floats [-9, 9)).

    Example::

        >>> t = fabric.testing.make_tensor(2, 3, dtype=fabric.float32, device="cpu", low=-1, high=1)
        >>> t.shape, bool(((t >= -1) & (t < 1)).all())
        (fabric.Size([2, 3]), True)
    """
    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high):
        low = low if low is not None else default_low
        high = high if high is not None else default_high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
        if low == high and dtype in _FLOATING:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                          "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                             f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
        low = min(max(low, lowest_inclusive), highest_exclusive)
        high = min(max(high, lowest_inclusive), highest_exclusive)
        if dtype is D.bool or dtype in _INTEGRAL:
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and (dtype is D.bool or dtype in _INTEGRAL):
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is D.bool:
        low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0,
                                    default_high=2)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = D.iinfo(dtype)
        low, high = modify_low_high(low, high, lowest_inclusive=info.min,
                                    highest_exclusive=info.max + (1 if dtype is not D.int64 else 0),
                                    default_low=-9, default_high=10)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = D.finfo(dtype)
        low, high = modify_low_high(low, high, lowest_inclusive=info.min, highest_exclusive=info.max,
                                    default_low=-9, default_high=9)
        result = empty(shape, device=device, dtype=dtype)
        if high - low >= info.max:  # uniform_ needs high - low to be finite
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). To "
                        "request support, file an issue at: https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if (dtype is D.bool or dtype in _INTEGRAL) else D.finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad = requires_grad
    return result
