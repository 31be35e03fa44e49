"""``nn.utils.rnn``: variable-length sequence batches (PyTorch's ``torch.nn.utils.rnn``).

A :class:`PackedSequence` stores a batch of sequences sorted by decreasing
length time step by time step: ``data`` holds, for each step ``t``, the
``batch_sizes[t]`` sequences still running, so an RNN runs step ``t`` on
exactly those rows (see ``fabric/nn/modules/rnn.py``).  Packing and padding
are one gather each (``index_select`` with an index computed on the host),
so they are differentiable and their backward is one scatter.

Example::

    >>> import fabric
    >>> from fabric.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> p = pack_sequence([fabric.tensor([1, 2, 3]), fabric.tensor([4, 5]), fabric.tensor([6])])
    >>> p.data, p.batch_sizes
    (tensor([1, 4, 6, 2, 5, 3]), tensor([3, 2, 1]))
    >>> pad_packed_sequence(p, batch_first=True)[0]
    tensor([[1, 2, 3],
            [4, 5, 0],
            [6, 0, 0]])
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ... import _creation
from ..._tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]

_TYPE_WORDS = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
               "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def bind(optional, fn):
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    """A packed batch of variable-length sequences: ``data`` (``(sum of
    lengths, *)``), ``batch_sizes`` (CPU int64, the number of sequences
    still running at each time step), and ``sorted_indices`` /
    ``unsorted_indices`` (int64, on ``data``'s device; ``None`` when the
    input was already sorted by decreasing length).

    Build it with :func:`pack_padded_sequence` or :func:`pack_sequence`;
    every RNN module accepts it and returns one.

    Example::

        >>> import fabric
        >>> from fabric.nn.utils.rnn import pack_padded_sequence
        >>> p = pack_padded_sequence(fabric.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]]), [2, 1, 3],
        ...                          batch_first=True, enforce_sorted=False)
        >>> p.sorted_indices, p.unsorted_indices
        (tensor([2, 0, 1]), tensor([1, 2, 0]))
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes, sorted_indices,
                                                                unsorted_indices))

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes, bind(self.sorted_indices, lambda t: t.pin_memory()),
                          bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        """Convert ``data`` (dtype and/or device) as ``Tensor.to`` does; the
        indices follow ``data``'s device, ``batch_sizes`` stays on the CPU.
        Returns ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        non_blocking = kwargs.get("non_blocking", False)

        def call_to(t):
            return t.to(data.device, non_blocking=non_blocking)

        return type(self)(data, self.batch_sizes, bind(self.sorted_indices, call_to),
                          bind(self.unsorted_indices, call_to))

    def cuda(self, *args, **kwargs):
        ex = _creation.tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.is_cuda:
            return self.to(*args, **kwargs)
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        ex = _creation.tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.device.type == "cpu":
            return self.to(*args, **kwargs)
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=_dtype("float64"))

    def float(self):
        return self.to(dtype=_dtype("float32"))

    def half(self):
        return self.to(dtype=_dtype("float16"))

    def long(self):
        return self.to(dtype=_dtype("int64"))

    def int(self):
        return self.to(dtype=_dtype("int32"))

    def short(self):
        return self.to(dtype=_dtype("int16"))

    def char(self):
        return self.to(dtype=_dtype("int8"))

    def byte(self):
        return self.to(dtype=_dtype("uint8"))

    @property
    def is_cuda(self) -> bool:
        """True when ``data`` lives on a GPU."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def _dtype(name):
    from ..._dtype import from_numpy_dtype

    return from_numpy_dtype(np.dtype(name))


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    # unsorted_indices, when given, must be the inverse of sorted_indices (not checked, as in PyTorch)
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be created manually. "
                "They should be instantiated by functions like pack_sequence and pack_padded_sequences in "
                "nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def _packed_sequence_init(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    data, batch_sizes, sorted_indices, unsorted_indices = _packed_sequence_init_args(
        data, batch_sizes, sorted_indices, unsorted_indices)
    return PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (``None`` for ``None``).

    Example::

        >>> import fabric
        >>> invert_permutation(fabric.tensor([2, 0, 1]))
        tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    output = _creation.empty_like(permutation)
    return output.scatter_(0, permutation, _creation.arange(0, permutation.numel(), device=permutation.device))


