"""The CPU generator: :class:`MT19937Generator`, PyTorch's mt19937 stream
and samplers reproduced bit for bit (the package docstring says how)."""
from __future__ import annotations

import math

import numpy as np

from . import libm, normal_kernel
from .base import (
    _DEFAULT_SEED,
    _DIGITS,
    _F32,
    _F64,
    _FLOATS,
    _REDUCED,
    _U64_MASK,
    BaseGenerator,
    _cast,
    _shape_of,
    _to_float_scalar,
)
from .libm import (
    _ONE,
    _TWO_PI_F,
    _avx2_log,
    _avx2_sincos,
    _f32,
    _fma32,
    _fma64,
    _lgamma_c,
    _libm,
    _libm_f32,
    _madd32,
    _madd64,
)

# --------------------------------------------------------------------------
# State layout of torch.get_rng_state() (CPUGeneratorImplState)
# --------------------------------------------------------------------------

_STATE_DTYPE = np.dtype([
    ("seed", "<u8"), ("left", "<i4"), ("seeded", "<i4"), ("next", "<u8"),
    ("state", "<u8", (624,)),
    ("normal_x", "<f8"), ("normal_y", "<f8"), ("normal_rho", "<f8"),
    ("normal_is_valid", "<i4"), ("_pad0", "<i4"),
    ("next_float_normal", "<f4"), ("float_normal_is_valid", "u1"),
    ("_pad1", "u1", (3,)),
])
assert _STATE_DTYPE.itemsize == 5056


# --------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------

# A compiled bernoulli-mask generator, registered by the numba CPU backend
# (``fabric.backends.cpu_kernels``; this module sits below the backends, so it is handed the
# kernel rather than importing it): ``fn(key, pos, p * 2**53, out) -> new pos`` with the
# semantics of ``(self._uniform53(n) < p)`` on the state ``(key, pos)``.  None: NumPy's draws.
_compiled_bernoulli53 = None
_COMPILED_MIN = 4096   # below this many draws the state round trip costs more than it saves


def register_compiled_bernoulli53(fn) -> None:
    """Use ``fn`` (see ``_compiled_bernoulli53``) for large float-``p`` bernoulli draws; None
    turns it off."""
    global _compiled_bernoulli53
    _compiled_bernoulli53 = fn


