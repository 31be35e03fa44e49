"""Linear algebra: matrix products (mm, bmm, mv, dot, einsum, tensordot ...),
norms, and the ``fabric.linalg`` decompositions and solvers.

Forward passes call ``backend_of(array).xp.linalg`` (NumPy on CPU, CuPy on
GPU); every backward is written with Tensor ops, so double backward works.
The ``torch.linalg`` names (``inv``, ``svd``, ``norm`` ...) are defined in
this package as ``linalg_<name>`` and exported under their PyTorch names by
``fabric/linalg.py``; the package's ``__all__`` holds only top-level names
(``torch.mm``, ``torch.det``, ``torch.svd`` ...).

One module per family: ``products`` (mm, bmm, the add* family, kron, cross,
cdist, multi_dot ...), ``contractions`` (einsum, tensordot), ``norms``,
``triangular`` (solve_triangular), ``solvers`` (inverses, determinants,
solve), ``decompositions`` (Cholesky, QR, SVD, eigh), ``matrix_functions``
(pinv, lstsq, matrix_power / rank / exp, vander, tensorinv / tensorsolve);
``_common`` holds what they share.

Real and complex dtypes (docs/complex.md); ``lu`` (LU with partial pivoting) is
written with array ops, as NumPy has no LU routine.

Example::

    >>> import fabric
    >>> A = fabric.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> fabric.linalg.det(A)
    tensor(5.)
    >>> fabric.einsum("ij,j->i", A, fabric.ones(2))
    tensor([3., 4.])
"""
from __future__ import annotations

from . import contractions, decompositions, matrix_functions, norms, products, solvers, triangular
from ._common import *  # noqa: F403
from .contractions import *  # noqa: F403
from .decompositions import *  # noqa: F403
from .lu import *  # noqa: F403
from .matrix_functions import *  # noqa: F403
from .norms import *  # noqa: F403
from .products import *  # noqa: F403
from .solvers import *  # noqa: F403
from .triangular import *  # noqa: F403

# The top-level names only (torch.mm, torch.det ...): ``linalg_<name>`` and LinAlgError belong to fabric.linalg.
__all__ = sorted(name for module in (products, contractions, norms, triangular, solvers, decompositions,
                                     matrix_functions)
                 for name in module.__all__ if not name.startswith("linalg_"))
