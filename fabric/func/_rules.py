"""Batching rules of the hand-written ops (the pointwise tables carry theirs: ``ops/_batching.py``).

A rule ``rule(ctx, *args, **kwargs)`` gets the op's arguments with each tensor batched at the running
level replaced by its value (batch at dimension 0; :class:`~fabric.func._batched.BatchCtx` says which)
and returns the result with the batch at dimension 0 of every tensor, or ``NotImplemented`` for a case
it does not cover (the op then runs per example).  Most rules translate the logical dimension arguments
(one example's) to physical ones (+1) and call the op once.  Physical values may still be batched at an
outer vmap level, so rules call ops as methods or through ``ctx.call``, never on raw arrays.

The rules are kept here, in a table keyed by the op's public name (``"sum"``, ``"nn.functional.relu"``),
while the hand-written ops are being moved onto the op registry; a declared op gets its rule in its
registry slot (``OpDecl.vmap``), which :func:`install` fills.

Example::

    >>> import fabric
    >>> from fabric.func import vmap
    >>> vmap(lambda v: v.sum(0))(fabric.ones(3, 2, 4)).shape     # dim 0 of each example
    fabric.Size([3, 4])
"""
from __future__ import annotations

from .._tensor import Tensor
from ..ops._batching import elementwise
from ._batched import RULES

__all__ = ["install"]


def _fabric():
    import fabric

    return fabric


def _F():
    from ..nn import functional

    return functional


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def _norm(dim, n):
    """Logical dim ``dim`` of an ``n``-d example as a physical dim (None: out of range, or a 0-d example,
    whose dim 0 has no physical counterpart: the per-op fallback handles those)."""
    if n == 0 or not -n <= dim < n:
        return None
    return dim % n + 1


def _dims(dim, n):
    if isinstance(dim, (tuple, list)):
        out = [_norm(d, n) for d in dim]
        return None if None in out else tuple(out)
    return _norm(dim, n)


# --- elementwise ops written by hand ------------------------------------------------------------------

_ELEMENTWISE = """add sub mul div true_divide multiply subtract divide rsub pow float_power neg negative positive
square exp log eq ne lt le gt ge greater greater_equal less less_equal not_equal logical_and logical_or
logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not where clamp clip clamp_min clamp_max lerp
addcmul addcdiv relu round nan_to_num isnan isinf isfinite isposinf isneginf logit masked_fill heaviside signbit
isclose""".split()
_NN_ELEMENTWISE = """relu gelu silu elu leaky_relu softplus hardtanh relu6 mish logsigmoid sigmoid tanh hardswish
hardsigmoid selu celu softsign tanhshrink threshold hardshrink softshrink""".split()
_NOT_INPLACE = {"where", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "isclose"}
_TENSOR_ELEMENTWISE = {"__rtruediv__", "__rpow__", "__rfloordiv__", "__rmod__", "__rsub__"}
_PHYSICAL_METHODS = """detach clone contiguous to float double half bfloat16 long int short char byte bool type
type_as cpu cuda""".split()
_LIKE = "zeros_like ones_like full_like empty_like".split()


def _method_rule(name):
    def r(ctx, x, *args, **kwargs):
        if not ctx.batched(x):
            return NotImplemented
        return ctx.call(name, getattr(Tensor, name), x, *args, **kwargs)
    return r


def _like_rule(name):
    def r(ctx, x, *args, **kwargs):
        if not ctx.batched(x) or "memory_format" in kwargs:
            return NotImplemented
        return ctx.call(name, getattr(_fabric(), name), x, *args, **kwargs)
    return r


# --- reductions, scans and softmax: dimension arguments move by one ----------------------------------

_REDUCE = """sum mean nansum nanmean prod amax amin max min argmax argmin logsumexp all any count_nonzero var std
median nanmedian""".split()
_ALONG = """cumsum cumprod logcumsumexp cummax cummin softmax log_softmax""".split()   # dim required
_LAST = {"sort": 0, "argsort": 0, "topk": 1, "kthvalue": 1}                          # dim defaults to -1


