"""ONNX operators written with fabric ops (differentiable), the targets of the graphs ``load_model`` builds.

Example::

    >>> import fabric
    >>> from fabric.onnx._onnx_ops import OPS
    >>> OPS["Relu"](fabric.tensor([-1.0, 2.0]))
    tensor([0., 2.])
"""
from __future__ import annotations

import operator

import numpy as np

import fabric

from ..nn import functional as F

OPS: dict = {}


def _op(name):
    def deco(fn):
        fn.__name__ = f"onnx_{name}"
        fn.__qualname__ = fn.__name__
        fn.__module__ = __name__
        fn._fx_leaf_function = True     # traced (export of a loaded model) as one node, not through
        OPS[name] = fn
        return fn
    return deco


def _ints(t) -> list[int]:
    return [int(v) for v in (t.tolist() if hasattr(t, "tolist") else t)]


def _fdtype(np_dtype):
    return {np.dtype(np.float32): fabric.float32, np.dtype(np.float64): fabric.float64,
            np.dtype(np.float16): fabric.float16, np.dtype(np.int64): fabric.int64, np.dtype(np.int32): fabric.int32,
            np.dtype(np.int8): fabric.int8, np.dtype(np.uint8): fabric.uint8, np.dtype(np.bool_): fabric.bool,
            np.dtype(np.int16): fabric.int16}[np.dtype(np_dtype)]


def _onnx_to_np(elem_type: int):
    from onnx import helper
    return helper.tensor_dtype_to_np_dtype(elem_type)


# --- elementwise ------------------------------------------------------------------------------------------

for _name, _fn in [("Add", operator.add), ("Sub", operator.sub), ("Mul", operator.mul), ("Pow", operator.pow),
                   ("Equal", fabric.eq), ("Less", fabric.lt), ("Greater", fabric.gt), ("LessOrEqual", fabric.le),
                   ("GreaterOrEqual", fabric.ge), ("MatMul", fabric.matmul)]:
    def _mk(fn):
        def impl(a, b):
            return fn(a, b)
        return impl
    _op(_name)(_mk(_fn))

for _name, _fn in [("Relu", fabric.relu), ("Sigmoid", fabric.sigmoid), ("Tanh", fabric.tanh), ("Exp", fabric.exp),
                   ("Log", fabric.log), ("Sqrt", fabric.sqrt), ("Abs", fabric.abs), ("Sin", fabric.sin),
                   ("Cos", fabric.cos), ("Erf", fabric.erf), ("Floor", fabric.floor), ("Ceil", fabric.ceil),
                   ("Reciprocal", fabric.reciprocal), ("Neg", fabric.neg), ("Not", fabric.logical_not)]:
    def _mk1(fn):
        def impl(x):
            return fn(x)
        return impl
    _op(_name)(_mk1(_fn))


@_op("Div")
def _div(a, b):
    if not a.is_floating_point() and not b.is_floating_point():
        return fabric.div(a, b, rounding_mode="trunc")
    return a / b


@_op("Identity")
def _identity(x):
    return x


@_op("Dropout")
def _dropout(x, ratio=None, training_mode=None, seed=None):
    return x


@_op("Softmax")
def _softmax(x, axis=-1):
    return fabric.softmax(x, axis)


@_op("LogSoftmax")
def _log_softmax(x, axis=-1):
    return fabric.log_softmax(x, axis)


@_op("Gelu")
def _gelu(x, approximate="none"):
    return F.gelu(x, approximate=approximate)


