"""fabric._rng (mt19937.py, libm.py): a CPU generator that reproduces PyTorch's numbers bit for bit.

Three kinds of tests:

* torch-free: golden values (what PyTorch 2.13 CPU returned for a fixed seed,
  recorded once and hard-coded), invariants of the stream and its state, the
  exact-arithmetic helpers against exact rational arithmetic, and loose
  statistical sanity checks;
* ``@pytest.mark.torch``: exact equality with the installed PyTorch over many
  seeds, sizes (around the 16-element blocks of ``normal_``) and dtypes;
* one torch test runs PyTorch with ``ATEN_CPU_CAPABILITY=default`` in a
  subprocess to check the generic (non-AVX) flavour.
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pytest

from fabric import _rng
from fabric._rng import MT19937Generator, libm, mt19937


def bits(a: np.ndarray) -> np.ndarray:
    """The array's raw bytes, so that -0.0 != 0.0 and NaNs compare."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint8)


def assert_same(ours: np.ndarray, theirs) -> None:
    if hasattr(theirs, "numpy"):
        theirs = theirs.contiguous().numpy()
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    if not np.array_equal(bits(ours), bits(theirs)):
        diff = np.flatnonzero(ours.ravel() != theirs.ravel())
        raise AssertionError(
            f"{diff.size} of {ours.size} differ; first at {diff[:5]}: "
            f"{ours.ravel()[diff[:5]]} vs {theirs.ravel()[diff[:5]]}")


@contextmanager
def flavor(name: str):
    previous = _rng.kernel_flavor()
    _rng.set_kernel_flavor(name)
    try:
        yield
    finally:
        _rng.set_kernel_flavor(previous)


on_glibc = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc",
    reason="values from transcendental functions were recorded with glibc's libm")


# ==========================================================================
# Golden values: PyTorch 2.13 CPU (x86-64, AVX512 dispatch) for fixed seeds
# ==========================================================================

RAND5_S0 = [0.49625658988952637, 0.7682217955589294, 0.08847743272781372,
            0.13203048706054688, 0.30742281675338745]
RANDN5_S0 = [1.5409960746765137, -0.293428897857666, -2.1787893772125244,
             0.5684312582015991, -1.0845223665237427]
RANDN20_S42 = [
    1.9269152879714966, 1.4872840642929077, 0.9007171988487244, -2.1055209636688232,
    -0.7581311464309692, 1.078317642211914, 0.8008005619049072, 1.680620551109314,
    0.3558599054813385, -0.6866229772567749, -0.4933563470840454, 0.2414877861738205,
    -0.2316243201494217, 0.041759490966796875, -0.2515752911567688, 0.859858512878418,
    -0.3097267746925354, -0.3957104980945587, 0.8034093379974365, -0.6215953826904297]
RANDN20_F16_S42 = [
    1.9267578125, 1.4873046875, 0.90087890625, -2.10546875, 1.642578125,
    -0.1595458984375, -0.497314453125, 0.439697265625, -0.75830078125, 1.078125,
    0.80078125, 1.6806640625, 1.279296875, 1.296875, 0.6103515625, 1.3349609375,
    -0.2315673828125, 0.041748046875, -0.25146484375, 0.85986328125]
RANDN19_F64_S42 = [
    0.2995562877502637, 0.24237779080894106, 0.28320739441795323, 0.618669993885617,
    -0.03720300727052493, 1.0352472972512925, -0.010085521702337353,
    0.08948016046560357, 0.038435238263354446, -0.11824373914203358,
    -1.744556661084211, 0.875893884648022, 0.39238484373268534, 1.108461181451433,
    0.8651734647119074, 0.855215961472287, 0.2494118796915765, 0.2615836907112959,
    -1.526543923410825]
UNIFORM_KAIMING_S7 = [0.008730635046958923, -0.0752992033958435, 0.039802923798561096,
                      0.03922256827354431, -0.06680960953235626, -0.018734648823738098]
UNIFORM_F64_S7 = [-0.04433699065517205, -0.08414400443764047, 4.034650729923379]
NORMAL_MS_S7 = [
    0.4835973083972931, 0.4935086667537689, 0.5385273694992065, 0.4933997690677643,
    0.5039688944816589, 0.515641450881958, 0.5207821726799011, 0.4855097830295563,
    0.4830218255519867, 0.495693176984787, 0.46368542313575745, 0.49309515953063965,
    0.4587704539299011, 0.5134820342063904, 0.47353309392929077, 0.47280463576316833,
    0.4826659560203552]


def test_golden_rand():
    assert_same(MT19937Generator(0).uniform(5, np.float32), np.float32(RAND5_S0))