class MT19937Generator(BaseGenerator):
    """A ``torch.Generator`` (CPU) compatible random stream.

    Every sampling method returns a new NumPy array of the requested shape and
    dtype, consuming the stream exactly as PyTorch does for a contiguous
    tensor of that shape and dtype.  For a non-contiguous tensor PyTorch
    fills elements in memory order (TensorIterator's order), so draw for the
    underlying contiguous buffer and view it.

    >>> g = MT19937Generator(42)
    >>> g.normal((2,), np.float32)            # torch.randn(2) after manual_seed(42)
    array([0.33669037, 0.1288094 ], dtype=float32)
    >>> s = g.get_state(); a = g.uniform(5, np.float64)
    >>> g.set_state(s); bool((g.uniform(5, np.float64) == a).all())
    True

    The samplers' argument checks are :class:`~fabric._rng.base.BaseGenerator`'s;
    this class draws (``_draw_*``):

    >>> MT19937Generator(0).randint(0, 100, (5,), np.int64)
    array([44, 39, 33, 60, 63])
    >>> MT19937Generator(0).random_((3,), np.int32)
    array([209652396, 398764591, 924231285], dtype=int32)
    >>> MT19937Generator(0).bernoulli(0.5, (6,), np.float32)
    array([0., 0., 1., 0., 0., 0.], dtype=float32)
    """

    __slots__ = ("_bg", "_float_normal_cache", "_fresh", "_normal_cache", "_seed")
    _SEED_ERROR = ValueError

    @staticmethod
    def _scalar(v) -> bool:
        return not isinstance(v, np.ndarray)

    def __init__(self, seed: int = _DEFAULT_SEED):
        self._bg = np.random.MT19937()
        self.manual_seed(seed)

    # -- seeding and state ------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        """Reseed like ``torch.Generator.manual_seed`` (negative seeds wrap
        modulo 2**64; only the low 32 bits reach the engine)."""
        seed = self._checked_seed(seed)
        self._seed = seed
        self._bg._legacy_seeding(seed & 0xFFFFFFFF)
        self._fresh = True
        self._normal_cache = None
        self._float_normal_cache = None

    def get_state(self) -> np.ndarray:
        """The state as the 5056 uint8 bytes of ``torch.get_rng_state()``.

        The bytes are interchangeable with PyTorch's:
        ``torch.set_rng_state(torch.from_numpy(g.get_state()))`` continues
        this stream in PyTorch, and vice versa.
        """
        st = self._bg.state["state"]
        pos = int(st["pos"])
        rec = np.zeros((), _STATE_DTYPE)
        rec["seed"] = self._seed
        rec["left"] = 625 - pos
        rec["seeded"] = 1
        rec["next"] = 0 if self._fresh else pos
        rec["state"] = st["key"]
        if self._normal_cache is not None:
            rec["normal_is_valid"] = 1
            rec["normal_y"] = self._normal_cache
        if self._float_normal_cache is not None:
            rec["float_normal_is_valid"] = 1
            rec["next_float_normal"] = self._float_normal_cache
        return np.frombuffer(rec.tobytes(), np.uint8).copy()

    def set_state(self, state) -> None:
        """Restore a state from :meth:`get_state` or ``torch.get_rng_state()``."""
        raw = np.ascontiguousarray(np.asarray(state, dtype=np.uint8)).ravel()
        if raw.size != _STATE_DTYPE.itemsize:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_DTYPE.itemsize} "
                f"but found the input RNG state size to be {raw.size}")
        rec = np.frombuffer(raw.tobytes(), _STATE_DTYPE)[0]
        left, nxt = int(rec["left"]), int(rec["next"])
        if not (rec["seeded"] and 0 < left <= 624 and nxt <= 624):
            raise RuntimeError("Invalid mt19937 state")
        if left != 1 and nxt != 625 - left:
            raise RuntimeError("mt19937 state with inconsistent 'left' and 'next'")
        self._bg.state = {
            "bit_generator": "MT19937",
            "state": {"key": rec["state"].astype(np.uint32), "pos": 625 - left},
        }
        self._seed = int(rec["seed"])
        self._fresh = left == 1 and nxt == 0
        self._normal_cache = float(rec["normal_y"]) if rec["normal_is_valid"] else None
        self._float_normal_cache = (
            float(rec["next_float_normal"]) if rec["float_normal_is_valid"] else None)

    # -- raw stream ---------------------------------------------------------
    def _raw(self, n: int) -> np.ndarray:
        """``n`` 32-bit draws, as uint64."""
        if n:
            self._fresh = False
        return self._bg.random_raw(n)

    def random_u32(self, n: int) -> np.ndarray:
        """``n`` raw 32-bit draws (``CPUGeneratorImpl::random``).

        >>> MT19937Generator(0).random_u32(2)
        array([2357136044, 2546248239], dtype=uint32)
        """
        return self._raw(n).astype(np.uint32)

    def random_u64(self, n: int) -> np.ndarray:
        """``n`` 64-bit draws (``random64``: two draws, the first one high).

        >>> hex(int(MT19937Generator(0).random_u64(1)[0]))
        '0x8c7f0aac97c4aa2f'
        """
        r = self._raw(2 * n)
        return (r[0::2] << np.uint64(32)) | r[1::2]

    _u64 = random_u64

    def _uniform24(self, n: int) -> np.ndarray:
        """float32 uniforms in [0, 1) from 24 bits of one draw each."""
        r = self._raw(n)
        r &= 0xFFFFFF
        x = r.astype(np.float32)
        x *= _f32(2.0 ** -24)
        return x

    def _uniform53(self, n: int) -> np.ndarray:
        """float64 uniforms in [0, 1) from 53 bits of random64 each."""
        r = self._raw(2 * n).reshape(n, 2)
        v = r[:, 0] & 0x1FFFFF
        v <<= np.uint64(32)
        v |= r[:, 1]
        x = v.astype(np.float64)
        x *= 2.0 ** -53
        return x

    # -- uniform ------------------------------------------------------------
    def _draw_uniform(self, n: int, dt: np.dtype, low: float, high: float, unit: bool) -> np.ndarray:
        """``torch.empty(shape, dtype).uniform_(low, high)`` (and ``rand``).

        >>> MT19937Generator(0).uniform((2,), np.float64, -1.0, 1.0)
        array([0.940106  , 0.41563973])
        """
        if dt == _F64:
            v = self._uniform53(n)
            if not unit:
                v = _madd64(v, high - low, low)
        else:
            v = self._uniform24(n)
            if not unit:
                lo = _f32(low)
                v = _madd32(v, _f32(high) - lo, lo)
            if dt in _REDUCED:
                v = v.astype(dt)
        if not unit or dt in _REDUCED:
            # A value that rounded up to `high` is replaced by `low`.
            np.putmask(v, v == _to_float_scalar(high, dt), _to_float_scalar(low, dt))
        return v

    # -- normal -------------------------------------------------------------
    def _draw_normal(self, n: int, dt: np.dtype, mean: float, std: float, contiguous: bool) -> np.ndarray:
        """``torch.empty(shape, dtype).normal_(mean, std)`` (and ``randn``).

        ``mean``/``std`` arrays (``torch.normal(mean, std)``) take
        :meth:`_normal_tensor`: standard normals of the broadcast shape are
        drawn and then scaled and shifted by separate operations, as PyTorch
        does.  ``contiguous=False`` picks the per-element kernel PyTorch uses
        for non-contiguous tensors.

        >>> MT19937Generator(0).normal((3,), np.float32)
        array([ 1.5409961, -0.2934289, -2.1787894], dtype=float32)
        """
        if n >= 16 and contiguous:
            return self._normal_fill(n, dt, mean, std)
        v = self._normal_doubles(n)
        if mean == 0.0 and std == 1.0:
            v += 0.0                       # fma(x, 1, 0) turns -0 into +0
        else:
            v = _madd64(v, std, mean)
        return _cast(v, dt)

    def _normal_tensor(self, shape, dt, mean, std, contiguous):
        mean_a = np.asarray(mean)
        std_a = np.asarray(std)
        if isinstance(std, np.ndarray) and std_a.size and not (std_a >= 0).all():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        full = np.broadcast_shapes(mean_a.shape, std_a.shape)
        if shape is not None and _shape_of(shape) != full:
            raise RuntimeError(f"shape {shape} does not match broadcast of mean/std {full}")
        if not isinstance(std, np.ndarray):
            out = self.normal(full, dt, 0.0, float(std), contiguous)
            return _inplace(out, np.add, mean_a)
        out = self.normal(full, dt, 0.0, 1.0, contiguous)
        out = _inplace(out, np.multiply, std_a)
        if not isinstance(mean, np.ndarray):
            mean_a = np.asarray(mean, dt)   # at::full({}, mean, output.options())
        return _inplace(out, np.add, mean_a)

    def _normal_doubles(self, n: int) -> np.ndarray:
        """``n`` standard normals from at::normal_distribution<double>,
        which returns r*cos and caches r*sin of each pair."""
        head = []
        if self._normal_cache is not None and n:
            head = [self._normal_cache]
            self._normal_cache = None
        m = n - len(head)
        if m == 0:
            return np.array(head, np.float64)
        pairs = (m + 1) // 2
        if pairs <= 16:
            r = self._raw(4 * pairs).tolist()
            flat = []
            for k in range(0, 4 * pairs, 4):
                u1 = ((r[k] & 0x1FFFFF) * 4294967296 + r[k + 1]) * 2.0 ** -53
                u2 = ((r[k + 2] & 0x1FFFFF) * 4294967296 + r[k + 3]) * 2.0 ** -53
                radius = math.sqrt(-2.0 * math.log1p(-u2))
                theta = (2.0 * math.pi) * u1
                flat.append(radius * math.cos(theta))
                flat.append(radius * math.sin(theta))
            last = flat[-1]
            vals = np.array(head + flat[:m], np.float64)
        else:
            u = self._uniform53(2 * pairs)
            u1, u2 = u[0::2], u[1::2]
            radius = np.sqrt(-2.0 * _libm("log1p", -u2))
            theta = (2.0 * math.pi) * u1
            both = np.empty((pairs, 2))
            both[:, 0] = radius * _libm("cos", theta)
            both[:, 1] = radius * _libm("sin", theta)
            flat = both.reshape(-1)
            last = float(flat[-1])
            vals = np.concatenate([np.array(head, np.float64), flat[:m]])
        if m % 2:
            self._normal_cache = last
        return vals

    def _normal_fill(self, n: int, dt: np.dtype, mean: float, std: float) -> np.ndarray:
        """normal_fill: Box-Muller on blocks of 16, tail block recomputed."""
        tail = n % 16
        if dt == _F64:
            u = self._uniform53(n)
            out = _by_rows(_box_muller16_f64, u[: n - tail].reshape(-1, 16), mean, std)
            if tail:
                out = np.concatenate([out, np.empty(tail)])
                out[n - 16:] = _box_muller16_f64(self._uniform53(16).reshape(1, 16),
                                                 mean, std).ravel()
            return out
        if dt == _F32:
            u = self._uniform24(n)
            body = u[: n - tail]
        else:
            # float16/bfloat16 compute in a float buffer drawn block by block,
            # so the tail block follows the last full block directly.
            body = self._uniform24(n - tail)
        kernel = normal_kernel.box_muller16_f32() if libm._AVX2_NORMAL and body.size >= normal_kernel.MIN_ELEMENTS \
            else None
        if kernel is not None:  # the numba twin: the same values, one pass
            out = kernel(body.reshape(-1, 16), mean, std).reshape(-1)
        else:
            out = _by_rows(_box_muller16_f32, body.reshape(-1, 16), mean, std)
        if tail:
            out = np.concatenate([out, np.empty(tail, np.float32)])
            out[n - 16:] = _box_muller16_f32(self._uniform24(16).reshape(1, 16),
                                             mean, std).ravel()
        return out.astype(dt, copy=False)

    # -- integers -------------------------------------------------------------
    def _random_from_to(self, n: int, rng: int, base: int, dt: np.dtype) -> np.ndarray:
        if rng >= 1 << 28:
            v = self.random_u64(n) % np.uint64(rng)
        else:
            v = self._raw(n) % np.uint64(rng)
        v = (v + np.uint64(base & _U64_MASK)).view(np.int64)
        return _cast(v, dt)

    def _random_default(self, n: int, dt: np.dtype) -> np.ndarray:
        if dt == np.bool_:
            return (self._raw(n) & 1).astype(np.bool_)
        if dt == _F64:
            return (self.random_u64(n) % np.uint64((1 << 53) + 1)).astype(np.float64)
        if dt in _FLOATS:
            return _cast(self._raw(n) % np.uint64((1 << _DIGITS[dt]) + 1), dt)
        if dt == np.int64:
            return (self.random_u64(n) % np.uint64(1 << 63)).astype(np.int64)
        if dt in (np.dtype(np.int32), np.dtype(np.int16), np.dtype(np.int8),
                  np.dtype(np.uint8)):
            return (self._raw(n) % np.uint64(int(np.iinfo(dt).max) + 1)).astype(dt)
        raise NotImplementedError(f"random_ does not support dtype {dt}")

    def _draw_permutation(self, n: int) -> np.ndarray:
        """``torch.randperm(n, dtype=dtype)``.

        >>> MT19937Generator(0).randperm(6)
        array([2, 5, 3, 0, 1, 4])
        """
        if n < 0xFFFFFFFF // 20:
            return _fisher_yates(self._raw(max(n - 1, 0)), n)
        return self._inside_out_shuffle(n)

    def _inside_out_shuffle(self, n: int) -> np.ndarray:
        """randperm for huge n: the inside-out shuffle with random64."""
        r = np.empty(n, np.int64)
        chunk = 1 << 20
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            zs = (self.random_u64(stop - start)
                  % np.arange(start + 1, stop + 1, dtype=np.uint64)).tolist()
            for i, z in zip(range(start, stop), zs):
                r[i] = r[z]
                r[z] = i
        return r

    # -- other distributions -------------------------------------------------
    def _bernoulli_scalar(self, n: int, p: float, dt: np.dtype) -> np.ndarray:
        """``torch.empty(shape, dtype).bernoulli_(p)`` for a float ``p``: 53-bit doubles
        compared with ``p`` (by the registered compiled kernel for large float32/64 draws).

        >>> MT19937Generator(0).bernoulli(0.5, (6,), np.float32)
        array([0., 0., 1., 0., 0., 0.], dtype=float32)
        """
        kernel = _compiled_bernoulli53
        if kernel is not None and n >= _COMPILED_MIN and dt in (_F32, _F64):
            return self._bernoulli53_compiled(kernel, p, n, dt)
        return (self._uniform53(n) < p).astype(dt)

    def _bernoulli53_compiled(self, kernel, p: float, n: int, dt) -> np.ndarray:
        """``(self._uniform53(n) < p).astype(dt)`` by the registered compiled kernel: the same
        draws, the state handed over and back."""
        st = self._bg.state["state"]
        key = st["key"]                     # a fresh copy: the kernel advances it in place
        out = np.empty(n, dt)
        pos = kernel(key, int(st["pos"]), p * 2.0 ** 53, out)
        self._bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": int(pos)}}
        self._fresh = False
        return out

    def _draw_exponential(self, n: int, lambd: float) -> np.ndarray:
        """``torch.empty(shape, dtype).exponential_(lambd)``.

        >>> MT19937Generator(0).exponential((2,), np.float64)
        array([3.50832619, 1.23038476])
        """
        u = self._uniform53(n)
        return (-1.0 / lambd) * _libm("log1p", -u)

    def _draw_geometric(self, n: int, p: float) -> np.ndarray:
        """``torch.empty(shape, dtype).geometric_(p)``.

        >>> MT19937Generator(0).geometric((4,), np.int64, 0.5)
        array([1, 1, 2, 1])
        """
        u = self._uniform53(n)
        with np.errstate(all="ignore"):
            return np.ceil(_libm("log", u) / math.log1p(-p))

    def _draw_log_normal(self, n: int, mean: float, std: float) -> np.ndarray:
        """``torch.empty(shape, dtype).log_normal_(mean, std)``.

        >>> MT19937Generator(0).log_normal((2,), np.float64, 0.0, 1.0)
        array([4.66923902, 0.74570224])
        """
        v = _madd64(self._normal_doubles(n), std, mean)
        with np.errstate(over="ignore"):
            return _libm("exp", np.asarray(v, np.float64))

    def _draw_cauchy(self, n: int, median: float, sigma: float) -> np.ndarray:
        """``torch.empty(shape, dtype).cauchy_(median, sigma)``.

        >>> MT19937Generator(0).cauchy((2,), np.float64)
        array([10.59772933,  0.76476726])
        """
        u = self._uniform53(n)
        t = _libm("tan", math.pi * (u - 0.5))
        return _madd64(sigma, t, median)

    def _draw_multinomial(self, p: np.ndarray, num_samples: int, replacement: bool, out_shape) -> np.ndarray:
        """``torch.multinomial(probs, num_samples, replacement)`` (int64).

        Without replacement (or for one sample) PyTorch takes the top
        ``probs / Exp(1)``; with replacement it inverts the normalised
        cumulative sum of each row.

        >>> MT19937Generator(0).multinomial(np.array([0.1, 0.2, 0.7]), 4, True)
        array([2, 2, 2, 2])
        """
        if not replacement or num_samples == 1:
            if not (np.isfinite(p).all() and (p >= 0).all()):
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
            if (p.sum(axis=-1) == 0).any():
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            q = self.exponential(p.shape, p.dtype, 1.0)
            with np.errstate(divide="ignore"):
                q = p / q
            if num_samples == 1:
                return np.argmax(q, axis=-1)[..., None].astype(np.int64)
            order = np.argsort(-q, axis=-1, kind="stable")
            return order[..., :num_samples].astype(np.int64)
        return self._multinomial_replacement(p, num_samples)

    def _multinomial_replacement(self, p: np.ndarray, num_samples: int) -> np.ndarray:
        rows = p.reshape(-1, p.shape[-1])
        acc = np.float64 if p.dtype == _F64 else np.float32
        vals = rows.astype(acc)
        if (vals < 0).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if not np.isfinite(vals).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
        cum = np.cumsum(vals, axis=-1, dtype=acc)
        total = cum[:, -1:].copy()
        if not (total > 0).all():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cum /= total
        cum[:, -1] = 1
        n_rows, n_cat = cum.shape
        u = self._uniform53(n_rows * num_samples).reshape(n_rows, num_samples)
        # The kernel's binary search, run on all samples at once.
        row = np.arange(n_rows)[:, None]
        left = np.zeros(u.shape, np.int64)
        right = np.full(u.shape, n_cat, np.int64)
        active = right > left
        while active.any():
            mid = left + (right - left) // 2
            go_right = active & (cum[row, np.minimum(mid, n_cat - 1)] < u)
            left = np.where(go_right, mid + 1, left)
            right = np.where(active & ~go_right, mid, right)
            active = right > left
        return left.reshape(p.shape[:-1] + (num_samples,))

    def _draw_poisson(self, rates: np.ndarray) -> np.ndarray:
        """``torch.poisson(rates)``: same shape and dtype as ``rates``.

        >>> MT19937Generator(0).poisson(np.array([1.0, 4.0, 20.0]))
        array([ 2.,  5., 17.])
        """
        out = np.empty(rates.size, np.float64)
        draws = _DrawBuffer(self)
        lgamma = _lgamma_c()
        for i, lmb in enumerate(rates.tolist()):
            out[i] = _sample_poisson(lmb, draws.next, lgamma)
        draws.finish()
        return out


def _inplace(out: np.ndarray, op, other: np.ndarray) -> np.ndarray:
    """``out.op_(other)`` with PyTorch's promotion: a 0-d ``other`` of the
    same kind does not widen ``out``'s dtype."""
    if other.ndim == 0 and other.dtype.kind == out.dtype.kind:
        other = other.astype(out.dtype)
    return _cast(op(out, other), out.dtype)


