"""Sparse tensors in checkpoints, as PyTorch writes them:
``torch._utils._rebuild_sparse_tensor(layout, data)`` with ``data`` =
``(indices, values, size, is_coalesced)`` for COO and
``(crow_indices, col_indices, values, size)`` for CSR.  A loaded tensor is
checked (index bounds, CSR structure) before it is returned: the file is
untrusted.

Example::

    >>> import io, fabric
    >>> buf = io.BytesIO()
    >>> fabric.save(fabric.eye(2).to_sparse_csr(), buf)
    >>> _ = buf.seek(0)
    >>> fabric.load(buf).crow_indices()
    tensor([0, 1, 2])
"""
from __future__ import annotations

from .._tensor import Size, Tensor
from ._layout import sparse_coo, sparse_csr


def reduce_parts(t):
    """``(layout name, data)`` of sparse ``t`` for the checkpoint writer."""
    if t.is_sparse:
        return "torch.sparse_coo", (t._idx, t._vals.detach(), Size(t._shape), t.is_coalesced())
    return "torch.sparse_csr", (t._crow, t._col, t._vals.detach(), Size(t._shape))


def rebuild_sparse_tensor(layout, data):
    """The loader's ``torch._utils._rebuild_sparse_tensor``: a checked COO or CSR tensor."""
    from . import sparse_coo_tensor, sparse_csr_tensor
    if not isinstance(data, tuple) or not all(isinstance(d, Tensor) for d in data[:-2]):
        raise RuntimeError("fabric.load: malformed sparse tensor record")
    if layout is sparse_coo:
        indices, values, size = data[:3]
        coalesced = data[3] if len(data) > 3 else None
        t = sparse_coo_tensor(indices, values, _size(size), check_invariants=True)
        if coalesced:
            c = t.coalesce()  # trust no flag: a coalesced claim is checked against the sorted form
            if c._nnz() != t._nnz() or not bool((c._idx == t._idx).all()):
                raise RuntimeError("fabric.load: a sparse tensor marked coalesced has unsorted or repeated indices")
            t._coalesced = True
        return t
    if layout is sparse_csr:
        crow, col, values, size = data
        return sparse_csr_tensor(crow, col, values, _size(size), check_invariants=True)
    raise NotImplementedError(f"fabric.load: sparse layout {layout!r} is not supported (COO and CSR are)")


def _size(size):
    if not isinstance(size, tuple) or not all(isinstance(s, int) and s >= 0 for s in size):
        raise RuntimeError("fabric.load: malformed sparse tensor size")
    return tuple(size)
