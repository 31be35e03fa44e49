"""Numerical gradient checks in float64: ``gradcheck`` and ``gradgradcheck``.

The analytical Jacobian comes from backward (one vector-Jacobian product per
output element); the numerical one from central differences. A failure names
the worst element.

Complex inputs and outputs are checked as PyTorch's convention defines their
gradients (``dL/dx + i dL/dy`` for ``z = x + iy``): the function is seen as a
real function of the (real, imaginary) pairs (``view_as_real``), whose real
Jacobian is exactly what that convention's backward computes.

Example::

    >>> import fabric
    >>> x = fabric.randn(3, dtype=fabric.float64, requires_grad=True)
    >>> fabric.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
"""
from __future__ import annotations

import numpy as np

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    from .._tensor import Tensor

    if isinstance(x, Tensor):
        return (x,)
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def _diff_inputs(inputs):
    from .._tensor import Tensor

    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(func, inputs):
    from .._tensor import Tensor

    out = _as_tuple(func(*inputs))
    return [o for o in out if isinstance(o, Tensor) and o._data.dtype.kind in "fc"]


def _realified(func, inputs, idx):
    """``func`` as a function of real tensors: each complex input that requires grad
    is replaced by its (..., 2) real pairs, each complex output by ``view_as_real``."""
    from .._tensor import Tensor
    from ..ops.complex_ops import view_as_complex, view_as_real

    cplx = {k for k in idx if inputs[k]._data.dtype.kind == "c"}
    real_inputs = tuple(view_as_real(t.detach()).clone().requires_grad_(True) if k in cplx else t
                        for k, t in enumerate(inputs))

    def real_func(*args):
        out = _as_tuple(func(*(view_as_complex(a) if k in cplx else a for k, a in enumerate(args))))
        return tuple(view_as_real(o) if isinstance(o, Tensor) and o._data.dtype.kind == "c" else o for o in out)

    return real_func, real_inputs


def _numerical_jacobian(func, inputs, idx, outputs, eps):
    """J[k][o] of shape (input numel, output numel) by central differences."""
    jac = []
    for k in idx:
        t = inputs[k]
        data = t._data
        if not data.flags.writeable or not data.flags.c_contiguous:
            raise GradcheckError("gradcheck inputs must be contiguous and writeable")
        flat = data.reshape(-1)
        cols = [np.zeros((flat.size, o._data.size)) for o in outputs]
        for j in range(flat.size):
            orig = flat[j].item()
            # grad mode stays on: the function may itself differentiate (gradgradcheck)
            flat[j] = orig + eps
            plus = [o._data.astype(np.float64).ravel().copy() for o in _outputs(func, inputs)]
            flat[j] = orig - eps
            minus = [o._data.astype(np.float64).ravel().copy() for o in _outputs(func, inputs)]
            flat[j] = orig
            for c, p, m in zip(cols, plus, minus):
                c[j] = (p - m) / (2 * eps)
        jac.append(cols)
    return jac


def _analytical_jacobian(inputs, idx, outputs):
    from .._tensor import Tensor
    from . import grad

    jac = [[np.zeros((inputs[k]._data.size, o._data.size)) for o in outputs] for k in idx]
    for oi, o in enumerate(outputs):
        if not o.requires_grad:
            continue
        for j in range(o._data.size):
            g = np.zeros(o._data.size, o._data.dtype)
            g[j] = 1
            gt = Tensor._make(g.reshape(o._data.shape), False)
            res = grad(o, [inputs[k] for k in idx], gt, retain_graph=True, allow_unused=True)
            for n, r in enumerate(res):
                if r is not None:
                    jac[n][oi][:, j] = r._data.astype(np.float64).ravel()
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Compare backward's gradients with central differences (use float64)."""
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    for k in idx:
        if inputs[k]._data.dtype != np.float64 and inputs[k]._data.dtype != np.complex128:
            import warnings

            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating point or "
                          "complex. This check will likely fail if all the inputs are not of double precision "
                          "floating point or complex. ", stacklevel=2)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    outputs = _outputs(func, inputs)
    if any(inputs[k]._data.dtype.kind == "c" for k in idx) or any(o._data.dtype.kind == "c" for o in outputs):
        func, inputs = _realified(func, inputs, idx)
        outputs = _outputs(func, inputs)
    analytical = _analytical_jacobian(inputs, idx, outputs)
    numerical = _numerical_jacobian(func, inputs, idx, outputs, eps)
    for n, k in enumerate(idx):
        for oi in range(len(outputs)):
            a, nu = analytical[n][oi], numerical[n][oi]
            if a.size == 0:
                continue
            err = np.abs(a - nu) - (atol + rtol * np.abs(nu))
            if (err > 0).any() or not np.isfinite(a).all() and np.isfinite(nu).all():
                w = np.unravel_index(np.argmax(np.where(np.isfinite(err), err, np.inf)), err.shape)
                msg = (f"Jacobian mismatch for output {oi} with respect to input {k},\n"
                       f"worst element: input element {w[0]}, output element {w[1]}: analytical {a[w]:.8g} "
                       f"vs numerical {nu[w]:.8g}\nnumerical:{nu}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _random_like(rng, a):
    g = rng.standard_normal(a.shape)
    if a.dtype.kind == "c":
        g = g + 1j * rng.standard_normal(a.shape)
    return np.asarray(g, dtype=a.dtype)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the gradients themselves (second derivatives), with
    random ``grad_outputs`` when not given."""
    from .._tensor import Tensor
    from . import grad

    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(Tensor._make(_random_like(rng, o._data), True) for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _outputs(func, ins)
        diff = [ins[k] for k in idx]
        pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
        res = grad([p[0] for p in pairs], diff, [p[1] for p in pairs], create_graph=True, allow_unused=True)
        return tuple(r for r in res if r is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