def _reduce_rule(name, dim_pos=0, op=None):
    """Reductions ``op(x, [other args before dim,] dim=None, keepdim=False, ...)``."""
    def r(ctx, x, *args, **kwargs):
        if not ctx.batched(x) or kwargs.get("out") is not None:
            return NotImplemented
        fn = op or (getattr(Tensor, name) if hasattr(Tensor, name) else getattr(_fabric(), name))
        n = ctx.ldim(x)
        args = list(args)
        if args and isinstance(args[0], Tensor):   # max(x, other): elementwise
            return elementwise(fn, name)(ctx, x, *args, **kwargs)
        if len(args) > dim_pos and not isinstance(args[dim_pos], bool) and args[dim_pos] is not None:
            dim, where = args[dim_pos], "pos"
        elif kwargs.get("dim") is not None:
            dim, where = kwargs["dim"], "kw"
        else:
            dim, where = None, None
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and name in ("sum", "mean", "nansum")):
            kwargs.pop("dim", None)
            if name in ("logsumexp",) or any(isinstance(a, str) and a == "nuc" for a in (*args, *kwargs.values())):
                return NotImplemented
            if len(args) > dim_pos and (where == "pos" or args[dim_pos] is None):
                args[dim_pos] = 1
            elif len(args) >= dim_pos:
                args.insert(dim_pos, 1)
            else:
                kwargs["dim"] = 1
            out = ctx.call(name, fn, x.reshape(ctx.size, -1), *args, **kwargs)
            if isinstance(out, tuple):
                out = out[0]
            if out.dim() == 2:   # keepdim=True
                out = out.reshape((ctx.size,) + (1,) * n)
            return out
        pdim = _dims(dim, n)
        if pdim is None:
            return NotImplemented   # out of range: per example, for PyTorch's error
        if where == "pos":
            args[dim_pos] = pdim
        else:
            kwargs["dim"] = pdim
        return ctx.call(name, fn, x, *args, **kwargs)
    return r


def _along_rule(name, dim_pos=0, default=None, op=None):
    def r(ctx, x, *args, **kwargs):
        if not ctx.batched(x) or kwargs.get("out") is not None:
            return NotImplemented
        op_ = op or (getattr(Tensor, name) if hasattr(Tensor, name) else getattr(_fabric(), name))
        n = ctx.ldim(x)
        args = list(args)
        if len(args) > dim_pos:
            dim = args[dim_pos]
        else:
            dim = kwargs.get("dim", default)
        if dim is None or n == 0:
            return NotImplemented
        pdim = _norm(dim, n)
        if pdim is None:
            return NotImplemented
        if len(args) > dim_pos:
            args[dim_pos] = pdim
        else:
            kwargs["dim"] = pdim
        return ctx.call(name, op_, x, *args, **kwargs)
    return r


@rule("nn.functional.softmax", "nn.functional.log_softmax", "nn.functional.softmin")
def _nn_softmax(ctx, x, dim=None, _stacklevel=3, dtype=None):
    if not ctx.batched(x) or dim is None:
        return NotImplemented
    pdim = _norm(dim, ctx.ldim(x))
    if pdim is None:
        return NotImplemented
    name = ctx.key.rsplit(".", 1)[-1]
    return ctx.call(ctx.key, getattr(_F(), name), x, pdim, dtype=dtype)


# --- shape and view ops -------------------------------------------------------------------------------

