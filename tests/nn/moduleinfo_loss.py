"""ModuleInfo entries for the loss modules (family "loss").

Class weights and ``pos_weight`` are constructor tensors: ``make`` turns the
NumPy arrays in the constructor kwargs into tensors of the library under test
(fabric or torch).  Float targets that PyTorch does not differentiate (or
that are probabilities and must stay valid) are wrapped in :class:`Const`.
CTC is wrapped in a module that applies ``log_softmax`` first: PyTorch's CTC
gradient assumes normalised log-probabilities, so it is only a true gradient
(and only gradcheck-able) through the log-softmax.
"""
from __future__ import annotations

import importlib

import numpy as np
from moduleinfo import Const, ModuleInfo, ModuleInput


def _lib(nn):
    return importlib.import_module(nn.__name__.split(".")[0])


def _make(name):
    """``make`` for modules with tensor constructor arguments."""
    def make(nn, *args, **kwargs):
        lib = _lib(nn)
        kwargs = {k: (lib.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        return getattr(nn, name)(*args, **kwargs)
    return make


def randn(rng, *shape, dtype):
    return np.asarray(rng.standard_normal(shape), dtype=dtype)


def uniform(rng, *shape, dtype, low=0.05, high=0.95):
    return np.asarray(rng.uniform(low, high, size=shape), dtype=dtype)


def pair(rng, dtype, shape=(3, 4), target_grad=True):
    x, t = randn(rng, *shape, dtype=dtype), randn(rng, *shape, dtype=dtype)
    return (x, t if target_grad else Const(t))


def _regression(extra=()):
    def gen(dtype, rng):
        out = [ModuleInput((), {}, pair(rng, dtype), output_shape=()),
               ModuleInput((), {"reduction": "sum"}, pair(rng, dtype, (2, 3, 2)), output_shape=(), desc="sum"),
               ModuleInput((), {"reduction": "none"}, pair(rng, dtype), output_shape=(3, 4), desc="none")]
        for kwargs, desc in extra:
            out.append(ModuleInput((), dict(kwargs), pair(rng, dtype), output_shape=(), desc=desc))
        return out
    return gen


def _ce(dtype, rng):
    w = uniform(rng, 4, dtype=dtype, low=0.2, high=1.5)
    t = np.array([0, 3, -100, 1, 2])
    tk = rng.integers(0, 4, (2, 3, 2))
    tk[0, 1, 0] = -100
    probs = uniform(rng, 5, 4, dtype=dtype)
    probs /= probs.sum(1, keepdims=True)
    return [
        ModuleInput((), {}, (randn(rng, 5, 4, dtype=dtype), t), output_shape=()),
        ModuleInput((), {"weight": w, "reduction": "sum"}, (randn(rng, 5, 4, dtype=dtype), t), output_shape=(),
                    desc="weight_sum"),
        ModuleInput((), {"weight": w, "label_smoothing": 0.2}, (randn(rng, 5, 4, dtype=dtype), t), output_shape=(),
                    desc="weight_smoothing"),
        ModuleInput((), {"ignore_index": 3, "reduction": "none", "label_smoothing": 0.1},
                    (randn(rng, 5, 4, dtype=dtype), np.array([0, 3, 2, 1, 3])), output_shape=(5,),
                    desc="ignore_none"),
        ModuleInput((), {"weight": w, "label_smoothing": 0.05}, (randn(rng, 2, 4, 3, 2, dtype=dtype), tk),
                    output_shape=(), desc="kdim"),
        ModuleInput((), {"reduction": "none"}, (randn(rng, 2, 4, 3, 2, dtype=dtype), tk), output_shape=(2, 3, 2),
                    desc="kdim_none"),
        ModuleInput((), {}, (randn(rng, 4, dtype=dtype), np.array(2)), output_shape=(), desc="unbatched"),
        ModuleInput((), {"weight": w, "label_smoothing": 0.1}, (randn(rng, 5, 4, dtype=dtype), probs),
                    output_shape=(), desc="probs"),
        ModuleInput((), {"reduction": "none"}, (randn(rng, 5, 4, dtype=dtype), Const(probs)), output_shape=(5,),
                    desc="probs_none"),
    ]


def _nll(dtype, rng):
    w = uniform(rng, 4, dtype=dtype, low=0.2, high=1.5)
    tk = rng.integers(0, 4, (2, 3))
    return [
        ModuleInput((), {}, (randn(rng, 5, 4, dtype=dtype), np.array([0, 3, -100, 1, 2])), output_shape=()),
        ModuleInput((), {"weight": w, "ignore_index": 1}, (randn(rng, 5, 4, dtype=dtype), np.array([0, 3, 1, 1, 2])),
                    output_shape=(), desc="weight_ignore"),
        ModuleInput((), {"weight": w, "reduction": "none"}, (randn(rng, 2, 4, 3, dtype=dtype), tk),
                    output_shape=(2, 3), desc="kdim_none"),
        ModuleInput((), {"reduction": "sum"}, (randn(rng, 2, 4, 2, 2, 2, dtype=dtype), rng.integers(0, 4, (2, 2, 2, 2))),
                    output_shape=(), desc="5d_sum"),
    ]


def _bce(dtype, rng):
    w = uniform(rng, 4, dtype=dtype, low=0.2, high=1.5)
    return [
        ModuleInput((), {}, (uniform(rng, 3, 4, dtype=dtype), uniform(rng, 3, 4, dtype=dtype, low=0, high=1)),
                    output_shape=()),
        ModuleInput((), {"weight": w, "reduction": "none"},
                    (uniform(rng, 3, 4, dtype=dtype), Const((rng.random((3, 4)) > 0.5).astype(dtype))),
                    output_shape=(3, 4), desc="weight_none"),
    ]


def _bce_logits(dtype, rng):
    w = uniform(rng, 4, dtype=dtype, low=0.2, high=1.5)
    pw = uniform(rng, 4, dtype=dtype, low=0.5, high=3.0)
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), uniform(rng, 3, 4, dtype=dtype, low=0, high=1)),
                    output_shape=()),
        ModuleInput((), {"weight": w, "pos_weight": pw, "reduction": "sum"},
                    (randn(rng, 3, 4, dtype=dtype) * 3, uniform(rng, 3, 4, dtype=dtype, low=0, high=1)),
                    output_shape=(), desc="weight_pos_weight"),
    ]


