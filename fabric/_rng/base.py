"""What the CPU (mt19937) and CUDA (Philox) generators share:
:class:`BaseGenerator` (seeding, and each sampler's argument checks with
PyTorch's messages), the dtype tables, and the argument rules of PyTorch's
samplers (shapes, dtypes, ``random_``'s bounds, casts of float64/int64 draws
to the result dtype)."""
from __future__ import annotations

import math
import os

import numpy as np

_DEFAULT_SEED = 67280421310721
_INT64_MIN = -(1 << 63)
_U64_MASK = (1 << 64) - 1

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_FLOATS = (_F16, _F32, _F64)
_DIGITS = {_F16: 11, _F32: 24, _F64: 53}
_FLOAT_RANGE = {dt: (float(np.finfo(dt).min), float(np.finfo(dt).max)) for dt in _FLOATS}
try:  # bfloat16 exists in NumPy only through the optional ml_dtypes package
    import ml_dtypes as _ml_dtypes

    _BF16 = np.dtype(_ml_dtypes.bfloat16)
    _FLOATS += (_BF16,)
    _DIGITS[_BF16] = 8
    _FLOAT_RANGE[_BF16] = (float(_ml_dtypes.finfo(_BF16).min), float(_ml_dtypes.finfo(_BF16).max))
except ImportError:
    _BF16 = None
# Computed in float and rounded down; c10::Half and c10::BFloat16 are built
# from a float, so casts from double go through float32.
_REDUCED = tuple(dt for dt in (_F16, _BF16) if dt is not None)