def _shape_arg(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or len(args) == 1 and not isinstance(args[0], int):
        return tuple(args[0])
    return tuple(args)


def _logical_shape(ctx, t):
    return tuple(t.shape[1:]) if ctx.batched(t) else tuple(t.shape)


@rule("view", "reshape")
def _view(ctx, x, *shape, **kw):
    if not ctx.batched(x) or kw or any(isinstance(s, Tensor) for s in shape):
        return NotImplemented
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
        return NotImplemented   # view(dtype)
    new = (ctx.size,) + _shape_arg(shape)
    if ctx.key == "view":
        try:
            return x.view(new)
        except RuntimeError:
            return NotImplemented   # not viewable per example either: per example for PyTorch's error
    return x.reshape(new)


@rule("view_as", "reshape_as")
def _view_as(ctx, x, other):
    if not ctx.batched(x):
        return NotImplemented
    return x.reshape((ctx.size,) + _logical_shape(ctx, other))


@rule("flatten")
def _flatten(ctx, x, start_dim=0, end_dim=-1):
    n = ctx.ldim(x)
    if not ctx.batched(x):
        return NotImplemented
    if n == 0:
        return x.reshape(ctx.size, 1)
    s, e = _norm(start_dim, n), _norm(end_dim, n)
    if s is None or e is None or s > e:
        return NotImplemented
    return x.flatten(s, e)


@rule("unflatten")
def _unflatten(ctx, x, dim, sizes):
    p = _norm(dim, ctx.ldim(x)) if ctx.batched(x) else None
    return NotImplemented if p is None else x.unflatten(p, sizes)


@rule("permute")
def _permute(ctx, x, *dims):
    dims = _shape_arg(dims)
    n = ctx.ldim(x)
    p = _dims(dims, n)
    if not ctx.batched(x) or p is None or len(dims) != n:
        return NotImplemented
    return x.permute((0,) + tuple(p))


@rule("transpose", "swapaxes", "swapdims")
def _transpose(ctx, x, d0, d1):
    n = ctx.ldim(x)
    a, b = _norm(d0, n), _norm(d1, n)
    if not ctx.batched(x) or a is None or b is None:
        return NotImplemented
    if n == 0:
        return x
    return x.transpose(a, b)


@rule("t")
def _t(ctx, x):
    n = ctx.ldim(x)
    if not ctx.batched(x) or n > 2:
        return NotImplemented
    return x.transpose(1, 2) if n == 2 else x


@rule("T", "mT")
def _T(ctx, x):
    n = ctx.ldim(x)
    if not ctx.batched(x):
        return NotImplemented
    if ctx.key == "mT":
        return x.transpose(-2, -1) if n >= 2 else NotImplemented
    return x.permute((0,) + tuple(range(n, 0, -1)))


@rule("movedim", "moveaxis")
def _movedim(ctx, x, source, destination):
    n = ctx.ldim(x)
    s, d = _dims(source, n), _dims(destination, n)
    if not ctx.batched(x) or s is None or d is None:
        return NotImplemented
    return x.movedim(s, d)


@rule("unsqueeze")
def _unsqueeze(ctx, x, dim):
    p = _norm(dim, ctx.ldim(x) + 1)
    return NotImplemented if p is None or not ctx.batched(x) else x.unsqueeze(p)


@rule("squeeze")
def _squeeze(ctx, x, dim=None):
    n = ctx.ldim(x)
    if not ctx.batched(x):
        return NotImplemented
    shape = list(x.shape[1:])
    if dim is None:
        keep = [s for s in shape if s != 1]
    else:
        ds = [_norm(d, n) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))]
        drop = set()
        for d in ds:
            if d is None:
                return NotImplemented
            if n and shape[d - 1] == 1:
                drop.add(d - 1)
        keep = [s for i, s in enumerate(shape) if i not in drop]
    return x.reshape((ctx.size,) + tuple(keep))


@rule("expand")
def _expand(ctx, x, *sizes, **kw):
    if not ctx.batched(x) or kw:
        return NotImplemented
    sizes = _shape_arg(sizes)
    x = ctx.pad(x, len(sizes))
    return x.expand((ctx.size,) + sizes)


@rule("expand_as")
def _expand_as(ctx, x, other):
    return _expand(ctx, x, _logical_shape(ctx, other)) if ctx.batched(x) else NotImplemented


@rule("broadcast_to")
def _broadcast_to(ctx, x, size):
    return _expand(ctx, x, tuple(size)) if ctx.batched(x) else NotImplemented


@rule("repeat")
def _repeat(ctx, x, *sizes):
    if not ctx.batched(x):
        return NotImplemented
    sizes = _shape_arg(sizes)
    return ctx.pad(x, len(sizes)).repeat((1,) + sizes)


@rule("narrow")
def _narrow(ctx, x, dim, start, length):
    p = _norm(dim, ctx.ldim(x))
    if not ctx.batched(x) or p is None or isinstance(start, Tensor):
        return NotImplemented
    return x.narrow(p, start, length)


@rule("select")
def _select(ctx, x, dim, index):
    p = _norm(dim, ctx.ldim(x))
    if not ctx.batched(x) or p is None or ctx.ldim(x) == 0:
        return NotImplemented
    return x.select(p, index)