def _kl(dtype, rng):
    p = uniform(rng, 3, 4, dtype=dtype)
    q = uniform(rng, 3, 4, dtype=dtype)
    return [
        ModuleInput((), {"reduction": "batchmean"}, (np.log(p), q), output_shape=()),
        ModuleInput((), {"reduction": "sum", "log_target": True}, (np.log(p), np.log(q)), output_shape=(),
                    desc="log_target"),
        ModuleInput((), {"reduction": "none"}, (np.log(p), q), output_shape=(3, 4), desc="none"),
    ]


def _poisson(dtype, rng):
    counts = rng.integers(0, 5, (3, 4)).astype(dtype)
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), Const(counts)), output_shape=()),
        ModuleInput((), {"log_input": False, "full": True, "reduction": "none"},
                    (uniform(rng, 3, 4, dtype=dtype, low=0.5, high=3), Const(counts)), output_shape=(3, 4),
                    desc="full"),
    ]


def _gaussian(dtype, rng):
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 4, dtype=dtype),
                             uniform(rng, 3, 4, dtype=dtype, low=0.5, high=2)), output_shape=()),
        ModuleInput((), {"full": True, "reduction": "none"},
                    (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 4, dtype=dtype),
                     uniform(rng, 3, 1, dtype=dtype, low=0.5, high=2)), output_shape=(3, 4), desc="homoscedastic"),
    ]


def _signs(rng, *shape, dtype):
    return np.where(rng.random(shape) > 0.5, 1, -1).astype(dtype)


