"""L-BFGS with optional strong-Wolfe line search (PyTorch's ``torch.optim.LBFGS``).

Works on the flattened vector of all parameters (one parameter group only).

Example::

    >>> import fabric
    >>> x = fabric.nn.Parameter(fabric.tensor([1.5, -0.5], dtype=fabric.float64))
    >>> opt = fabric.optim.LBFGS([x], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((x - 3) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure); [round(v, 4) for v in x.tolist()]
    [3.0, 3.0]
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..backends import backend_of
from .optimizer import Optimizer, ParamsT, _global_post_hooks, _global_pre_hooks

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to bounds."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square ** 0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search satisfying the strong Wolfe conditions (bracketing + zoom)."""
    xp = backend_of(d).xp
    d_norm = float(xp.abs(d).max())
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """Limited-memory BFGS; ``step`` needs a ``closure`` that returns the loss."""

    def __init__(self, params: ParamsT, lr: float | Tensor = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        xp = backend_of(self._params[0]._data).xp
        return xp.concatenate([p._grad._data.reshape(-1) if p._grad is not None else xp.zeros(p.numel(), p._data.dtype)
                               for p in self._params])

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            n = p.numel()
            p._data += (step_size * update[offset:offset + n]).reshape(p._data.shape).astype(p._data.dtype, copy=False)
            p._bump_version()
            offset += n

    def _clone_param(self):
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data):
        for p, pdata in zip(self._params, params_data):
            p._data[...] = pdata
            p._bump_version()

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; returns the first loss.  The optimizer's
        step pre/post hooks (and the global ones) run around it, as PyTorch runs them."""
        args, kwargs = (closure,), {}
        for hook in itertools.chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {res}.")
                args, kwargs = res
        closure = args[0] if args else kwargs.get("closure")
        if closure is None:
            raise RuntimeError("LBFGS requires a closure that reevaluates the model and returns the loss")
        with no_grad():
            loss = self._step(closure)
        for hook in itertools.chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return loss

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        xp = backend_of(self._params[0]._data).xp

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(xp.abs(flat_grad).max()) <= tolerance_grad:
            return orig_loss

        d, t, H_diag, prev_flat_grad = (_arrays(state.get(k)) for k in ("d", "t", "H_diag", "prev_flat_grad"))
        old_dirs, old_stps, ro = (_arrays(state.get(k)) for k in ("old_dirs", "old_stps", "ro"))
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                # scalars stay NumPy scalars of the parameters' dtype, as PyTorch's 0-d tensors
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                al = _arrays(state.setdefault("al", [None] * history_size))
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
                state["al"] = _tensors(al)
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            if state["n_iter"] == 1:
                inv = 1.0 / xp.abs(flat_grad).sum()
                t = (inv if inv < 1.0 else 1.0) * lr  # PyTorch's min(1.0, tensor) * lr
            else:
                t = lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tolerance_change:
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd)
                self._add_grad(t, d)
                opt_cond = float(xp.abs(flat_grad).max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(xp.abs(flat_grad).max()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(xp.abs(d * t).max()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break
        state.update(d=_tensors(d), t=_tensors(t), old_dirs=_tensors(old_dirs), old_stps=_tensors(old_stps),
                     ro=_tensors(ro), H_diag=_tensors(H_diag), prev_flat_grad=_tensors(prev_flat_grad),
                     prev_loss=prev_loss)
        return orig_loss


def _tensors(v):
    """The state as PyTorch keeps it: arrays and NumPy scalars as Tensors (0-d for scalars), lists
    element-wise; Python numbers and None as they are."""
    if isinstance(v, list):
        return [_tensors(e) for e in v]
    if isinstance(v, np.generic):
        return Tensor._make(np.asarray(v), False)
    if v is not None and not isinstance(v, (int, float, Tensor)):  # an array (NumPy or CuPy)
        return Tensor._make(v, False)
    return v


def _arrays(v):
    """The inverse of :func:`_tensors` (a 0-d tensor gives a 0-d array, which computes as a scalar)."""
    if isinstance(v, list):
        return [_arrays(e) for e in v]
    return v._data if isinstance(v, Tensor) else v
