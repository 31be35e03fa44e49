"""Attention: ``F.scaled_dot_product_attention`` and
``F.multi_head_attention_forward`` (with PyTorch's mask helpers).

``scaled_dot_product_attention`` computes what PyTorch's math path computes
(``softmax(q k^T * scale + mask) @ v`` where a row whose scores are all
``-inf`` gives zeros, as ``at::_safe_softmax`` does; dropout draws its mask
from the default generator exactly like ``F.dropout`` on the attention
weights).  It is one autograd node: forward on arrays, a fused array
backward under plain ``backward()``, and under ``create_graph=True`` a
backward that differentiates the same computation written with Tensor ops.

``multi_head_attention_forward`` follows PyTorch's Python implementation
line by line (so ``need_weights=True`` uses an explicit softmax, which gives
NaN for fully masked rows as PyTorch does, and ``need_weights=False`` goes
through ``scaled_dot_product_attention``).

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> q = k = v = fabric.ones(2, 4, 3, 8)
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape
    fabric.Size([2, 4, 3, 8])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _creation
from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...autograd.grad_mode import state as _grad_state
from ...backends import backend_of
from ...ops._registry import declare_op
from ...ops._util import xp_of
from ._dropout import _bernoulli
from ._linear import linear

__all__ = [
    "_canonical_mask",
    "_check_key_padding_mask",
    "_in_projection",
    "_in_projection_packed",
    "_mha_shape_check",
    "_none_or_dtype",
    "multi_head_attention_forward",
    "scaled_dot_product_attention",
]

_TORCH_WORDS = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                "uint8": "unsigned char",
                "bool": "bool"}


_SCALAR_TYPES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _word(dt) -> str:
    return _TORCH_WORDS.get(str(dt), str(dt))


def _const(arr) -> Tensor:
    return Tensor._make(arr, False)


# --- scaled dot-product attention ------------------------------------------------------

def _broadcast_error(a, b, skip):
    """PyTorch's message for batch dims of ``a`` and ``b`` (all but the last ``skip``) that do not broadcast."""
    sa, sb = a[:len(a) - skip], b[:len(b) - skip]
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    for i in range(n - 1, -1, -1):
        if sa[i] != sb[i] and sa[i] != 1 and sb[i] != 1:
            raise RuntimeError(f"The size of tensor a ({sa[i]}) must match the size of tensor b ({sb[i]}) at "
                               f"non-singleton dimension {i}")


def _safe_softmax_(xp, s):
    """Softmax over the last axis in place; rows of all ``-inf`` give zeros (the backend's
    ``safe_softmax_``: one compiled pass per row with the numba CPU kernels)."""
    return backend_of(s).safe_softmax_(s)


class _SDPA(Function):
    """``(q, k, v, float mask | None)`` -> attention output; the boolean /
    causal mask, scale, dropout mask and GQA repeat are constants."""

    _array_forward = True
    _node_name = "ScaledDotProductAttentionBackward0"

    @staticmethod
    def forward(ctx, q, k, v, fmask, bmask, scale, drop, rep):
        xp = xp_of(q)
        kk, vv = (xp.repeat(k, rep, axis=-3), xp.repeat(v, rep, axis=-3)) if rep > 1 else (k, v)
        s = xp.matmul(q * q.dtype.type(scale), xp.swapaxes(kk, -1, -2))
        if fmask is not None:
            if np.broadcast_shapes(s.shape, fmask.shape) == s.shape:
                s += fmask
            else:
                s = s + fmask
        if bmask is not None:
            full = np.broadcast_shapes(s.shape, bmask.shape)
            if full != s.shape:
                s = xp.broadcast_to(s, full).copy()
            xp.copyto(s, s.dtype.type(-np.inf), where=~bmask)
        p = _safe_softmax_(xp, s)
        pd = p if drop is None else p * drop
        out = xp.matmul(pd, vv)
        ctx.scale, ctx.rep = scale, rep
        ctx.drop, ctx.bmask = drop, bmask
        ctx.save_for_backward(q, k, v, fmask, p, out)
        return out

    @staticmethod
    def backward(ctx, gout):
        q, k, v, fmask, p, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        if _grad_state.enabled:
            return _sdpa_backward_graph(ctx, q, k, v, fmask, need, gout)
        xp = xp_of(q._data)
        qd, kd, vd, pd_, g = q._data, k._data, v._data, p._data, gout._data
        rep, scale, drop = ctx.rep, ctx.scale, ctx.drop
        kk, vv = (xp.repeat(kd, rep, axis=-3), xp.repeat(vd, rep, axis=-3)) if rep > 1 else (kd, vd)
        pdrop = pd_ if drop is None else pd_ * drop
        gv = xp.matmul(xp.swapaxes(pdrop, -1, -2), g) if need[2] else None
        gp = xp.matmul(g, xp.swapaxes(vv, -1, -2))         # d(dropped weights)
        if drop is not None:
            gp *= drop
        # softmax backward: ds = p (gp - rowsum(gp p)), and rowsum(gp p) = rowsum(g out) (out = p_dropped v)
        ds = gp
        ds -= (g * out._data).sum(-1, keepdims=True)
        ds *= pd_                                          # d(scores); zero on masked entries
        gmask = ds if need[3] else None
        gq = gk = None
        if need[0]:
            gq = xp.matmul(ds, kk)
            gq *= gq.dtype.type(scale)
        if need[1]:
            gk = xp.matmul(xp.swapaxes(ds, -1, -2), qd)
            gk *= gk.dtype.type(scale)
        if rep > 1:
            gk = _fold_heads(gk, rep)
            gv = _fold_heads(gv, rep)
        return (None if gq is None else _const(gq), None if gk is None else _const(gk),
                None if gv is None else _const(gv), None if gmask is None else _const(gmask),
                None, None, None, None)


