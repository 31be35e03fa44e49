"""ModuleInfo entries for convolution, pooling, padding and resampling
modules (family "conv_pool"): Conv*/ConvTranspose*, pooling, padding,
PixelShuffle, Upsample*, Fold/Unfold.

Sizes are small on purpose: gradcheck costs two forwards per input element.
"""
from __future__ import annotations

import numpy as np
from moduleinfo import ModuleInfo, ModuleInput


def randn(rng, *shape, dtype):
    return np.asarray(rng.standard_normal(shape), dtype=dtype)


def positive(rng, *shape, dtype):
    return np.asarray(rng.uniform(0.5, 1.5, shape), dtype=dtype)


def distinct(rng, *shape, dtype):
    """Values at least 0.01 apart (a permutation of a grid): max pooling has no
    near-ties that a gradcheck perturbation could flip."""
    n = int(np.prod(shape))
    return np.asarray(rng.permutation(n).reshape(shape) * 0.05 - n * 0.025, dtype=dtype)


# --- convolutions -----------------------------------------------------------------------

def _conv(nd):
    def gen(dtype, rng):
        sp = (5, 4, 3)[:nd]

        def x(n, c, *s):
            return randn(rng, n, c, *(s or sp), dtype=dtype)

        def out(n, c, *s):
            return (n, c) + tuple(s)

        o3 = tuple(v - 2 for v in sp)        # kernel 3, no padding
        return [
            ModuleInput((3, 4, 3), forward_args=(x(2, 3),), output_shape=out(2, 4, *o3)),
            ModuleInput((2, 4, 3), {"stride": 2, "padding": 1, "bias": False}, (x(2, 2),),
                        output_shape=out(2, 4, *((v + 1) // 2 for v in sp)), desc="stride_pad_nobias"),
            ModuleInput((4, 6, 2), {"groups": 2, "dilation": 2, "padding": 1}, (x(1, 4),),
                        output_shape=out(1, 6, *(v for v in sp)), desc="groups_dilation"),
            ModuleInput((3, 3, 3), {"groups": 3, "padding": "same"}, (x(1, 3),), output_shape=out(1, 3, *sp),
                        desc="depthwise_same"),
            ModuleInput((2, 3, 2), {"padding": "same", "padding_mode": "reflect"}, (x(2, 2),),
                        output_shape=out(2, 3, *sp), desc="same_even_reflect"),
            ModuleInput((2, 3, 3), {"padding": 1, "padding_mode": "replicate"}, (x(1, 2),),
                        output_shape=out(1, 3, *sp), desc="replicate"),
            ModuleInput((2, 3, 3), {"padding": 2, "padding_mode": "circular", "stride": 2}, (x(1, 2),),
                        output_shape=out(1, 3, *((v + 1) // 2 + 1 for v in sp)), desc="circular"),
            ModuleInput((2, 3, 3), {"padding": "valid"}, (randn(rng, 2, *sp, dtype=dtype),),
                        output_shape=(3,) + o3, desc="unbatched"),
        ]
    return gen


def _conv_transpose(nd):
    def gen(dtype, rng):
        sp = (3, 2, 2)[:nd]

        def x(n, c):
            return randn(rng, n, c, *sp, dtype=dtype)

        def size(k, s=1, p=0, op=0, d=1):
            return tuple((v - 1) * s - 2 * p + d * (k - 1) + op + 1 for v in sp)

        return [
            ModuleInput((3, 2, 3), forward_args=(x(2, 3),), output_shape=(2, 2) + size(3)),
            ModuleInput((2, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}, (x(1, 2),),
                        output_shape=(1, 3) + size(3, 2, 1, 1), desc="stride_output_padding"),
            ModuleInput((4, 2, 2), {"groups": 2, "dilation": 2, "bias": False}, (x(1, 4),),
                        output_shape=(1, 2) + size(2, d=2), desc="groups_dilation_nobias"),
            ModuleInput((2, 2, 3), {"stride": 3, "padding": 1, "output_padding": 2}, (x(1, 2),),
                        output_shape=(1, 2) + size(3, 3, 1, 2), desc="output_padding_2"),
            ModuleInput((2, 3, 2), {"stride": 2}, (randn(rng, 2, *sp, dtype=dtype),),
                        output_shape=(3,) + size(2, 2), desc="unbatched"),
        ]
    return gen


def _conv_transpose_output_size(dtype, rng):
    return [ModuleInput((2, 3, 3), {"stride": 2, "padding": 1}, (randn(rng, 1, 2, 3, 3, dtype=dtype),),
                        {"output_size": [6, 6]}, output_shape=(1, 3, 6, 6), desc="output_size")]


# --- pooling ----------------------------------------------------------------------------------

def _max_pool(nd):
    def gen(dtype, rng):
        sp = {1: (7,), 2: (7, 5), 3: (5, 3, 4)}[nd]

        def x(*lead):
            return distinct(rng, *lead, *sp, dtype=dtype)

        def o(k, s, p, d=1, ceil=False):
            def one(n):
                num = n + 2 * p - d * (k - 1) - 1
                r = (-(-num // s) if ceil else num // s) + 1
                if ceil and (r - 1) * s >= n + p:
                    r -= 1
                return r
            return tuple(one(v) for v in sp)

        return [
            ModuleInput((2,), forward_args=(x(2, 3),), output_shape=(2, 3) + o(2, 2, 0)),
            ModuleInput((3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (x(1, 2),),
                        output_shape=(1, 2) + o(3, 2, 1, ceil=True), desc="pad_ceil"),
            ModuleInput((2,), {"stride": 1, "dilation": 2}, (x(1, 2),), output_shape=(1, 2) + o(2, 1, 0, 2),
                        desc="dilation"),
            ModuleInput((2,), {"stride": 2, "ceil_mode": True}, (x(2),), output_shape=(2,) + o(2, 2, 0, ceil=True),
                        desc="unbatched_ceil"),
        ]
    return gen


def _max_pool_indices(dtype, rng):
    return [ModuleInput((2,), {"return_indices": True}, (distinct(rng, 2, 2, 4, 6, dtype=dtype),),
                        output_shape=(2, 2, 2, 3), desc="return_indices")]


def _max_unpool(nd):
    def gen(dtype, rng):
        sp = (3, 2, 2)[:nd]
        n, c = 2, 2
        vals = randn(rng, n, c, *sp, dtype=dtype)
        # argmax positions of a 2-wide non-overlapping max pool: one position per window
        offs = rng.integers(0, 2, size=(n, c) + sp + (nd,))
        full = tuple(2 * v for v in sp)
        coords = [2 * np.arange(v).reshape((-1,) + (1,) * (nd - 1 - i)) + offs[..., i] for i, v in enumerate(sp)]
        idx = np.zeros((n, c) + sp, np.int64)
        for i in range(nd):
            idx = idx * full[i] + coords[i]
        out = [ModuleInput((2,), forward_args=(vals, idx), output_shape=(n, c) + full)]
        if nd == 2:
            out.append(ModuleInput((2,), forward_args=(vals, idx), forward_kwargs={"output_size": (7, 5)},
                                   output_shape=(n, c, 7, 5), desc="output_size"))
        return out
    return gen


def _avg_pool(nd):
    def gen(dtype, rng):
        sp = {1: (7,), 2: (7, 5), 3: (5, 3, 4)}[nd]

        def x(*lead):
            return randn(rng, *lead, *sp, dtype=dtype)

        out = [
            ModuleInput((2,), forward_args=(x(2, 3),), output_shape=(2, 3) + tuple(v // 2 for v in sp)),
            ModuleInput((3,), {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}, (x(1, 2),),
                        output_shape=(1, 2) + tuple(-(-(v - 1) // 2) + 1 for v in sp), desc="pad_ceil_exclude"),
            ModuleInput((3,), {"stride": 1, "padding": 1}, (x(2),), output_shape=(2,) + sp, desc="unbatched"),
        ]
        if nd > 1:
            out.append(ModuleInput((2,), {"stride": 1, "divisor_override": 3}, (x(1, 2),),
                                   output_shape=(1, 2) + tuple(v - 1 for v in sp), desc="divisor_override"))
        return out
    return gen


def _adaptive(nd, kind):
    def gen(dtype, rng):
        sp = {1: (7,), 2: (7, 5), 3: (5, 3, 4)}[nd]
        make = distinct if kind == "max" else randn
        outs = [ModuleInput((3,), forward_args=(make(rng, 2, 2, *sp, dtype=dtype),),
                            output_shape=(2, 2) + (3,) * nd),
                ModuleInput((1,), forward_args=(make(rng, 1, 2, *sp, dtype=dtype),),
                            output_shape=(1, 2) + (1,) * nd, desc="global"),
                ModuleInput((2,), forward_args=(make(rng, 2, *sp, dtype=dtype),), output_shape=(2,) + (2,) * nd,
                            desc="unbatched")]
        if nd > 1:
            size = (None,) + (2,) * (nd - 1)
            outs.append(ModuleInput((size,), forward_args=(make(rng, 1, 2, *sp, dtype=dtype),),
                                    output_shape=(1, 2, sp[0]) + (2,) * (nd - 1), desc="none_keeps_size"))
        if kind == "avg":
            outs.append(ModuleInput((9,), forward_args=(make(rng, 1, 2, *sp, dtype=dtype),),
                                    output_shape=(1, 2) + (9,) * nd, desc="larger_than_input"))
        return outs
    return gen


def _adaptive_max_indices(dtype, rng):
    return [ModuleInput((3, True), forward_args=(distinct(rng, 2, 2, 7, 5, dtype=dtype),), output_shape=(2, 2, 3, 3),
                        desc="return_indices")]


def _lp_pool(nd):
    def gen(dtype, rng):
        sp = (6, 4, 4)[:nd]
        return [
            ModuleInput((2, 2), forward_args=(positive(rng, 2, 2, *sp, dtype=dtype),),
                        output_shape=(2, 2) + tuple(v // 2 for v in sp)),
            ModuleInput((1.5, 3, 1), forward_args=(positive(rng, 1, 2, *sp, dtype=dtype),),
                        output_shape=(1, 2) + tuple(v - 2 for v in sp), desc="p1.5_stride1"),
        ]
    return gen


# --- padding ---------------------------------------------------------------------------------------

def _pad(nd, mode):
    def gen(dtype, rng):
        sp = {1: (4,), 2: (4, 3), 3: (3, 3, 3)}[nd]
        pads = (1, 2, 2, 0, 1, 1)[:2 * nd]
        grown = list(sp)
        for i in range(nd):
            grown[nd - 1 - i] += pads[2 * i] + pads[2 * i + 1]
        args = (2,) if mode != "constant" else (2, 1.5)
        tup_args = (pads,) if mode != "constant" else (pads, -0.5)
        return [
            ModuleInput(args, forward_args=(randn(rng, 1, 2, *sp, dtype=dtype),),
                        output_shape=(1, 2) + tuple(v + 4 for v in sp)),
            ModuleInput(tup_args, forward_args=(randn(rng, 2, *sp, dtype=dtype),), output_shape=(2,) + tuple(grown),
                        desc="tuple_unbatched"),
        ]
    return gen


def _zero_pad(nd):
    def gen(dtype, rng):
        sp = {1: (4,), 2: (4, 3), 3: (3, 3, 2)}[nd]
        return [
            ModuleInput((1,), forward_args=(randn(rng, 1, 2, *sp, dtype=dtype),),
                        output_shape=(1, 2) + tuple(v + 2 for v in sp)),
            ModuleInput(((2, -1) * nd,), forward_args=(randn(rng, 2, *sp, dtype=dtype),),
                        output_shape=(2,) + tuple(v + 1 for v in sp), desc="negative_crops"),
        ]
    return gen


# --- resampling -------------------------------------------------------------------------------------------

def _pixel_shuffle(dtype, rng):
    return [ModuleInput((2,), forward_args=(randn(rng, 2, 8, 2, 3, dtype=dtype),), output_shape=(2, 2, 4, 6)),
            ModuleInput((3,), forward_args=(randn(rng, 9, 2, 2, dtype=dtype),), output_shape=(1, 6, 6),
                        desc="unbatched")]


def _pixel_unshuffle(dtype, rng):
    return [ModuleInput((2,), forward_args=(randn(rng, 2, 2, 4, 6, dtype=dtype),), output_shape=(2, 8, 2, 3)),
            ModuleInput((3,), forward_args=(randn(rng, 2, 3, 2, 6, 6, dtype=dtype),), output_shape=(2, 3, 18, 2, 2),
                        desc="5d")]


def _upsample(dtype, rng):
    x3, x4, x5 = (randn(rng, 1, 2, 4, dtype=dtype), randn(rng, 1, 2, 3, 4, dtype=dtype),
                  randn(rng, 1, 1, 2, 3, 2, dtype=dtype))
    return [
        ModuleInput((), {"scale_factor": 2}, (x4,), output_shape=(1, 2, 6, 8), desc="nearest"),
        ModuleInput(((5, 3),), {"mode": "nearest-exact"}, (x4,), output_shape=(1, 2, 5, 3), desc="nearest_exact"),
        ModuleInput((), {"scale_factor": 1.5, "mode": "linear"}, (x3,), output_shape=(1, 2, 6), desc="linear"),
        ModuleInput(((5, 7),), {"mode": "bilinear", "align_corners": True}, (x4,), output_shape=(1, 2, 5, 7),
                    desc="bilinear_align"),
        ModuleInput((), {"scale_factor": (2, 0.5), "mode": "bilinear"}, (x4,), output_shape=(1, 2, 6, 2),
                    desc="bilinear_down"),
        ModuleInput(((4, 5),), {"mode": "bicubic"}, (x4,), output_shape=(1, 2, 4, 5), desc="bicubic"),
        ModuleInput((), {"scale_factor": 2, "mode": "trilinear"}, (x5,), output_shape=(1, 1, 4, 6, 4),
                    desc="trilinear"),
        ModuleInput((), {"scale_factor": 0.5, "mode": "area"}, (x4,), output_shape=(1, 2, 1, 2), desc="area"),
        ModuleInput((), {"scale_factor": 1.7, "mode": "nearest", "recompute_scale_factor": True}, (x3,),
                    output_shape=(1, 2, 6), desc="recompute"),
    ]


def _upsampling_nearest(dtype, rng):
    return [ModuleInput((), {"scale_factor": 2}, (randn(rng, 1, 2, 2, 3, dtype=dtype),), output_shape=(1, 2, 4, 6)),
            ModuleInput(((3, 5),), forward_args=(randn(rng, 1, 1, 2, 3, dtype=dtype),), output_shape=(1, 1, 3, 5),
                        desc="size")]


def _upsampling_bilinear(dtype, rng):
    return [ModuleInput((), {"scale_factor": 2}, (randn(rng, 1, 2, 2, 3, dtype=dtype),), output_shape=(1, 2, 4, 6)),
            ModuleInput(((3, 5),), forward_args=(randn(rng, 1, 1, 2, 3, dtype=dtype),), output_shape=(1, 1, 3, 5),
                        desc="size")]


def _unfold(dtype, rng):
    return [
        ModuleInput((2,), forward_args=(randn(rng, 2, 3, 4, 4, dtype=dtype),), output_shape=(2, 12, 9)),
        ModuleInput(((2, 3),), {"dilation": (1, 2), "padding": 1, "stride": 2}, (randn(rng, 2, 5, 4, dtype=dtype),),
                    output_shape=(12, 3), desc="unbatched_all_args"),
    ]


def _fold(dtype, rng):
    return [
        ModuleInput(((4, 5), 2), forward_args=(randn(rng, 2, 12, 12, dtype=dtype),), output_shape=(2, 3, 4, 5)),
        ModuleInput(((5, 4), (2, 3)), {"dilation": (2, 1), "padding": 1, "stride": 2},
                    (randn(rng, 12, 6, dtype=dtype),), output_shape=(2, 5, 4), desc="unbatched_all_args"),
    ]


MODULES = [
    ModuleInfo("Conv1d", _conv(1), gradgrad=True, atol=1e-5, grad_atol=2e-4),
    ModuleInfo("Conv2d", _conv(2), gradgrad=True, atol=1e-5, grad_atol=2e-4),
    ModuleInfo("Conv3d", _conv(3), atol=1e-5, grad_atol=2e-4),
    ModuleInfo("ConvTranspose1d", _conv_transpose(1), gradgrad=True, grad_atol=2e-4),
    ModuleInfo("ConvTranspose2d", _conv_transpose(2), gradgrad=True, grad_atol=2e-4),
    ModuleInfo("ConvTranspose3d", _conv_transpose(3), grad_atol=2e-4),
    ModuleInfo("ConvTranspose2d", _conv_transpose_output_size),
    ModuleInfo("MaxPool1d", _max_pool(1), gradgrad=True),
    ModuleInfo("MaxPool2d", _max_pool(2), gradgrad=True),
    ModuleInfo("MaxPool3d", _max_pool(3)),
    ModuleInfo("MaxPool2d", _max_pool_indices, output_index=0),
    ModuleInfo("MaxUnpool1d", _max_unpool(1), gradgrad=True),
    ModuleInfo("MaxUnpool2d", _max_unpool(2)),
    ModuleInfo("MaxUnpool3d", _max_unpool(3)),
    ModuleInfo("AvgPool1d", _avg_pool(1), gradgrad=True),
    ModuleInfo("AvgPool2d", _avg_pool(2), gradgrad=True),
    ModuleInfo("AvgPool3d", _avg_pool(3)),
    ModuleInfo("AdaptiveAvgPool1d", _adaptive(1, "avg"), gradgrad=True),
    ModuleInfo("AdaptiveAvgPool2d", _adaptive(2, "avg"), gradgrad=True),
    ModuleInfo("AdaptiveAvgPool3d", _adaptive(3, "avg")),
    ModuleInfo("AdaptiveMaxPool1d", _adaptive(1, "max")),
    ModuleInfo("AdaptiveMaxPool2d", _adaptive(2, "max"), gradgrad=True),
    ModuleInfo("AdaptiveMaxPool3d", _adaptive(3, "max")),
    ModuleInfo("AdaptiveMaxPool2d", _adaptive_max_indices, output_index=0),
    ModuleInfo("LPPool1d", _lp_pool(1), gradgrad=True),
    ModuleInfo("LPPool2d", _lp_pool(2)),
    ModuleInfo("LPPool3d", _lp_pool(3)),
    ModuleInfo("PixelShuffle", _pixel_shuffle, gradgrad=True),
    ModuleInfo("PixelUnshuffle", _pixel_unshuffle),
    ModuleInfo("Upsample", _upsample, gradgrad=True),
    ModuleInfo("UpsamplingNearest2d", _upsampling_nearest),
    ModuleInfo("UpsamplingBilinear2d", _upsampling_bilinear),
    ModuleInfo("Unfold", _unfold, gradgrad=True),
    ModuleInfo("Fold", _fold, gradgrad=True),
]

for _nd in (1, 2, 3):
    MODULES += [
        ModuleInfo(f"ZeroPad{_nd}d", _zero_pad(_nd), gradgrad=_nd == 2),
        ModuleInfo(f"ConstantPad{_nd}d", _pad(_nd, "constant")),
        ModuleInfo(f"ReflectionPad{_nd}d", _pad(_nd, "reflect"), gradgrad=_nd == 2),
        ModuleInfo(f"ReplicationPad{_nd}d", _pad(_nd, "replicate")),
        ModuleInfo(f"CircularPad{_nd}d", _pad(_nd, "circular"), gradgrad=_nd == 1),
    ]