def test_golden_uniform_with_bounds():
    # kaiming_uniform_ style: x * (to - from) + from, fused.
    g = MT19937Generator(7)
    assert_same(g.uniform(6, np.float32, -0.125, 0.125), np.float32(UNIFORM_KAIMING_S7))
    g = MT19937Generator(7)
    assert_same(g.uniform(3, np.float64, -2.0, 5.0), np.float64(UNIFORM_F64_S7))


@on_glibc
def test_golden_randn_small():
    assert_same(MT19937Generator(0).normal(5, np.float32), np.float32(RANDN5_S0))


def test_golden_randn_float32_blocks():
    # 20 = one block of 16 + a recomputed tail block; AVX2 kernel, pure float32.
    with flavor("avx2"):
        g = MT19937Generator(42)
        assert_same(g.normal(20, np.float32), np.float32(RANDN20_S42))
        g = MT19937Generator(42)
        assert_same(g.normal(20, np.float16), np.float16(RANDN20_F16_S42))
        g = MT19937Generator(7)
        assert_same(g.normal(17, np.float32, 0.5, 0.02), np.float32(NORMAL_MS_S7))


@on_glibc
def test_golden_randn_float64_blocks():
    g = MT19937Generator(42)
    assert_same(g.normal(19, np.float64), np.float64(RANDN19_F64_S42))


def test_golden_integers():
    g = MT19937Generator(1)
    assert g.randint(-3, 1000, 8).tolist() == [628, 941, 573, 396, 793, 378, 616, 302]
    g = MT19937Generator(1)
    assert g.randint(0, 2 ** 40, 4).tolist() == [
        163196666091, 605300724808, 1095766950793, 876169207429]
    g = MT19937Generator(1)
    assert g.random_(3, np.int64).tolist() == [
        7692698082559361259, 4064269471072392264, 2109959069025161]


def test_golden_randperm():
    assert MT19937Generator(1).randperm(12).tolist() == [1, 4, 6, 8, 11, 0, 5, 3, 2, 9, 10, 7]
    # n > 256 takes the vectorised path
    assert MT19937Generator(1).randperm(300)[:12].tolist() == [
        145, 140, 282, 278, 203, 268, 167, 230, 275, 285, 18, 9]