@rule("unbind", "split", "chunk", "tensor_split", "flip", "roll", "diagonal", "tril", "triu", "diag_embed")
def _dim_kw(ctx, x, *args, **kwargs):
    """Ops whose dimension arguments are named (``dim``/``dims``/``dim1``/``dim2``) or positional after data."""
    if not ctx.batched(x):
        return NotImplemented
    name = ctx.key
    n = ctx.ldim(x)
    args = list(args)
    pos = {"unbind": 0, "split": 1, "chunk": 1, "tensor_split": 1, "flip": 0, "roll": 1, "diagonal": 1,
           "tril": None, "triu": None, "diag_embed": 1}[name]
    if name in ("tril", "triu"):
        return ctx.call(name, getattr(Tensor, name), x, *args, **kwargs) if n >= 2 else NotImplemented
    if name == "diagonal" or name == "diag_embed":
        out_n = n + 1 if name == "diag_embed" else n
        d1 = kwargs.pop("dim1", args[1] if len(args) > 1 else (0 if name == "diagonal" else -2))
        d2 = kwargs.pop("dim2", args[2] if len(args) > 2 else (1 if name == "diagonal" else -1))
        off = kwargs.pop("offset", args[0] if args else 0)
        a, b = _norm(d1, out_n), _norm(d2, out_n)
        if a is None or b is None or kwargs:
            return NotImplemented
        return ctx.call(name, getattr(Tensor, name), x, off, a, b)
    key = "dims" if name in ("flip", "roll") else "dim"
    if len(args) > pos:
        dim = args[pos]
    else:
        dim = kwargs.get(key, 0 if name in ("unbind", "split", "chunk", "tensor_split") else None)
    if dim is None:
        return NotImplemented
    if name == "flip" and len(args) > 1:
        dim = tuple(args)
        args = []
    p = _dims(dim, n)
    if p is None or n == 0:
        return NotImplemented
    if len(args) > pos:
        args[pos] = p
    else:
        kwargs[key] = p
    return ctx.call(name, getattr(Tensor, name), x, *args, **kwargs)


@rule("cat", "concat", "concatenate")
def _cat(ctx, tensors, dim=0, **kw):
    if kw or not isinstance(tensors, (tuple, list)):
        return NotImplemented
    ref = next((t for t in tensors if ctx.ldim(t) != 1 or t.shape[-1] != 0), tensors[0])
    p = _norm(dim, ctx.ldim(ref))
    if p is None:
        return NotImplemented
    parts = [ctx.expand(t) if ctx.ldim(t) != 1 or t.shape[-1] != 0 else ctx.expand(t) for t in tensors]
    return _fabric().cat(parts, p)


@rule("stack")
def _stack(ctx, tensors, dim=0, **kw):
    if kw or not isinstance(tensors, (tuple, list)) or not tensors:
        return NotImplemented
    p = _norm(dim, ctx.ldim(tensors[0]) + 1)
    if p is None:
        return NotImplemented
    return _fabric().stack([ctx.expand(t) for t in tensors], p)


@rule("getitem")
def _getitem(ctx, x, index):
    if not ctx.batched(x):
        return NotImplemented
    idx = index if isinstance(index, tuple) else (index,)
    advanced = 0
    for i in idx:
        if isinstance(i, Tensor):
            if ctx.batched(i):
                return NotImplemented
            advanced += 1
        elif isinstance(i, (list, bool)):
            advanced += 1
        elif not (i is None or i is Ellipsis or isinstance(i, (int, slice))):
            return NotImplemented
    if advanced > 1:
        return NotImplemented   # several advanced indices may move their dimensions to the front
    return x[(slice(None),) + idx]


# --- matrix products ----------------------------------------------------------------------------------

def _matmul(ctx, a, ba, b, bb):
    """``a @ b`` where ``ba``/``bb`` say which physical operand carries the batch."""
    ra = a.dim() - ba
    rb = b.dim() - bb
    if ra == 0 or rb == 0:
        return NotImplemented
    sq_a, sq_b = ra == 1, rb == 1
    if sq_a:
        a = a.unsqueeze(-2)
        ra = 2
    if sq_b:
        b = b.unsqueeze(-1)
        rb = 2
    rank = max(ra, rb)
    if ba:
        a = ctx.pad(a, rank)
    if bb:
        b = ctx.pad(b, rank)
    out = _fabric().matmul(a, b)
    if sq_b:
        out = out.squeeze(-1)
    if sq_a:
        out = out.squeeze(-1 if sq_b else -2)
    return out


