"""Random tensors: ``rand``, ``randn``, ``randint``, ``randperm``, the
``*_like`` variants, and the in-place samplers (``uniform_``, ``normal_``,
``bernoulli_`` ...). CPU streams match PyTorch's for the same seed.

Example::

    >>> import fabric
    >>> _ = fabric.manual_seed(0)
    >>> fabric.randint(0, 10, (3,)).dtype
    fabric.int64
"""
from __future__ import annotations

import builtins

import numpy as np

from . import _dtype as D
from ._creation import _check_size, _finish, _np_dtype
from ._device import as_device
from ._errors import out_of_memory
from ._tensor import Tensor
from .autograd.grad_mode import no_grad
from .backends import backend_of
from .ops._registry import declare_op
from .ops._util import factory_size, shape_args
from .random import generator_for

__all__ = ["rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
           "multinomial", "poisson"]



def _gen(generator, device):
    return generator_for(generator, as_device(device) if device is not None else None)


def _place(arr, device, requires_grad):
    return _finish(arr, device, requires_grad)


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """Uniform samples on [0, 1): ``rand(2, 3)``, ``rand((2, 3))`` or ``rand(size=(2, 3))``."""
    shape = factory_size("rand", sizes, size)
    dt = _np_dtype(dtype)
    if dt.kind == "c":  # real and imaginary parts uniform on [0, 1), drawn as a (..., 2) real tensor
        parts = rand(*shape, 2, generator=generator, dtype=D.from_numpy_dtype(dt).to_real(), device=device)
        return _out(out, _complex_of(parts, requires_grad))
    if dt.kind != "f":
        raise RuntimeError(f'"check_uniform_bounds" not implemented for \'{_tn(dt)}\'')
    return _out(out, _place(_sampled(shape, dt, lambda: _gen(generator, device).uniform(shape, dt, 0.0, 1.0)),
                            device, requires_grad))


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """Standard normal samples (the size as for :func:`rand`)."""
    shape = factory_size("randn", sizes, size)
    dt = _np_dtype(dtype)
    if dt.kind == "c":  # PyTorch: real and imaginary parts each normal with variance 1/2, drawn pairwise
        parts = randn(*shape, 2, generator=generator, dtype=D.from_numpy_dtype(dt).to_real(), device=device)
        parts._data *= parts._data.dtype.type(0.5 ** 0.5)
        return _out(out, _complex_of(parts, requires_grad))
    if dt.kind != "f":
        raise RuntimeError(f'"normal_kernel_cpu" not implemented for \'{_tn(dt)}\'')
    return _out(out, _place(_sampled(shape, dt, lambda: _gen(generator, device).normal(shape, dt, 0.0, 1.0)),
                            device, requires_grad))


def _complex_of(parts, requires_grad):
    """The complex tensor whose (real, imag) pairs are the last axis of real ``parts``."""
    d = parts._data
    t = Tensor._make(d.view(D.to_complex(D.from_numpy_dtype(d.dtype)).np).reshape(d.shape[:-1]), False)
    return t.requires_grad_(True) if requires_grad else t


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False):
    """Integers uniform on [low, high) (int64 by default)."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    shape = shape_args((size,), "size")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = _np_dtype(dtype, D.int64)
    arr = _sampled(shape, dt, lambda: _gen(generator, device).randint(builtins.int(low), builtins.int(high), shape,
                                                                       dt))
    return _out(out, _place(arr, device, requires_grad))


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """A random permutation of ``0..n-1``."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    dt = _np_dtype(dtype, D.int64)
    return _out(out, _place(_gen(generator, device).randperm(builtins.int(n), dt), device, requires_grad))