def test_golden_bernoulli_and_multinomial():
    g = MT19937Generator(1)
    assert g.bernoulli(0.3, 12, np.float32).tolist() == [
        1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    g = MT19937Generator(1)
    p = np.array([0.1, 0.0, 0.5, 0.4], np.float32)
    assert g.multinomial(p, 3).tolist() == [3, 2, 0]
    assert g.multinomial(p, 6, True).tolist() == [2, 2, 2, 3, 2, 2]


@on_glibc
def test_golden_exponential_and_poisson():
    g = MT19937Generator(1)
    assert_same(g.exponential(3, np.float64, 2.0),
                np.float64([0.03149826848702607, 0.12715879227255678, 0.13345140812921713]))
    g = MT19937Generator(1)
    assert g.poisson(np.array([0.5, 3.0, 30.0], np.float32)).tolist() == [0.0, 2.0, 31.0]


# ==========================================================================
# Stream and state invariants (torch-free)
# ==========================================================================

def test_raw_stream_is_mt19937_init_genrand():
    # Reference mt19937 (init_genrand + tempering), written out plainly.
    def mt(seed, n):
        s = [seed & 0xFFFFFFFF]
        for i in range(1, 624):
            s.append((1812433253 * (s[-1] ^ (s[-1] >> 30)) + i) & 0xFFFFFFFF)
        out = []
        for _ in range(n // 624 + 1):
            for i in range(624):
                y = (s[i] & 0x80000000) | (s[(i + 1) % 624] & 0x7FFFFFFF)
                s[i] = s[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            for y in s:
                y ^= y >> 11
                y ^= (y << 7) & 0x9D2C5680
                y ^= (y << 15) & 0xEFC60000
                y ^= y >> 18
                out.append(y)
        return out[:n]

    for seed in (0, 5489, 2 ** 32 + 17):
        assert MT19937Generator(seed).random_u32(700).tolist() == mt(seed, 700)


def test_random_u64_combines_two_draws_high_first():
    a = MT19937Generator(3).random_u32(6).astype(np.uint64)
    b = MT19937Generator(3).random_u64(3)
    assert (b == (a[0::2] << np.uint64(32)) | a[1::2]).all()


def test_seed_handling():
    g = MT19937Generator()
    assert g.initial_seed() == 67280421310721
    g.manual_seed(-1)
    assert g.initial_seed() == 2 ** 64 - 1
    assert (MT19937Generator(2 ** 32 + 5).random_u32(4) == MT19937Generator(5).random_u32(4)).all()
    s = g.seed()
    assert g.initial_seed() == s
    assert (g.random_u32(3) == MT19937Generator(s).random_u32(3)).all()
    with pytest.raises(ValueError):
        g.manual_seed(2 ** 64)


def test_state_layout_is_torchs():
    g = MT19937Generator(5)
    st = g.get_state()
    assert st.dtype == np.uint8 and st.shape == (5056,)
    assert st[:8].view(np.uint64)[0] == 5
    assert st[8:12].view(np.int32)[0] == 1          # left
    assert st[16:24].view(np.uint64)[0] == 0        # next
    g.normal(3, np.float64)                         # 2 pairs: one value cached
    st = g.get_state()
    assert st[8:12].view(np.int32)[0] == 617 and st[16:24].view(np.uint64)[0] == 8
    assert st[5040:5044].view(np.int32)[0] == 1     # normal_is_valid
    assert st[5024:5032].view(np.float64)[0] == pytest.approx(0.6675243, abs=1e-7)


@pytest.mark.parametrize("warmup", [0, 1, 623, 624, 625, 5000])
def test_state_round_trip(warmup):
    g = MT19937Generator(11)
    g.random_u32(warmup)
    g.normal(1, np.float64)                         # leaves a cached normal
    st = g.get_state()
    a = [g.normal(3, np.float64), g.uniform(1000, np.float32), g.randperm(50)]
    h = MT19937Generator(0)
    h.set_state(st)
    assert np.array_equal(h.get_state(), st)
    b = [h.normal(3, np.float64), h.uniform(1000, np.float32), h.randperm(50)]
    for x, y in zip(a, b):
        assert_same(x, y)


def test_set_state_rejects_bad_input():
    g = MT19937Generator(0)
    with pytest.raises(RuntimeError):
        g.set_state(np.zeros(100, np.uint8))
    with pytest.raises(RuntimeError):
        g.set_state(np.zeros(5056, np.uint8))       # not seeded, left == 0


def test_manual_seed_clears_normal_cache():
    g = MT19937Generator(0)
    first = g.normal(1, np.float64)
    g.normal(1, np.float64)
    g.manual_seed(0)
    assert_same(g.normal(1, np.float64), first)


def test_normal_cache_pairs_across_calls():
    # Box-Muller pairs straddle calls: (1, 2) draws the same numbers as (3,).
    g = MT19937Generator(4)
    a = np.concatenate([g.normal(1, np.float64), g.normal(2, np.float64)])
    b = MT19937Generator(4).normal(3, np.float64)
    assert_same(a, b)


def test_stream_consumption():
    """Each op advances the stream by what PyTorch draws."""
    cases = [
        (lambda g: g.uniform(10, np.float32), 10),
        (lambda g: g.uniform(10, np.float64), 20),
        (lambda g: g.normal(20, np.float32), 36),      # 20 + a fresh tail block
        (lambda g: g.normal(20, np.float16), 32),      # block by block
        (lambda g: g.normal(32, np.float32), 32),
        (lambda g: g.normal(20, np.float64), 72),
        (lambda g: g.normal(3, np.float64), 8),        # two pairs of doubles
        (lambda g: g.randint(0, 10, 7), 7),
        (lambda g: g.randint(0, 2 ** 28, 7), 14),
        (lambda g: g.randperm(10), 9),
        (lambda g: g.bernoulli(0.5, 5, np.float32), 10),
        (lambda g: g.bernoulli(np.full(5, 0.5, np.float32), 5, np.float32), 5),
        (lambda g: g.multinomial(np.ones((2, 3)), 4, True), 16),
        (lambda g: g.normal(0, np.float32), 0),
    ]
    for op, draws in cases:
        g = MT19937Generator(9)
        op(g)
        assert (g.random_u32(4) == MT19937Generator(9).random_u32(draws + 4)[draws:]).all()


def test_poisson_rewinds_to_exact_consumption():
    g = MT19937Generator(2)
    g.poisson(np.array([0.0, 2.0, 50.0]))
    after = g.random_u32(4)
    # Redo it by hand: the draws poisson used, then the next four.
    h = MT19937Generator(2)
    u = h._uniform53(4096).tolist()
    it = iter(u)
    lgamma = libm._lgamma_c()
    used = 0

    def uniform():
        nonlocal used
        used += 1
        return next(it)

    for lam in (0.0, 2.0, 50.0):
        mt19937._sample_poisson(lam, uniform, lgamma)
    ref = MT19937Generator(2).random_u32(2 * used + 4)[2 * used:]
    assert (after == ref).all()


def test_empty_shapes_draw_nothing():
    g = MT19937Generator(0)
    assert g.uniform((0, 3), np.float32).shape == (0, 3)
    assert g.normal((2, 0), np.float64).shape == (2, 0)
    assert g.randint(0, 5, (0,)).shape == (0,)
    assert g.randperm(0).shape == (0,)
    assert (g.random_u32(2) == MT19937Generator(0).random_u32(2)).all()


def test_shapes_and_dtypes():
    g = MT19937Generator(0)
    assert g.uniform((2, 3, 4), np.float16).dtype == np.float16
    assert g.normal((5, 7), np.float64).shape == (5, 7)
    assert g.randint(0, 2, (3, 3), np.bool_).dtype == np.bool_
    assert g.random_((4,), np.uint8).dtype == np.uint8
    assert g.randperm(5, np.float32).dtype == np.float32
    assert g.bernoulli(0.5, (2, 2), np.int64).dtype == np.int64
    assert g.multinomial(np.ones((3, 4)), 2).shape == (3, 2)


def test_argument_checks():
    g = MT19937Generator(0)
    with pytest.raises(RuntimeError):
        g.uniform(3, np.float32, 2.0, 1.0)
    with pytest.raises(NotImplementedError):
        g.uniform(3, np.int32)
    with pytest.raises(RuntimeError):
        g.normal(3, np.float32, 0.0, -1.0)
    with pytest.raises(RuntimeError):
        g.randint(5, 5, 3)
    with pytest.raises(RuntimeError):
        g.randint(0, 300, 3, np.uint8)
    with pytest.raises(RuntimeError):
        g.bernoulli(1.5, 3, np.float32)
    with pytest.raises(RuntimeError):
        g.multinomial(np.ones(3), 4, False)
    with pytest.raises(RuntimeError):
        g.exponential(3, np.float32, 0.0)
    with pytest.raises(RuntimeError):
        g.poisson(np.array([-1.0]))


# ==========================================================================
# Exact-arithmetic helpers (torch-free)
# ==========================================================================

def _exact_fma(a: float, b: float, c: float) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def test_fma64_is_correctly_rounded():
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)
    b = rng.normal(size=n)
    c = rng.normal(size=n) * 10.0 ** rng.integers(-12, 12, n)
    c[:500] = -(a[:500] * b[:500])                    # heavy cancellation
    a[500:1000] = rng.integers(0, 2 ** 53, 500) * 2.0 ** -53   # uniform_ style
    got = libm._fma64(a, b, c)
    ref = np.array([_exact_fma(*t) for t in zip(a.tolist(), b.tolist(), c.tolist())])
    assert_same(got, ref)


def test_fma32_is_correctly_rounded():
    rng = np.random.default_rng(1)
    n = 4000
    a = rng.normal(size=n).astype(np.float32)
    b = rng.normal(size=n).astype(np.float32)
    c = (rng.normal(size=n) * 10.0 ** rng.integers(-10, 10, n)).astype(np.float32)
    # Products whose float64 sum lands on a float32 halfway point.
    a[:200] = np.float32(1 + 2 ** -12)
    b[:200] = np.float32(1 + 2 ** -12)
    c[:200] = np.float32(2 ** -30)
    got = libm._fma32(a, b, c)
    exact = [Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
             for x, y, z in zip(a, b, c)]
    ref = np.array([_round_to_float32(v) for v in exact], np.float32)
    assert_same(got, ref)


def _round_to_float32(v: Fraction) -> float:
    """Exact round-to-nearest-even of a rational to float32."""
    lo = np.float32(float(v))
    cands = {lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))}
    best = min(cands, key=lambda f: (abs(Fraction(float(f)) - v),
                                     int(np.float32(f).view(np.int32)) & 1))
    return float(best)


