"""Forward-mode AD for every differentiable op of the OpInfo registry: the
tangent of each op's output (fabric.autograd.forward_ad) is checked against
central finite differences along the tangent and against reverse mode
(``<u, J t> == <J^T u, t>``), in float64.  New OpInfo entries get the checks
automatically."""
from __future__ import annotations

import numpy as np
import pytest
from opinfo import ALL_OPS

import fabric
import fabric.autograd.forward_ad as fwAD


def _conv(v):
    if isinstance(v, np.ndarray):
        return fabric.from_numpy(v.copy())
    if isinstance(v, list):
        return [_conv(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_conv(x) for x in v)
    return v


def _float_leaves(v, out):
    if isinstance(v, fabric.Tensor) and v.dtype == fabric.float64:
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _float_leaves(x, out)
    return out


def _substitute(v, mapping):
    if isinstance(v, fabric.Tensor) and id(v) in mapping:
        return mapping[id(v)]
    if isinstance(v, list):
        return [_substitute(x, mapping) for x in v]
    if isinstance(v, tuple):
        return tuple(_substitute(x, mapping) for x in v)
    return v


def _fn(op):
    if op.name == "getitem":
        return lambda x, k: x[k]
    return op.resolve(fabric)


FORWARD_OPS = [o for o in ALL_OPS if o.differentiable and np.float64 in o.dtypes]


@pytest.mark.parametrize("op", FORWARD_OPS, ids=lambda o: o.name)
def test_forward_ad_matches_finite_differences_and_reverse_mode(op):
    _check(op)


# Ops whose tangents must come from their jvp rules (not the double-backward fallback); the others are
# listed by test_report_fallback_ops.
RULE_OPS = """abs acos add atan2 cat exp expm1 getitem hypot log1p matmul maximum mean mm mul mv neg permute relu
reshape rsqrt select sigmoid sin sqrt stack sub sum tanh transpose unsqueeze view log cumsum logsumexp flip unbind
split chunk clone amax amin var std""".split()


def test_ops_with_jvp_rules_use_them():
    ops = {o.name: o for o in FORWARD_OPS}
    for name in RULE_OPS:
        assert _check(ops[name]) == {"rules"}, name


def test_report_fallback_ops():
    """Which OpInfo ops still take forward_ad's double-backward fallback (printed with ``-s``)."""
    fallback = sorted({o.name for o in FORWARD_OPS if o.name not in RULE_OPS and _check(o) != {"rules"}})
    print(f"\nforward AD by double backward ({len(fallback)} of {len({o.name for o in FORWARD_OPS})} ops): {' '.join(fallback)}")
    assert not set(fallback) & set(RULE_OPS)


def _check(op):
    """Forward AD of ``op``'s first float64 samples against finite differences and reverse mode; returns how
    the tangents were computed."""
    paths = set()
    fn = _fn(op)
    rng = np.random.default_rng(0)
    checked = 0
    samples = op.sample_inputs(np.float64, np.random.default_rng(0))
    for s in samples:
        if not s.grad or checked == 3:
            continue
        x, args = _conv(s.input), _conv(s.args)
        leaves = _float_leaves([x, args], [])
        if not leaves:
            continue

        def call(values, x=x, args=args, s=s, leaves=leaves):
            m = {id(leaf): v for leaf, v in zip(leaves, values)}
            r = fn(_substitute(x, m), *_substitute(args, m), **s.kwargs)
            return r[op.output_index] if op.output_index is not None else r

        base = call([leaf.detach() for leaf in leaves])
        if not isinstance(base, fabric.Tensor) or base.dtype != fabric.float64 or base.numel() == 0:
            continue
        if not np.isfinite(base.numpy()).all():  # no derivative to compare (logdet of a negative determinant)
            continue
        tangents = [fabric.from_numpy(rng.standard_normal(tuple(leaf.shape))) for leaf in leaves]
        with fwAD.dual_level():
            duals = [fwAD.make_dual(leaf.detach(), t) for leaf, t in zip(leaves, tangents)]
            jt = fwAD.unpack_dual(call(duals)).tangent
        paths.add(fwAD.last_path[0])
        jt = np.zeros(tuple(base.shape)) if jt is None else jt.detach().numpy()
        eps = 1e-6
        plus = call([leaf.detach() + eps * t for leaf, t in zip(leaves, tangents)]).detach().numpy()
        minus = call([leaf.detach() - eps * t for leaf, t in zip(leaves, tangents)]).detach().numpy()
        np.testing.assert_allclose(jt, (plus - minus) / (2 * eps), atol=op.grad_atol * 10, rtol=1e-4,
                                   err_msg=f"{op.name} {s}: forward AD vs finite differences")
        ins = [leaf.detach().requires_grad_(True) for leaf in leaves]
        out = call(ins)
        if out.requires_grad:
            u = fabric.from_numpy(rng.standard_normal(tuple(out.shape)))
            vjps = fabric.autograd.grad(out, ins, u, allow_unused=True)
            lhs = float((u.numpy() * jt).sum())
            rhs = sum(float((g.numpy() * t.numpy()).sum()) for g, t in zip(vjps, tangents) if g is not None)
            assert abs(lhs - rhs) <= 1e-8 * max(1.0, abs(lhs)), f"{op.name} {s}: <u, Jt>={lhs} <J^T u, t>={rhs}"
        checked += 1
    assert checked or not any(s.grad for s in samples), f"{op.name}: no float64 sample with a differentiable output was checked"
    return paths


def test_forward_ad_api():
    x = fabric.tensor([1.0, 2.0], dtype=fabric.float64)
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, fabric.ones(3))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(fabric.tensor([1, 2]), x)
        d = fwAD.make_dual(x, fabric.tensor([1.0, 0.0], dtype=fabric.float64))
        p, t = fwAD.unpack_dual(d)
        assert t.tolist() == [1.0, 0.0]
        assert fwAD.unpack_dual(fabric.ones(1)).tangent is None
        assert fwAD.unpack_dual(d * 2).tangent.tolist() == [2.0, 0.0]
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
    with pytest.raises(RuntimeError, match="not the last one"):
        fwAD.exit_dual_level(level=0)
    lvl = fwAD.enter_dual_level()
    fwAD.exit_dual_level(level=lvl)


@pytest.mark.torch
def test_forward_ad_matches_torch():
    import torch
    import torch.autograd.forward_ad as tfw

    xn = np.random.default_rng(1).standard_normal((3, 4))
    tn = np.random.default_rng(2).standard_normal((3, 4))

    def f(lib, x):
        return (x.softmax(-1) @ x.T).tanh().sum(0) * x.norm()

    with tfw.dual_level():
        ref = tfw.unpack_dual(f(torch, tfw.make_dual(torch.tensor(xn), torch.tensor(tn)))).tangent.numpy()
    with fwAD.dual_level():
        got = fwAD.unpack_dual(f(fabric, fwAD.make_dual(fabric.tensor(xn), fabric.tensor(tn)))).tangent.numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-10)
