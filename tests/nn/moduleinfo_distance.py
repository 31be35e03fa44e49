"""ModuleInfo entries for the distance modules (family "distance")."""
from __future__ import annotations

import numpy as np
from moduleinfo import ModuleInfo, ModuleInput


def randn(rng, *shape, dtype):
    return np.asarray(rng.standard_normal(shape), dtype=dtype)


def _pairwise(dtype, rng):
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 4, dtype=dtype)), output_shape=(3,)),
        ModuleInput((1.0,), {"keepdim": True}, (randn(rng, 3, 4, dtype=dtype), randn(rng, 4, dtype=dtype)),
                    output_shape=(3, 1), desc="p1_broadcast_keepdim"),
        ModuleInput((3.0,), {"eps": 0.0}, (randn(rng, 2, 3, 4, dtype=dtype), randn(rng, 2, 3, 4, dtype=dtype)),
                    output_shape=(2, 3), desc="p3_3d"),
        ModuleInput((float("inf"),), {}, (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 4, dtype=dtype)),
                    output_shape=(3,), desc="inf"),
    ]


def _cosine(dtype, rng):
    return [
        ModuleInput((), {}, (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 4, dtype=dtype)), output_shape=(3,)),
        ModuleInput((0,), {"eps": 1e-6}, (randn(rng, 3, 4, dtype=dtype), randn(rng, 3, 1, dtype=dtype)),
                    output_shape=(4,), desc="dim0_broadcast"),
        ModuleInput((-1,), {}, (randn(rng, 2, 3, 4, dtype=dtype), randn(rng, 2, 3, 4, dtype=dtype)),
                    output_shape=(2, 3), desc="3d"),
    ]


MODULES = [
    ModuleInfo("PairwiseDistance", _pairwise, gradgrad=True),
    ModuleInfo("CosineSimilarity", _cosine, gradgrad=True),
]
