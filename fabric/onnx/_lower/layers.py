"""Lowering rules: linear, convolution, normalisation, pooling, embedding, resizing layers."""
from __future__ import annotations

import numpy as np

from ... import nn
from ...nn import functional as F
from ._core import (
    FUNCTIONS,
    MODULES,
    UnsupportedOperatorError,
    _rank,
    _reg_module,
    _unsupported,
    cast,
    gelu,
    layer_norm,
    linear,
    reduce,
    shape_of,
    shape_tensor,
    size_at,
    tensor,
    transpose,
    unsqueeze,
)
from .elementwise import _Conf, _embedding, _silu
from .shapes import flatten

# --- modules ------------------------------------------------------------------------------------------------

def _p(L, path: str, name: str):
    mod = L.gm.get_submodule(path)
    if getattr(mod, name, None) is None:
        return None
    return L.param(f"{path}.{name}")


@_reg_module(nn.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear)
def _m_linear(L, m, path, x):
    return linear(L, x, _p(L, path, "weight"), _p(L, path, "bias"))


@_reg_module(nn.Identity)
def _m_identity(L, m, path, x, *args, **kwargs):
    return x


@_reg_module(nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.AlphaDropout)
def _m_dropout(L, m, path, x):
    return x


def _act_module(fn):
    def rule(L, m, path, x):
        return fn(L, x)
    return rule


MODULES[nn.ReLU] = _act_module(lambda L, x: L.b.op("Relu", [x], x.dtype, x.rank))
MODULES[nn.Tanh] = _act_module(lambda L, x: L.b.op("Tanh", [x], x.dtype, x.rank))
MODULES[nn.Sigmoid] = _act_module(lambda L, x: L.b.op("Sigmoid", [x], x.dtype, x.rank))
MODULES[nn.SiLU] = _act_module(lambda L, x: _silu(L, x))


@_reg_module(nn.GELU)
def _m_gelu(L, m, path, x):
    return gelu(L, x, m.approximate)


@_reg_module(nn.Softmax)
def _m_softmax(L, m, path, x):
    return L.b.op("Softmax", [x], x.dtype, x.rank, axis=int(m.dim if m.dim is not None else -1))


@_reg_module(nn.LayerNorm)
def _m_layer_norm(L, m, path, x):
    return layer_norm(L, x, m.normalized_shape, _p(L, path, "weight"), _p(L, path, "bias"), m.eps)


@_reg_module(nn.Flatten)
def _m_flatten(L, m, path, x):
    return flatten(L, x, m.start_dim, m.end_dim)


@_reg_module(nn.Embedding)
def _m_embedding(L, m, path, idx):
    return _embedding(L, idx, _p(L, path, "weight"), max_norm=m.max_norm)


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


