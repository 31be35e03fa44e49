"""Batching rules (``fabric.func.vmap``) of ``fabric.fft``: every transform and shift runs once on the whole
batch, its logical (one example's) dims moved past the batch dimension; ``stft`` of a 1-D signal and
``istft`` of one 2-D spectrogram use the batched forms the ops already have.

A rule gets the input with the batch at dim 0 and returns ``NotImplemented`` for what it does not cover
(``out=``, a 0-d example, dims out of range), which then runs per example and raises the per-example error.

Example::

    >>> import fabric
    >>> from fabric.func import vmap
    >>> vmap(lambda v: fabric.fft.rfft(v, dim=0))(fabric.ones(3, 4)).shape
    fabric.Size([3, 3])
"""
from __future__ import annotations

import numbers

from ..func._batched import RULES
from ..ops._registry import REGISTRY
from . import _helpers, _stft, _transforms

ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
TWO_D = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")


def _physical(dim, n):
    """Logical dim ``dim`` of an ``n``-d example as the batched tensor's dim (None: out of range)."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or not -n <= dim < n:
        return None
    return int(dim) % n + 1


def _one_d_rule(fn):
    def rule(ctx, input, n=None, dim=-1, norm=None, *, out=None):
        examples = ctx.ldim(input)
        d = _physical(dim, examples)
        if not ctx.batched(input) or out is not None or examples == 0 or d is None:
            return NotImplemented
        return ctx.call(ctx.key, fn, input, n, d, norm)
    return rule


def _n_d_rule(fn, default_dim=None):
    def rule(ctx, input, s=None, dim=default_dim, norm=None, *, out=None):
        examples = ctx.ldim(input)
        if not ctx.batched(input) or out is not None or examples == 0:
            return NotImplemented
        if dim is None:  # every dim, or the last len(s): explicit here, since dim 0 is the batch
            if s is not None and (isinstance(s, numbers.Integral) or len(s) > examples):
                return NotImplemented
            dim = tuple(range(examples)) if s is None else tuple(range(examples - len(s), examples))
        dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
        physical = tuple(_physical(d, examples) for d in dims)
        if None in physical:
            return NotImplemented
        return ctx.call(ctx.key, fn, input, s, physical, norm)
    return rule


def _shift_rule(fn):
    def rule(ctx, input, dim=None):
        examples = ctx.ldim(input)
        if not ctx.batched(input) or examples == 0:
            return NotImplemented
        dims = tuple(range(examples)) if dim is None else ((dim,) if isinstance(dim, numbers.Integral) else dim)
        physical = tuple(_physical(d, examples) for d in dims)
        if None in physical or not physical:
            return NotImplemented
        return ctx.call(ctx.key, fn, input, physical)
    return rule


for _name in ONE_D:
    RULES[f"fft.{_name}"] = _one_d_rule(getattr(_transforms, _name))
for _name in N_D:
    RULES[f"fft.{_name}"] = _n_d_rule(getattr(_transforms, _name))
for _name in TWO_D:
    RULES[f"fft.{_name}"] = _n_d_rule(getattr(_transforms, _name), (-2, -1))
for _name in ("fftshift", "ifftshift"):
    RULES[f"fft.{_name}"] = _shift_rule(getattr(_helpers, _name))


def _stft_rule(ctx, input, n_fft, *args, **kwargs):
    """``stft`` of one 1-D signal per example is ``stft`` of the (batch, time) signal."""
    window = args[2] if len(args) > 2 else kwargs.get("window")
    if not ctx.batched(input) or ctx.ldim(input) != 1 or (window is not None and ctx.batched(window)):
        return NotImplemented
    return ctx.call("stft", _stft.stft, input, n_fft, *args, **kwargs)


def _istft_rule(ctx, input, n_fft, *args, **kwargs):
    """``istft`` of one (freq, frames) spectrogram per example is ``istft`` of the batch of them."""
    window = args[2] if len(args) > 2 else kwargs.get("window")
    if not ctx.batched(input) or ctx.ldim(input) != 2 or (window is not None and ctx.batched(window)):
        return NotImplemented
    return ctx.call("istft", _stft.istft, input, n_fft, *args, **kwargs)


# declared ops keep their rule in the declaration's slot
REGISTRY["stft"].vmap = _stft_rule
REGISTRY["istft"].vmap = _istft_rule