@_op("Gemm")
def _gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    y = fabric.matmul(a.t() if transA else a, b.t() if transB else b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y


@_op("LayerNormalization")
def _layer_norm(x, scale, bias=None, axis=-1, epsilon=1e-5, stash_type=1):
    axis = axis + x.dim() if axis < 0 else axis
    return F.layer_norm(x, tuple(x.shape[axis:]), scale, bias, epsilon)


@_op("BatchNormalization")
def _batch_norm(x, scale, bias, mean, var, epsilon=1e-5, momentum=0.9, training_mode=0):
    return F.batch_norm(x, mean, var, scale, bias, False, 0.0, epsilon)


def _sym_pads(pads, n):
    begin, end = pads[:n], pads[n:]
    return list(begin) if list(begin) == list(end) else None


@_op("Conv")
def _conv(x, w, b=None, kernel_shape=None, strides=None, pads=None, dilations=None, group=1, auto_pad="NOTSET"):
    n = w.dim() - 2
    if auto_pad not in ("NOTSET", "VALID"):
        raise NotImplementedError(f"fabric.onnx.load_model: Conv auto_pad={auto_pad}")
    pads = pads or [0] * (2 * n)
    p = _sym_pads(pads, n)
    if p is None:
        x = F.pad(x, [v for i in reversed(range(n)) for v in (pads[i], pads[i + n])])
        p = [0] * n
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    return conv(x, w, b, tuple(strides or [1] * n), tuple(p), tuple(dilations or [1] * n), group)


@_op("MaxPool")
def _max_pool(x, kernel_shape, strides=None, pads=None, dilations=None, ceil_mode=0, auto_pad="NOTSET",
              storage_order=0):
    n = len(kernel_shape)
    p = _sym_pads(pads or [0] * (2 * n), n)
    if p is None:
        raise NotImplementedError("fabric.onnx.load_model: MaxPool with asymmetric pads")
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[n]
    return pool(x, tuple(kernel_shape), tuple(strides or kernel_shape), tuple(p), tuple(dilations or [1] * n),
                bool(ceil_mode))


@_op("AveragePool")
def _avg_pool(x, kernel_shape, strides=None, pads=None, ceil_mode=0, count_include_pad=0, auto_pad="NOTSET",
              dilations=None):
    n = len(kernel_shape)
    p = _sym_pads(pads or [0] * (2 * n), n)
    if p is None:
        raise NotImplementedError("fabric.onnx.load_model: AveragePool with asymmetric pads")
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    return pool(x, tuple(kernel_shape), tuple(strides or kernel_shape), tuple(p), bool(ceil_mode),
                bool(count_include_pad))


@_op("InstanceNormalization")
def _instance_norm(x, scale, bias, epsilon=1e-5):
    return F.instance_norm(x, weight=scale, bias=bias, eps=epsilon)


@_op("ConvTranspose")
def _conv_transpose(x, w, b=None, kernel_shape=None, strides=None, pads=None, dilations=None, group=1,
                    output_padding=None, output_shape=None, auto_pad="NOTSET"):
    n = w.dim() - 2
    if output_shape is not None or auto_pad not in ("NOTSET", "VALID"):
        raise NotImplementedError("fabric.onnx.load_model: ConvTranspose with output_shape / auto_pad")
    p = _sym_pads(pads or [0] * (2 * n), n)
    if p is None:
        raise NotImplementedError("fabric.onnx.load_model: ConvTranspose with asymmetric pads")
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
    return conv(x, w, b, tuple(strides or [1] * n), tuple(p), tuple(output_padding or [0] * n), group,
                tuple(dilations or [1] * n))


@_op("Resize")
def _resize(x, roi=None, scales=None, sizes=None, mode="nearest", coordinate_transformation_mode="half_pixel",
            nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0,
            antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    n = x.dim() - 2
    torch_mode = {"nearest": "nearest", "linear": {1: "linear", 2: "bilinear", 3: "trilinear"}[n],
                  "cubic": "bicubic"}[mode]
    if mode == "nearest" and (coordinate_transformation_mode, nearest_mode) != ("asymmetric", "floor"):
        raise NotImplementedError("fabric.onnx.load_model: Resize nearest needs coordinate_transformation_mode="
                                  "'asymmetric' and nearest_mode='floor' (PyTorch's nearest)")
    align = None
    if mode != "nearest":
        if coordinate_transformation_mode not in ("align_corners", "half_pixel", "pytorch_half_pixel"):
            raise NotImplementedError(f"fabric.onnx.load_model: Resize with {coordinate_transformation_mode}")
        align = coordinate_transformation_mode == "align_corners"
    if sizes is not None and sizes.numel():
        return F.interpolate(x, size=tuple(_ints(sizes)[2:]), mode=torch_mode, align_corners=align)
    sc = [float(v) for v in scales.tolist()][2:]
    return F.interpolate(x, scale_factor=tuple(sc), mode=torch_mode, align_corners=align)


@_op("GlobalAveragePool")
def _gap(x):
    return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)


@_op("Flatten")
def _flatten(x, axis=1):
    axis = axis + x.dim() if axis < 0 else axis
    lead = 1
    for s in x.shape[:axis]:
        lead *= s
    return x.reshape(lead, -1)


# --- shapes and indexing ------------------------------------------------------------------------------------

@_op("Shape")
def _shape(x, start=0, end=None):
    return fabric.tensor(list(x.shape)[start:end], dtype=fabric.int64)


@_op("Reshape")
def _reshape(x, shape, allowzero=0):
    dims = _ints(shape)
    if not allowzero:
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return x.reshape(dims)


@_op("Transpose")
def _transpose(x, perm=None):
    return x.permute(*(perm if perm is not None else reversed(range(x.dim()))))


@_op("Unsqueeze")
def _unsqueeze(x, axes):
    r = x.dim() + len(_ints(axes))
    for a in sorted(a + r if a < 0 else a for a in _ints(axes)):
        x = x.unsqueeze(a)
    return x


@_op("Squeeze")
def _squeeze(x, axes=None):
    if axes is None:
        return x.squeeze()
    for a in sorted((a + x.dim() if a < 0 else a for a in _ints(axes)), reverse=True):
        x = x.squeeze(a)
    return x


@_op("Concat")
def _concat(*xs, axis=0):
    return fabric.cat(list(xs), axis)


@_op("Slice")
def _slice(x, starts, ends, axes=None, steps=None):
    starts, ends = _ints(starts), _ints(ends)
    axes = _ints(axes) if axes is not None else list(range(len(starts)))
    steps = _ints(steps) if steps is not None else [1] * len(starts)
    idx = [slice(None)] * x.dim()
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st < 0:
            raise NotImplementedError("fabric.onnx.load_model: Slice with negative steps")
        idx[a + x.dim() if a < 0 else a] = slice(s, e, st)
    return x[tuple(idx)]


@_op("Gather")
def _gather(data, indices, axis=0):
    axis = axis + data.dim() if axis < 0 else axis
    if indices.dim() == 0:
        return data.select(axis, int(indices.item()))
    flat = fabric.index_select(data, axis, indices.reshape(-1))
    shape = list(data.shape[:axis]) + list(indices.shape) + list(data.shape[axis + 1:])
    return flat.reshape(shape)


@_op("Cast")
def _cast(x, to):
    return x.to(_fdtype(_onnx_to_np(to)))


@_op("Where")
def _where(c, x, y):
    return fabric.where(c, x, y)


@_op("Range")
def _range(start, limit, delta):
    return fabric.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)