@pytest.mark.parametrize("name", ["log", "exp", "sin", "cos", "log1p", "tan"])
def test_libm_matches_math(name):
    rng = np.random.default_rng(2)
    if name == "log":
        x = np.concatenate([rng.random(20000), 1 - rng.random(2000) * 1e-9, [0.0, 1.0]])
    elif name == "log1p":
        x = -rng.random(3000)
    elif name == "exp":
        x = rng.normal(size=20000) * 5
    elif name == "tan":
        x = (rng.random(3000) - 0.5) * math.pi
    else:
        x = rng.random(20000) * 2 * math.pi
    with np.errstate(divide="ignore"):
        got = libm._libm(name, x)
        ref = libm._call_elementwise(getattr(math, name), x)
    assert_same(got, ref)


@pytest.mark.parametrize("n", [2, 3, 50, 256, 257, 1000, 4099])
def test_vectorised_fisher_yates_matches_the_loop(n):
    raw = MT19937Generator(n).random_u32(n - 1).astype(np.uint64)
    perm = list(range(n))
    for i, u in enumerate(raw.tolist()):
        z = i + u % (n - i)
        perm[i], perm[z] = perm[z], perm[i]
    assert mt19937._fisher_yates(raw, n).tolist() == perm


def test_avx2_kernels_close_to_libm():
    x = np.linspace(2 ** -24, 1, 10001, dtype=np.float32)
    assert np.allclose(libm._avx2_log(x), np.log(x.astype(np.float64)), rtol=3e-7, atol=3e-7)
    t = np.linspace(0, 2 * np.pi, 10001, dtype=np.float32)
    s, c = libm._avx2_sincos(t)
    assert np.allclose(s, np.sin(t.astype(np.float64)), atol=3e-7)
    assert np.allclose(c, np.cos(t.astype(np.float64)), atol=3e-7)


