"""The one sparse kernel: ``S @ D`` for COO ``(row, col, values)``.

CPU: SciPy's CSR product when SciPy is installed, else a NumPy scatter-add
(``np.add.at`` of ``values * D[col]`` into the rows).  GPU: CuPy's
``cupyx.scipy.sparse`` CSR product.
"""
from __future__ import annotations

import numpy as np

try:  # optional: faster CPU products
    import scipy.sparse as _scipy_sparse
except ImportError:  # pragma: no cover - exercised where SciPy is absent
    _scipy_sparse = None


def _numpy_spmm(row, col, values, shape, dense):
    out = np.zeros((shape[0], dense.shape[1]), np.result_type(values, dense))
    if row.size:
        np.add.at(out, row, values[:, None] * dense[col])
    return out


def spmm(row, col, values, shape, dense, *, use_scipy=None):
    """Dense ``(shape[0], dense.shape[1])`` result of the sparse product."""
    if isinstance(dense, np.ndarray):
        if use_scipy is None:
            use_scipy = _scipy_sparse is not None
        if not use_scipy or values.dtype.kind not in "fc":
            return _numpy_spmm(row, col, values, shape, dense)
        m = _scipy_sparse.csr_matrix((values, (row, col)), shape=shape)
        return np.ascontiguousarray(m @ dense).astype(np.result_type(values, dense), copy=False)
    import cupyx.scipy.sparse as cusparse
    m = cusparse.csr_matrix((values, (row, col)), shape=shape)
    return (m @ dense).astype(values.dtype, copy=False)
