"""``fabric.linalg``: PyTorch's ``torch.linalg`` namespace.

The functions live in :mod:`fabric.ops.linalg` (as ``linalg_<name>``) and are
exported here under their ``torch.linalg`` names.  Complex dtypes are out of
scope in fabric: ``eig`` and ``eigvals`` raise NotImplementedError (use
``eigh`` / ``eigvalsh`` for symmetric matrices), and so do the LU / LDL /
Householder routines that NumPy and CuPy do not expose.

Example::

    >>> import fabric
    >>> A = fabric.tensor([[4.0, 2.0], [2.0, 3.0]])
    >>> fabric.linalg.cholesky(A)
    tensor([[2.0000, 0.0000],
            [1.0000, 1.4142]])
    >>> fabric.linalg.eigvalsh(A)
    tensor([1.4384, 5.5616])
"""
from __future__ import annotations

from .ops import linalg as _L
from .ops.arith import matmul
from .ops.linalg import LinAlgError

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

cholesky = _L.linalg_cholesky
cholesky_ex = _L.linalg_cholesky_ex
cond = _L.linalg_cond
cross = _L.linalg_cross
det = _L.linalg_det
diagonal = _L.linalg_diagonal
eig = _L.linalg_eig
eigh = _L.linalg_eigh
eigvals = _L.linalg_eigvals
eigvalsh = _L.linalg_eigvalsh
householder_product = _L.linalg_householder_product
inv = _L.linalg_inv
inv_ex = _L.linalg_inv_ex
ldl_factor = _L.linalg_ldl_factor
ldl_factor_ex = _L.linalg_ldl_factor_ex
ldl_solve = _L.linalg_ldl_solve
lstsq = _L.linalg_lstsq
lu = _L.linalg_lu
lu_factor = _L.linalg_lu_factor
lu_factor_ex = _L.linalg_lu_factor_ex
lu_solve = _L.linalg_lu_solve
matrix_exp = _L.linalg_matrix_exp
matrix_norm = _L.linalg_matrix_norm
matrix_power = _L.linalg_matrix_power
matrix_rank = _L.linalg_matrix_rank
multi_dot = _L.linalg_multi_dot
norm = _L.linalg_norm
pinv = _L.linalg_pinv
qr = _L.linalg_qr
slogdet = _L.linalg_slogdet
solve = _L.linalg_solve
solve_ex = _L.linalg_solve_ex
solve_triangular = _L.linalg_solve_triangular
svd = _L.linalg_svd
svdvals = _L.linalg_svdvals
tensorinv = _L.linalg_tensorinv
tensorsolve = _L.linalg_tensorsolve
vander = _L.linalg_vander
vecdot = _L.linalg_vecdot
vector_norm = _L.linalg_vector_norm