# ==========================================================================
# Statistical sanity (torch-free)
# ==========================================================================

N = 200_000


def test_uniform_statistics():
    g = MT19937Generator(123)
    for dt in (np.float32, np.float64):
        x = g.uniform(N, dt, -1.0, 3.0)
        assert x.min() >= -1.0 and x.max() < 3.0
        assert abs(x.mean() - 1.0) < 0.02 and abs(x.var() - 16 / 12) < 0.02


def test_normal_statistics():
    g = MT19937Generator(123)
    for dt in (np.float16, np.float32, np.float64):
        x = g.normal(N, dt, 2.0, 0.5).astype(np.float64)
        assert abs(x.mean() - 2.0) < 0.01 and abs(x.std() - 0.5) < 0.01
        assert abs(np.mean(np.abs(x - 2.0) < 0.5) - 0.6827) < 0.01


def test_discrete_statistics():
    g = MT19937Generator(123)
    x = g.randint(0, 10, N)
    counts = np.bincount(x, minlength=10)
    assert x.min() == 0 and x.max() == 9
    assert ((counts - N / 10) ** 2 / (N / 10)).sum() < 40     # chi-square, 9 dof
    assert abs(g.bernoulli(0.3, N, np.float32).mean() - 0.3) < 0.01
    assert abs(g.exponential(N, np.float64, 4.0).mean() - 0.25) < 0.005
    assert abs(g.geometric(N, np.float64, 0.2).mean() - 5.0) < 0.1
    assert abs(np.median(g.cauchy(N, np.float64, 1.0, 2.0)) - 1.0) < 0.05
    assert abs(g.poisson(np.full(20000, 7.0)).mean() - 7.0) < 0.1
    assert abs(g.poisson(np.full(20000, 40.0)).mean() - 40.0) < 0.3
    p = np.array([0.1, 0.2, 0.7])
    freq = np.bincount(g.multinomial(p, N, True), minlength=3) / N
    assert np.abs(freq - p).max() < 0.01
    perm = g.randperm(10_000)
    assert np.array_equal(np.sort(perm), np.arange(10_000))
    first = np.array([g.randperm(4)[0] for _ in range(4000)])
    assert np.abs(np.bincount(first, minlength=4) / 4000 - 0.25).max() < 0.03


def test_multinomial_without_replacement_is_distinct():
    g = MT19937Generator(5)
    p = np.random.default_rng(0).random((6, 50))
    s = g.multinomial(p, 50, False)
    assert all(np.array_equal(np.sort(row), np.arange(50)) for row in s)


# ==========================================================================
# Exact equality with PyTorch
# ==========================================================================

SEEDS = [0, 1, 42, 2 ** 33 + 7]
SIZES = [1, 2, 3, 15, 16, 17, 31, 32, 33, 100, 1000, 1001]
FLOATS = [np.float16, np.float32, np.float64]


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def tdtype(torch, dt):
    return {
        np.dtype(np.float16): torch.float16, np.dtype(np.float32): torch.float32,
        np.dtype(np.float64): torch.float64, np.dtype(np.int64): torch.int64,
        np.dtype(np.int32): torch.int32, np.dtype(np.int16): torch.int16,
        np.dtype(np.int8): torch.int8, np.dtype(np.uint8): torch.uint8,
        np.dtype(np.bool_): torch.bool,
    }[np.dtype(dt)]


def pair(torch, seed):
    torch.manual_seed(seed)
    return MT19937Generator(seed)


def in_step(torch, g):
    """The two streams are at the same place (and have the same cache)."""
    assert np.array_equal(g.get_state(), torch.get_rng_state().numpy())


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_torch_uniform(torch, seed, dt):
    g = pair(torch, seed)
    td = tdtype(torch, dt)
    for n in SIZES:
        assert_same(g.uniform(n, dt), torch.rand(n, dtype=td))
        assert_same(g.uniform(n, dt, -0.3, 0.3), torch.empty(n, dtype=td).uniform_(-0.3, 0.3))
        assert_same(g.uniform(n, dt, 2.0, 7.5), torch.empty(n, dtype=td).uniform_(2.0, 7.5))
    assert_same(g.uniform((3, 5, 7), dt, -1, 1), torch.empty(3, 5, 7, dtype=td).uniform_(-1, 1))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_torch_normal(torch, seed, dt):
    g = pair(torch, seed)
    td = tdtype(torch, dt)
    for n in SIZES:
        assert_same(g.normal(n, dt), torch.randn(n, dtype=td))
        assert_same(g.normal(n, dt, 0.5, 0.02), torch.empty(n, dtype=td).normal_(0.5, 0.02))
        assert_same(g.normal(n, dt, -3.0, 7.0), torch.empty(n, dtype=td).normal_(-3.0, 7.0))
        in_step(torch, g)
    assert_same(g.normal((4, 33), dt), torch.randn(4, 33, dtype=td))
    # a non-contiguous tensor takes the per-element kernel (in memory order)
    t = torch.empty(20, 2, dtype=td).t()
    t.normal_(1.0, 2.0)
    assert_same(g.normal(40, dt, 1.0, 2.0, contiguous=False), t.t().reshape(-1))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("dt", FLOATS)