@rule("matmul", "mm", "bmm", "mv", "dot", "inner_product")
def _matmul_rule(ctx, a, b, **kw):
    if kw.get("out") is not None:
        return NotImplemented
    return _matmul(ctx, a, ctx.batched(a), b, ctx.batched(b))


@rule("__rmatmul__")
def _rmatmul(ctx, x, other):
    return _matmul(ctx, other, ctx.batched(other), x, ctx.batched(x))


@rule("outer", "ger")
def _outer(ctx, a, b):
    if ctx.ldim(a) != 1 or ctx.ldim(b) != 1:
        return NotImplemented
    return a.unsqueeze(-1) * b.unsqueeze(-2)


@rule("nn.functional.linear")
def _linear(ctx, x, weight, bias=None):
    F = _F()
    bx = ctx.batched(x)
    if not ctx.batched(weight) and (bias is None or not ctx.batched(bias)):
        if not bx:
            return NotImplemented
        return F.linear(x, weight, bias)
    out = _matmul(ctx, x, bx, weight.transpose(-1, -2), ctx.batched(weight))
    if bias is not None:
        if ctx.batched(bias):
            bias = ctx.pad(bias, out.dim() - 1)
        out = out + bias
    return out


# --- nn.functional ------------------------------------------------------------------------------------

def _pointwise_loss(name):
    def r(ctx, input, target, *args, reduction="mean", **kwargs):
        if args or any(isinstance(v, Tensor) and ctx.batched(v) for v in kwargs.values()):
            return NotImplemented
        if kwargs.get("size_average") is not None or kwargs.get("reduce") is not None:
            return NotImplemented
        rank = max(ctx.ldim(input), ctx.ldim(target))
        i = ctx.pad(ctx.expand(input), rank)
        t = ctx.pad(ctx.expand(target), rank)
        if tuple(i.shape) != tuple(t.shape):
            return NotImplemented   # broadcasting losses warn per example
        none = ctx.call(f"nn.functional.{name}", getattr(_F(), name), i, t, *args, reduction="none", **kwargs)
        if reduction == "none":
            return none
        flat = none.reshape(ctx.size, -1)
        if reduction == "sum":
            return flat.sum(1)
        if reduction == "mean":
            return flat.mean(1)
        return NotImplemented
    return r


@rule("nn.functional.nll_loss")
def _nll_loss(ctx, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _cross_entropy(ctx, input, target, weight, size_average, ignore_index, reduce, reduction, None)


@rule("nn.functional.cross_entropy")
def _cross_entropy(ctx, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing: float | None = 0.0):
    if size_average is not None or reduce is not None or (weight is not None and (
            ctx.batched(weight) or reduction == "mean")):
        return NotImplemented
    n = ctx.ldim(input)
    if n == 0:
        return NotImplemented
    probs = target.is_floating_point()
    x, t = ctx.expand(input), ctx.expand(target)
    B = ctx.size
    if n >= 2:
        x, t = x.flatten(0, 1), t.flatten(0, 1)
    if label_smoothing is None:   # nll_loss
        if probs:
            return NotImplemented
        loss = ctx.call("nn.functional.nll_loss", _F().nll_loss, x, t, weight, ignore_index=ignore_index,
                        reduction="none")
    else:
        loss = ctx.call("nn.functional.cross_entropy", _F().cross_entropy, x, t, weight, ignore_index=ignore_index,
                        reduction="none", label_smoothing=label_smoothing)
    if n >= 2:
        loss = loss.unflatten(0, (B, -1))
    if reduction == "none":
        return loss
    flat = loss.reshape(B, -1)
    if reduction == "sum":
        return flat.sum(1)
    if reduction != "mean":
        return NotImplemented
    if probs:
        return flat.mean(1)
    valid = (ctx.expand(target) != ignore_index).reshape(B, -1)
    return flat.sum(1) / valid.sum(1).to(flat.dtype)


def _conv_batched_weight(ctx, name, spatial, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A convolution with per-example weights as one grouped convolution: the examples' channels side by
    side (``B * C`` input, ``B * O`` output channels, ``B * groups`` groups)."""
    B = ctx.size
    x, w = ctx.expand(x), ctx.expand(weight)
    single = x.dim() - 1 == spatial + 1   # an example without its own batch dimension
    if single:
        x = x.unsqueeze(1)
    n, c = x.shape[1], x.shape[2]
    xg = x.movedim(0, 1).reshape((n, B * c) + tuple(x.shape[3:]))
    wg = w.reshape((B * w.shape[1],) + tuple(w.shape[2:]))
    bg = None
    if bias is not None:
        bg = ctx.expand(bias).reshape(-1)
    out = ctx.call(f"nn.functional.{name}", getattr(_F(), name), xg, wg, bg, stride, padding, dilation, groups * B)
    out = out.reshape((n, B, w.shape[1]) + tuple(out.shape[2:])).movedim(1, 0)
    return out.squeeze(1) if single else out


def _spatial(name, spatial):
    """conv/pool ops: only the input batched; the batch joins the op's own batch dimension."""
    def r(ctx, x, *args, **kwargs):
        tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, Tensor)]
        if name.startswith("conv") and any(ctx.batched(v) for v in tensors):
            full = dict(zip(("weight", "bias", "stride", "padding", "dilation", "groups"), args), **kwargs)
            return _conv_batched_weight(ctx, name, spatial, x, **full)
        if not ctx.batched(x) or any(ctx.batched(v) for v in tensors):
            return NotImplemented
        fn = getattr(_F(), name)
        key = f"nn.functional.{name}"
        n = ctx.ldim(x)
        if n == spatial + 1:
            return ctx.call(key, fn, x, *args, **kwargs)
        if n != spatial + 2:
            return NotImplemented
        out = ctx.call(key, fn, x.flatten(0, 1), *args, **kwargs)
        if isinstance(out, tuple):
            return tuple(o.unflatten(0, (ctx.size, -1)) for o in out)
        return out.unflatten(0, (ctx.size, -1))
    return r


