"""Short-time Fourier transform: ``fabric.stft`` / ``fabric.istft`` and the
Tensor methods, with PyTorch's signature, checks and messages.

``stft`` frames the (optionally centre-padded) signal with ``Tensor.unfold``,
multiplies each frame by the window (zero-padded to ``n_fft`` at the centre)
and takes ``R2C`` (real input) or ``C2C`` of every frame; ``istft`` inverts
each frame with ``C2R`` / ``C2C``, multiplies by the window and overlap-adds,
dividing by the overlap-added squared window.  Both are compositions of
differentiable ops, so gradients (and double backward) come for free.

Example::

    >>> import fabric
    >>> x = fabric.arange(16.0)
    >>> w = fabric.hann_window(8)
    >>> s = fabric.stft(x, 8, hop_length=2, window=w, return_complex=True)
    >>> s.shape
    fabric.Size([5, 9])
    >>> fabric.allclose(fabric.istft(s, 8, hop_length=2, window=w, length=16), x, atol=1e-5)
    True
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from ..ops._registry import declare_op
from ..ops._util import xp_of
from ..ops.complex_ops import view_as_real
from ..ops.join import cat
from ._core import BY_N, BY_ROOT_N, NONE, c2c, c2r, r2c

__all__ = ["stft", "istft"]

_WARNED = set()


def _warn_once(key, message):
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def _type_name(t):
    """PyTorch's ``toString()`` of a tensor's type in stft's messages (``torch.FloatTensor``, but
    ``CPUComplexFloatType`` for complex tensors, which have no legacy type name)."""
    return _backend_type(t) if _is_complex(t) else t.type()


def _opt(value):
    return "None" if value is None else str(int(value))


def _is_complex(t):
    return t is not None and t._data.dtype.kind == "c"


@declare_op(namespace="")  # autocast's float32 list has stft: its cast comes from this declaration
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """Short-time Fourier transform: ``(..., n_fft // 2 + 1, n_frames)`` frequency bins per frame.

    Example::

        >>> fabric.stft(fabric.ones(8), 4, window=fabric.hann_window(4), return_complex=True).shape
        fabric.Size([3, 9])
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if window is None:
        _warn_once("stft_window", "A window was not provided. A rectangular window will be applied,which is known to "
                   "cause spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                   "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                   "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    if center:
        from ..nn.functional import pad

        signal_dim = input.ndim
        amount = n_fft // 2
        extended = input.reshape([1] * (3 - signal_dim) + list(input.shape))
        input = pad(extended, [amount, amount], pad_mode)
        input = input.reshape(input.shape[len(input.shape) - signal_dim:])
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def fail(what):
        window_text = "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"
        raise RuntimeError(
            f"stft({_type_name(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={window_text}, normalized={int(normalized)}, onesided={_opt(onesided)}, "
            f"return_complex={_opt(return_complex)}, align_to_window={_opt(align_to_window)}) : {what}")

    complex_out = return_complex if return_complex is not None else (_is_complex(input) or _is_complex(window))
    if not complex_out:
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        _warn_once("stft", "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
                   "return complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you "
                   "can still call torch.view_as_real on the complex output to recover the old return format.")
    if input._data.dtype.kind not in "fc":
        fail("expected a tensor of floating point or complex values")
    if input.ndim not in (1, 2):
        fail("expected a 1D or 2D tensor")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        fail(f"expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        fail(f"expected a 1D window tensor of size equal to win_length={win}, but got window with size "
             f"{list(window.shape)}")
    left = (n_fft - win) // 2
    if align_to_window:  # frames start where their window starts: pad the signal instead of the window's frame
        x = _pad_last(x, left, n_fft - win - left)
    frames = x.unfold(-1, n_fft, hop)                                   # (batch, n_frames, n_fft)
    if window is not None or win < n_fft:
        w = window if window is not None else x.new_ones(win)
        frames = frames * (_pad_last(w, left, n_fft - win - left) if win < n_fft else w)
    complex_fft = _is_complex(frames)
    sided = (not complex_fft) if onesided is None else onesided
    norm = BY_ROOT_N if normalized else NONE
    if complex_fft:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = c2c(frames, (2,), norm, True)
    else:
        out = r2c(frames, (2,), norm, sided)
    out = out.transpose(1, 2)
    if input.ndim == 1:
        out = out.squeeze(0)
    return out if complex_out else view_as_real(out)


def _pad_last(x, left, right):
    """Zero-pad the last dim of ``x`` (differentiable, any dtype)."""
    if left == 0 and right == 0:
        return x
    return cat([x.new_zeros(x.shape[:-1] + (left,)), x, x.new_zeros(x.shape[:-1] + (right,))], -1)


@declare_op(namespace="")
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, onesided=None,
          length=None, return_complex=False):
    """Inverse of :func:`stft` (least-squares overlap-add, as PyTorch).

    Example::

        >>> s = fabric.stft(fabric.ones(8), 4, window=fabric.hann_window(4), return_complex=True)
        >>> fabric.istft(s, 4, window=fabric.hann_window(4), length=8)
        tensor([1., 1., 1., 1., 1., 1., 1., 1.])
    """
    if window is None:
        _warn_once("istft", "A window was not provided. A rectangular window will be applied.Please provide the same "
                   "window used by stft to make the inversion lossless.To suppress this warning and use a rectangular "
                   "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def fail(what):
        window_text = "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"
        raise RuntimeError(
            f"istft({_type_name(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={window_text}, center={int(center)}, normalized={int(normalized)}, onesided={_opt(onesided)}, "
            f"length={'None' if length is None else length}, return_complex={int(return_complex)}) {what}")

    if not _is_complex(input):
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    ndim = input.ndim + 1                                                # PyTorch counts the view_as_real dim
    if input.numel() == 0:
        fail(": input tensor cannot be empty.")
    if ndim not in (3, 4):
        fail(f": expected a tensor with 3 or 4 dimensions, but got {ndim}")
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    sided = fft_size != n_fft if onesided is None else onesided
    if sided and n_fft // 2 + 1 != fft_size:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when "
             f"onesided=True, but got {fft_size}")
    if not sided and n_fft != fft_size:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
             f"onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        fail(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        fail(": expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        fail(": Invalid window shape. window has to be 1D and length of `win_length`")
    w = window if window is not None else Tensor._make(xp_of(input._data).ones(win, input._data.real.dtype), False)
    if win != n_fft:
        left = (n_fft - win) // 2
        w = _pad_last(w, left, n_fft - win - left)
    spec = input.unsqueeze(0) if ndim == 3 else input
    spec = spec.transpose(1, 2)                                          # (channel, n_frames, fft_size)
    norm = BY_ROOT_N if normalized else BY_N
    if return_complex:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = c2c(spec, (2,), norm, False)
    else:
        if _is_complex(window):
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not sided:
            spec = spec.narrow(-1, 0, n_fft // 2 + 1)
        frames = c2r(spec, (2,), norm, n_fft)                            # (channel, n_frames, n_fft)
    signal_len = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames * w, hop, signal_len)
    envelope = _overlap_add((w * w).expand(1, n_frames, n_fft), hop, signal_len)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (signal_len - n_fft // 2 if center else signal_len)
    y = y[:, start:end]
    envelope = envelope[:, start:end]
    lowest = bool((envelope.abs().min() < 1e-11).item())
    if lowest:
        fail(f"window overlap add min: {int(lowest)}\n[ {input.device.type.upper()}BoolType{{}} ]")
    y = y / envelope
    if ndim == 3:
        y = y.squeeze(0)
    if end > signal_len:
        _warn_once("istft_length", "The length of signal is shorter than the length parameter. Result is being "
                   "padded with zeros in the tail. Please check your center and hop_length settings.")
        y = _pad_last(y, 0, end - signal_len)
    return y


def _backend_type(t):
    """PyTorch's ``toString()`` of a tensor type in istft's messages (``CPUComplexFloatType``)."""
    kind = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(str(t._data.dtype), "Float")
    return f"{t.device.type.upper()}{kind}Type"


def _overlap_add(frames, hop, signal_len):
    """Sum ``frames`` (``(batch, n_frames, n_fft)``) into ``(batch, signal_len)``, frame ``f`` starting at
    ``f * hop``: the adjoint of ``unfold(-1, n_fft, hop)``, done as ``ceil(n_fft / hop)`` shifted adds of
    hop-sized blocks (differentiable: slices, reshapes and padding)."""
    batch, n_frames, n_fft = frames.shape
    blocks = -(-n_fft // hop)
    frames = _pad_last(frames, 0, blocks * hop - n_fft)                  # (batch, n_frames, blocks * hop)
    total = None
    for k in range(blocks):
        piece = frames[:, :, k * hop:(k + 1) * hop]                      # block k of each frame
        # frame f's block k lands at rows f + k of a (n_frames + blocks - 1, hop) grid
        rows = _pad_rows(piece, k, blocks - 1 - k)
        total = rows if total is None else total + rows
    signal = total.reshape(batch, (n_frames + blocks - 1) * hop)
    return signal[:, :signal_len]


def _pad_rows(x, before, after):
    if before == 0 and after == 0:
        return x
    parts = ([x.new_zeros((x.shape[0], before, x.shape[2]))] if before else []) + [x] + \
        ([x.new_zeros((x.shape[0], after, x.shape[2]))] if after else [])
    return cat(parts, 1)


# Tensor methods of this layer are installed from here (fabric/_tensor.py imports nothing above ops)
Tensor.stft = stft
Tensor.istft = istft
