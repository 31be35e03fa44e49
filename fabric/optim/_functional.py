"""Vectorised parameter updates shared by the optimizers.

Each function updates lists of arrays (parameters, gradients, state) in
place, in one set of array operations for the whole list: small tensors are
concatenated into one pass (``fused._grouped``); SGD and Adam/AdamW go
through the backend's fused ``sgd_step`` / ``adam_step`` (RawKernels on GPU).
Formulas follow PyTorch's single-tensor implementations exactly.
"""
from __future__ import annotations

import math

from ..backends.fused import _grouped


def adamax(xp, params, grads, exp_avgs, exp_infs, step, lr, beta1, beta2, eps, weight_decay, maximize):
    clr = lr / (1.0 - beta1 ** step)

    def update(p, g, m, u):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        m += (1.0 - beta1) * (g - m)
        u *= beta2
        xp.maximum(u, xp.abs(g) + eps, out=u)
        p -= clr * (m / u)

    _grouped(xp, [params, grads, exp_avgs, exp_infs], update)


def nadam(xp, params, grads, exp_avgs, exp_avg_sqs, mu_product, step, lr, beta1, beta2, eps, weight_decay,
          momentum_decay, decoupled_weight_decay, maximize):
    """``mu_product`` is the float32 running product *after* this step's update."""
    bias_correction2 = 1.0 - beta2 ** step
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
    c_grad = -lr * (1.0 - mu) / (1.0 - mu_product)
    c_avg = -lr * mu_next / (1.0 - mu_product * mu_next)

    def update(p, g, m, v):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p *= 1.0 - lr * weight_decay
            else:
                g = g + weight_decay * p
        m += (1.0 - beta1) * (g - m)
        v *= beta2
        v += (1.0 - beta2) * (g * g)
        denom = xp.sqrt(v / bias_correction2)
        denom += eps
        p += c_grad * (g / denom)
        p += c_avg * (m / denom)

    _grouped(xp, [params, grads, exp_avgs, exp_avg_sqs], update)


def radam(xp, params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, eps, weight_decay,
          decoupled_weight_decay, maximize):
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2 = 1.0 - beta2 ** step
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * step * (beta2 ** step) / bias_correction2
    rect = None
    if rho_t > 5.0:
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))

    def update(p, g, m, v):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p *= 1.0 - lr * weight_decay
            else:
                g = g + weight_decay * p
        m += (1.0 - beta1) * (g - m)
        v *= beta2
        v += (1.0 - beta2) * (g * g)
        corrected = m / bias_correction1
        if rect is not None:
            adaptive = math.sqrt(bias_correction2) / (xp.sqrt(v) + eps)
            p -= corrected * lr * adaptive * rect
        else:
            p -= corrected * lr

    _grouped(xp, [params, grads, exp_avgs, exp_avg_sqs], update)


def rmsprop(xp, params, grads, square_avgs, grad_avgs, momentum_bufs, lr, alpha, eps, weight_decay, momentum,
            centered, maximize):
    def update(p, g, sq, ga, buf):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        sq *= alpha
        sq += (1.0 - alpha) * (g * g)
        if centered:
            ga += (1.0 - alpha) * (g - ga)
            avg = xp.sqrt(sq - ga * ga)
        else:
            avg = xp.sqrt(sq)
        avg += eps
        if momentum > 0:
            buf *= momentum
            buf += g / avg
            p -= lr * buf
        else:
            p -= lr * (g / avg)

    _grouped(xp, [params, grads, square_avgs, grad_avgs if centered else None,
                  momentum_bufs if momentum > 0 else None], update)


def adagrad(xp, params, grads, state_sums, step, lr, lr_decay, weight_decay, eps, maximize):
    clr = lr / (1.0 + (step - 1) * lr_decay)

    def update(p, g, s):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        s += g * g
        p -= clr * (g / (xp.sqrt(s) + eps))

    _grouped(xp, [params, grads, state_sums], update)


def adadelta(xp, params, grads, square_avgs, acc_deltas, lr, rho, eps, weight_decay, maximize):
    def update(p, g, sq, acc):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        sq *= rho
        sq += (1.0 - rho) * (g * g)
        std = xp.sqrt(sq + eps)
        delta = xp.sqrt(acc + eps)
        delta /= std
        delta *= g
        acc *= rho
        acc += (1.0 - rho) * (delta * delta)
        p -= lr * delta

    _grouped(xp, [params, grads, square_avgs, acc_deltas], update)


def rprop(xp, params, grads, prevs, step_sizes, etaminus, etaplus, step_size_min, step_size_max, maximize):
    def update(p, g, prev, step_size):
        g = -g if maximize else g
        sign = xp.sign(g * prev)
        factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, 1.0)).astype(p.dtype)
        step_size *= factor
        xp.clip(step_size, step_size_min, step_size_max, out=step_size)
        g = xp.where(sign < 0, 0, g).astype(p.dtype)
        p -= xp.sign(g) * step_size
        prev[...] = g

    _grouped(xp, [params, grads, prevs, step_sizes], update)


def asgd(xp, params, grads, axs, eta, mu, lr, lambd, alpha, weight_decay, maximize):
    """``eta``/``mu`` are the values before this step (read from float32 state)."""
    def update(p, g, ax):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        p *= 1.0 - lambd * eta
        p -= eta * g
        if mu != 1:
            ax += (p - ax) * mu
        else:
            ax[...] = p

    _grouped(xp, [params, grads, axs], update)