def _like(input, dtype, device):
    return (input._data.shape, input._data.dtype if dtype is None else D.to_dtype(dtype).np,
            input.device if device is None else device)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, dt, dev = _like(input, dtype, device)
    return rand(shape, dtype=D.from_numpy_dtype(dt), device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, dt, dev = _like(input, dtype, device)
    return randn(shape, dtype=D.from_numpy_dtype(dt), device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,
                 memory_format=None):
    shape, dt, dev = _like(input, dtype, device)
    return randint(low, high, shape, dtype=D.from_numpy_dtype(dt), device=dev, requires_grad=requires_grad)


def _sampled(shape, dt, draw):
    """``draw()`` after PyTorch's size checks; a failed allocation is PyTorch's OutOfMemoryError."""
    _check_size(shape, dt)
    try:
        return draw()
    except MemoryError as e:
        raise out_of_memory(e) from None


def _out(out, result):
    if out is None:
        return result
    from .ops.inplace import copy_into_out

    return copy_into_out(out, result)


def _tn(dt):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(str(dt), str(dt))


def _write(t, arr):
    """Store samples into ``t`` in place (as a no-grad write)."""
    if t._data.__class__ is not np.ndarray:
        be = backend_of(t._data)
        arr = be.from_numpy(arr, t._data.device.id)
        with no_grad(), be.device_context(t._data.device.id):   # the copy runs on t's device
            t._data[...] = arr
    else:
        with no_grad():
            t._data[...] = arr
    t._bump_version()
    return t


def _check_leaf(t):
    from .autograd.grad_mode import is_grad_enabled

    if is_grad_enabled() and t._requires_grad and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _parts(t):
    """A real (..., 2) tensor sharing complex ``t``'s memory (``view_as_real``), outside autograd."""
    d = t._data
    return Tensor._make(d[..., None].view(d.real.dtype), False)


def _bumped(t):
    t._bump_version()
    return t


@declare_op(top_level=False)
def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples uniform on [a, b)."""
    _check_leaf(self)
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    if self._data.dtype.kind == "c":  # PyTorch: the real and imaginary parts, each uniform on [a, b)
        _parts(self).uniform_(a, b, generator=generator)
        return _bumped(self)
    return _write(self, _gen(generator, self.device).uniform(self._data.shape, self._data.dtype, a, b))


@declare_op(top_level=False)
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples."""
    _check_leaf(self)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if self._data.dtype.kind == "c":  # PyTorch: each part normal(mean, std / sqrt(2)), so E|z - mean|^2 = std^2
        _parts(self).normal_(mean, std * 0.5 ** 0.5, generator=generator)
        return _bumped(self)
    return _write(self, _gen(generator, self.device).normal(self._data.shape, self._data.dtype, mean, std))


@declare_op(top_level=False)
def random_(self, from_=None, to=None, *, generator=None):
    """Fill with integers uniform on [from, to) (defaults: the dtype's range)."""
    _check_leaf(self)
    if to is None and from_ is not None:
        from_, to = 0, from_
    return _write(self, _gen(generator, self.device).random_(self._data.shape, self._data.dtype, from_, to))


@declare_op(top_level=False)
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples, 1 with probability ``p`` (number or tensor)."""
    _check_leaf(self)
    pv = p._to_host_numpy() if isinstance(p, Tensor) else p
    if not isinstance(pv, np.ndarray) and not 0 <= pv <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={pv}")
    return _write(self, _gen(generator, self.device).bernoulli(pv, self._data.shape, self._data.dtype))


@declare_op(top_level=False)
def exponential_(self, lambd=1.0, *, generator=None):
    _check_leaf(self)
    return _write(self, _gen(generator, self.device).exponential(self._data.shape, self._data.dtype, lambd))


@declare_op(top_level=False)
def geometric_(self, p, *, generator=None):
    _check_leaf(self)
    return _write(self, _gen(generator, self.device).geometric(self._data.shape, self._data.dtype, p))


@declare_op(top_level=False)
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    _check_leaf(self)
    return _write(self, _gen(generator, self.device).log_normal(self._data.shape, self._data.dtype, mean, std))


@declare_op(top_level=False)
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    _check_leaf(self)
    return _write(self, _gen(generator, self.device).cauchy(self._data.shape, self._data.dtype, median, sigma))


@declare_op()
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with probabilities ``input`` (or a scalar ``p``)."""
    x = input._data
    if x.__class__ is np.ndarray:
        t = Tensor._make(np.empty_like(x), False)
    else:
        be = backend_of(x)
        with be.device_context(x.device.id):   # CuPy allocates on the current device
            t = Tensor._make(be.xp.empty_like(x), False)
    return _out(out, bernoulli_(t, input if p is None else p, generator=generator))


@declare_op()
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Indices sampled from the rows of ``input`` (non-negative weights)."""
    probs = input._to_host_numpy()
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not replacement and num_samples > probs.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if (probs < 0).any() or not np.isfinite(probs).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (probs.sum(-1) == 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    arr = _gen(generator, input.device).multinomial(probs, builtins.int(num_samples), builtins.bool(replacement))
    return _out(out, _place(arr, input.device, False))


def poisson(input, generator=None):
    """Poisson samples with rates ``input``."""
    arr = _gen(generator, input.device).poisson(input._to_host_numpy()).astype(input._data.dtype, copy=False)
    return _place(arr, input.device, False)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """Normal samples with scalar or tensor ``mean`` / ``std`` (broadcast)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._to_host_numpy() if isinstance(mean, Tensor) else np.asarray(mean)
        s = std._to_host_numpy() if isinstance(std, Tensor) else np.asarray(std)
        ref = mean if isinstance(mean, Tensor) else std
        shape = np.broadcast_shapes(m.shape, s.shape)
        dt = ref._data.dtype if ref._data.dtype.kind == "f" else D.get_default_dtype().np
        if (s < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        z = _gen(generator, ref.device).normal(shape, dt, 0.0, 1.0)
        if z.__class__ is not np.ndarray:  # a CUDA generator's sample: mean and std join it on its device
            be = backend_of(z)
            with be.device_context(z.device.id):
                m, s = be.xp.asarray(m), be.xp.asarray(s)
                return _out(out, _place((z * s + m).astype(dt), ref.device, False))
        return _out(out, _place(np.asarray((z * s + m).astype(dt)), ref.device, False))  # 0-d: not a NumPy scalar
    if size is None:
        raise TypeError("normal() with scalar mean and std needs a size")
    shape = shape_args((size,), "size")
    t = _place(_gen(generator, device).normal(shape, _np_dtype(dtype), mean, std), device, requires_grad)
    return _out(out, t)