@_op("ConstantOfShape")
def _constant_of_shape(shape, value=0.0, value_dtype="float32"):
    return fabric.full(_ints(shape), value, dtype=_fdtype(np.dtype(value_dtype)))


@_op("Trilu")
def _trilu(x, k=None, upper=1):
    k = 0 if k is None else int(k.item())
    return fabric.triu(x, k) if upper else fabric.tril(x, k)


@_op("Expand")
def _expand(x, shape):
    target = np.broadcast_shapes(tuple(x.shape), tuple(_ints(shape)))
    return x.expand(*target)


def _reduce(fn):
    def impl(x, axes=None, keepdims=1, noop_with_empty_axes=0):
        dims = tuple(range(x.dim())) if axes is None or len(_ints(axes)) == 0 else tuple(_ints(axes))
        return fn(x, dims, bool(keepdims))
    return impl


OPS["ReduceMean"] = _op("ReduceMean")(_reduce(lambda x, d, k: x.mean(dim=d, keepdim=k)))
OPS["ReduceMax"] = _op("ReduceMax")(_reduce(lambda x, d, k: fabric.amax(x, dim=d, keepdim=k)))
OPS["ReduceMin"] = _op("ReduceMin")(_reduce(lambda x, d, k: fabric.amin(x, dim=d, keepdim=k)))
OPS["ReduceL2"] = _op("ReduceL2")(_reduce(lambda x, d, k: (x * x).sum(dim=d, keepdim=k).sqrt()))
OPS["ReduceL1"] = _op("ReduceL1")(_reduce(lambda x, d, k: x.abs().sum(dim=d, keepdim=k)))