def _by_rows(fn, u: np.ndarray, mean: float, std: float, rows: int = 2048) -> np.ndarray:
    """``fn(u, mean, std).ravel()`` evaluated on blocks of rows: the many
    elementwise passes then run on cache-sized temporaries."""
    if u.shape[0] <= rows:
        return fn(u, mean, std).reshape(-1)
    out = np.empty(u.shape, u.dtype)
    for i in range(0, u.shape[0], rows):
        out[i:i + rows] = fn(u[i:i + rows], mean, std)
    return out.reshape(-1)


def _box_muller16_f64(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """normal_fill_16 for double on rows of 16 uniforms."""
    u1 = 1.0 - u[:, :8]
    radius = np.sqrt(-2.0 * _libm("log", u1))
    theta = (2.0 * math.pi) * u[:, 8:]
    out = np.empty(u.shape)
    out[:, :8] = radius * _libm("cos", theta)
    out[:, 8:] = radius * _libm("sin", theta)
    if mean == 0.0 and std == 1.0:
        return out + 0.0                   # fma(x, 1, 0) turns -0 into +0
    return _fma64(out, std, mean)


def _box_muller16_f32(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """normal_fill_16 for float on rows of 16 float32 uniforms."""
    u1 = _ONE - u[:, :8]
    u2 = u[:, 8:]
    if libm._AVX2_NORMAL:  # read at call time: set_kernel_flavor changes it
        radius = np.sqrt(_f32(-2.0) * _avx2_log(u1))
        sin, cos = _avx2_sincos(_TWO_PI_F * u2)
    else:
        radius = np.sqrt(_f32(-2.0) * _libm_f32("logf", u1))
        theta = ((2.0 * math.pi) * u2.astype(np.float64)).astype(np.float32)
        sin, cos = _libm_f32("sinf", theta), _libm_f32("cosf", theta)
    out = np.empty(u.shape, np.float32)
    out[:, :8] = radius * cos
    out[:, 8:] = radius * sin
    if mean == 0.0 and std == 1.0:
        return out + _f32(0.0)
    return _fma32(out, _f32(std), _f32(mean))


def _fisher_yates(raw: np.ndarray, n: int) -> np.ndarray:
    """The permutation PyTorch's randperm builds from ``n - 1`` draws.

    Step ``i`` swaps positions ``i`` and ``j[i] = i + raw[i] % (n - i)``;
    position ``i`` is final after step ``i``.  So ``perm[i]`` is the value
    sitting at ``j[i]`` before step ``i``: the value carried there by the
    last earlier step ``k`` with ``j[k] == j[i]`` (which moved the value then
    at position ``k`` there), or ``j[i]`` itself.  The value at position
    ``k`` before step ``k`` follows the same rule, which makes chains that
    pointer jumping resolves in O(log n) passes.
    """
    if n <= 256:                      # a plain loop is cheaper than ~30 NumPy calls
        perm = list(range(n))
        for i, u in enumerate(raw.tolist()):
            z = i + u % (n - i)
            perm[i], perm[z] = perm[z], perm[i]
        return np.array(perm, np.int64)
    idx = np.arange(n, dtype=np.int64)
    j = idx.copy()
    j[:-1] += raw.astype(np.uint32) % np.arange(n, 1, -1, dtype=np.uint32)
    # Group equal targets, in step order within a group (stable sort by j).
    key = j * n
    key += idx
    key.sort()
    order = key % n
    js = key // n
    same = np.zeros(n, bool)           # same[q]: sorted entry q continues a group
    np.equal(js[1:], js[:-1], out=same[1:])
    prev = np.empty(n, np.int64)       # last earlier step with the same target
    prev[order] = np.where(same, np.roll(order, 1), -1)
    last = np.full(n, -1, np.int64)    # last step targeting each position
    ends = np.flatnonzero(~np.append(same[1:], False))
    last[js[ends]] = order[ends]
    # Last step k' < k that targeted position k: all such steps have
    # k' <= k, and step k itself is the last of its group when j[k] == k.
    before = np.where(j == idx, prev, last)
    root = np.where(before < 0, idx, before)
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    return np.where(prev < 0, j, root[prev])


class _DrawBuffer:
    """Doubles from the generator for samplers that consume a data-dependent
    number of them: draws ahead in chunks, then rewinds the stream to just
    after the last double used."""

    def __init__(self, gen: MT19937Generator):
        self._gen = gen
        self._saved = gen._bg.state
        self._fresh = gen._fresh
        self._buf: list = []
        self._pos = 0
        self._used = 0

    def next(self) -> float:
        if self._pos == len(self._buf):
            self._buf = self._gen._uniform53(max(256, 2 * len(self._buf))).tolist()
            self._pos = 0
        self._pos += 1
        self._used += 1
        return self._buf[self._pos - 1]

    def finish(self) -> None:
        gen = self._gen
        gen._bg.state = self._saved
        gen._fresh = self._fresh
        gen._raw(2 * self._used)


def _sample_poisson(lam: float, uniform, lgamma) -> float:
    """PyTorch's sample_poisson (from NumPy's legacy generator), in doubles."""
    if lam >= 10:
        # Transformed rejection (Hoermann 1993).
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            if us == 0.0:             # u == -0.5: C gets k = -inf and retries
                continue
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            lhs = (math.log(v) if v > 0 else -math.inf) + math.log(invalpha) \
                - math.log(a / (us * us) + b)
            if lhs <= -lam + k * loglam - lgamma(k + 1):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x = 0
    prod = 1.0
    while True:
        prod *= uniform()
        if prod > enlam:
            x += 1
        else:
            return x