@rule("nn.functional.layer_norm")
def _layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    F = _F()
    if not any(t is not None and ctx.batched(t) for t in (weight, bias)):
        return F.layer_norm(x, normalized_shape, weight, bias, eps) if ctx.batched(x) else NotImplemented
    y = F.layer_norm(ctx.expand(x), normalized_shape, None, None, eps)   # per-example affine parameters:
    rank = y.dim() - 1                                                    # applied after, broadcast per example
    if weight is not None:
        y = y * (ctx.pad(weight, rank) if ctx.batched(weight) else weight)
    if bias is not None:
        y = y + (ctx.pad(bias, rank) if ctx.batched(bias) else bias)
    return y


@rule("nn.functional.embedding")
def _embedding(ctx, input, weight, padding_idx=None, max_norm=None, *args, **kwargs):
    if not ctx.batched(weight):
        if not ctx.batched(input):
            return NotImplemented
        return _F().embedding(input, weight, padding_idx, max_norm, *args, **kwargs)
    flags = list(args[1:]) + [v for k, v in kwargs.items() if k != "norm_type"]   # scale_grad_by_freq, sparse
    if padding_idx is not None or max_norm is not None or any(flags):
        return NotImplemented
    idx = ctx.expand(input)   # per-example tables: each example's rows gathered from its own table
    flat = idx.reshape(ctx.size, -1, 1).expand(ctx.size, -1, weight.shape[-1])
    return weight.gather(1, flat).reshape(tuple(idx.shape) + (weight.shape[-1],))


@rule("nn.functional.dropout", "nn.functional.dropout1d", "nn.functional.dropout2d", "nn.functional.dropout3d",
      "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout")
def _dropout(ctx, x, p=0.5, training=True, inplace=False):
    if not ctx.batched(x) or (p and training) or inplace:
        return NotImplemented   # draws random numbers: per example, as the randomness mode says
    return x


