"""Randomized comparison with PyTorch: transforms of random shapes, dims, sizes, norms and dtypes, and
stft/istft of random configurations, give PyTorch's values, gradients and errors (a fixed seed; each case
prints its configuration on failure)."""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import fabric

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]


def _transform_case(r):
    nd = r.randint(1, 3)
    shape = tuple(r.randint(1, 5) for _ in range(nd))
    kw = {"norm": r.choice([None, "backward", "forward", "ortho"])}
    if r.random() < 0.5:
        name = r.choice(ONE_D)
        kw["dim"] = r.randint(-nd, nd - 1)
        if r.random() < 0.5:
            kw["n"] = r.randint(1, 7)
        return name, shape, kw
    name = r.choice(N_D)
    if name.endswith("2") and nd < 2:
        return name, shape + (3,), kw
    dims = r.sample(range(nd), 2 if name.endswith("2") else r.randint(1, nd))
    if r.random() < 0.7:
        kw["dim"] = dims
    if r.random() < 0.5:
        kw["s"] = [r.choice([-1, r.randint(1, 6)]) for _ in dims]
    return name, shape, kw


def _run(lib, fn, a, kwargs):
    x = lib.tensor(a, requires_grad=True)
    try:
        return x, fn(lib)(x, **kwargs), None
    except Exception as e:  # compared with PyTorch's error
        return x, None, e


def _compare(case, theirs, ours, grad_seed):
    import torch

    (tx, ty, te), (fx, fy, fe) = theirs, ours
    if te is not None or fe is not None:
        assert te is not None and fe is not None, f"{case}: {te!r} vs {fe!r}"
        assert type(fe) is type(te) and str(fe).splitlines()[0] == str(te).splitlines()[0], case
        return
    assert tuple(fy.shape) == tuple(ty.shape), case
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().resolve_conj().numpy(), atol=1e-9, err_msg=case)
    rng = np.random.default_rng(grad_seed)
    g = rng.standard_normal(tuple(ty.shape)) + (1j * rng.standard_normal(tuple(ty.shape)) if ty.is_complex() else 0)
    ty.backward(torch.tensor(g))
    fy.backward(fabric.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.resolve_conj().numpy(), atol=1e-9, err_msg=f"grad {case}")


@pytest.mark.torch
@pytest.mark.parametrize("seed", range(4))
def test_random_transforms_match_torch(seed):
    import torch

    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    for k in range(60):
        name, shape, kw = _transform_case(r)
        a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if r.random() < 0.5 else 0)
        case = f"{name}{shape} {a.dtype} {kw}"
        def transform(lib, name=name):
            return getattr(lib.fft, name)

        _compare(case, _run(torch, transform, a, kw), _run(fabric, transform, a, kw), k)


def _stft_case(r):
    n_fft = r.randint(2, 12)
    kw = {"n_fft": n_fft, "return_complex": True, "center": r.random() < 0.6, "normalized": r.random() < 0.3}
    if r.random() < 0.7:
        kw["hop_length"] = r.randint(1, n_fft)
    if r.random() < 0.5:
        kw["win_length"] = r.randint(1, n_fft)
    if kw["center"]:
        kw["pad_mode"] = r.choice(["reflect", "constant", "replicate", "circular"])
    elif r.random() < 0.3 and (n_fft - kw.get("win_length", n_fft)) % 2 == 0:  # see docs/fft.md
        kw["align_to_window"] = True
    if r.random() < 0.3:
        kw["onesided"] = r.random() < 0.5
    return kw


@pytest.mark.torch
@pytest.mark.parametrize("seed", range(2))
def test_random_stft_istft_match_torch(seed):
    import torch

    r = random.Random(100 + seed)
    rng = np.random.default_rng(100 + seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(40):
            kw = _stft_case(r)
            shape = r.choice([(r.randint(kw["n_fft"], 40),), (r.randint(1, 3), r.randint(kw["n_fft"], 40))])
            a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if r.random() < 0.2 else 0)
            win = kw.get("win_length", kw["n_fft"])
            w = rng.uniform(0.2, 1.0, win) if r.random() < 0.8 else None

            def stft(lib, w=w, kw=kw):
                return lambda x: lib.stft(x, window=None if w is None else lib.tensor(w), **kw)

            theirs, ours = _run(torch, stft, a, {}), _run(fabric, stft, a, {})
            _compare(f"stft{shape} {a.dtype} {kw}", theirs, ours, k)
            if theirs[1] is None:
                continue
            ikw = {k2: v for k2, v in kw.items() if k2 not in ("pad_mode", "align_to_window")}
            ikw["return_complex"] = bool(a.dtype.kind == "c" or (kw.get("onesided") is False and r.random() < 0.5))
            if r.random() < 0.5:
                ikw["length"] = r.randint(1, shape[-1] + 5)
            spec = theirs[1].detach().numpy()

            def istft(lib, w=w, ikw=ikw):
                return lambda s: lib.istft(s, window=None if w is None else lib.tensor(w), **ikw)

            _compare(f"istft{spec.shape} {ikw}", _run(torch, istft, spec, {}), _run(fabric, istft, spec, {}), k)