def _host_longs(t, what):
    """A 1-D CPU int64 tensor's values as a NumPy array (PyTorch's checkLongTensor)."""
    d = t._data
    if d.ndim != 1 or t.device.type != "cpu" or d.dtype != np.int64:
        raise RuntimeError(f"'{what}' argument should be a 1D CPU int64 tensor, but got {d.ndim}D "
                           f"{t.device.type} {_TYPE_WORDS.get(str(d.dtype), str(d.dtype))} tensor")
    return d


def _index(arr, like):
    """A host int64 index array as a Tensor on ``like``'s device."""
    return _creation.as_tensor(arr, device=like.device)


def _pack_padded(input, lengths, batch_first):
    """``(data, batch_sizes)`` of a padded batch sorted by decreasing length."""
    lens = _host_longs(lengths, "lengths")
    if input.dim() < 2:
        input.size(1)  # raises PyTorch's IndexError
    t_dim, b_dim = (1, 0) if batch_first else (0, 1)
    batch = input.shape[b_dim]
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if lens.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.shape[0]} "
                           f"(batch_size={batch})")
    if lens[batch - 1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if batch > 1 and bool((lens[:-1] < lens[1:]).any()):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
            "you do not need ONNX exportability.")
    steps = input.shape[t_dim]
    if lens[0] > steps:
        # PyTorch reads past the end of the input here; fabric refuses
        raise RuntimeError(f"pack_padded_sequence: a length ({int(lens[0])}) exceeds the input's sequence length "
                           f"({steps})")
    t_max = int(lens[0])
    running = lens[None, :] > np.arange(t_max)[:, None]          # (t_max, batch), row t = sequences still running
    t_idx, b_idx = np.nonzero(running)                           # in packed order: by step, then by sequence
    flat = b_idx * steps + t_idx if batch_first else t_idx * batch + b_idx
    x2 = input.reshape((-1,) + tuple(input.shape[2:]))
    data = x2.index_select(0, _index(flat, input))
    batch_sizes = _creation.as_tensor(running.sum(1).astype(np.int64))
    return data, batch_sizes


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``)
    of sequences with the given ``lengths``.  With ``enforce_sorted=False``
    the batch is sorted by decreasing length first (``sorted_indices``
    records the order; outputs of RNNs are returned in the original order).

    Example::

        >>> import fabric
        >>> pack_padded_sequence(fabric.tensor([[1, 4], [2, 0], [3, 0]]), [3, 1]).data
        tensor([1, 4, 2, 3])
    """
    if not isinstance(lengths, Tensor):
        lengths = _creation.as_tensor(np.asarray(lengths, dtype=np.int64))
    else:
        lengths = lengths.to(dtype=_dtype("int64"))
    if enforce_sorted:
        sorted_indices = None
    else:
        from ...ops.sorting import sort

        lengths, sorted_indices = sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return _packed_sequence_init(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """Unpack a :class:`PackedSequence` into a padded tensor ``(T, B, *)``
    (``(B, T, *)`` with ``batch_first``) and the lengths (CPU int64), in
    the order the sequences had before packing.  ``total_length`` pads to
    that many steps (at least the longest sequence).

    Example::

        >>> import fabric
        >>> p = pack_padded_sequence(fabric.tensor([[1, 2, 0], [3, 0, 0]]), [2, 1], batch_first=True)
        >>> pad_packed_sequence(p, batch_first=True, padding_value=-1, total_length=4)
        (tensor([[ 1,  2, -1, -1],
                [ 3, -1, -1, -1]]), tensor([2, 1]))
    """
    bs = _host_longs(sequence.batch_sizes, "batch_sizes")
    max_seq_length = bs.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded, lengths = _pad_packed(sequence.data, bs, batch_first, padding_value, int(max_seq_length))
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        return (padded.index_select(0 if batch_first else 1, unsorted_indices),
                lengths[unsorted_indices.cpu()])
    return padded, lengths


def _pad_packed(data, bs, batch_first, padding_value, steps):
    batch = int(bs[0]) if bs.shape[0] else 0
    n = data.shape[0]
    offsets = np.concatenate(([0], np.cumsum(bs)[:-1])).astype(np.int64)
    lens = (bs[:, None] > np.arange(batch)[None, :]).sum(0).astype(np.int64)
    t = np.arange(steps)[:, None]
    b = np.arange(batch)[None, :]
    running = t < lens[None, :]
    src = np.where(running, offsets[np.minimum(t, max(bs.shape[0] - 1, 0))] + b, n)   # n: the padding row
    if batch_first:
        src = src.T
    rest = tuple(data.shape[1:])
    pad = _creation.full((1,) + rest, padding_value, dtype=data.dtype, device=data.device)
    from ...ops.join import cat

    ext = cat([data, pad])
    out = ext.index_select(0, _index(np.ascontiguousarray(src).reshape(-1), data))
    return out.reshape(src.shape + rest), _creation.as_tensor(lens)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Stack variable-length tensors ``(L_i, *)`` into ``(T, B, *)``
    (``(B, T, *)`` with ``batch_first``), filling with ``padding_value``
    on the ``padding_side`` (``'right'`` or ``'left'``).

    Example::

        >>> import fabric
        >>> pad_sequence([fabric.tensor([1, 2]), fabric.tensor([3])], batch_first=True, padding_side="left")
        tensor([[1, 2],
                [0, 3]])
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("pad_sequence: sequences must have at least one dimension, but the first one is 0-D")
    dt = first.dtype
    seqs = [s if s.dtype == dt else s.to(dt) for s in sequences]
    lens = np.array([s.shape[0] if s.dim() else 1 for s in seqs], dtype=np.int64)
    batch = len(seqs)
    max_len = int(lens.max())
    offsets = np.concatenate(([0], np.cumsum(lens)[:-1]))
    n = int(lens.sum())
    t = np.arange(max_len)[:, None]
    start = (max_len - lens)[None, :] if padding_side == "left" else np.zeros((1, batch), np.int64)
    pos = t - start                                         # position inside sequence b at output step t
    src = np.where((pos >= 0) & (pos < lens[None, :]), offsets[None, :] + pos, n)
    if batch_first:
        src = src.T
    rest = tuple(first.shape[1:])
    from ...ops.join import cat

    pad = _creation.full((1,) + rest, padding_value, dtype=dt, device=first.device)
    ext = cat(list(seqs) + [pad])
    out = ext.index_select(0, _index(np.ascontiguousarray(src).reshape(-1), first))
    return out.reshape(src.shape + rest)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False):
    """Split a padded batch back into a list of tensors of the given
    ``lengths``.  Like PyTorch, with ``batch_first=False`` this transposes
    ``padded_sequences`` in place.

    Example::

        >>> import fabric
        >>> [s.tolist() for s in unpad_sequence(fabric.tensor([[1, 2], [3, 0]]), fabric.tensor([2, 1]))]
        [[1, 3], [2]]
    """
    unpadded_sequences = []
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    max_length = padded_sequences.shape[1]
    idx = _creation.arange(max_length, device=lengths.device)
    for seq, length in zip(padded_sequences, lengths):
        mask = idx < length
        unpadded_sequences.append(seq[mask])
    return unpadded_sequences


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors ``(L_i, *)`` (``pad_sequence`` then
    ``pack_padded_sequence``).

    Example::

        >>> import fabric
        >>> pack_sequence([fabric.tensor([1]), fabric.tensor([2, 3])], enforce_sorted=False).data
        tensor([2, 1, 3])
    """
    lengths = _creation.as_tensor(np.array([v.size(0) for v in sequences], dtype=np.int64))
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences) -> list:
    """The list of tensors a :class:`PackedSequence` was made from.

    Example::

        >>> import fabric
        >>> [s.tolist() for s in unpack_sequence(pack_sequence([fabric.tensor([1, 2]), fabric.tensor([3])]))]
        [[1, 2], [3]]
    """
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