@rule("einsum")
def _einsum(ctx, equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    if "->" not in eq:
        return NotImplemented   # implicit output: per example
    lhs, out = eq.split("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        return NotImplemented
    free = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in eq)
    spec = ",".join(free + s if ctx.batched(o) else s for s, o in zip(ins, operands)) + "->" + free + out
    return _fabric().einsum(spec, *operands)


@rule("index_select")
def _index_select(ctx, x, dim, index):
    p = _norm(dim, ctx.ldim(x))
    if not ctx.batched(x) or ctx.batched(index) or p is None or ctx.ldim(x) == 0:
        return NotImplemented
    return x.index_select(p, index)


@rule("gather", "take_along_dim")
def _gather(ctx, x, dim=None, index=None, **kw):
    if ctx.key == "take_along_dim":
        x, index, dim = x, dim, index   # take_along_dim(input, indices, dim)
    if kw or dim is None or index is None or ctx.ldim(x) == 0:
        return NotImplemented
    p = _norm(dim, ctx.ldim(x))
    if p is None:
        return NotImplemented
    if ctx.key == "take_along_dim":
        return _fabric().take_along_dim(ctx.expand(x), ctx.expand(index), p)
    return _fabric().gather(ctx.expand(x), p, ctx.expand(index))


@rule("nn.functional.one_hot")
def _one_hot(ctx, x, num_classes=-1):
    if num_classes < 0:
        return NotImplemented   # the class count would depend on every example's values
    return _F().one_hot(x, num_classes)


@rule("nn.functional.pad")
def _pad(ctx, x, pad, mode="constant", value=None):
    if not ctx.batched(x) or mode != "constant" or len(pad) > 2 * ctx.ldim(x):
        return NotImplemented
    return _F().pad(x, pad, mode, value)


def _inplace_rule(name):
    """``x.op_(...)`` of an elementwise op on a batched ``x``: in place on the value (the other operands
    padded to ``x``'s rank, so broadcasting cannot grow ``x``)."""
    def r(ctx, x, *args, **kwargs):
        if not ctx.batched(x):
            return NotImplemented
        rank = ctx.ldim(x)
        if any(isinstance(a, Tensor) and ctx.ldim(a) > rank for a in (*args, *kwargs.values())):
            return NotImplemented
        args = tuple(ctx.pad(a, rank) if isinstance(a, Tensor) and ctx.batched(a) else a for a in args)
        ctx.call(name, getattr(Tensor, name), x, *args, **kwargs)
        return x
    return r


def install():
    """Fill the tables: generated rules, and the registry slot of every declared op that has a rule here."""
    from ..ops import _registry

    fab = _fabric()
    F = _F()
    for name in _ELEMENTWISE:
        if hasattr(fab, name):
            RULES.setdefault(name, elementwise(getattr(fab, name), name))
    for name in _NN_ELEMENTWISE:
        if hasattr(F, name):
            RULES.setdefault(f"nn.functional.{name}", elementwise(getattr(F, name), f"nn.functional.{name}"))
    for name in _TENSOR_ELEMENTWISE:
        RULES[name] = elementwise(getattr(Tensor, name), name)
    for name in _PHYSICAL_METHODS:
        RULES[name] = _method_rule(name)
    for name in _LIKE:
        RULES[name] = _like_rule(name)
    for name in _REDUCE:
        RULES[name] = _reduce_rule(name)
    for name in _ALONG:
        RULES[name] = _along_rule(name)
    for name, pos in _LAST.items():
        RULES[name] = _along_rule(name, pos, -1)
    RULES["norm"] = _reduce_rule("norm", 1)
    RULES["linalg.vector_norm"] = _reduce_rule("linalg.vector_norm", 1, fab.linalg.vector_norm)
    RULES["nn.functional.normalize"] = _along_rule("nn.functional.normalize", 1, 1, F.normalize)
    for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "soft_margin_loss"):
        RULES[f"nn.functional.{name}"] = _pointwise_loss(name)
    for name, spatial in (("conv1d", 1), ("conv2d", 2), ("conv3d", 3), ("max_pool1d", 1), ("max_pool2d", 2),
                          ("max_pool3d", 3), ("avg_pool1d", 1), ("avg_pool2d", 2), ("avg_pool3d", 3),
                          ("adaptive_avg_pool1d", 1), ("adaptive_avg_pool2d", 2), ("adaptive_max_pool2d", 2)):
        RULES[f"nn.functional.{name}"] = _spatial(name, spatial)
    inplace = [n for n in _ELEMENTWISE if n not in _NOT_INPLACE] + [
        d.name for d in _registry.REGISTRY.values() if d.fusion == "elementwise" and d.inplace]
    for name in inplace:
        if hasattr(Tensor, name + "_"):
            RULES.setdefault(name + "_", _inplace_rule(name + "_"))
    for key, r in list(RULES.items()):
        d = _registry.REGISTRY.get(key)
        if d is not None and d.vmap is None:
            d.vmap = r
