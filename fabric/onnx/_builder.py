"""Building an ONNX graph node by node (used by the lowering in ``_lower.py``).

A lowered value is a :class:`V`: the name of an ONNX tensor with its NumPy
dtype and rank (``None`` when unknown).  Python numbers and tuples stay Python
values until an op needs them as tensors.
"""
from __future__ import annotations

import numpy as np


class V:
    """An ONNX tensor value: ``name``, NumPy ``dtype``, ``rank``."""

    __slots__ = ("name", "dtype", "rank")

    def __init__(self, name: str, dtype, rank: int | None):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.rank = rank

    def __repr__(self) -> str:
        return f"V({self.name}, {self.dtype}, rank={self.rank})"


class ShapeV(V):
    """A 1-D int64 value holding a tensor's shape (``x.shape`` / ``x.size()``)."""
    __slots__ = ()


class Builder:
    """Collects ONNX nodes and initializers; ``onnx`` is imported by the caller."""

    def __init__(self, onnx, opset: int, strip_prefix: str = ""):
        self.onnx = onnx
        self.strip_prefix = strip_prefix
        self.opset = opset
        self.nodes: list = []
        self.initializers: dict[str, np.ndarray] = {}
        self._const_cache: dict = {}
        self._param_names: dict[int, str] = {}
        self._used: set[str] = set()
        self._counter: dict[str, int] = {}

    def fresh(self, hint: str) -> str:
        hint = "".join(c if c.isalnum() or c in "_./" else "_" for c in hint) or "v"
        if hint not in self._used:
            self._used.add(hint)
            return hint
        i = self._counter.get(hint, 0)
        while True:
            i += 1
            name = f"{hint}_{i}"
            if name not in self._used:
                self._counter[hint] = i
                self._used.add(name)
                return name

    def reserve(self, name: str) -> None:
        self._used.add(name)

    def op(self, op_type: str, inputs: list, dtype=None, rank: int | None = None, n_out: int = 1,
           name_hint: str | None = None, **attrs):
        """Emit one node; returns a V (or a tuple of V for ``n_out > 1``)."""
        names = [("" if x is None else x.name) for x in inputs]
        while names and names[-1] == "":
            names.pop()
        if dtype is None:
            dtype = next((x.dtype for x in inputs if x is not None), np.float32)
        outs = [self.fresh(f"{name_hint or op_type}") for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node = self.onnx.helper.make_node(op_type, names, outs, name=self.fresh(f"/{op_type}"), **attrs)
        self.nodes.append(node)
        vals = tuple(V(o, dtype, rank) for o in outs)
        return vals[0] if n_out == 1 else vals

    def const(self, value, dtype=None, name_hint: str = "const") -> V:
        """A (deduplicated) initializer holding ``value``."""
        arr = np.asarray(value, dtype=dtype)
        if arr.dtype == np.float64 and dtype is None:
            arr = arr.astype(np.float32)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        name = self._const_cache.get(key)
        if name is None:
            name = self.fresh(name_hint)
            self.initializers[name] = arr
            self._const_cache[key] = name
        return V(name, arr.dtype, arr.ndim)

    def i64(self, value) -> V:
        return self.const(np.asarray(value, dtype=np.int64))

    def param(self, tensor, name: str) -> V:
        """The initializer for a parameter/buffer; one per tensor (tied weights stay tied)."""
        key = id(tensor)
        existing = self._param_names.get(key)
        arr = tensor.detach().cpu().numpy() if hasattr(tensor, "detach") else np.asarray(tensor)
        if existing is None:
            if self.strip_prefix and name.startswith(self.strip_prefix):
                name = name[len(self.strip_prefix):]
            existing = self.fresh(name)
            self.initializers[existing] = np.array(arr, copy=True)
            self._param_names[key] = existing
        return V(existing, arr.dtype, arr.ndim)