def _shape_of(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(map(int, shape))


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``static_cast<scalar_t>`` of float64/int64 values (float16 and
    bfloat16 through float32)."""
    if dtype in _REDUCED and values.dtype != _F32:
        values = values.astype(np.float32)
    return values.astype(dtype, copy=False)


_DTYPES: dict = {}


def _dtype(dtype) -> np.dtype:
    """``np.dtype(dtype)``, memoised (it is on every call's path)."""
    try:
        return _DTYPES[dtype]
    except (KeyError, TypeError):
        dt = np.dtype(dtype)
        try:
            _DTYPES[dtype] = dt
        except TypeError:
            pass
        return dt


def _float_dtype(dtype, what: str) -> np.dtype:
    dt = _dtype(dtype)
    if dt not in _FLOAT_RANGE:
        raise NotImplementedError(f"{what} expects a floating point dtype, got {dt}")
    return dt


def _to_float_scalar(v: float, dt: np.dtype) -> float:
    """``v`` rounded to ``dt`` (float16/bfloat16 through float32)."""
    if dt in _REDUCED:
        return float(np.asarray(v, np.float32).astype(dt))
    return float(dt.type(v))


def _update_from(frm: int, dt: np.dtype) -> int:
    """Smallest valid ``from`` for float ``dt`` (random_from_to_impl)."""
    with np.errstate(over="ignore"):
        f = _to_float_scalar(frm + 1, dt)
    if not math.isfinite(f):
        return frm
    if int(f) < frm:
        mag = abs(frm + 1)
        n = mag.bit_length() - 1 if mag else 0
        frm = int(f) + (1 << (n - _DIGITS[dt] + 1))
    return frm


def _update_to(to: int, dt: np.dtype) -> int:
    with np.errstate(over="ignore"):
        f = _to_float_scalar(to - 1, dt)
    if not math.isfinite(f):
        return to
    if int(f) >= to:
        mag = abs(to - 1)
        n = mag.bit_length() - 1 if mag else 0
        to = int(f) - (1 << (n - _DIGITS[dt] + 1))
    return to


def _check_in_range(frm: int, to_inc: int, dt: np.dtype) -> None:
    if dt in _FLOATS:
        lo, hi = _FLOAT_RANGE[dt]
    elif dt == np.bool_:
        lo, hi = 0, 1
    else:
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
        if dt == np.uint64:
            hi = (1 << 63) - 1
    if not lo <= frm <= hi:
        raise RuntimeError(f"from is out of bounds for {dt}")
    if not lo <= to_inc <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {dt}")


def _random_range(low, high, dt):
    """Resolve ``random_``'s bounds as PyTorch does (shared by the CPU and CUDA
    generators): ``(span, base)`` for draws ``base + u % span``, or None for
    the full int64 range (a raw 64-bit draw). Raises on invalid bounds."""
    frm = 0 if low is None else int(low)
    if high is not None:
        to = int(high)
        if frm >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if dt in _FLOATS:
            frm, to = _update_from(frm, dt), _update_to(to, dt)
            if frm >= to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype")
        _check_in_range(frm, to - 1, dt)
        return (to - frm) & _U64_MASK, frm
    if frm != _INT64_MIN:
        if dt in _FLOATS:
            to_inc = 1 << _DIGITS[dt]
            frm = _update_from(frm, dt)
            if frm >= to_inc:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                                   "casted to dtype")
        elif dt == np.bool_:
            to_inc = 1
        else:
            to_inc = int(np.iinfo(dt).max)
        _check_in_range(frm, to_inc, dt)
        return (to_inc - frm + 1) & _U64_MASK, frm
    if dt not in (np.dtype(np.int64), _F32, _F64, _BF16):
        raise NotImplementedError("random_ over the full int64 range handles only int64, float32, float64 and "
                                  "bfloat16")
    return None


class BaseGenerator:
    """What the CPU and CUDA generators share: seeding, and every sampler's
    argument checks, PyTorch's error messages and empty results.  A subclass
    (:class:`~fabric._rng.mt19937.MT19937Generator`,
    :class:`~fabric._rng.philox.PhiloxGenerator`) draws the numbers: its
    ``_draw_<sampler>`` methods get checked arguments and the element count
    and return float64 (or int64) values that this class casts and shapes,
    on the subclass's array module ``xp``.

    >>> from fabric._rng import MT19937Generator
    >>> MT19937Generator(0).exponential((2,), np.float64, lambd=-1.0)
    Traceback (most recent call last):
        ...
    RuntimeError: exponential_ expects lambda > 0.0, but found lambda=-1.0
    """

    __slots__ = ()
    xp = np                       # the array module results live on
    _SEED_ERROR = RuntimeError    # what an out-of-range seed raises

    # --- seeding ---------------------------------------------------------------
    def _checked_seed(self, seed) -> int:
        """``seed`` as a uint64 (negative seeds wrap), or the overflow error."""
        seed = int(seed)
        if not -(1 << 63) <= seed <= _U64_MASK:
            raise self._SEED_ERROR("Overflow when unpacking long long")
        return seed & _U64_MASK

    def manual_seed(self, seed: int) -> None:
        raise NotImplementedError

    def initial_seed(self) -> int:
        """The seed last given to :meth:`manual_seed` (or :meth:`seed`)."""
        return self._seed  # type: ignore[attr-defined]

    def seed(self) -> int:
        """Reseed from the OS entropy source and return the new seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    @staticmethod
    def _scalar(v) -> bool:
        """Whether a ``normal`` mean/std or a ``bernoulli`` p is a number (else an array)."""
        return isinstance(v, (bool, int, float, np.generic))

    # --- samplers: arguments checked here, numbers drawn by the subclass --------------
    def uniform(self, shape, dtype=np.float32, low: float = 0.0, high: float = 1.0):
        """``empty(shape, dtype).uniform_(low, high)`` (and ``rand``)."""
        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "uniform_")
        low, high = float(low), float(high)
        unit = low == 0.0 and high == 1.0
        if not unit:
            lowest, top = _FLOAT_RANGE[dt]
            if not (lowest <= low <= top and lowest <= high <= top):
                raise RuntimeError(f"uniform_ bounds out of range for {dt}")
            if low > high:
                raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
            if high - low > top:
                raise RuntimeError("uniform_ expects to-from <= max of the dtype")
        n = math.prod(shape)
        if n == 0:
            return self.xp.empty(shape, dt)
        return self._draw_uniform(n, dt, low, high, unit).reshape(shape)

    def normal(self, shape=None, dtype=np.float32, mean=0.0, std=1.0, contiguous: bool = True):
        """``empty(shape, dtype).normal_(mean, std)`` (and ``randn``); ``mean``/``std``
        may be arrays (broadcast, as in ``torch.normal(mean, std)``).  ``contiguous=False``
        picks the kernel PyTorch uses for non-contiguous tensors (where it differs)."""
        dt = _float_dtype(dtype, "normal_")
        if not self._scalar(mean) or not self._scalar(std):
            return self._normal_tensor(shape, dt, mean, std, contiguous)
        shape = _shape_of(shape)
        mean, std = float(mean), float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        n = math.prod(shape)
        if n == 0:
            return self.xp.empty(shape, dt)
        return self._draw_normal(n, dt, mean, std, contiguous).reshape(shape)

    def randint(self, low: int, high: int, shape, dtype=np.int64):
        """``randint(low, high, shape, dtype=dtype)``."""
        return self.random_(shape, dtype, low, high)

    def random_(self, shape, dtype=np.int64, low=None, high=None):
        """``Tensor.random_()`` / ``random_(to)`` / ``random_(from, to)``.

        With neither bound: ``[0, 2**mantissa]`` for floats, ``[0, max]`` for
        integers.  ``high=None`` with ``low`` given means ``[low, max]``."""
        shape = _shape_of(shape)
        dt = _dtype(dtype)
        n = math.prod(shape)
        if low is None and high is None:
            return self._random_default(n, dt).reshape(shape)
        bounds = _random_range(low, high, dt)
        if bounds is not None:
            return self._random_from_to(n, bounds[0], bounds[1], dt).reshape(shape)
        return _cast(self._u64(n).view(np.int64), dt).reshape(shape)

    def randperm(self, n: int, dtype=np.int64):
        """``randperm(n, dtype=dtype)``."""
        n = int(n)
        if n < 0:
            raise RuntimeError(f"n must be non-negative, got {n}")
        dt = _dtype(dtype)
        if dt in _FLOATS and n > (1 << _DIGITS[dt]) + 1:
            raise RuntimeError(f"n cannot be greater than 2**{_DIGITS[dt]}+1 for {dt}")
        if n == 0:
            return self.xp.empty((0,), dt)
        return _cast(self._draw_permutation(n), dt)

    def bernoulli(self, p, shape, dtype=np.float32):
        """``empty(shape, dtype).bernoulli_(p)``: a number ``p`` is compared with
        53-bit uniforms, an array ``p`` (broadcast to ``shape``) with 24-bit ones
        unless it is float64."""
        xp = self.xp
        shape = _shape_of(shape)
        dt = _dtype(dtype)
        n = math.prod(shape)
        if self._scalar(p):
            p = float(p)
            if not 0.0 <= p <= 1.0:
                raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
            if n == 0:
                return xp.empty(shape, dt)
            return self._bernoulli_scalar(n, p, dt).reshape(shape)
        p = xp.asarray(p)
        if p.dtype not in _FLOATS:
            raise NotImplementedError(f"bernoulli_ expects a floating point p, got {p.dtype}")
        pb = xp.broadcast_to(p, shape)
        if n == 0:
            return xp.empty(shape, dt)
        if not bool(((pb >= 0) & (pb <= 1)).all()):
            raise RuntimeError("bernoulli_ expects all elements of p to be in [0, 1]")
        u = self._uniform53(n) if p.dtype == _F64 else self._uniform24(n)
        return (u.reshape(shape) < pb.astype(u.dtype)).astype(dt)

    def exponential(self, shape, dtype=np.float32, lambd: float = 1.0):
        """``empty(shape, dtype).exponential_(lambd)``."""
        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "exponential_")
        lambd = float(lambd)
        if not lambd > 0.0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return _cast(self._draw_exponential(math.prod(shape), lambd), dt).reshape(shape)

    def geometric(self, shape, dtype=np.float32, p: float = 0.5):
        """``empty(shape, dtype).geometric_(p)``."""
        shape = _shape_of(shape)
        dt = _dtype(dtype)
        p = float(p)
        if not 0.0 < p < 1.0:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return _cast(self._draw_geometric(math.prod(shape), p), dt).reshape(shape)

    def log_normal(self, shape, dtype=np.float32, mean: float = 1.0, std: float = 2.0):
        """``empty(shape, dtype).log_normal_(mean, std)``."""
        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "log_normal_")
        mean, std = float(mean), float(std)
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        v = self._draw_log_normal(math.prod(shape), mean, std)
        with np.errstate(over="ignore"):
            return _cast(v, dt).reshape(shape)

    def cauchy(self, shape, dtype=np.float32, median: float = 0.0, sigma: float = 1.0):
        """``empty(shape, dtype).cauchy_(median, sigma)``."""
        shape = _shape_of(shape)
        dt = _float_dtype(dtype, "cauchy_")
        median, sigma = float(median), float(sigma)
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        return _cast(self._draw_cauchy(math.prod(shape), median, sigma), dt).reshape(shape)

    def multinomial(self, probs, num_samples: int, replacement: bool = False):
        """``multinomial(probs, num_samples, replacement)`` (int64)."""
        p = self.xp.asarray(probs)
        if p.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if p.dtype not in _FLOATS:
            raise NotImplementedError(f"multinomial only supports floating-point dtypes for input, got: {p.dtype}")
        num_samples = int(num_samples)
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        n_cat = p.shape[-1]
        if not replacement and num_samples > n_cat:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        if n_cat > 1 << 24:
            raise RuntimeError("number of categories cannot exceed 2^24")
        out_shape = p.shape[:-1] + (num_samples,)
        if math.prod(out_shape) == 0:
            return self.xp.empty(out_shape, np.int64)
        return self._draw_multinomial(p, num_samples, replacement, out_shape)

    def poisson(self, rates):
        """``poisson(rates)``: same shape and dtype as ``rates``."""
        lam = self.xp.asarray(rates)
        dt = _float_dtype(lam.dtype, "poisson")
        flat = lam.astype(np.float64).reshape(-1)
        if bool((flat < 0).any()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        return _cast(self._draw_poisson(flat), dt).reshape(lam.shape)

    # --- what a subclass draws -----------------------------------------------------------
    def _uniform24(self, n: int, open_: bool = False):
        """``n`` float32 uniforms on [0, 1) from 24 bits each."""
        raise NotImplementedError

    def _uniform53(self, n: int, open_: bool = False):
        """``n`` float64 uniforms on [0, 1) from 53 bits each."""
        raise NotImplementedError

    def _u64(self, n: int):
        """``n`` uint64 draws."""
        raise NotImplementedError

    def _draw_uniform(self, n: int, dt, low: float, high: float, unit: bool):
        raise NotImplementedError

    def _bernoulli_scalar(self, n: int, p: float, dt):
        """``n`` draws of ``uniform53 < p`` as ``dt`` (a subclass may compute them faster)."""
        return (self._uniform53(n) < p).astype(dt)

    def _draw_normal(self, n: int, dt, mean: float, std: float, contiguous: bool):
        raise NotImplementedError

    def _normal_tensor(self, shape, dt, mean, std, contiguous: bool):
        raise NotImplementedError

    def _random_default(self, n: int, dt):
        raise NotImplementedError

    def _random_from_to(self, n: int, rng: int, base: int, dt):
        raise NotImplementedError

    def _draw_permutation(self, n: int):
        raise NotImplementedError

    def _draw_exponential(self, n: int, lambd: float):
        raise NotImplementedError

    def _draw_geometric(self, n: int, p: float):
        raise NotImplementedError

    def _draw_log_normal(self, n: int, mean: float, std: float):
        raise NotImplementedError

    def _draw_cauchy(self, n: int, median: float, sigma: float):
        raise NotImplementedError

    def _draw_multinomial(self, p, num_samples: int, replacement: bool, out_shape):
        raise NotImplementedError

    def _draw_poisson(self, rates):
        raise NotImplementedError