def _arg(fn):
    def impl(x, axis=0, keepdims=1, select_last_index=0):
        if select_last_index:
            raise NotImplementedError("fabric.onnx.load_model: ArgMax/ArgMin with select_last_index")
        return fn(x, dim=axis, keepdim=bool(keepdims))
    return impl


OPS["ArgMax"] = _op("ArgMax")(_arg(fabric.argmax))
OPS["ArgMin"] = _op("ArgMin")(_arg(fabric.argmin))


@_op("Einsum")
def _einsum(*xs, equation):
    return fabric.einsum(equation, *xs)


@_op("Tile")
def _tile(x, repeats):
    return x.repeat(*_ints(repeats))
OPS["ReduceSum"] = _op("ReduceSum")(_reduce(lambda x, d, k: x.sum(dim=d, keepdim=k)))


@_op("Split")
def _split(x, split=None, axis=0, num_outputs=None):
    if split is not None:
        return tuple(fabric.split(x, _ints(split), axis))
    n = num_outputs
    size = -(-x.shape[axis] // n)
    return tuple(fabric.split(x, size, axis))


# --- recurrent ----------------------------------------------------------------------------------------------

def _run_direction(x_seq, W, R, Wb, Rb, h, c, step, reverse):
    T = x_seq.shape[0]
    order = range(T - 1, -1, -1) if reverse else range(T)
    ys = [None] * T
    xw = fabric.matmul(x_seq, W.t())
    if Wb is not None:
        xw = xw + Wb
    for t in order:
        h, c = step(xw[t], h, c, R, Rb)
        ys[t] = h
    return fabric.stack(ys, 0), h, c


def _lstm_step(H):
    def step(xw, h, c, R, Rb):
        g = xw + fabric.matmul(h, R.t())
        if Rb is not None:
            g = g + Rb
        i, o, f, cc = (g[:, k * H:(k + 1) * H] for k in range(4))
        c = fabric.sigmoid(f) * c + fabric.sigmoid(i) * fabric.tanh(cc)
        return fabric.sigmoid(o) * fabric.tanh(c), c
    return step


def _gru_step(H, linear_before_reset):
    def step(xw, h, c, R, Rb):
        hr = fabric.matmul(h, R.t())
        if Rb is not None:
            hr = hr + Rb
        z = fabric.sigmoid(xw[:, :H] + hr[:, :H])
        r = fabric.sigmoid(xw[:, H:2 * H] + hr[:, H:2 * H])
        if linear_before_reset:
            n = fabric.tanh(xw[:, 2 * H:] + r * hr[:, 2 * H:])
        else:
            rh = fabric.matmul(r * h, R[2 * H:].t())
            if Rb is not None:
                rh = rh + Rb[2 * H:]
            n = fabric.tanh(xw[:, 2 * H:] + rh)
        return (1 - z) * n + z * h, None
    return step


def _recurrent(kind, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, hidden_size=None,
               direction="forward", linear_before_reset=0, layout=0, **unsupported):
    if unsupported.get("activations") or unsupported.get("clip") or unsupported.get("input_forget"):
        raise NotImplementedError(f"fabric.onnx.load_model: {kind} with {sorted(unsupported)}")
    if sequence_lens is not None:
        raise NotImplementedError(f"fabric.onnx.load_model: {kind} with sequence_lens")
    if layout:
        X = X.transpose(0, 1)
    H = hidden_size
    n_gates = 4 if kind == "LSTM" else 3
    dirs = 2 if direction == "bidirectional" else 1
    batch = X.shape[1]
    ys, hs, cs = [], [], []
    for d in range(dirs):
        Wb = Rb = None
        if B is not None:
            Wb, Rb = B[d, :n_gates * H], B[d, n_gates * H:]
        h = initial_h[d] if initial_h is not None else fabric.zeros(batch, H, dtype=X.dtype)
        c = initial_c[d] if initial_c is not None else fabric.zeros(batch, H, dtype=X.dtype)
        step = _lstm_step(H) if kind == "LSTM" else _gru_step(H, linear_before_reset)
        y, h, c = _run_direction(X, W[d], R[d], Wb, Rb, h, c, step, direction == "reverse" or d == 1)
        ys.append(y)
        hs.append(h)
        cs.append(c)
    Y = fabric.stack(ys, 1)
    Y_h = fabric.stack(hs, 0)
    if layout:
        Y, Y_h = Y.permute(2, 0, 1, 3), Y_h.transpose(0, 1)
    if kind == "LSTM":
        Y_c = fabric.stack(cs, 0)
        return Y, Y_h, (Y_c.transpose(0, 1) if layout else Y_c)
    return Y, Y_h


@_op("LSTM")
def _lstm(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, **attrs):
    if P is not None:
        raise NotImplementedError("fabric.onnx.load_model: LSTM with peepholes (P)")
    return _recurrent("LSTM", X, W, R, B, sequence_lens, initial_h, initial_c, **attrs)


@_op("GRU")
def _gru(X, W, R, B=None, sequence_lens=None, initial_h=None, **attrs):
    return _recurrent("GRU", X, W, R, B, sequence_lens, initial_h, None, **attrs)


def _rnn_step(act):
    def step(xw, h, c, R, Rb):
        g = xw + fabric.matmul(h, R.t())
        if Rb is not None:
            g = g + Rb
        return act(g), None
    return step


@_op("RNN")
def _plain_rnn(X, W, R, B=None, sequence_lens=None, initial_h=None, hidden_size=None, direction="forward",
               activations=None, layout=0, **unsupported):
    if unsupported or sequence_lens is not None:
        raise NotImplementedError(f"fabric.onnx.load_model: RNN with {sorted(unsupported) or ['sequence_lens']}")
    acts = {"Tanh": fabric.tanh, "Relu": fabric.relu}
    if layout:
        X = X.transpose(0, 1)
    H = hidden_size
    dirs = 2 if direction == "bidirectional" else 1
    names = activations or ["Tanh"] * dirs
    ys, hs = [], []
    for d in range(dirs):
        if names[d] not in acts:
            raise NotImplementedError(f"fabric.onnx.load_model: RNN activation {names[d]}")
        Wb = Rb = None
        if B is not None:
            Wb, Rb = B[d, :H], B[d, H:]
        h = initial_h[d] if initial_h is not None else fabric.zeros(X.shape[1], H, dtype=X.dtype)
        y, h, _ = _run_direction(X, W[d], R[d], Wb, Rb, h, None, _rnn_step(acts[names[d]]),
                                 direction == "reverse" or d == 1)
        ys.append(y)
        hs.append(h)
    Y, Y_h = fabric.stack(ys, 1), fabric.stack(hs, 0)
    if layout:
        Y, Y_h = Y.permute(2, 0, 1, 3), Y_h.transpose(0, 1)
    return Y, Y_h


@_op("Clip")
def _clip(x, lo=None, hi=None):
    return fabric.clamp(x, None if lo is None else lo.item(), None if hi is None else hi.item())


@_op("LeakyRelu")
def _leaky_relu(x, alpha=0.01):
    return F.leaky_relu(x, alpha)


@_op("Elu")
def _elu(x, alpha=1.0):
    return F.elu(x, alpha)


@_op("HardSigmoid")
def _hard_sigmoid(x, alpha=0.2, beta=0.5):
    return fabric.clamp(x * alpha + beta, 0.0, 1.0)


@_op("HardSwish")
def _hard_swish(x):
    return F.hardswish(x)


@_op("Softplus")
def _softplus(x):
    return F.softplus(x)


@_op("Pad")
def _pad(x, pads, constant_value=None, axes=None, mode="constant"):
    if axes is not None:
        raise NotImplementedError("fabric.onnx.load_model: Pad with axes")
    p = _ints(pads)
    r = x.dim()
    torch_pad = []
    for i in reversed(range(r)):
        torch_pad += [p[i], p[i + r]]
    while len(torch_pad) > 2 and torch_pad[-2:] == [0, 0]:
        torch_pad = torch_pad[:-2]
    torch_mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}[mode]
    value = None if constant_value is None or mode != "constant" else constant_value.item()
    return F.pad(x, torch_pad, torch_mode, value) if value is not None else F.pad(x, torch_pad, torch_mode)


@_op("Max")
def _max(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = fabric.maximum(out, x)
    return out


@_op("Min")
def _min(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = fabric.minimum(out, x)
    return out