@_reg_module(nn.Conv1d, nn.Conv2d, nn.Conv3d)
def _m_conv(L, m, path, x):
    n = len(m.kernel_size)
    if m.padding_mode != "zeros":
        raise UnsupportedOperatorError(_unsupported(f"Conv{n}d(padding_mode='{m.padding_mode}')", L.b.opset))
    k, d = _tuple(m.kernel_size, n), _tuple(m.dilation, n)
    if isinstance(m.padding, str):
        if m.padding == "valid":
            pads = [0] * (2 * n)
        else:
            total = [dd * (kk - 1) for kk, dd in zip(k, d)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        p = _tuple(m.padding, n)
        pads = list(p) + list(p)
    inputs = [x, _p(L, path, "weight")] + ([_p(L, path, "bias")] if m.bias is not None else [])
    return L.b.op("Conv", inputs, x.dtype, x.rank, kernel_shape=list(k), strides=list(_tuple(m.stride, n)),
                  pads=pads, dilations=list(d), group=int(m.groups))


@_reg_module(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _m_batch_norm(L, m, path, x):
    if m.training or not m.track_running_stats:
        raise UnsupportedOperatorError("fabric.onnx exports BatchNorm in eval mode with running statistics "
                                       f"({path} is in training mode or has track_running_stats=False)")
    c = m.num_features
    scale = _p(L, path, "weight") if m.affine else L.b.const(np.ones(c, x.dtype))
    bias = _p(L, path, "bias") if m.affine else L.b.const(np.zeros(c, x.dtype))
    return L.b.op("BatchNormalization", [x, scale, bias, _p(L, path, "running_mean"), _p(L, path, "running_var")],
                  x.dtype, x.rank, epsilon=float(m.eps))


@_reg_module(nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)
def _m_max_pool(L, m, path, x):
    n = _rank(x) - 2
    if m.return_indices:
        raise UnsupportedOperatorError(_unsupported("MaxPool(return_indices=True)", L.b.opset))
    k = _tuple(m.kernel_size, n)
    s = _tuple(m.stride if m.stride is not None else m.kernel_size, n)
    p = _tuple(m.padding, n)
    return L.b.op("MaxPool", [x], x.dtype, x.rank, kernel_shape=list(k), strides=list(s), pads=list(p) + list(p),
                  dilations=list(_tuple(m.dilation, n)), ceil_mode=int(m.ceil_mode))


@_reg_module(nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
def _m_avg_pool(L, m, path, x):
    n = _rank(x) - 2
    if getattr(m, "divisor_override", None):
        raise UnsupportedOperatorError(_unsupported("AvgPool(divisor_override=...)", L.b.opset))
    k = _tuple(m.kernel_size, n)
    s = _tuple(m.stride if m.stride is not None else m.kernel_size, n)
    p = _tuple(m.padding, n)
    return L.b.op("AveragePool", [x], x.dtype, x.rank, kernel_shape=list(k), strides=list(s),
                  pads=list(p) + list(p), ceil_mode=int(m.ceil_mode), count_include_pad=int(m.count_include_pad))


@_reg_module(nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)
def _m_adaptive_avg_pool(L, m, path, x):
    n = _rank(x) - 2
    out = _tuple(m.output_size, n)
    if all(o == 1 for o in out):
        return L.b.op("GlobalAveragePool", [x], x.dtype, x.rank)
    tm = L.node.args[0].meta.get("tensor_meta")
    spatial = tuple(tm.shape[2:]) if tm is not None else None
    if spatial is None or any(o is None or s % o for s, o in zip(spatial, out)):
        raise UnsupportedOperatorError(_unsupported(f"AdaptiveAvgPool{n}d to {out} from {spatial}", L.b.opset))
    k = [s // o for s, o in zip(spatial, out)]
    return L.b.op("AveragePool", [x], x.dtype, x.rank, kernel_shape=k, strides=k)


def _register_functional_layers():
    def conv(n):
        def rule(L, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
            k = tuple(int(s) for s in L.node.args[1].meta["tensor_meta"].shape[2:])
            if isinstance(padding, str):
                pad = padding
            else:
                pad = _tuple(padding, n)
            pads = ([0] * (2 * n)) if pad == "valid" else (
                [dd * (kk - 1) // 2 for kk, dd in zip(k, _tuple(dilation, n))]
                + [dd * (kk - 1) - dd * (kk - 1) // 2 for kk, dd in zip(k, _tuple(dilation, n))]
                if pad == "same" else list(pad) + list(pad))
            inputs = [x, weight] + ([bias] if bias is not None else [])
            return L.b.op("Conv", inputs, x.dtype, x.rank, kernel_shape=list(k), strides=list(_tuple(stride, n)),
                          pads=pads, dilations=list(_tuple(dilation, n)), group=int(groups))
        return rule
    FUNCTIONS[F.conv1d] = conv(1)
    FUNCTIONS[F.conv2d] = conv(2)

    def max_pool(L, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        m = _Conf(kernel_size=kernel_size, stride=stride or kernel_size, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode, return_indices=return_indices)
        return _m_max_pool(L, m, None, x)

    def avg_pool(L, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        m = _Conf(kernel_size=kernel_size, stride=stride or kernel_size, padding=padding, ceil_mode=ceil_mode,
                  count_include_pad=count_include_pad, divisor_override=divisor_override)
        return _m_avg_pool(L, m, None, x)
    for f in (F.max_pool1d, F.max_pool2d):
        FUNCTIONS[f] = max_pool
    for f in (F.avg_pool1d, F.avg_pool2d):
        FUNCTIONS[f] = avg_pool
    for f in (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d):
        FUNCTIONS[f] = lambda L, x, output_size: _m_adaptive_avg_pool(L, _Conf(output_size=output_size), None, x)

    def batch_norm(L, x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                   eps=1e-5):
        if training or running_mean is None:
            raise UnsupportedOperatorError("fabric.onnx exports F.batch_norm in inference form (training=False, "
                                           "running statistics given)")
        c = int(L.node.args[0].meta["tensor_meta"].shape[1])
        scale = weight if weight is not None else L.b.const(np.ones(c, x.dtype))
        shift = bias if bias is not None else L.b.const(np.zeros(c, x.dtype))
        return L.b.op("BatchNormalization", [x, scale, shift, running_mean, running_var], x.dtype, x.rank,
                      epsilon=float(eps))
    FUNCTIONS[F.batch_norm] = batch_norm

    def pad(L, x, pad, mode="constant", value=None):
        r = _rank(x)
        k = len(pad) // 2
        begins, ends = [0] * r, [0] * r
        for i in range(k):     # pad lists the last dimension first
            begins[r - 1 - i], ends[r - 1 - i] = pad[2 * i], pad[2 * i + 1]
        onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
        if onnx_mode is None:
            raise UnsupportedOperatorError(_unsupported(f"F.pad(mode='{mode}')", L.b.opset))
        inputs = [x, L.b.i64(begins + ends)]
        if mode == "constant":
            inputs.append(tensor(L, 0.0 if value is None else value, like=x))
        return L.b.op("Pad", inputs, x.dtype, r, mode=onnx_mode)
    FUNCTIONS[F.pad] = pad

    def sdpa(L, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        b = L.b
        if enable_gqa:
            raise UnsupportedOperatorError(_unsupported("scaled_dot_product_attention(enable_gqa=True)", b.opset))
        r = _rank(q)
        perm = list(range(r - 2)) + [r - 1, r - 2]
        if scale is None:
            d = size_at(L, q, r - 1)
            s = b.op("Div", [b.const(np.asarray(1.0, q.dtype)), b.op("Sqrt", [cast(L, d, q.dtype)], q.dtype, 0)],
                     q.dtype, 0)
        else:
            s = b.const(np.asarray(scale, q.dtype))
        scores = b.op("Mul", [b.op("MatMul", [q, transpose(L, k, perm)], q.dtype, r), s], q.dtype, r)
        ninf, zero = b.const(np.asarray(-np.inf, q.dtype)), b.const(np.asarray(0.0, q.dtype))
        if is_causal:
            t_len, s_len = size_at(L, scores, r - 2), size_at(L, scores, r - 1)
            from onnx import numpy_helper
            full = b.op("ConstantOfShape", [shape_tensor(L, [t_len, s_len])], q.dtype, 2,
                        value=numpy_helper.from_array(np.asarray([-np.inf], q.dtype), name="value"))
            scores = b.op("Add", [scores, b.op("Trilu", [full, b.i64(1)], q.dtype, 2, upper=1)], q.dtype, r)
        if attn_mask is not None:
            m = attn_mask
            if m.dtype == np.bool_:    # True = may attend
                m = b.op("Where", [m, zero, ninf], q.dtype, m.rank)
            scores = b.op("Add", [scores, cast(L, m, q.dtype)], q.dtype, r)
        attn = b.op("Softmax", [scores], q.dtype, r, axis=-1)
        return b.op("MatMul", [attn, v], q.dtype, r)
    FUNCTIONS[F.scaled_dot_product_attention] = sdpa


_register_functional_layers()


# --- GroupNorm / InstanceNorm, ConvTranspose, Upsample / interpolate ------------------------------------------

def _affine_channels(L, y, w, bias, rank):
    """``y * w + b`` with per-channel ``w``/``b`` broadcast over (N, C, *spatial)."""
    axes = list(range(1, rank - 1))
    if w is not None:
        y = L.b.op("Mul", [y, unsqueeze(L, w, axes)], y.dtype, rank)
    if bias is not None:
        y = L.b.op("Add", [y, unsqueeze(L, bias, axes)], y.dtype, rank)
    return y


def group_norm(L, x, groups: int, w, bias, eps: float):
    b = L.b
    r = _rank(x)
    g = b.op("Reshape", [x, b.i64([0, groups, -1])], x.dtype, 3)
    mean = reduce(L, "ReduceMean", g, [2], True)
    centered = b.op("Sub", [g, mean], x.dtype, 3)
    var = reduce(L, "ReduceMean", b.op("Mul", [centered, centered], x.dtype, 3), [2], True)
    normed = b.op("Div", [centered, b.op("Sqrt", [b.op("Add", [var, tensor(L, eps, like=x)], x.dtype, 3)],
                                         x.dtype, 3)], x.dtype, 3)
    y = b.op("Reshape", [normed, shape_of(L, x)], x.dtype, r)
    return _affine_channels(L, y, w, bias, r)


@_reg_module(nn.GroupNorm)
def _m_group_norm(L, m, path, x):
    return group_norm(L, x, m.num_groups, _p(L, path, "weight"), _p(L, path, "bias"), m.eps)


@_reg_module(nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)
def _m_instance_norm(L, m, path, x):
    if m.track_running_stats and not m.training:
        raise UnsupportedOperatorError(_unsupported("InstanceNorm with running statistics in eval mode", L.b.opset))
    c = m.num_features
    w = _p(L, path, "weight") if m.affine else L.b.const(np.ones(c, x.dtype))
    bias = _p(L, path, "bias") if m.affine else L.b.const(np.zeros(c, x.dtype))
    return L.b.op("InstanceNormalization", [x, w, bias], x.dtype, x.rank, epsilon=float(m.eps))


def _register_norm_functions():
    FUNCTIONS[F.group_norm] = lambda L, x, num_groups, weight=None, bias=None, eps=1e-5: group_norm(
        L, x, num_groups, weight, bias, eps)


_register_norm_functions()


@_reg_module(nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
def _m_conv_transpose(L, m, path, x, output_size=None):
    n = len(m.kernel_size)
    if output_size is not None or m.padding_mode != "zeros":
        raise UnsupportedOperatorError(_unsupported("ConvTranspose with output_size / non-zero padding_mode",
                                                    L.b.opset))
    p = list(_tuple(m.padding, n))
    inputs = [x, _p(L, path, "weight")] + ([_p(L, path, "bias")] if m.bias is not None else [])
    return L.b.op("ConvTranspose", inputs, x.dtype, x.rank, kernel_shape=list(m.kernel_size),
                  strides=list(_tuple(m.stride, n)), pads=p + p, dilations=list(_tuple(m.dilation, n)),
                  output_padding=list(_tuple(m.output_padding, n)), group=int(m.groups))


def interpolate(L, x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    b = L.b
    r = _rank(x)
    n = r - 2
    onnx_mode = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
                 "bicubic": "cubic"}.get(mode)
    if onnx_mode is None:
        raise UnsupportedOperatorError(_unsupported(f"interpolate(mode='{mode}')", b.opset))
    if onnx_mode == "nearest":
        ctm, extra = "asymmetric", {"nearest_mode": "floor"}
    else:
        ctm, extra = ("align_corners" if align_corners else "half_pixel"), {}
        if onnx_mode == "cubic":
            extra["cubic_coeff_a"] = -0.75
    if size is not None:
        sizes = list(_tuple(size, n))
        target = b.op("Concat", [b.op("Slice", [shape_of(L, x), b.i64([0]), b.i64([2])], np.int64, 1),
                                 shape_tensor(L, sizes)], np.int64, 1, axis=0)
        return b.op("Resize", [x, None, None, target], x.dtype, r, mode=onnx_mode,
                    coordinate_transformation_mode=ctm, **extra)
    scales = [1.0, 1.0] + [float(s) for s in _tuple(scale_factor, n)]
    return b.op("Resize", [x, None, b.const(np.asarray(scales, np.float32))], x.dtype, r, mode=onnx_mode,
                coordinate_transformation_mode=ctm, **extra)


@_reg_module(nn.Upsample)
def _m_upsample(L, m, path, x):
    return interpolate(L, x, m.size, m.scale_factor, m.mode, m.align_corners)


def _register_interpolate():
    def rule(L, x, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
             antialias=False):
        if antialias:
            raise UnsupportedOperatorError(_unsupported("interpolate(antialias=True)", L.b.opset))
        return interpolate(L, x, size, scale_factor, mode, align_corners)
    FUNCTIONS[F.interpolate] = rule


_register_interpolate()