def test_torch_normal_large(torch, dt):
    g = pair(torch, 3)
    td = tdtype(torch, dt)
    assert_same(g.normal(200_003, dt), torch.randn(200_003, dtype=td))
    assert_same(g.normal(100_000, dt, 0.1, 0.02), torch.empty(100_000, dtype=td).normal_(0.1, 0.02))
    in_step(torch, g)


@pytest.mark.torch
def test_torch_normal_with_tensors(torch):
    g = pair(torch, 8)
    rng = np.random.default_rng(0)
    m = rng.normal(size=(4, 10)).astype(np.float32)
    s = rng.random(10).astype(np.float32)
    tm, ts = torch.from_numpy(m), torch.from_numpy(s)
    assert_same(g.normal(None, np.float32, m, s), torch.normal(tm, ts))
    assert_same(g.normal(None, np.float32, m, 2.5), torch.normal(tm, 2.5))
    s2 = np.broadcast_to(s, (4, 10)).copy()
    assert_same(g.normal(None, np.float32, 0.3, s2), torch.normal(0.3, torch.from_numpy(s2)))
    m64 = m.astype(np.float64)
    s64 = np.abs(m64) + 0.1
    assert_same(g.normal(None, np.float64, m64[:1], s64),
                torch.normal(torch.from_numpy(m64[:1]), torch.from_numpy(s64)))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
def test_torch_randint(torch, seed):
    g = pair(torch, seed)
    for n in (1, 7, 1000):
        for lo, hi in [(0, 10), (-5, 5), (0, 2 ** 28 - 1), (0, 2 ** 28), (-2 ** 40, 2 ** 50),
                       (-2 ** 63, 2 ** 63 - 1)]:
            assert_same(g.randint(lo, hi, n), torch.randint(lo, hi, (n,)))
        for dt in [np.int8, np.uint8, np.int16, np.int32, np.float32, np.float64, np.float16]:
            assert_same(g.randint(-3, 100, (n,), dt) if dt != np.uint8 else g.randint(3, 100, (n,), dt),
                        torch.randint(-3 if dt != np.uint8 else 3, 100, (n,), dtype=tdtype(torch, dt)))
        assert_same(g.randint(0, 2, (n,), np.bool_), torch.randint(0, 2, (n,), dtype=torch.bool))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
def test_torch_random_(torch, seed):
    g = pair(torch, seed)
    int_types = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]
    for dt in int_types + FLOATS:
        td = tdtype(torch, dt)
        assert_same(g.random_(37, dt), torch.empty(37, dtype=td).random_())
        assert_same(g.random_(37, dt, None, 2), torch.empty(37, dtype=td).random_(2))
        if dt != np.bool_:
            assert_same(g.random_(37, dt, 3), torch.empty(37, dtype=td).random_(3, None))
    for dt in (np.int64, np.float32, np.float64):
        assert_same(g.random_(37, dt, -2 ** 63),
                    torch.empty(37, dtype=tdtype(torch, dt)).random_(-2 ** 63, None))
    # from/to moved onto representable values for float16
    assert_same(g.random_(37, np.float16, -2048, 2048),
                torch.empty(37, dtype=torch.float16).random_(-2048, 2048))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
def test_torch_randperm(torch, seed):
    g = pair(torch, seed)
    for n in [0, 1, 2, 3, 10, 255, 256, 257, 1000, 65_537]:
        assert_same(g.randperm(n), torch.randperm(n))
    for dt in (np.int32, np.int16, np.float32, np.float64):
        assert_same(g.randperm(300, dt), torch.randperm(300, dtype=tdtype(torch, dt)))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
def test_torch_bernoulli(torch, seed):
    g = pair(torch, seed)
    for n in (1, 5, 1000):
        for dt in FLOATS + [np.bool_, np.int64, np.uint8]:
            td = tdtype(torch, dt)
            assert_same(g.bernoulli(0.37, n, dt), torch.empty(n, dtype=td).bernoulli_(0.37))
        for pdt in FLOATS:
            p = np.linspace(0, 1, n).astype(pdt)
            assert_same(g.bernoulli(p, n, pdt), torch.bernoulli(torch.from_numpy(p)))
    p = np.random.default_rng(1).random((5, 1)).astype(np.float32)
    assert_same(g.bernoulli(p, (5, 7), np.float32),
                torch.empty(5, 7).bernoulli_(torch.from_numpy(p)))
    p = np.random.default_rng(2).random((1, 7))
    assert_same(g.bernoulli(p, (5, 7), np.bool_),
                torch.empty(5, 7, dtype=torch.bool).bernoulli_(torch.from_numpy(p)))
    in_step(torch, g)


