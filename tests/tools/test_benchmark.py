"""fabric.utils.benchmark: Timer loops and statistics (on a simulated clock,
so no test depends on real timing), Measurement and Compare printed as
PyTorch prints them."""
from __future__ import annotations

import re

import numpy as np
import pytest

import fabric
from fabric.utils.benchmark import Compare, Measurement, TaskSpec, Timer
from fabric.utils.benchmark.common import select_unit, trim_sigfig


def _clocked(costs, **kw):
    """A Timer whose statement advances a fake clock by the next of ``costs`` (seconds)."""
    state = {"now": 0.0, "i": 0}

    def tick():
        state["now"] += costs[state["i"] % len(costs)]
        state["i"] += 1

    t = Timer("tick()", globals={"tick": tick}, timer=lambda: state["now"], **kw)
    return t, state


def test_timeit_counts_runs_and_divides():
    t, state = _clocked([2e-6])
    m = t.timeit(500)
    assert m.number_per_run == 500 and len(m.raw_times) == 1
    assert m.raw_times[0] == pytest.approx(500 * 2e-6)
    assert m.median == pytest.approx(2e-6) and m.mean == pytest.approx(2e-6)
    assert state["i"] == 500 + 5  # the warm-up ran max(500 // 100, 2) times


def test_blocked_autorange_block_size_and_total_time():
    t, _ = _clocked([1e-6])
    m = t.blocked_autorange(min_run_time=0.2)
    # overhead ~1e-9: the block grows until overhead/time <= 1e-4 and a block lasts >= min_run_time / 1000
    assert m.number_per_run == 1000
    assert len(m.raw_times) == 200 and sum(m.raw_times) == pytest.approx(0.2, rel=1e-6)
    assert m.median == pytest.approx(1e-6) and m.iqr == pytest.approx(0, abs=1e-15)


def test_statistics_are_quantiles_of_per_run_times():
    t, _ = _clocked([1e-6, 3e-6, 2e-6, 10e-6])
    m = t.blocked_autorange(min_run_time=0.01)
    per_run = np.array(m.raw_times) / m.number_per_run
    assert m.times == pytest.approx(list(per_run))
    assert m.median == pytest.approx(np.quantile(per_run, 0.5))
    assert m.iqr == pytest.approx(np.quantile(per_run, 0.75) - np.quantile(per_run, 0.25))


def test_adaptive_autorange_stops_when_converged_or_out_of_time():
    steady, _ = _clocked([1e-6])
    m = steady.adaptive_autorange(threshold=0.1, min_run_time=0.01)
    assert len(m.raw_times) >= 4 and m.meets_confidence(0.1)
    # a statement whose block times keep spreading never converges: max_run_time ends it
    noisy, _ = _clocked([1e-6] * 999 + [5e-3])
    m = noisy.adaptive_autorange(threshold=0.0, min_run_time=0.001, max_run_time=0.05)
    assert 0.05 < sum(m.raw_times) < 0.05 + 2 * max(m.raw_times)


def test_real_statement_runs_with_globals_and_setup():
    x = fabric.ones(3)
    m = Timer("y = x + z", setup="z = fabric.ones(3) * 2", globals={"x": x}).timeit(10)
    assert m.median > 0 and m.stmt == "y = x + z" and m.title == "y = x + z"


def test_bad_arguments():
    with pytest.raises(ValueError, match="only a `str` stmt"):
        Timer(lambda: None)
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        Timer("x", language="cpp")
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        Compare([1])


def test_measurement_repr_layout():
    spec = TaskSpec("x + y", "pass", label="add", sub_label="3", description="plain")
    m = Measurement(100, [2.0e-4, 2.2e-4, 2.1e-4, 2.05e-4], spec)
    lines = repr(m).splitlines()
    assert re.fullmatch(r"<fabric\.utils\.benchmark\.common\.Measurement object at 0x[0-9a-f]+>", lines[0])
    assert lines[1:] == ["add: 3", "plain", "  Median: 2.08 us", "  IQR:    0.09 us (2.04 to 2.12)",
                         "  4 measurements, 100 runs per measurement, 1 thread"]
    one = Measurement(1000, [1.25e-3], TaskSpec("x + y", "pass"))
    assert repr(one).splitlines()[1:] == ["x + y", "  1.25 us", "  1 measurement, 1000 runs , 1 thread"]
    noisy = Measurement(1, [1.0, 1.0, 2.0, 3.0], TaskSpec("f()", "pass"))
    assert noisy.has_warnings and "significant environmental influence" in repr(noisy)


def test_units_and_sigfigs():
    assert select_unit(5e-9) == ("ns", 1e-9) and select_unit(5e-6) == ("us", 1e-6)
    assert select_unit(5e-3) == ("ms", 1e-3) and select_unit(5.0) == ("s", 1)
    assert trim_sigfig(3.14159, 2) == pytest.approx(3.1)


def _torch_pairs():
    torch = pytest.importorskip("torch")
    from torch.utils.benchmark.utils import common as tc

    rng = np.random.default_rng(0)
    cases = []
    for label, sub, desc, base, n in [("add", "3", "plain", 3e-6, 6), ("add", "3", "mul", 2.7e-6, 6),
                                      ("add", "30", "mul", 2.4e-6, 3), ("mm", "64", "fabric", 1.5e-3, 8),
                                      ("mm", "64", "numpy", 1.7e-3, 8), ("mm", "128", "numpy", 9e-3, 1)]:
        raw = list(base * 100 * (1 + 0.05 * rng.standard_normal(n)))
        cases.append((TaskSpec("x", "pass", label=label, sub_label=sub, description=desc),
                      tc.TaskSpec("x", "pass", label=label, sub_label=sub, description=desc), raw))
    ours = [Measurement(100, raw, s) for s, _, raw in cases]
    theirs = [tc.Measurement(100, raw, ts) for _, ts, raw in cases]
    return torch, ours, theirs


@pytest.mark.torch
def test_measurement_and_compare_print_like_pytorch():
    torch, ours, theirs = _torch_pairs()
    from torch.utils.benchmark import Compare as TorchCompare

    for a, b in zip(ours, theirs, strict=True):
        assert repr(a).splitlines()[1:] == repr(b).splitlines()[1:]
        assert a.significant_figures == b.significant_figures
        assert a.median == pytest.approx(b.median) and a.iqr == pytest.approx(b.iqr)
    assert str(Compare(ours)) == str(TorchCompare(theirs))
    for setup in (lambda c: c.trim_significant_figures(), lambda c: c.colorize(),
                  lambda c: c.colorize(rowwise=True), lambda c: c.highlight_warnings()):
        c1, c2 = Compare(ours), TorchCompare(theirs)
        setup(c1)
        setup(c2)
        assert str(c1) == str(c2)