def _hinge(dtype, rng):
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), Const(_signs(rng, 3, 4, dtype=dtype))), output_shape=()),
        ModuleInput((0.5,), {"reduction": "none"}, (randn(rng, 3, 4, dtype=dtype),
                                                     Const(_signs(rng, 3, 4, dtype=dtype))),
                    output_shape=(3, 4), desc="margin_none"),
    ]


def _soft_margin(dtype, rng):
    return [ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), Const(_signs(rng, 3, 4, dtype=dtype))),
                        output_shape=())]


def _multilabel_soft(dtype, rng):
    w = uniform(rng, 4, dtype=dtype, low=0.2, high=1.5)
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), (rng.random((3, 4)) > 0.5).astype(dtype)),
                    output_shape=()),
        ModuleInput((), {"weight": w, "reduction": "none"},
                    (randn(rng, 3, 4, dtype=dtype), Const((rng.random((3, 4)) > 0.5).astype(dtype))),
                    output_shape=(3,), desc="weight_none"),
    ]


def _margin_input(rng, shape, dtype):
    # values on a grid with spacing 0.3 plus noise < 0.05: margin hinges sit well away from 0
    base = rng.permutation(np.prod(shape)).reshape(shape) * 0.3
    return np.asarray(base + rng.uniform(-0.05, 0.05, shape), dtype=dtype)


def _multi_margin(dtype, rng):
    w = uniform(rng, 4, dtype=dtype, low=0.2, high=1.5)
    return [
        ModuleInput((), {}, (_margin_input(rng, (3, 4), dtype), np.array([0, 3, 1])), output_shape=()),
        ModuleInput((), {"p": 2, "margin": 0.75, "weight": w, "reduction": "none"},
                    (_margin_input(rng, (3, 4), dtype), np.array([2, 0, 1])), output_shape=(3,), desc="p2_weight"),
        ModuleInput((), {}, (_margin_input(rng, (4,), dtype), np.array(2)), output_shape=(), desc="unbatched"),
    ]


def _multilabel_margin(dtype, rng):
    return [
        ModuleInput((), {}, (_margin_input(rng, (3, 4), dtype), np.array([[3, 0, -1, 1], [1, 2, 0, 3], [2, -1, 0, 0]])),
                    output_shape=()),
        ModuleInput((), {"reduction": "none"}, (_margin_input(rng, (4,), dtype), np.array([0, 2, -1, 3])),
                    output_shape=(), desc="unbatched"),
    ]


def _cosine_embedding(dtype, rng):
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 4, dtype=dtype), np.array([1, -1, 1])),
                    output_shape=()),
        ModuleInput((-0.5,), {"reduction": "none"},
                    (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 4, dtype=dtype), np.array([-1, -1, 1])),
                    output_shape=(3,), desc="margin_none"),
    ]


def _margin_ranking(dtype, rng):
    return [
        ModuleInput((), {}, (randn(rng, 5, dtype=dtype), randn(rng, 5, dtype=dtype),
                             Const(_signs(rng, 5, dtype=dtype))), output_shape=()),
        ModuleInput((0.3,), {"reduction": "none"}, (randn(rng, 5, dtype=dtype), randn(rng, 5, dtype=dtype),
                                                     Const(_signs(rng, 5, dtype=dtype))),
                    output_shape=(5,), desc="margin_none"),
    ]


def _triplet(dtype, rng):
    def abc():
        return tuple(randn(rng, 3, 4, dtype=dtype) for _ in range(3))
    return [
        ModuleInput((), {"margin": 5.0}, abc(), output_shape=()),
        ModuleInput((), {"margin": 4.0, "p": 1.5, "swap": True, "reduction": "none"}, abc(), output_shape=(3,),
                    desc="p_swap"),
    ]


def _triplet_distance_make(nn, **kwargs):
    if kwargs.pop("cosine", False):
        kwargs["distance_function"] = nn.CosineSimilarity()
    return nn.TripletMarginWithDistanceLoss(**kwargs)


