"""The CUDA generator: Philox4x32-10 (the counter-based function the dropout
kernel implements, and :class:`PhiloxGenerator`, the default random stream of
a CUDA device).  Written against ``xp``: CuPy on a device, NumPy in tests."""
from __future__ import annotations

import contextlib
import functools
import math

import numpy as np

from .. import _special_functions as _sf
from .base import (
    _DEFAULT_SEED,
    _DIGITS,
    _FLOATS,
    _U64_MASK,
    BaseGenerator,
    _cast,
    _shape_of,
    _to_float_scalar,
)

# --------------------------------------------------------------------------
# Philox4x32-10
# --------------------------------------------------------------------------
_PHILOX_M0, _PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
_PHILOX_W0, _PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
_U32 = 0xFFFFFFFF


def philox4x32(xp, c0, c1, c2, c3, k0: int, k1: int, rounds: int = 10):
    """Philox4x32 (Salmon et al., 2011) on arrays of 32-bit counter words
    (held as uint64), with a scalar key.  Returns the four output words.

    >>> z = np.zeros(1, np.uint64)
    >>> [hex(int(w[0])) for w in philox4x32(np, z, z, z, z, 0, 0)]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    k0, k1 = int(k0) & _U32, int(k1) & _U32
    m0, m1, mask, s32 = np.uint64(_PHILOX_M0), np.uint64(_PHILOX_M1), np.uint64(_U32), np.uint64(32)
    c0, c1, c2, c3 = (xp.array(c, dtype=np.uint64) for c in (c0, c1, c2, c3))
    p0, p1 = xp.empty_like(c0), xp.empty_like(c0)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _PHILOX_W0) & _U32, (k1 + _PHILOX_W1) & _U32
        xp.multiply(c0, m0, out=p0)          # 32 x 32 -> 64-bit products
        xp.multiply(c2, m1, out=p1)
        xp.right_shift(p1, s32, out=c0)      # c0 = hi1 ^ c1 ^ k0 (old c1)
        c0 ^= c1
        c0 ^= np.uint64(k0)
        xp.bitwise_and(p1, mask, out=c1)     # c1 = lo1
        xp.right_shift(p0, s32, out=c2)      # c2 = hi0 ^ c3 ^ k1 (old c3)
        c2 ^= c3
        c2 ^= np.uint64(k1)
        xp.bitwise_and(p0, mask, out=c3)     # c3 = lo0
    return c0, c1, c2, c3


def _philox_words(xp, n: int, seed: int, offset: int, chunk: int = 1 << 15):
    """The first ``n`` uint32 words of the dropout stream (see :func:`dropout`).
    Generated in cache-sized chunks: Philox is ~100 array passes per chunk."""
    groups = (n + 3) // 4
    out = xp.empty((groups, 4), np.uint32)
    off_lo, off_hi = int(offset) & _U32, (int(offset) >> 32) & _U32
    for start in range(0, groups, chunk):
        g = xp.arange(start, min(start + chunk, groups), dtype=np.uint64)
        words = philox4x32(xp, g & np.uint64(_U32), g >> np.uint64(32), xp.full(g.shape, off_lo, np.uint64),
                           xp.full(g.shape, off_hi, np.uint64), int(seed) & _U32, (int(seed) >> 32) & _U32)
        for j in range(4):
            out[start: start + g.size, j] = words[j]
    return out.reshape(-1)[:n]


# --------------------------------------------------------------------------
# the CUDA random stream
# --------------------------------------------------------------------------
def _on_device(method):
    """Run a generator method with its device current, so results land there."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._context(self.device_index):
            return method(self, *args, **kwargs)
    return wrapper


