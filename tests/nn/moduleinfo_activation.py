"""ModuleInfo entries for the activation modules (family "activation").

Sample inputs keep every value at least 0.1 away from the activation's kinks
(0 for ReLU, +-1 for Hardtanh, +-3 for Hardswish ...) so that finite
differences in gradcheck are meaningful.
"""
from __future__ import annotations

import numpy as np
from moduleinfo import ModuleInfo, ModuleInput


def away(rng, shape, dtype, kinks=(0.0,), low=-3.0, high=3.0):
    """Uniform values in [low, high) moved at least 0.1 away from ``kinks``."""
    a = rng.uniform(low, high, size=shape)
    for k in kinks:
        close = np.abs(a - k) < 0.1
        a = np.where(close, k + np.where(a >= k, 0.15, -0.15), a)
    return np.asarray(a, dtype=dtype)


def _act(ctor=((), {}), kinks=(0.0,), shapes=((3, 4), (2, 3, 2)), low=-3.0, high=3.0, extra=()):
    """Constructor variants x input shapes (plus ``extra`` (args, kwargs, desc))."""
    def gen(dtype, rng):
        out = []
        args, kwargs = ctor
        for s in shapes:
            out.append(ModuleInput(args, dict(kwargs), (away(rng, s, dtype, kinks, low, high),), output_shape=s,
                                   desc=f"{len(s)}d"))
        for a, k, desc, kk in extra:
            s = shapes[0]
            out.append(ModuleInput(a, k, (away(rng, s, dtype, kk, low, high),), output_shape=s, desc=desc))
        return out
    return gen


def _glu(dtype, rng):
    return [
        ModuleInput((), {}, (away(rng, (3, 4), dtype),), output_shape=(3, 2)),
        ModuleInput((0,), {}, (away(rng, (4, 3), dtype),), output_shape=(2, 3), desc="dim0"),
    ]


def _softmax(cls_kinks=()):
    def gen(dtype, rng):
        return [
            ModuleInput((1,), {}, (away(rng, (3, 4), dtype, cls_kinks),), output_shape=(3, 4)),
            ModuleInput((-1,), {}, (away(rng, (2, 3, 2), dtype, cls_kinks),), output_shape=(2, 3, 2), desc="last"),
            ModuleInput((0,), {}, (away(rng, (5,), dtype, cls_kinks),), output_shape=(5,), desc="1d"),
        ]
    return gen


def _softmax2d(dtype, rng):
    return [
        ModuleInput((), {}, (away(rng, (2, 3, 2, 2), dtype),), output_shape=(2, 3, 2, 2)),
        ModuleInput((), {}, (away(rng, (3, 2, 2), dtype),), output_shape=(3, 2, 2), desc="unbatched"),
    ]


def _prelu(dtype, rng):
    return [
        ModuleInput((), {}, (away(rng, (3, 4), dtype),), output_shape=(3, 4)),
        ModuleInput((3,), {"init": 0.1}, (away(rng, (2, 3, 2), dtype),), output_shape=(2, 3, 2), desc="channels"),
        ModuleInput((4,), {}, (away(rng, (2, 4, 2, 2), dtype),), output_shape=(2, 4, 2, 2), desc="4d"),
    ]


MODULES = [
    ModuleInfo("ReLU", _act()),
    ModuleInfo("ReLU6", _act(kinks=(0.0, 6.0), low=-2, high=8)),
    ModuleInfo("LeakyReLU", _act(((0.2,), {})), gradgrad=True),
    ModuleInfo("PReLU", _prelu, gradgrad=True),
    ModuleInfo("RReLU", _act(((0.1, 0.3), {})), random=True, train_eval_differ=True),
    ModuleInfo("ELU", _act(((0.7,), {})), gradgrad=True),
    ModuleInfo("SELU", _act(), gradgrad=True),
    ModuleInfo("CELU", _act(((1.5,), {})), gradgrad=True),
    ModuleInfo("GELU", _act(extra=[(("tanh",), {}, "tanh", ())]), gradgrad=True),
    ModuleInfo("SiLU", _act(), gradgrad=True),
    ModuleInfo("Mish", _act(), gradgrad=True),
    ModuleInfo("Sigmoid", _act(), gradgrad=True),
    ModuleInfo("Tanh", _act(), gradgrad=True),
    ModuleInfo("Hardtanh", _act(((-2.0, 1.5), {}), kinks=(-2.0, 1.5))),
    ModuleInfo("Hardsigmoid", _act(kinks=(-3.0, 3.0), low=-5, high=5)),
    ModuleInfo("Hardswish", _act(kinks=(-3.0, 3.0), low=-5, high=5), gradgrad=True),
    ModuleInfo("Hardshrink", _act(((0.7,), {}), kinks=(-0.7, 0.7))),
    ModuleInfo("Softshrink", _act(((0.7,), {}), kinks=(-0.7, 0.7))),
    ModuleInfo("Tanhshrink", _act(), gradgrad=True),
    ModuleInfo("Softplus", _act(((2.0, 3.0), {}), kinks=(1.5,)), gradgrad=True),
    ModuleInfo("Softsign", _act(), gradgrad=True),
    ModuleInfo("Threshold", _act(((0.5, -1.0), {}), kinks=(0.5,))),
    ModuleInfo("GLU", _glu, gradgrad=True),
    ModuleInfo("LogSigmoid", _act(), gradgrad=True),
    ModuleInfo("Softmax", _softmax(), gradgrad=True),
    ModuleInfo("Softmin", _softmax(), gradgrad=True),
    ModuleInfo("LogSoftmax", _softmax(), gradgrad=True),
    ModuleInfo("Softmax2d", _softmax2d, gradgrad=True),
]