def _fold_heads(g, rep):
    """Sum the gradient of GQA-repeated heads back onto the shared head."""
    if g is None:
        return None
    shp = g.shape
    return g.reshape(shp[:-3] + (shp[-3] // rep, rep) + shp[-2:]).sum(-3)


def _sdpa_reference(q, k, v, fmask, bmask, scale, drop, rep):
    """The same computation with differentiable Tensor ops (bool masks and dropout masks are constants)."""
    from ...ops.pointwise import where

    if rep > 1:
        k = k.repeat_interleave(rep, dim=-3)
        v = v.repeat_interleave(rep, dim=-3)
    s = q.matmul(k.transpose(-2, -1)) * scale
    if fmask is not None:
        s = s + fmask
    if bmask is not None:
        s = where(_const(bmask), s, s.new_full((), float("-inf")))
    dead = (s == float("-inf")).all(-1, keepdim=True)
    zero = s.new_zeros(())
    p = where(dead, zero, where(dead, zero, s).softmax(-1))
    if drop is not None:
        p = p * _const(drop)
    return p.matmul(v)


class _Alias(Function):
    """Identity with its own node: the create_graph backward differentiates a
    recomputation hanging off these nodes (the inner ``autograd.grad`` stops here)."""

    _array_forward = True
    _node_name = "AliasBackward0"

    @staticmethod
    def forward(ctx, x):
        return x.view()

    @staticmethod
    def backward(ctx, gy):
        return gy


def _sdpa_backward_graph(ctx, q, k, v, fmask, need, gout):
    from ...autograd import grad as _grad

    ins = [(_Alias.apply(t) if n else t.detach()) if t is not None else None for t, n in zip((q, k, v, fmask), need)]
    out = _sdpa_reference(*ins, ctx.bmask, ctx.scale, ctx.drop, ctx.rep)
    wrt = [t for t, n in zip(ins, need) if n and t is not None]
    res = iter(_grad([out], wrt, [gout], create_graph=True, allow_unused=True))
    return tuple(next(res) if (n and t is not None) else None for t, n in zip(ins, need)) + (None,) * 4


@declare_op(method=False)
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two
    dims: query ``(..., L, E)``, key ``(..., S, E)``, value ``(..., S, Ev)``
    (batch dims broadcast).  ``attn_mask`` is boolean (True = attend) or a
    float bias of the query's dtype, broadcastable to ``(..., L, S)``;
    ``is_causal`` masks ``j > i`` (top-left aligned); ``scale`` defaults to
    ``1/sqrt(E)``; ``dropout_p`` drops attention weights (always, as in
    PyTorch: pass ``0.0`` in eval); ``enable_gqa`` lets key/value have fewer
    heads (dim -3) than query.  A row that can attend to nothing gives zeros.

    Example::

        >>> import fabric
        >>> import fabric.nn.functional as F
        >>> q = fabric.randn(2, 3, 4)
        >>> mask = fabric.tensor([[True, False, False], [True, True, False], [True, True, True]])
        >>> out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        >>> bool(out[:, 0].allclose(q[:, 0]))
        True
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' (position "
                            f"{('query', 'key', 'value').index(name) + 1}) must be Tensor, not {type(t).__name__}")
    qd, kd, vd = query._data, key._data, value._data
    if qd.ndim < 2 or kd.ndim < 2 or vd.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{qd.ndim} key.dim: {kd.ndim} and value.dim: {vd.ndim} instead.")
    if not (qd.dtype == kd.dtype == vd.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_word(qd.dtype)} key.dtype: {_word(kd.dtype)} and value.dtype: {_word(vd.dtype)} "
                           "instead.")
    if qd.dtype.kind != "f":
        raise RuntimeError(f"expected scalar type Float but found {_SCALAR_TYPES.get(str(qd.dtype), qd.dtype)}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if dropout_p < 0 or dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if kd.shape[-1] != qd.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{_batch_numel(qd)}, {qd.shape[-1]}] but got: [{_batch_numel(kd)}, {kd.shape[-1]}].")
    if vd.shape[-2] != kd.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{_batch_numel(qd)}, {kd.shape[-2]}] but got: [{_batch_numel(vd)}, {vd.shape[-2]}].")
    rep = 1
    if enable_gqa and qd.ndim >= 3 and kd.ndim >= 3 and vd.ndim >= 3:
        hq, hk, hv = qd.shape[-3], kd.shape[-3], vd.shape[-3]
        if hk != hv or hq % hk != 0:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
        rep = hq // hk
    kshape = kd.shape[:-3] + (kd.shape[-3] * rep,) + kd.shape[-2:] if rep > 1 else kd.shape
    _broadcast_error(qd.shape, kshape, 2)
    _broadcast_error(qd.shape, vd.shape[:-2] + (vd.shape[-3] * rep,) + vd.shape[-2:] if rep > 1 else vd.shape, 2)
    L, S = qd.shape[-2], kd.shape[-2]
    fmask = bmask = None
    xp = xp_of(qd)
    if attn_mask is not None:
        md = attn_mask._data
        if md.dtype == np.bool_:
            bmask = md
        elif md.dtype == qd.dtype:
            fmask = attn_mask
        else:
            raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {_word(md.dtype)} and  query.dtype: {_word(qd.dtype)} instead.")
        scores_shape = np.broadcast_shapes(qd.shape[:-2], kshape[:-2]) + (L, S)
        _broadcast_error(scores_shape, md.shape, 0)
    elif is_causal:
        bmask = xp.tril(xp.ones((L, S), dtype=bool))
    if scale is None:
        scale = 1.0 / math.sqrt(qd.shape[-1])
    drop = None
    if dropout_p > 0:
        batch = np.broadcast_shapes(qd.shape[:-2], kshape[:-2])
        shape = tuple(batch) + (L, S)
        if dropout_p == 1:
            drop = xp.zeros(shape, qd.dtype)
        else:
            drop = _bernoulli(qd, shape, 1.0 - dropout_p)
            drop /= drop.dtype.type(1.0 - dropout_p)
    fd = None if fmask is None else fmask._data
    args = (query, key, value, fmask, bmask, float(scale), drop, rep)
    return _apply(_SDPA, args, (qd, kd, vd, fd, bmask, float(scale), drop, rep))