class PhiloxGenerator(BaseGenerator):
    """The default random stream of a CUDA device: Philox4x32-10, counter based.

    The interface is that of the CPU generator
    (:class:`fabric._rng.MT19937Generator`): ``manual_seed``, ``initial_seed``,
    ``seed``, ``get_state``/``set_state`` and the samplers ``uniform``,
    ``normal``, ``randint``, ``random_``, ``randperm``, ``bernoulli``,
    ``exponential``, ``geometric``, ``log_normal``, ``cauchy``,
    ``multinomial``, ``poisson`` (plus ``random_u32``/``random_u64``); results
    are arrays of ``xp`` (CuPy) on ``cuda:device_index``.

    The stream: the state is ``(seed, offset)``.  Each draw of ``n`` 32-bit
    words takes the next offset and uses word ``i`` of
    ``philox4x32_10(counter=(i//4 lo, i//4 hi, offset lo, offset hi), key=seed)``
    (:func:`philox4x32`, the function the dropout kernel implements), then
    advances the offset by one.  So the same seed gives the same numbers on
    every device, on every run, and on the CPU with ``xp=numpy`` (which is
    how it is tested).  ``get_state()`` is 16 bytes,
    seed then offset (little-endian uint64), the layout of
    ``torch.cuda.get_rng_state()``.

    These are **not** PyTorch's CUDA numbers: PyTorch draws through curand's
    Philox with per-kernel offsets and thread layouts (``rand`` unrolls 4 per
    thread, ``randn`` uses curand's Box-Muller, ``randperm`` sorts random keys
    with a different key width, ...) that depend on the GPU's launch
    configuration, so ``torch.cuda.manual_seed(s)`` and
    ``fabric.cuda.manual_seed(s)`` give different streams.  Only the CPU
    generator reproduces PyTorch.

    Floats: float32/float16 uniforms use the top 24 bits of one word, float64
    53 bits of two; ``normal`` is Box-Muller on such uniforms (float32 math for
    float32/float16); ``randint``/``random_`` take ``u % range + low`` with a
    32-bit word for ranges below ``2**32``, else a 64-bit one; ``randperm`` sorts
    64-bit random keys.

    Example (any array module works; CUDA uses CuPy)::

        >>> g = PhiloxGenerator(np)
        >>> g.manual_seed(0)
        >>> a = g.uniform((3,), np.float32)
        >>> g.manual_seed(0)
        >>> bool((g.uniform((3,), np.float32) == a).all()), g.get_state().tolist()[8]
        (True, 1)
    """

    __slots__ = ("_context", "_offset", "_seed", "device_index", "xp")

    # BaseGenerator's samplers (argument checks, then the ``_draw_*`` below), run with the device current
    uniform = _on_device(BaseGenerator.uniform)
    normal = _on_device(BaseGenerator.normal)
    random_ = _on_device(BaseGenerator.random_)
    randperm = _on_device(BaseGenerator.randperm)
    bernoulli = _on_device(BaseGenerator.bernoulli)
    exponential = _on_device(BaseGenerator.exponential)
    geometric = _on_device(BaseGenerator.geometric)
    log_normal = _on_device(BaseGenerator.log_normal)
    cauchy = _on_device(BaseGenerator.cauchy)
    multinomial = _on_device(BaseGenerator.multinomial)
    poisson = _on_device(BaseGenerator.poisson)

    def __init__(self, xp, device_index: int = 0, device_context=None, seed: int = _DEFAULT_SEED):
        self.xp = xp
        self.device_index = int(device_index)
        self._context = device_context or (lambda _i: contextlib.nullcontext())
        self.manual_seed(seed)

    # --- seeding and state ------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        self._seed = self._checked_seed(seed)
        self._offset = 0

    def get_state(self) -> np.ndarray:
        """16 uint8 bytes: seed, offset (little-endian uint64)."""
        return np.array([self._seed, self._offset], "<u8").view(np.uint8).copy()

    def set_state(self, state) -> None:
        raw = np.ascontiguousarray(np.asarray(state, dtype=np.uint8)).ravel()
        if raw.size != 16:
            raise RuntimeError(f"RNG state is wrong size: expected 16 bytes (seed, offset), got {raw.size}")
        seed, offset = raw.view("<u8").tolist()
        self._seed, self._offset = int(seed), int(offset)

    def philox_seed_offset(self, increment: int = 1) -> tuple[int, int]:
        """``(seed, offset)`` for a kernel that draws its own Philox numbers (the
        dropout kernel), reserving ``increment`` offsets of the stream."""
        out = (self._seed, self._offset)
        self._offset += max(1, int(increment))
        return out

    # --- raw draws ------------------------------------------------------------------
    def _words(self, n: int):
        """The next ``n`` uint32 words (one offset of the stream)."""
        seed, offset = self.philox_seed_offset(1)
        chunk = 1 << 15 if self.xp is np else 1 << 20
        return _philox_words(self.xp, n, seed, offset, chunk)

    def _u64(self, n: int):
        w = self._words(2 * n).astype(np.uint64).reshape(n, 2)
        return (w[:, 0] << np.uint64(32)) | w[:, 1]

    def _uniform24(self, n: int, open_: bool = False):
        """float32 uniforms on [0, 1) (``open_``: on (0, 1)) from 24 bits."""
        v = (self._words(n) >> np.uint32(8)).astype(np.float32)
        if open_:
            v += np.float32(0.5)
        return v * np.float32(2.0 ** -24)

    def _uniform53(self, n: int, open_: bool = False):
        """float64 uniforms on [0, 1) (``open_``: on (0, 1)) from 53 bits."""
        v = (self._u64(n) >> np.uint64(11)).astype(np.float64)
        if open_:
            v += 0.5
        return v * 2.0 ** -53

    @_on_device
    def random_u32(self, n: int):
        return self._words(int(n))

    @_on_device
    def random_u64(self, n: int):
        return self._u64(int(n))

    # --- uniform / normal ------------------------------------------------------------
    def _draw_uniform(self, n: int, dt, low: float, high: float, unit: bool):
        if dt == np.float64:
            v = self._uniform53(n)
            if not unit:
                v = v * (high - low) + low
        else:
            v = self._uniform24(n)
            if not unit:
                v = v * np.float32(high - low) + np.float32(low)
            v = v.astype(dt, copy=False)
        if not unit or dt == np.float16:   # a value that rounded up to `high` becomes `low`
            hi = _to_float_scalar(high, dt)
            v = self.xp.where(v == dt.type(hi), dt.type(_to_float_scalar(low, dt)), v)
        return v

    def _std_normal(self, n: int, dt):
        """``n`` standard normals (Box-Muller on pairs, both branches used)."""
        xp = self.xp
        pairs = (n + 1) // 2
        if dt == np.float64:
            u = self._uniform53(2 * pairs, open_=True)
            two_pi = 2.0 * math.pi
        else:
            u = self._uniform24(2 * pairs, open_=True)
            two_pi = np.float32(2.0 * math.pi)
        u1, u2 = u[0::2], u[1::2]
        r = xp.sqrt(-2 * xp.log(u1))
        theta = two_pi * u2
        z = xp.stack([r * xp.cos(theta), r * xp.sin(theta)], axis=1).reshape(-1)
        return z[:n]

    def _normal_tensor(self, shape, dt, mean, std, contiguous: bool):
        """Normals for array ``mean``/``std`` (broadcast, as in ``torch.normal(mean, std)``)."""
        xp = self.xp
        m = mean if self._scalar(mean) else xp.asarray(mean)
        s = std if self._scalar(std) else xp.asarray(std)
        if not self._scalar(std) and s.size and not bool((s >= 0).all()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        full = np.broadcast_shapes(np.shape(m) if self._scalar(m) else m.shape,
                                   np.shape(s) if self._scalar(s) else s.shape)
        if shape is not None and _shape_of(shape) != full:
            raise RuntimeError(f"shape {shape} does not match broadcast of mean/std {full}")
        z = self._std_normal(math.prod(full), dt).reshape(full).astype(dt, copy=False)
        return (z * s + m).astype(dt, copy=False)

    def _draw_normal(self, n: int, dt, mean: float, std: float, contiguous: bool):
        z = self._std_normal(n, dt)
        if mean != 0.0 or std != 1.0:
            z = z * (np.float32(std) if z.dtype == np.float32 else std) + (
                np.float32(mean) if z.dtype == np.float32 else mean)
        return _cast(z, dt)

    # --- integers ---------------------------------------------------------------------
    def _random_from_to(self, n, rng, base, dt):
        v = self._words(n).astype(np.uint64) if rng < 1 << 32 else self._u64(n)
        v = v % np.uint64(rng) if rng else v
        v = (v + np.uint64(base & _U64_MASK)).view(np.int64)
        return _cast(v, dt)

    def _random_default(self, n, dt):
        if dt == np.bool_:
            return (self._words(n) & np.uint32(1)).astype(np.bool_)
        if dt == np.float64:
            return (self._u64(n) % np.uint64((1 << 53) + 1)).astype(np.float64)
        if dt in _FLOATS:
            return _cast(self._words(n).astype(np.uint64) % np.uint64((1 << _DIGITS[dt]) + 1), dt)
        if dt == np.int64:
            return (self._u64(n) % np.uint64(1 << 63)).astype(np.int64)
        if dt in (np.dtype(np.int32), np.dtype(np.int16), np.dtype(np.int8), np.dtype(np.uint8)):
            return (self._words(n).astype(np.uint64) % np.uint64(int(np.iinfo(dt).max) + 1)).astype(dt)
        raise NotImplementedError(f"random_ does not support dtype {dt}")

    def _draw_permutation(self, n: int):
        """The order that sorts ``n`` random 64-bit keys."""
        return self.xp.argsort(self._u64(n)).astype(np.int64, copy=False)

    # --- other distributions ------------------------------------------------------------------
    def _draw_exponential(self, n: int, lambd: float):
        return (-1.0 / lambd) * self.xp.log1p(-self._uniform53(n))

    def _draw_geometric(self, n: int, p: float):
        u = self._uniform53(n, open_=True)
        return self.xp.ceil(self.xp.log(u) / math.log1p(-p))

    def _draw_log_normal(self, n: int, mean: float, std: float):
        z = self._std_normal(n, np.dtype(np.float64))
        return self.xp.exp(z * std + mean)

    def _draw_cauchy(self, n: int, median: float, sigma: float):
        u = self._uniform53(n, open_=True)
        return median + sigma * self.xp.tan(math.pi * (u - 0.5))

    def _draw_multinomial(self, p, num_samples: int, replacement: bool, out_shape):
        """``multinomial(probs, num_samples, replacement)`` (int64), ``probs``
        NumPy or device: without replacement the top ``probs / Exp(1)`` (as
        PyTorch), with replacement the inverse of each row's normalised
        cumulative sum at uniform points."""
        xp = self.xp
        n_cat = p.shape[-1]
        rows = p.reshape(-1, n_cat).astype(np.float64)
        if not bool((xp.isfinite(rows) & (rows >= 0)).all()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        total = rows.sum(axis=1, keepdims=True)
        if not bool((total > 0).all()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        n_rows = rows.shape[0]
        if not replacement or num_samples == 1:
            q = rows / -xp.log1p(-self._uniform53(rows.size).reshape(rows.shape))
            if num_samples == 1:
                idx = xp.argmax(q, axis=1)[:, None]
            else:
                idx = xp.argsort(-q, axis=1)[:, :num_samples]
            return idx.astype(np.int64).reshape(out_shape)
        cum = xp.cumsum(rows / total, axis=1)
        cum[:, -1] = 1.0
        # one sorted array: row r's cumulative sums shifted by r
        offs = xp.arange(n_rows, dtype=np.float64)[:, None]
        u = self._uniform53(n_rows * num_samples, open_=True).reshape(n_rows, num_samples)
        flat = xp.searchsorted((cum + offs).reshape(-1), (u + offs).reshape(-1), side="left")
        idx = flat.reshape(n_rows, num_samples) - (xp.arange(n_rows) * n_cat)[:, None]
        return xp.minimum(idx, n_cat - 1).astype(np.int64).reshape(out_shape)

    def _draw_poisson(self, flat):
        """``poisson(rates)``: same shape and dtype as ``rates`` (NumPy or device).
        Inversion by sequential search for rates below 10, Hormann's PTRS
        transformed rejection above, both vectorised over all elements."""
        xp = self.xp
        out = xp.zeros(flat.shape, np.float64)
        small = xp.flatnonzero((flat > 0) & (flat < 10))
        if small.size:
            out[small] = self._poisson_inversion(flat[small])
        big = xp.flatnonzero(flat >= 10)
        if big.size:
            out[big] = self._poisson_ptrs(flat[big])
        return out

    def _poisson_inversion(self, lam):
        xp = self.xp
        u = self._uniform53(lam.size)
        k = xp.zeros(lam.shape, np.float64)
        pk = xp.exp(-lam)
        cdf = pk.copy()
        active = u > cdf
        for _ in range(1000):      # P(k > 1000) is zero in float64 for lam < 10
            if not bool(active.any()):
                break
            k = xp.where(active, k + 1, k)
            pk = xp.where(active, pk * lam / xp.maximum(k, 1), pk)
            cdf = xp.where(active, cdf + pk, cdf)
            active &= u > cdf
        return k

    def _poisson_ptrs(self, lam):
        xp = self.xp
        slam, loglam = xp.sqrt(lam), xp.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        out = xp.empty(lam.shape, np.float64)
        todo = xp.arange(lam.size)
        while todo.size:
            m = todo.size
            U = self._uniform53(m) - 0.5
            V = self._uniform53(m, open_=True)
            us = 0.5 - xp.abs(U)
            a_, b_, lam_ = a[todo], b[todo], lam[todo]
            k = xp.floor((2 * a_ / us + b_) * U + lam_ + 0.43)
            fast = (us >= 0.07) & (vr[todo] >= V)
            bad = (k < 0) | ((us < 0.013) & (us < V))
            with np.errstate(divide="ignore", invalid="ignore"):
                slow = (xp.log(V) + xp.log(inv_alpha[todo]) - xp.log(a_ / (us * us) + b_)
                        <= -lam_ + k * loglam[todo] - _lgamma(xp, k + 1))
            ok = fast | (~bad & slow)
            out[todo[ok]] = k[ok]
            todo = todo[~ok]
        return out


def _lgamma(xp, x):
    if xp is np:  # fabric's own NumPy kernel (+inf at the poles, like SciPy's gammaln)
        return _sf.lgamma(np, np.asarray(x, np.float64))
    import cupyx.scipy.special

    return cupyx.scipy.special.gammaln(x)