@pytest.mark.torch
def test_torch_dropout_mask_is_bernoulli(torch):
    g = pair(torch, 4)
    y = torch.nn.functional.dropout(torch.ones(3, 50), 0.3, training=True)
    mask = g.bernoulli(0.7, (3, 50), np.float32)
    assert_same(mask / np.float32(0.7), y)


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_torch_continuous(torch, seed, dt):
    g = pair(torch, seed)
    td = tdtype(torch, dt)
    for n in (1, 3, 16, 17, 500):
        assert_same(g.exponential(n, dt, 1.5), torch.empty(n, dtype=td).exponential_(1.5))
        assert_same(g.cauchy(n, dt, 0.1, 2.0), torch.empty(n, dtype=td).cauchy_(0.1, 2.0))
        assert_same(g.log_normal(n, dt, 0.1, 0.5), torch.empty(n, dtype=td).log_normal_(0.1, 0.5))
        assert_same(g.geometric(n, dt, 0.3), torch.empty(n, dtype=td).geometric_(0.3))
    assert_same(g.geometric(50, np.int64, 0.05), torch.empty(50, dtype=torch.int64).geometric_(0.05))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_torch_multinomial(torch, seed, dt):
    g = pair(torch, seed)
    p = np.random.default_rng(seed).random((4, 7)).astype(dt)
    for num, repl in [(1, False), (1, True), (3, False), (7, False), (5, True), (40, True)]:
        assert_same(g.multinomial(p, num, repl), torch.multinomial(torch.from_numpy(p), num, repl))
        assert_same(g.multinomial(p[1], num, repl),
                    torch.multinomial(torch.from_numpy(p[1]), num, repl))
    z = np.array([0.2, 0, 0, 0.5, 0, 0.3], dt)
    assert_same(g.multinomial(z, 3, False), torch.multinomial(torch.from_numpy(z), 3, False))
    assert_same(g.multinomial(z, 50, True), torch.multinomial(torch.from_numpy(z), 50, True))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_torch_poisson(torch, dt):
    g = pair(torch, 6)
    lam = np.tile(np.array([0, 0.5, 1, 3, 9.9, 10, 12, 50, 1000, 2.5e5], dt), 30)
    assert_same(g.poisson(lam), torch.poisson(torch.from_numpy(lam)))
    in_step(torch, g)


@pytest.mark.torch
@pytest.mark.parametrize("seed", [0, 5])
def test_torch_bfloat16(torch, seed):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)

    def theirs(t):
        return t.contiguous().view(torch.int16).numpy().view(bf16)

    def tensor(a):
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)

    g = pair(torch, seed)
    tb = torch.bfloat16
    for n in (1, 5, 16, 17, 33, 1001):
        assert_same(g.uniform(n, bf16), theirs(torch.rand(n, dtype=tb)))
        assert_same(g.uniform(n, bf16, -0.3, 0.7), theirs(torch.empty(n, dtype=tb).uniform_(-0.3, 0.7)))
        assert_same(g.normal(n, bf16), theirs(torch.randn(n, dtype=tb)))
        assert_same(g.normal(n, bf16, 0.5, 2.0), theirs(torch.empty(n, dtype=tb).normal_(0.5, 2.0)))
        assert_same(g.random_(n, bf16), theirs(torch.empty(n, dtype=tb).random_()))
        assert_same(g.randint(-100, 100, n, bf16), theirs(torch.randint(-100, 100, (n,), dtype=tb)))
        assert_same(g.random_(n, bf16, -2 ** 63), theirs(torch.empty(n, dtype=tb).random_(-2 ** 63, None)))
        assert_same(g.exponential(n, bf16), theirs(torch.empty(n, dtype=tb).exponential_()))
        assert_same(g.bernoulli(0.4, n, bf16), theirs(torch.empty(n, dtype=tb).bernoulli_(0.4)))
        p = np.linspace(0, 1, n).astype(bf16)
        assert_same(g.bernoulli(p, n, bf16), theirs(torch.bernoulli(tensor(p))))
    p = np.random.default_rng(seed).random((3, 9)).astype(bf16)
    for num, repl in [(1, False), (4, False), (9, True)]:
        assert_same(g.multinomial(p, num, repl), torch.multinomial(tensor(p), num, repl))
    lam = np.array([0.5, 3, 30], bf16)
    assert_same(g.poisson(lam), theirs(torch.poisson(tensor(lam))))
    in_step(torch, g)


