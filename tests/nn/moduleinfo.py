"""The module test registry: one :class:`ModuleInfo` per ``nn`` module,
with constructor variants and sample inputs (:class:`ModuleInput`), drives
the generic tests in ``tests/nn/test_modules.py`` (output shape, gradcheck
of inputs and parameters in float64, train/eval behaviour, state_dict round
trip, pickling, repr, and - where torch is installed - outputs, gradients,
buffers and default initialisation against PyTorch).

This file holds the shared classes and the core modules (linear, embedding,
dropout, normalisation, containers).  Each other family lists its entries
as ``MODULES`` in ``tests/nn/moduleinfo_<family>.py`` and adds its name to
``FAMILIES``; ``ALL_MODULES`` gathers them.  Adding a module means adding
one entry.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

FLOATS = (np.float32, np.float64)


class Const:
    """A float array forward argument that must not require grad (e.g. a
    regression target); integer arrays are never differentiated anyway."""

    def __init__(self, array):
        self.array = array


@dataclass
class ModuleInput:
    """One constructor variant with one forward call.

    NumPy arrays in ``forward_args`` / ``forward_kwargs`` become fabric or
    torch tensors; float arrays require grad in gradient tests unless wrapped
    in :class:`Const`.  ``output_shape`` is the expected shape of the output
    (of ``output_index`` for tuple outputs)."""

    constructor_args: tuple = ()
    constructor_kwargs: dict = field(default_factory=dict)
    forward_args: tuple = ()
    forward_kwargs: dict = field(default_factory=dict)
    output_shape: tuple | None = None
    desc: str = ""
    gradcheck: bool = True       # run gradcheck / gradgradcheck on this variant
    torch: bool = True           # compare outputs and gradients with PyTorch

    def __repr__(self):
        def d(v):
            if isinstance(v, np.ndarray):
                return f"array{v.shape}:{v.dtype}"
            if isinstance(v, Const):
                return f"Const({d(v.array)})"
            if isinstance(v, (list, tuple)):
                return type(v)(d(x) for x in v)
            return repr(v)
        return (f"ModuleInput({self.desc} ctor={d(self.constructor_args)} {self.constructor_kwargs} "
                f"fwd={d(self.forward_args)} {d(tuple(self.forward_kwargs.items()))})")


@dataclass
class ModuleInfo:
    name: str                                    # fabric.nn.<name> (and torch.nn.<name>)
    module_inputs: Callable                      # module_inputs(dtype, rng) -> list[ModuleInput]
    make: Callable | None = None                 # make(nn, *args, **kwargs) -> module; default nn.<name>
    torch_name: str | None = None                # torch.nn.<torch_name>; "" skips the torch comparisons
    random: bool = False                         # training-mode forward draws random numbers
    train_eval_differ: bool = False              # training and eval outputs differ (Dropout, BatchNorm)
    gradgrad: bool = False                       # also run gradgradcheck
    atol: float = 1e-5                           # float32 forward vs torch
    rtol: float = 1e-4
    grad_atol: float = 1e-4                      # float32 gradients vs torch
    grad_rtol: float = 1e-3
    gradcheck_atol: float = 1e-5
    gradcheck_rtol: float = 1e-3
    check_repr: bool = True
    output_index: int | None = None              # tuple outputs: which one to check / differentiate
    notes: str = ""                              # for docs/nn.md: differences from PyTorch

    def __post_init__(self):
        if self.torch_name is None:
            self.torch_name = self.name

    def build(self, nn, sample: ModuleInput):
        """Construct the module from ``nn`` (``fabric.nn`` or ``torch.nn``)."""
        if self.make is not None:
            return self.make(nn, *sample.constructor_args, **sample.constructor_kwargs)
        return getattr(nn, self.name if nn.__name__.startswith("fabric") else self.torch_name)(
            *sample.constructor_args, **sample.constructor_kwargs)


def randn(rng, *shape, dtype=np.float32):
    return np.asarray(rng.standard_normal(shape), dtype=dtype)


def randint(rng, high, *shape):
    return rng.integers(0, high, size=shape).astype(np.int64)


# --- core modules ---------------------------------------------------------------

def _identity(dtype, rng):
    return [ModuleInput(forward_args=(randn(rng, 3, 4, dtype=dtype),), output_shape=(3, 4)),
            ModuleInput((5,), {"unused": True}, (randn(rng, 2, dtype=dtype),), output_shape=(2,), desc="ignored_args")]


def _linear(dtype, rng):
    return [
        ModuleInput((4, 3), forward_args=(randn(rng, 2, 4, dtype=dtype),), output_shape=(2, 3)),
        ModuleInput((4, 3), {"bias": False}, (randn(rng, 2, 3, 4, dtype=dtype),), output_shape=(2, 3, 3),
                    desc="no_bias_3d"),
        ModuleInput((4, 2), forward_args=(randn(rng, 4, dtype=dtype),), output_shape=(2,), desc="1d_input"),
        ModuleInput((3, 2), forward_args=(randn(rng, 0, 3, dtype=dtype),), output_shape=(0, 2), desc="empty"),
    ]


def _bilinear(dtype, rng):
    return [
        ModuleInput((3, 2, 4), forward_args=(randn(rng, 2, 3, dtype=dtype), randn(rng, 2, 2, dtype=dtype)),
                    output_shape=(2, 4)),
        ModuleInput((2, 3, 2), {"bias": False}, (randn(rng, 2, 1, 2, dtype=dtype), randn(rng, 2, 1, 3, dtype=dtype)),
                    output_shape=(2, 1, 2), desc="no_bias_3d"),
    ]


def _flatten(dtype, rng):
    return [ModuleInput(forward_args=(randn(rng, 2, 3, 2, dtype=dtype),), output_shape=(2, 6)),
            ModuleInput((0, 1), forward_args=(randn(rng, 2, 3, 2, dtype=dtype),), output_shape=(6, 2),
                        desc="start0")]


def _unflatten(dtype, rng):
    return [ModuleInput((1, (2, 3)), forward_args=(randn(rng, 2, 6, dtype=dtype),), output_shape=(2, 2, 3)),
            ModuleInput((-1, [3, -1]), forward_args=(randn(rng, 2, 6, dtype=dtype),), output_shape=(2, 3, 2),
                        desc="infer")]


def _embedding(dtype, rng):
    return [
        ModuleInput((6, 3), forward_args=(randint(rng, 6, 2, 4),), output_shape=(2, 4, 3)),
        # the padding row's gradient is defined as zero and scale_grad_by_freq rescales gradients on
        # purpose, so these are not the numerical derivatives: compared with PyTorch instead
        ModuleInput((6, 3), {"padding_idx": 1}, (np.array([[1, 2, 1], [0, 1, 5]]),), output_shape=(2, 3, 3),
                    desc="padding_idx", gradcheck=False),
        ModuleInput((6, 2), {"padding_idx": -1, "scale_grad_by_freq": True}, (np.array([0, 2, 2, 5, 2, 0]),),
                    output_shape=(6, 2), desc="scale_grad_by_freq", gradcheck=False),
        ModuleInput((6, 3), {"max_norm": 0.5}, (np.array([[0, 1], [1, 4]]),), output_shape=(2, 2, 3),
                    desc="max_norm", gradcheck=False),
        ModuleInput((5, 2), forward_args=(np.array(3),), output_shape=(2,), desc="0d_index"),
    ]


def _embedding_bag(dtype, rng):
    idx = np.array([0, 2, 4, 4, 1, 3, 2, 0])
    off = np.array([0, 3, 3, 5])  # the second bag is empty
    return [
        ModuleInput((5, 3), {"mode": "sum"}, (idx, off), output_shape=(4, 3), desc="sum"),
        ModuleInput((5, 3), {"mode": "mean"}, (idx, off), output_shape=(4, 3), desc="mean"),
        ModuleInput((5, 3), {"mode": "max"}, (idx, off), output_shape=(4, 3), desc="max"),
        ModuleInput((5, 2), {"mode": "mean"}, (randint(rng, 5, 3, 4),), output_shape=(3, 2), desc="2d_input"),
        ModuleInput((5, 2), {"mode": "sum"}, (idx, off), {"per_sample_weights": randn(rng, 8, dtype=dtype)},
                    output_shape=(4, 2), desc="per_sample_weights"),
        ModuleInput((5, 2), {"mode": "mean", "padding_idx": 2}, (idx, off), output_shape=(4, 2),
                    desc="padding_idx"),
        ModuleInput((5, 2), {"mode": "max", "padding_idx": 4}, (idx, off), output_shape=(4, 2),
                    desc="max_padding_idx"),
        ModuleInput((5, 2), {"mode": "sum", "include_last_offset": True}, (idx, np.array([0, 3, 8])),
                    output_shape=(2, 2), desc="include_last_offset"),
        # indices past the last offset belong to no bag; PyTorch's CPU backward reads uninitialised
        # memory for them (its weight gradient varies from run to run), so no comparison here
        ModuleInput((5, 2), {"mode": "mean", "include_last_offset": True}, (idx, np.array([0, 3, 6])),
                    output_shape=(2, 2), desc="trailing_indices", torch=False),
        # PyTorch's CPU kernel divides by the frequency of the wrong index (counts[indices[unique_group]]);
        # fabric divides each row's gradient by its own frequency, as F.embedding does
        ModuleInput((5, 2), {"mode": "sum", "scale_grad_by_freq": True}, (idx, off), output_shape=(4, 2),
                    desc="scale_grad_by_freq", gradcheck=False, torch=False),
    ]


def _dropout(shape, out=None):
    def gen(dtype, rng):
        x = randn(rng, *shape, dtype=dtype)
        return [ModuleInput((0.4,), forward_args=(x,), output_shape=out or shape),
                ModuleInput((0.0,), forward_args=(x,), output_shape=out or shape, desc="p0"),
                ModuleInput((1.0,), forward_args=(x,), output_shape=out or shape, desc="p1")]
    return gen


def _channel_dropout(batched, unbatched):
    def gen(dtype, rng):
        return [ModuleInput((0.5,), forward_args=(randn(rng, *batched, dtype=dtype),), output_shape=batched),
                ModuleInput((0.3,), forward_args=(randn(rng, *unbatched, dtype=dtype),), output_shape=unbatched,
                            desc="unbatched")]
    return gen


def _batchnorm(shapes):
    def gen(dtype, rng):
        c = shapes[0][1]
        out = [ModuleInput((c,), forward_args=(randn(rng, *s, dtype=dtype),), output_shape=s, desc=f"{len(s)}d")
               for s in shapes]
        s = shapes[0]
        out += [
            ModuleInput((c,), {"momentum": None}, (randn(rng, *s, dtype=dtype),), output_shape=s, desc="cumulative"),
            ModuleInput((c,), {"affine": False, "eps": 1e-3}, (randn(rng, *s, dtype=dtype),), output_shape=s,
                        desc="no_affine"),
            ModuleInput((c,), {"track_running_stats": False}, (randn(rng, *s, dtype=dtype),), output_shape=s,
                        desc="no_running_stats"),
            ModuleInput((c,), {"bias": False, "momentum": 0.3}, (randn(rng, *s, dtype=dtype),), output_shape=s,
                        desc="no_bias"),
        ]
        return out
    return gen


def _instancenorm(batched, unbatched):
    def gen(dtype, rng):
        c = batched[1]
        return [
            ModuleInput((c,), forward_args=(randn(rng, *batched, dtype=dtype),), output_shape=batched),
            ModuleInput((c,), {"affine": True, "track_running_stats": True}, (randn(rng, *batched, dtype=dtype),),
                        output_shape=batched, desc="affine_running_stats"),
            ModuleInput((c,), {"affine": True}, (randn(rng, *unbatched, dtype=dtype),), output_shape=unbatched,
                        desc="unbatched"),
        ]
    return gen


def _layernorm(dtype, rng):
    return [
        ModuleInput((4,), forward_args=(randn(rng, 2, 3, 4, dtype=dtype),), output_shape=(2, 3, 4)),
        ModuleInput(((3, 4),), {"eps": 1e-3}, (randn(rng, 2, 3, 4, dtype=dtype),), output_shape=(2, 3, 4),
                    desc="2d_shape"),
        ModuleInput((4,), {"elementwise_affine": False}, (randn(rng, 3, 4, dtype=dtype),), output_shape=(3, 4),
                    desc="no_affine"),
        ModuleInput((4,), {"bias": False}, (randn(rng, 3, 4, dtype=dtype),), output_shape=(3, 4), desc="no_bias"),
    ]


def _groupnorm(dtype, rng):
    return [
        ModuleInput((2, 4), forward_args=(randn(rng, 2, 4, 3, dtype=dtype),), output_shape=(2, 4, 3)),
        ModuleInput((1, 3), {"affine": False}, (randn(rng, 2, 3, 2, 2, dtype=dtype),), output_shape=(2, 3, 2, 2),
                    desc="one_group_4d"),
        ModuleInput((4, 4), {"eps": 1e-3}, (randn(rng, 3, 4, dtype=dtype),), output_shape=(3, 4), desc="2d"),
    ]


def _rmsnorm(dtype, rng):
    return [
        ModuleInput((4,), forward_args=(randn(rng, 2, 3, 4, dtype=dtype),), output_shape=(2, 3, 4)),
        ModuleInput(((3, 4),), {"eps": 1e-5}, (randn(rng, 2, 3, 4, dtype=dtype),), output_shape=(2, 3, 4),
                    desc="2d_shape"),
        ModuleInput((4,), {"elementwise_affine": False}, (randn(rng, 3, 4, dtype=dtype),), output_shape=(3, 4),
                    desc="no_affine"),
    ]


def _lrn(dtype, rng):
    return [
        ModuleInput((3,), forward_args=(randn(rng, 2, 5, 3, dtype=dtype),), output_shape=(2, 5, 3)),
        ModuleInput((2,), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, (randn(rng, 2, 4, 2, 2, dtype=dtype),),
                    output_shape=(2, 4, 2, 2), desc="even_4d"),
    ]


def _sequential_make(nn):
    return nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.3), nn.LayerNorm(3), nn.Linear(3, 2))


def _mlp(dtype, rng):
    return [ModuleInput(forward_args=(randn(rng, 3, 4, dtype=dtype),), output_shape=(3, 2))]


def _module_list_make(nn):
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(2)])
            self.scales = nn.ParameterList([nn.Parameter(nn.init.ones_(_empty(nn, 3))) for _ in range(2)])
            self.heads = nn.ModuleDict({"a": nn.Linear(3, 2), "b": nn.Identity()})
            self.bias = nn.ParameterDict({"b": nn.Parameter(nn.init.zeros_(_empty(nn, 2)))})

        def forward(self, x):
            for layer, s in zip(self.layers, self.scales):
                x = layer(x) * s
            return self.heads["b"](self.heads["a"](x)) + self.bias["b"]

    return Stack()


def _empty(nn, n):
    import importlib as _il

    mod = _il.import_module(nn.__name__.split(".")[0])
    return mod.empty(n)


def _stack(dtype, rng):
    return [ModuleInput(forward_args=(randn(rng, 2, 3, dtype=dtype),), output_shape=(2, 2))]


CORE_MODULES = [
    ModuleInfo("Identity", _identity),
    ModuleInfo("Linear", _linear, gradgrad=True),
    ModuleInfo("Bilinear", _bilinear),
    ModuleInfo("Flatten", _flatten),
    ModuleInfo("Unflatten", _unflatten),
    ModuleInfo("Embedding", _embedding, gradgrad=True),
    ModuleInfo("EmbeddingBag", _embedding_bag,
               notes="scale_grad_by_freq scales by each index's own frequency (PyTorch's CPU kernel uses the "
                     "count of another index)"),
    ModuleInfo("Dropout", _dropout((4, 5)), random=True, train_eval_differ=True),
    ModuleInfo("Dropout1d", _channel_dropout((3, 4, 2), (4, 3)), random=True, train_eval_differ=True),
    ModuleInfo("Dropout2d", _channel_dropout((3, 4, 2, 2), (4, 2, 3)), random=True, train_eval_differ=True),
    ModuleInfo("Dropout3d", _channel_dropout((2, 4, 2, 1, 2), (4, 2, 1, 2)), random=True, train_eval_differ=True),
    ModuleInfo("AlphaDropout", _dropout((4, 5)), random=True, train_eval_differ=True),
    ModuleInfo("FeatureAlphaDropout", _dropout((3, 4, 2)), random=True, train_eval_differ=True),
    ModuleInfo("BatchNorm1d", _batchnorm([(4, 3), (3, 3, 2)]), train_eval_differ=True, gradgrad=True),
    ModuleInfo("BatchNorm2d", _batchnorm([(3, 2, 2, 2)]), train_eval_differ=True),
    ModuleInfo("BatchNorm3d", _batchnorm([(2, 2, 2, 1, 2)]), train_eval_differ=True),
    ModuleInfo("InstanceNorm1d", _instancenorm((2, 3, 4), (3, 4)), gradgrad=True),
    ModuleInfo("InstanceNorm2d", _instancenorm((2, 2, 2, 3), (2, 3, 2))),
    ModuleInfo("InstanceNorm3d", _instancenorm((2, 2, 2, 1, 2), (2, 2, 2, 2))),
    ModuleInfo("LayerNorm", _layernorm, gradgrad=True),
    ModuleInfo("GroupNorm", _groupnorm, gradgrad=True),
    ModuleInfo("RMSNorm", _rmsnorm, gradgrad=True),
    ModuleInfo("LocalResponseNorm", _lrn, gradgrad=True),
    ModuleInfo("Sequential", _mlp, make=_sequential_make, random=True, train_eval_differ=True),
    ModuleInfo("ModuleList", _stack, make=_module_list_make, check_repr=False),
]

# Families in other files: tests/nn/moduleinfo_<family>.py, each defining MODULES.
FAMILIES = ("conv", "conv_pool", "pooling", "padding", "activation", "loss", "rnn_attention",
            "distance", "misc")


def all_modules():
    infos = list(CORE_MODULES)
    for fam in FAMILIES:
        name = f"moduleinfo_{fam}"
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        infos.extend(mod.MODULES)
    return infos


ALL_MODULES = all_modules()