def _triplet_distance(dtype, rng):
    def abc():
        return tuple(randn(rng, 3, 4, dtype=dtype) for _ in range(3))
    return [
        ModuleInput((), {"margin": 5.0}, abc(), output_shape=()),
        ModuleInput((), {"margin": 3.0, "cosine": True, "swap": True, "reduction": "sum"}, abc(), output_shape=(),
                    desc="cosine_swap"),
    ]


def _ctc_make(nn, **kwargs):
    class LogSoftmaxCTC(nn.Module):
        def __init__(self):
            super().__init__()
            self.ctc = nn.CTCLoss(**kwargs)

        def forward(self, x, targets, input_lengths, target_lengths):
            return self.ctc(x.log_softmax(-1), targets, input_lengths, target_lengths)

    return LogSoftmaxCTC()


def _ctc(dtype, rng):
    return [
        ModuleInput((), {}, (randn(rng, 6, 2, 4, dtype=dtype), np.array([[1, 1, 3], [2, 3, 0]]), np.array([6, 5]),
                             np.array([3, 2])), output_shape=()),
        ModuleInput((), {"blank": 3, "reduction": "none"},
                    (randn(rng, 5, 3, 4, dtype=dtype), np.array([0, 1, 2, 2, 1, 0]), np.array([5, 4, 3]),
                     np.array([3, 2, 1])), output_shape=(3,), desc="concat_none"),
        ModuleInput((), {"reduction": "sum", "zero_infinity": True},
                    (randn(rng, 3, 2, 4, dtype=dtype), np.array([[1, 1, 2], [2, 0, 0]]), np.array([3, 3]),
                     np.array([3, 1])), output_shape=(), desc="zero_infinity"),
    ]


MODULES = [
    ModuleInfo("L1Loss", _regression(), gradgrad=True),
    ModuleInfo("MSELoss", _regression(), gradgrad=True),
    ModuleInfo("SmoothL1Loss", _regression([({"beta": 0.5}, "beta")]), gradgrad=True),
    ModuleInfo("HuberLoss", _regression([({"delta": 0.5}, "delta")]), gradgrad=True),
    ModuleInfo("CrossEntropyLoss", _ce, make=_make("CrossEntropyLoss"), gradgrad=True),
    ModuleInfo("NLLLoss", _nll, make=_make("NLLLoss"), gradgrad=True),
    ModuleInfo("BCELoss", _bce, make=_make("BCELoss"), gradgrad=True),
    ModuleInfo("BCEWithLogitsLoss", _bce_logits, make=_make("BCEWithLogitsLoss"), gradgrad=True),
    ModuleInfo("KLDivLoss", _kl, gradgrad=True),
    ModuleInfo("PoissonNLLLoss", _poisson, gradgrad=True),
    ModuleInfo("GaussianNLLLoss", _gaussian, gradgrad=True),
    ModuleInfo("HingeEmbeddingLoss", _hinge),
    ModuleInfo("SoftMarginLoss", _soft_margin, gradgrad=True),
    ModuleInfo("MultiLabelSoftMarginLoss", _multilabel_soft, make=_make("MultiLabelSoftMarginLoss"), gradgrad=True),
    ModuleInfo("MultiMarginLoss", _multi_margin, make=_make("MultiMarginLoss")),
    ModuleInfo("MultiLabelMarginLoss", _multilabel_margin),
    ModuleInfo("CosineEmbeddingLoss", _cosine_embedding, gradgrad=True),
    ModuleInfo("MarginRankingLoss", _margin_ranking),
    ModuleInfo("TripletMarginLoss", _triplet, gradgrad=True),
    ModuleInfo("TripletMarginWithDistanceLoss", _triplet_distance, make=_triplet_distance_make),
    ModuleInfo("CTCLoss", _ctc, make=_ctc_make, check_repr=False),
]