@pytest.mark.torch
def test_torch_state_interop(torch):
    g = pair(torch, 10)
    in_step(torch, g)
    g.normal(5, np.float64)
    torch.randn(5, dtype=torch.float64)
    in_step(torch, g)
    # torch's state into fabric, and back
    torch.randn(3, dtype=torch.float64)
    h = MT19937Generator()
    h.set_state(torch.get_rng_state().numpy())
    assert_same(h.normal(5, np.float64), torch.randn(5, dtype=torch.float64))
    torch.set_rng_state(torch.from_numpy(h.get_state()))
    assert_same(h.uniform(100, np.float32), torch.rand(100))
    in_step(torch, h)
    assert h.initial_seed() == torch.initial_seed()


@pytest.mark.torch
def test_torch_generic_kernels_flavour(torch):
    """PyTorch with ATEN_CPU_CAPABILITY=default: no FMA, scalar logf/sinf."""
    script = (
        "import json, torch\n"
        "out = {}\n"
        "torch.manual_seed(5)\n"
        "out['u'] = torch.empty(40).uniform_(-1.3, 2.2).numpy().view('u4').tolist()\n"
        "out['n32'] = torch.empty(37).normal_(0.4, 1.3).numpy().view('u4').tolist()\n"
        "out['n16'] = torch.randn(37, dtype=torch.float16).numpy().view('u2').tolist()\n"
        "out['s'] = torch.empty(5, dtype=torch.float64).normal_(1.0, 3.0).numpy().view('u8').tolist()\n"
        "out['c'] = torch.empty(5, dtype=torch.float64).cauchy_(0.1, 2.0).numpy().view('u8').tolist()\n"
        "print(json.dumps(out))\n")
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    ref = json.loads(res.stdout)
    with flavor("default"):
        g = MT19937Generator(5)
        assert g.uniform(40, np.float32, -1.3, 2.2).view(np.uint32).tolist() == ref["u"]
        assert g.normal(37, np.float32, 0.4, 1.3).view(np.uint32).tolist() == ref["n32"]
        assert g.normal(37, np.float16).view(np.uint16).tolist() == ref["n16"]
        assert g.normal(5, np.float64, 1.0, 3.0).view(np.uint64).tolist() == ref["s"]
        assert g.cauchy(5, np.float64, 0.1, 2.0).view(np.uint64).tolist() == ref["c"]


def test_normal_with_zero_dim_tensor_arguments_gives_a_zero_dim_tensor():
    import fabric

    fabric.manual_seed(0)
    t = fabric.normal(fabric.tensor(0.0), fabric.tensor(1.0))
    assert t.shape == () and t.device.type == "cpu" and t.numpy().shape == ()


# --- the numba twin of the float32 AVX2 Box-Muller (fabric/_rng/normal_kernel.py) -------------------

def test_normal_kernel_equals_numpy_replay_bit_for_bit():
    pytest.importorskip("numba")
    from fabric._rng import _normal_numba, normal_kernel
    if os.environ.get("FABRIC_CPU_KERNELS") == "0":
        pytest.skip("FABRIC_CPU_KERNELS=0: the numba kernel is off")
    kernel = normal_kernel.box_muller16_f32()
    assert kernel is not None, "numba is installed but the normal_ kernel did not build"
    u = np.random.default_rng(7).integers(0, 1 << 24, (4096, 16)).astype(np.float32) * np.float32(2.0 ** -24)
    u[0] = 0.0
    u[1] = np.float32(1 - 2.0 ** -24)                    # the extremes of the 24-bit uniforms
    for mean, std in ((0.0, 1.0), (0.5, 2.0), (-1.25, 0.3)):
        got, want = kernel(u, mean, std), mt19937._box_muller16_f32(u, mean, std)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    # a fused multiply-add whose float64 sum lands on a float32 halfway point: both round it as an FMA
    a, b, c = np.float32(1 + 2.0 ** -23), np.float32(2.0 ** -24 * (1 - 2.0 ** -23)), np.float32(1 + 2.0 ** -23)
    d64 = np.empty(1)
    for sign in (1, -1):
        want = libm._fma32(np.array([sign * a]), np.array([b]), np.array([sign * c]))[0]
        assert want == sign * np.float32(1 + 2.0 ** -23)
        assert _normal_numba.fma32(sign * a, b, sign * c, d64, d64.view(np.int64)) == want


@pytest.mark.torch
def test_large_randn_through_the_kernel_matches_torch():
    torch = pytest.importorskip("torch")
    from fabric._rng import normal_kernel
    n = normal_kernel.MIN_ELEMENTS * 2 + 5                # the kernel's path, and a recomputed tail block
    for mean, std in ((0.0, 1.0), (0.3, 2.0)):
        g = MT19937Generator(11)
        t = torch.Generator().manual_seed(11)
        got = g.normal((n,), np.float32, mean, std)
        want = torch.empty(n).normal_(mean, std, generator=t).numpy()
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