def _batch_numel(a):
    n = 1
    for s in a.shape[:-2]:
        n *= s
    return n


# --- multi-head attention (PyTorch's Python implementation) ----------------------------------

def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        is_batched = True
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.dim()}-D tensor instead")
    elif query.dim() == 2:
        is_batched = False
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                     f"found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected_shape = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected_shape:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected_shape} but got "
                                         f"{attn_mask.shape}")
    else:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                             "tensor")
    return is_batched


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A boolean mask as a float mask of ``target_type`` (``-inf`` where True);
    float masks pass through."""
    if mask is not None:
        _mask_dtype = mask.dtype
        _mask_is_float = mask.is_floating_point()
        if _mask_dtype != _bool() and not _mask_is_float:
            raise AssertionError(f"only bool and floating types of {mask_name} are supported")
        if check_other and other_type is not None and _mask_dtype != other_type:
            warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                          "both instead.", stacklevel=3)
        if not _mask_is_float:
            mask = _creation.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _bool():
    from ..._dtype import from_numpy_dtype

    return from_numpy_dtype(np.dtype(bool))


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _in_projection_packed(q, k, v, w, b=None):
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        if b is None:
            b_q = b_kv = None
        else:
            b_q, b_kv = b.split([E, E * 2])
        q_proj = linear(q, w_q, b_q)
        kv_proj = linear(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv_proj[0], kv_proj[1]
    w_q, w_k, w_v = w.chunk(3)
    if b is None:
        b_q = b_k = b_v = None
    else:
        b_q, b_k, b_v = b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    if tuple(w_q.shape) != (Eq, Eq):
        raise AssertionError(f"expecting query weights shape of {(Eq, Eq)}, but got {w_q.shape}")
    if tuple(w_k.shape) != (Eq, Ek):
        raise AssertionError(f"expecting key weights shape of {(Eq, Ek)}, but got {w_k.shape}")
    if tuple(w_v.shape) != (Eq, Ev):
        raise AssertionError(f"expecting value weights shape of {(Eq, Ev)}, but got {w_v.shape}")
    if b_q is not None and tuple(b_q.shape) != (Eq,):
        raise AssertionError(f"expecting query bias shape of {(Eq,)}, but got {b_q.shape}")
    if b_k is not None and tuple(b_k.shape) != (Eq,):
        raise AssertionError(f"expecting key bias shape of {(Eq,)}, but got {b_k.shape}")
    if b_v is not None and tuple(b_v.shape) != (Eq,):
        raise AssertionError(f"expecting value bias shape of {(Eq,)}, but got {b_v.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _check_key_padding_mask(key_padding_mask, src_len, bsz):
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight,
                                 out_proj_bias, training: bool = True, key_padding_mask=None, need_weights: bool = True,
                                 attn_mask=None, use_separate_proj_weight: bool = False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights: bool = True, is_causal: bool = False):
    """Multi-head attention over ``(L, N, E)`` query and ``(S, N, E_k)`` /
    ``(S, N, E_v)`` key / value (or unbatched ``(L, E)``): the functional
    form of :class:`~fabric.nn.MultiheadAttention`, PyTorch's algorithm step
    by step.  Returns ``(attn_output, attn_weights)`` (weights averaged over
    heads unless ``average_attn_weights=False``; ``None`` when
    ``need_weights=False``).

    Example::

        >>> import fabric
        >>> import fabric.nn.functional as F
        >>> E, H = 4, 2
        >>> x = fabric.randn(3, 2, E)
        >>> out, w = F.multi_head_attention_forward(x, x, x, E, H, fabric.randn(3 * E, E), fabric.zeros(3 * E),
        ...                                         None, None, False, 0.0, fabric.randn(E, E), fabric.zeros(E))
        >>> out.shape, w.shape
        (fabric.Size([3, 2, 4]), fabric.Size([2, 3, 3]))
    """
    from ...ops.join import cat
    from ._activation import softmax
    from ._dropout import dropout
    from ._resample import pad

    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query = query.unsqueeze(1)
        key = key.unsqueeze(1)
        value = value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len, _, _ = key.shape
    key_padding_mask = _canonical_mask(mask=key_padding_mask, mask_name="key_padding_mask",
                                       other_type=_none_or_dtype(attn_mask), other_name="attn_mask",
                                       target_type=query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # the mask is only a hint: scaled_dot_product_attention builds the causal mask itself
        attn_mask = None
    else:
        attn_mask = _canonical_mask(mask=attn_mask, mask_name="attn_mask", other_type=None, other_name="",
                                    target_type=query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if q_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight is None")
        if k_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but k_proj_weight is None")
        if v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but v_proj_weight is None")
        if in_proj_bias is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            correct_2d_size = (tgt_len, src_len)
            if tuple(attn_mask.shape) != correct_2d_size:
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{correct_2d_size}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            correct_3d_size = (bsz * num_heads, tgt_len, src_len)
            if tuple(attn_mask.shape) != correct_3d_size:
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{correct_3d_size}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    else:
        if bias_k is not None:
            raise AssertionError("bias_k is set but bias_v is None")
        if bias_v is not None:
            raise AssertionError("bias_v is set but bias_k is None")

    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_k.size(0) of {bsz * num_heads}, but got {static_k.size(0)}")
        if static_k.size(2) != head_dim:
            raise AssertionError(f"expecting static_k.size(2) of {head_dim}, but got {static_k.size(2)}")
        k = static_k
    if static_v is None:
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_v.size(0) of {bsz * num_heads}, but got {static_v.size(0)}")
        if static_v.size(2) != head_dim:
            raise AssertionError(f"expecting static_v.size(2) of {head_dim}, but got {static_v.size(2)}")
        v = static_v

    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, _creation.zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, _creation.zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    src_len = k.size(1)
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, src_len, bsz)
        key_padding_mask = (key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        _B, _Nt, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            attn_output_weights = attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        else:
            attn_output_weights = q_scaled.bmm(k.transpose(-2, -1))
        attn_output_weights = softmax(attn_output_weights, dim=-1)
        if dropout_p > 0.0:
            attn_output_weights = dropout(attn_output_weights, p=dropout_p)
        attn_output = attn_output_weights.bmm(v)
        attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_output_weights = attn_output_weights.mean(dim=1)
        if not is_batched:
            attn_output = attn_output.squeeze(1)
            attn_output_weights = attn_output_weights.squeeze(0)
        return attn_output, attn_output_weights

    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    attn_output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    attn_output = attn_output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
    if not is_batched:
        attn_output = attn_output.squeeze(1)
    return attn_output, None
