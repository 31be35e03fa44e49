"""vmap over every OpInfo op: the batched call (rules, or the per-op fallback) gives the per-example
loop's values, batching the op's first tensor argument (and, for binary ops, the second too).  New
OpInfo entries get the check automatically."""
from __future__ import annotations

import numpy as np
import pytest
from opinfo import ALL_OPS

import fabric
from fabric.func import _batched as B
from fabric.func import vmap

BATCH = 3


def _fn(op):
    if op.name == "getitem":
        return lambda x, k: x[k]
    return op.resolve(fabric)


def _batch(a, rng):
    """``BATCH`` examples like ``a`` (the sample itself first)."""
    out = [a] + [a + rng.standard_normal(a.shape).astype(a.dtype) * 0.1 if a.dtype.kind == "f" else a
                 for _ in range(BATCH - 1)]
    return np.stack(out)


def _conv(v):
    if isinstance(v, np.ndarray):
        return fabric.from_numpy(v.copy())
    if isinstance(v, list):
        return [_conv(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_conv(x) for x in v)
    return v


def _values(r, op):
    if op.output_index is not None and isinstance(r, (tuple, list)):
        r = r[op.output_index]
    if isinstance(r, fabric.Tensor):
        return [r]
    if isinstance(r, (tuple, list)) and all(isinstance(v, fabric.Tensor) for v in r):
        return list(r)
    return None


@pytest.mark.parametrize("op", [o for o in ALL_OPS if np.float64 in o.dtypes], ids=lambda o: o.name)
def test_vmap_matches_per_example(op):
    rng = np.random.default_rng(0)
    for s in op.sample_inputs(np.float64, np.random.default_rng(0))[:4]:
        if not isinstance(s.input, np.ndarray):
            continue
        xb = fabric.from_numpy(_batch(s.input, rng))
        args = _conv(s.args)
        second = bool(args) and isinstance(args[0], fabric.Tensor) and args[0].dtype == fabric.float64
        yb = fabric.from_numpy(_batch(s.args[0], rng)) if second else None

        def f(x, y=None, args=args, s=s):
            fn = _fn(op)   # looked up when called, as ``fabric.exp(x)`` is: the name vmap dispatches
            return fn(x, *((y,) + tuple(args[1:]) if y is not None else args), **s.kwargs)

        try:
            ref = [f(xb[i], None if yb is None else yb[i]) for i in range(BATCH)]
        except Exception:   # a sample the op rejects: vmap must reject it too
            with pytest.raises(Exception):  # noqa: B017
                vmap(f)(xb, yb) if yb is not None else vmap(f)(xb)
            continue
        refs = [_values(r, op) for r in ref]
        if refs[0] is None or any(v.dtype.is_complex for v in refs[0]):
            continue
        whole = [_values(r, _WHOLE) or [] for r in ref]   # every output: vmap stacks them all
        if any(len(rs) != len(whole[0]) or any(v.shape != w.shape for v, w in zip(rs, whole[0])) for rs in whole):
            with pytest.raises(RuntimeError):   # examples of different shapes do not stack (unique, nonzero)
                vmap(f)(xb, yb) if yb is not None else vmap(f)(xb)
            continue
        before = B.calls["per_example"]
        out = vmap(f)(xb, yb) if yb is not None else vmap(f)(xb)
        outs = _values(out, op)
        assert outs is not None and len(outs) == len(refs[0]), f"{op.name} {s}"
        for k, o in enumerate(outs):
            r = fabric.stack([refs[i][k] for i in range(BATCH)])
            assert tuple(o.shape) == tuple(r.shape), f"{op.name} {s}: {tuple(o.shape)} vs {tuple(r.shape)}"
            assert o.dtype == r.dtype, f"{op.name} {s}"
            np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-10, atol=1e-12,
                                       equal_nan=True, err_msg=f"{op.name} {s}")
        if op.name not in RUN_PER_EXAMPLE:
            assert B.calls["per_example"] == before, f"{op.name} {s}: func ran per example, not batched"


class _WHOLE:
    output_index = None


# Ops whose call reaches a tensor's values as Python data (or an unpatched function): vmap runs func per
# example for them.
RUN_PER_EXAMPLE = {"Tensor.sum_to_size"}
