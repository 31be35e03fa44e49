"""Less common Tensor methods and torch functions that fill gaps in the
catalogue: in-place aliases (``cumsum_``, ``divide_`` ...), ``fill_diagonal_``,
predicates (``is_inference``, ``is_nonzero``, ``get_device``, ``is_shared``),
``sum_to_size``, ``narrow_copy``, ``resize_``, the ``unsafe_`` splits,
``apply_``/``map_``, integer ``gcd``/``lcm``, ``ldexp``, ``frexp``, ``i0``,
``mvlgamma``, the ``*_scatter`` functions, ``index_reduce`` and the legacy
``Tensor.new``.

Differences from PyTorch (also in docs/ops.md notes where registered):

* ``is_inference()`` is always False: fabric has no inference tensors
  (``inference_mode`` is ``no_grad``).
* ``share_memory_()`` copies a CPU tensor's data into anonymous shared memory
  (``memfd``, the kind the DataLoader's workers use), so forked processes see
  each other's writes; views made *before* the call keep the old memory
  (PyTorch moves the storage under them), and calling it on a view raises.
  ``is_shared()`` is True for data living in a shared memory mapping (also
  DataLoader batches) and for CUDA tensors.  Without POSIX shared memory
  (Windows) ``share_memory_()`` returns ``self`` unchanged.
* ``resize_`` fills new elements with zeros (PyTorch leaves them
  uninitialised), raises on views, and keeps the leading elements in the
  tensor's logical (C) order (PyTorch: storage order; the same for
  contiguous tensors).  Shrinking a contiguous tensor keeps its memory.
* ``apply_``/``map_`` bump the version counter (PyTorch does not).
* ``heaviside_`` records a node whose backward raises, as PyTorch's.

Example::

    >>> import fabric
    >>> fabric.zeros(2, 3).fill_diagonal_(1.0)
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    >>> fabric.tensor([4, 6]).gcd(fabric.tensor([6, 4]))
    tensor([2, 2])
"""
from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from .. import _dtype as D
from .. import _shared_memory
from .._tensor import Size, Tensor, _wrap_dim
from ..autograd.function import Function, _apply, _apply1
from ._util import _same_device, binary_operands, float_array, shape_args, xp_of
from .arith import mul
from .indexing import ScatterReduce, ScatterReduceInplace, _index, _index_dim_checks
from .inplace import div_, mul_, sub_
from .join import Split, chunk, split, split_with_sizes
from .pointwise import _commit, _inplace, _quiet, _recording, _tname, exp2, lgamma
from .reduce import _return_type, cumprod, cumsum
from .reduce import sum as _sum
from .shape import clone, narrow

__all__ = [
    "cumsum_", "cumprod_", "divide_", "multiply_", "subtract_", "fill_diagonal_",
    "is_inference", "is_nonzero", "is_same_size", "get_device", "is_shared", "share_memory_",
    "sum_to_size", "narrow_copy", "resize_", "resize_as_",
    "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "apply_", "map_",
    "gcd", "gcd_", "lcm", "lcm_", "heaviside", "heaviside_", "ldexp", "ldexp_", "frexp", "i0", "i0_", "mvlgamma",
    "mvlgamma_",
    "slice_scatter", "select_scatter", "diagonal_scatter", "index_reduce", "index_reduce_", "new",
    "triangular_solve",
]

# The names torch also has at the top level (``torch.frexp`` ...): fabric.ops
# exports these to ``fabric``; the rest are Tensor methods only.
TOP_LEVEL = ["is_inference", "get_device", "narrow_copy", "resize_as_", "unsafe_chunk", "unsafe_split",
             "unsafe_split_with_sizes", "gcd_", "lcm_", "ldexp", "ldexp_", "frexp", "i0", "i0_", "mvlgamma",
             "index_reduce", "gcd", "lcm", "slice_scatter", "select_scatter", "diagonal_scatter",
             "triangular_solve", "is_nonzero", "is_same_size", "heaviside"]

_ndarray = np.ndarray


def _const(array):
    return Tensor._make(array, False)


def _inplace_from(self, compute, others=(), saves_self=True):
    """``self.<op>_(...)`` for a composite op: ``compute(t)`` builds the
    out-of-place result from ``t`` (``self`` or, when autograd records and
    backward reads ``self``'s old value, a copy keeping its history), which
    is then written into ``self`` (see :func:`fabric.ops.pointwise._inplace`)."""
    if _recording(self, (self,) + tuple(others)):
        src = self
        if saves_self:
            src = Tensor._make(self._data.copy(), self._requires_grad, self.grad_fn, self._output_nr)
        return _commit(self, compute(src), True)
    return _commit(self, compute(self), False)


# --- in-place aliases and scans -------------------------------------------------------------

divide_ = div_
multiply_ = mul_
subtract_ = sub_


def _scan_(self, dim, dtype, fn, name, saves_self):
    x = self._data
    if dtype is not None and D.to_dtype(dtype).np != x.dtype:
        names = {"int64": "long int", "float32": "float", "float64": "double", "int32": "int", "float16": "c10::Half",
                 "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}
        raise RuntimeError(f"Bad in-place call: input tensor dtype {names.get(str(x.dtype), x.dtype)} and output "
                           f"tensor dtype {names.get(str(D.to_dtype(dtype).np), dtype)} should match")
    if x.dtype == np.bool_:
        raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'")
    return _inplace_from(self, lambda t: fn(t, dim), (), saves_self)


def cumsum_(self, dim, *, dtype=None):
    """In-place :func:`fabric.cumsum` (``dtype``, if given, must be ``self``'s).

    Example::

        >>> fabric.tensor([1., 2., 3.]).cumsum_(0)
        tensor([1., 3., 6.])
    """
    return _scan_(self, dim, dtype, cumsum, "cumsum", False)


def cumprod_(self, dim, *, dtype=None):
    """In-place :func:`fabric.cumprod`.

    Example::

        >>> fabric.tensor([1, 2, 3]).cumprod_(0)
        tensor([1, 2, 6])
    """
    return _scan_(self, dim, dtype, cumprod, "cumprod", True)


# --- fill_diagonal_ ---------------------------------------------------------------------------

def _diagonal_positions(shape, wrap):
    """Index arrays (host side) of the main diagonal of ``shape``, PyTorch's
    (and NumPy's ``fill_diagonal``) rules: all dims equal beyond 2-D; a tall
    matrix restarts every ``cols + 1`` rows when ``wrap``."""
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    if len(shape) == 2:
        rows, cols = shape
        if wrap and rows > cols + 1:
            flat = np.arange(0, rows * cols, cols + 1)
            return (flat // cols, flat % cols) if cols else (flat[:0], flat[:0])
        n = min(rows, cols)
        return (np.arange(n),) * 2
    return (np.arange(shape[0]),) * len(shape)


class FillDiagonal(Function):
    _array_forward = True
    _is_inplace = True
    _node_name = "FillDiagonalBackward0"

    @staticmethod
    def forward(ctx, x, key, value):
        ctx.key = key
        x[key] = value
        return x

    @staticmethod
    def backward(ctx, gy):
        if gy._requires_grad:  # double backward: a differentiable product with a constant mask
            mask = xp_of(gy._data).ones(gy._data.shape, gy._data.dtype)
            mask[ctx.key] = 0
            return gy * _const(mask), None, None
        g = clone(gy)
        g._data[ctx.key] = 0  # a fresh tensor outside any graph
        return g, None, None


def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal with ``fill_value`` in place (2-D, or N-D with
    all dims equal); ``wrap`` restarts the diagonal below a tall matrix.

    Example::

        >>> fabric.zeros(5, 2).fill_diagonal_(1, wrap=True)
        tensor([[1., 0.],
                [0., 1.],
                [0., 0.],
                [1., 0.],
                [0., 1.]])
    """
    if isinstance(fill_value, Tensor):
        if fill_value._data.ndim != 0:
            raise TypeError("fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not Tensor")
        fill_value = fill_value.item()
    if not isinstance(fill_value, numbers.Number):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not "
                        f"{type(fill_value).__name__}")
    x = self._data
    rows_cols = _diagonal_positions(x.shape, wrap)
    xp = xp_of(x)
    key = rows_cols if xp is np else tuple(xp.asarray(k) for k in rows_cols)
    return _apply(FillDiagonal, (self, None, None), (x, key, fill_value))


# --- predicates and attributes ---------------------------------------------------------------

def is_inference(input) -> bool:
    """False: fabric has no inference tensors (``inference_mode`` acts as
    ``no_grad``; its results are ordinary tensors)."""
    return False


def is_nonzero(input) -> bool:
    """The truth value of a one-element tensor.

    Example::

        >>> fabric.tensor([0.5]).is_nonzero()
        True
    """
    n = input._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input._data.reshape(-1)[0])


def is_same_size(input, other) -> bool:
    """Whether two tensors have the same shape.

    Example::

        >>> fabric.is_same_size(fabric.ones(2), fabric.zeros(2))
        True
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    return input._data.shape == other._data.shape


def get_device(input) -> int:
    """-1 for a CPU tensor, the device index for a CUDA tensor.

    Example::

        >>> fabric.zeros(1).get_device()
        -1
    """
    d = input._data
    return -1 if d.__class__ is _ndarray else builtins.int(d.device.id)


def _output_nr(self) -> int:
    """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
    return self._output_nr


def is_shared(self) -> bool:
    """Whether the data lives in shared memory (after :func:`share_memory_`,
    in a DataLoader worker's batch, or any CUDA tensor)."""
    d = self._data
    if d.__class__ is not _ndarray:
        return True
    return _shared_memory.in_shared_mapping(d)


def share_memory_(self):
    """Move a CPU tensor's data into anonymous shared memory, which other
    processes can map (forked children, and any process the tensor is sent
    to through ``fabric.multiprocessing``); a no-op for CUDA tensors and
    shared data.  Views made before the call keep the old memory; calling it
    on a view raises.

    Example::

        >>> t = fabric.ones(2).share_memory_()
        >>> t.is_shared()
        True
    """
    d = self._data
    if d.__class__ is not _ndarray or _shared_memory.in_shared_mapping(d):
        return self
    if self._base is not None:
        raise RuntimeError("share_memory_(): fabric cannot move a view into shared memory; call it on the base "
                           "tensor before taking views")
    if not _shared_memory.available:
        return self
    arr = _shared_memory.empty(d.shape, d.dtype)
    arr[...] = d
    self._data = arr
    return self


# --- sum_to_size, narrow_copy, activations ----------------------------------------------------

def sum_to_size(self, *size):
    """Sum ``self`` down to ``size`` (the reverse of ``expand``); returns
    ``self`` when the sizes already match.

    Example::

        >>> fabric.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    size = shape_args(size, "size")
    shape = self._data.shape
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if size == shape:
        return self
    r = self
    if lead:
        r = _sum(r, tuple(range(lead)))
    keep = tuple(i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    if keep:
        r = _sum(r, keep, keepdim=True)
    return r


def narrow_copy(input, dim, start, length):
    """A copy (not a view) of ``input.narrow(dim, start, length)``.

    Example::

        >>> fabric.arange(5).narrow_copy(0, 1, 2)
        tensor([1, 2])
    """
    return clone(narrow(input, dim, start, length))


# --- resize_ ------------------------------------------------------------------------------------

def resize_(self, *sizes, memory_format=None):
    """Change the shape in place, keeping the leading elements (in C order);
    new elements are zeros.  Raises for tensors that require grad and for
    views (a view cannot change its base's memory).

    Example::

        >>> fabric.arange(6.).resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    shape = shape_args(sizes, "size")
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    x = self._data
    if shape == x.shape:
        return self
    if self._base is not None:
        raise RuntimeError("resize_(): fabric cannot resize a view to a new shape (its memory belongs to the base "
                           "tensor); resize a copy (.clone()) or the base instead")
    n = math.prod(shape)
    if n <= x.size and x.flags.c_contiguous:
        new = x.reshape(-1)[:n].reshape(shape)  # same memory: other views keep seeing it
    else:
        new = xp_of(x).zeros(shape, x.dtype)
        k = builtins.min(n, x.size)
        new.reshape(-1)[:k] = x.reshape(-1)[:k]
    self._data = new
    self._bump_version()
    return self


def resize_as_(input, the_template, *, memory_format=None):
    """:func:`resize_` to ``the_template``'s shape (the dtype is kept)."""
    return resize_(input, the_template._data.shape)


# --- unsafe splits ------------------------------------------------------------------------------

class UnsafeSplit(Split):
    """Like ``split`` but the pieces are not tracked as views (they share
    memory with the input; modifying one in place is allowed, as in PyTorch)."""
    _node_name = "UnsafeSplitBackward0"


def _unsafe(input, pieces, dim):
    if not pieces:
        return ()
    d = _wrap_dim(dim, input._data.ndim)
    bounds, start = [], 0
    for p in pieces:
        bounds.append((start, start + p._data.shape[d]))
        start += p._data.shape[d]
    bounds = tuple(bounds)
    return _apply(UnsafeSplit, (input, d, bounds), (input._data, d, bounds))


def unsafe_chunk(input, chunks, dim=0):
    """:func:`fabric.chunk` without view tracking."""
    return _unsafe(input, chunk(input.detach(), chunks, dim), dim)


def unsafe_split(input, split_size, dim=0):
    """:func:`fabric.split` without view tracking."""
    return _unsafe(input, split(input.detach(), split_size, dim), dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """:func:`fabric.split_with_sizes` without view tracking."""
    return _unsafe(input, split_with_sizes(input.detach(), split_sizes, dim), dim)


# --- apply_ / map_ -------------------------------------------------------------------------------

def _python_caster(dtype):
    return builtins.bool if dtype.kind == "b" else builtins.int if dtype.kind in "iu" else builtins.float


def _check_callable_target(self, name):
    if self._data.__class__ is not _ndarray:
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


def apply_(self, callable):
    """Replace every element ``v`` by ``callable(v)`` (a Python number), in
    place; CPU only, and slow (one Python call per element).

    Example::

        >>> fabric.tensor([1, 2, 3]).apply_(lambda v: v * 10)
        tensor([10, 20, 30])
    """
    _check_callable_target(self, "apply_")
    x = self._data
    cast = _python_caster(x.dtype)
    vals = np.fromiter((cast(callable(v)) for v in x.ravel().tolist()), x.dtype, count=x.size)
    x[...] = vals.reshape(x.shape)
    self._bump_version()
    return self


def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` elementwise in place
    (``tensor`` broadcast to ``self``'s shape, of ``self``'s dtype); CPU only.

    Example::

        >>> fabric.tensor([1., 2.]).map_(fabric.tensor([10., 20.]), lambda a, b: a + b)
        tensor([11., 22.])
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'other' (position 1) must be Tensor, not {type(tensor).__name__}")
    _check_callable_target(self, "map_")
    x, y = self._data, tensor._data
    if y.dtype != x.dtype:
        raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
    if y.__class__ is not _ndarray:
        raise TypeError("map_ is only implemented on CPU tensors")
    try:
        yb = np.broadcast_to(y, x.shape)
    except ValueError:
        raise RuntimeError(f"The expanded size of the tensor must match the existing size: cannot expand "
                           f"{list(y.shape)} to {list(x.shape)}") from None
    cast = _python_caster(x.dtype)
    vals = np.fromiter((cast(callable(a, b)) for a, b in zip(x.ravel().tolist(), yb.ravel().tolist())), x.dtype,
                       count=x.size)
    x[...] = vals.reshape(x.shape)
    self._bump_version()
    return self


# --- gcd / lcm / heaviside ---------------------------------------------------------------------

def _integer_operands(input, other, name):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    _, _, x, y = binary_operands(input, other)
    if x.dtype.kind not in "iu":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_tname(x.dtype)}'")
    return x, y


def gcd(input, other):
    """Elementwise greatest common divisor of integer tensors (non-negative).

    Example::

        >>> fabric.gcd(fabric.tensor([12, -4, 0]), fabric.tensor([18, 6, 0]))
        tensor([6, 2, 0])
    """
    x, y = _integer_operands(input, other, "gcd")
    return _const(xp_of(x).gcd(x, y))


def lcm(input, other):
    """Elementwise least common multiple of integer tensors (non-negative).

    Example::

        >>> fabric.tensor([4, 3]).lcm(fabric.tensor([6, -5]))
        tensor([12, 15])
    """
    x, y = _integer_operands(input, other, "lcm")
    return _const(xp_of(x).lcm(x, y))


def gcd_(input, other):
    """In-place :func:`gcd`."""
    return _commit(input, gcd(input, other), False)


def lcm_(input, other):
    """In-place :func:`lcm`."""
    return _commit(input, lcm(input, other), False)


class Heaviside(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, v):
        xp = xp_of(x)
        return xp.where(x == 0, v, (x > 0).astype(x.dtype)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, gy):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


def _heaviside_checks(input, values, name, position):
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position {position}) must be Tensor, "
                        f"not {type(values).__name__}")
    if values._data.dtype != input._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


def heaviside(input, values, *, out=None):
    """0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0``
    (``values`` a tensor of ``input``'s dtype, broadcast; no derivative, as PyTorch).

    Example::

        >>> fabric.heaviside(fabric.tensor([-1.0, 0.0, 2.0]), fabric.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    _heaviside_checks(input, values, "heaviside", 2)
    x, v = _same_device(input, values, input._data, values._data)
    r = _apply(Heaviside, (input, values), (x, v))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


def heaviside_(self, values):
    """In-place ``heaviside``: 0 where ``self < 0``, ``values`` where
    ``self == 0``, 1 where ``self > 0`` (``values`` of ``self``'s dtype)."""
    _heaviside_checks(self, values, "heaviside_", 1)
    return _inplace(self, Heaviside, (self, values), [self._data, values._data], False)


# --- ldexp / frexp ----------------------------------------------------------------------------

def ldexp(input, other, *, out=None):
    """``input * 2 ** other`` (a float result, differentiable in both).

    Example::

        >>> fabric.ldexp(fabric.tensor([1.0, 3.0]), fabric.tensor([2, -1]))
        tensor([4.0000, 1.5000])
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    rt = D.result_type(input, other)
    if not rt.is_floating_point:
        rt = D.get_default_dtype()
    # 2 ** other in the result dtype (float64 reaches 2 ** 1023); exact for integer exponents
    r = mul(input if input.dtype is rt else input.to(rt), exp2(other if other.dtype is rt else other.to(rt)))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


def ldexp_(input, other):
    """In-place :func:`ldexp` (``input`` must be floating)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"ldexp can't be cast to the desired output type {_tname(input._data.dtype)}")
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp_(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return _inplace_from(input, lambda t: ldexp(t, other), (other,), saves_self=True)


_frexp_t = _return_type("frexp", ("mantissa", "exponent"))


class Frexp(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        xp = xp_of(x)
        m, e = xp.frexp(x)
        e = e.astype(np.int32, copy=False)
        ctx.e = e
        return m, e

    @staticmethod
    def backward(ctx, gm, ge):
        e = ctx.e
        xp = xp_of(e)
        scale = xp.ldexp(xp.ones((), gm._data.dtype), -e)
        return gm * _const(scale)


def frexp(input, *, out=None):
    """``input = mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1``;
    returns ``(mantissa, exponent)`` (exponent int32).

    Example::

        >>> fabric.frexp(fabric.tensor([8.0, 0.75]))
        fabric.return_types.frexp(
        mantissa=tensor([0.5000, 0.7500]),
        exponent=tensor([4, 0], dtype=fabric.int32))
    """
    if input._data.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = _apply1(Frexp, input, (input._data,))
    if out is not None:
        from .inplace import copy_into_out

        copy_into_out(out[0], m)
        copy_into_out(out[1], e)
        return _frexp_t(out[0], out[1])
    return _frexp_t(m, e)


# --- triangular_solve (the deprecated spelling of linalg.solve_triangular) ---------------------

_triangular_solve_t = _return_type("triangular_solve", ("solution", "cloned_coefficient"))
_TRIANGULAR_SOLVE_WARNED = [False]


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solve ``op(A) X = input`` for triangular ``A`` (``op`` transposes when
    ``transpose``); returns ``(solution, cloned_coefficient)``, batches
    broadcast. Deprecated in PyTorch in favour of ``linalg.solve_triangular``.

    Example::

        >>> A = fabric.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> fabric.triangular_solve(fabric.tensor([[3.0], [4.0]]), A).solution
        tensor([[1.],
                [1.]])
    """
    import warnings

    from .linalg import linalg_solve_triangular

    for t, name in ((input, "b"), (A, "A")):
        if t.dim() < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                               f"{t.dim()} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           "matrices")
    if input.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_tname(input._data.dtype)} "
                           f"and A of type {_tname(A._data.dtype)} instead.")
    if not _TRIANGULAR_SOLVE_WARNED[0]:  # PyTorch warns once per process
        _TRIANGULAR_SOLVE_WARNED[0] = True
        warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be "
                      "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    batch = tuple(np.broadcast_shapes(tuple(input.shape[:-2]), tuple(A.shape[:-2])))
    a = A.expand(*batch, *A.shape[-2:]) if tuple(A.shape[:-2]) != batch else A
    b = input.expand(*batch, *input.shape[-2:]) if tuple(input.shape[:-2]) != batch else input
    x = linalg_solve_triangular(a.mT if transpose else a, b, upper=bool(upper) != bool(transpose),
                                unitriangular=unitriangular)
    coeff = a.clone()
    if out is not None:
        from .inplace import copy_into_out

        copy_into_out(out[0], x)
        copy_into_out(out[1], coeff)
        return _triangular_solve_t(out[0], out[1])
    return _triangular_solve_t(x, coeff)


# --- i0 (and i1, its derivative) ----------------------------------------------------------------
#
# I_nu(x) for nu in {0, 1} in float64: the power series
#     sum_k (x/2)^(2k+nu) / (k! (k+nu)!)          (all terms positive: no cancellation)
# for |x| <= 30 (48 terms reach 1e-18 relative there), and the asymptotic series
#     e^x / sqrt(2 pi x) * sum_k (-1)^k a_k / x^k,  a_k = a_{k-1} (4 nu^2 - (2k-1)^2) / (8k)
# beyond (25 terms: truncation error below 1e-19 at x = 30).  Measured against
# torch.special.i0/i1 (Cephes) in float64: within a few 1e-15 relative.
_SERIES_MAX = 30.0
_SERIES_TERMS = 48
_ASYMPTOTIC_TERMS = 25


def _asymptotic_coeffs(nu):
    a, out = 1.0, [1.0]
    for k in range(1, _ASYMPTOTIC_TERMS + 1):
        a *= (4.0 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k)
        out.append(a * (-1) ** k)
    return out[::-1]  # highest power first, for Horner


_ASYM = {0: _asymptotic_coeffs(0), 1: _asymptotic_coeffs(1)}


def _bessel_i(x, nu, scaled=False):
    """I_0 or I_1 of a float array, evaluated in float64 (``scaled``: ``exp(-|x|) I_nu(x)``,
    finite for every finite x; fabric.special.i0e/i1e)."""
    xp = xp_of(x)
    dt = x.dtype
    with _quiet():
        a = xp.abs(x.astype(np.float64))
        xs = xp.minimum(a, _SERIES_MAX) * 0.5
        q = xs * xs
        term = xs.copy() if nu else xp.ones_like(xs)
        s = term.copy()
        for k in range(1, _SERIES_TERMS):
            term *= q
            term /= k * (k + nu)
            s += term
        if scaled:
            s *= xp.exp(-2.0 * xs)
        big = a > _SERIES_MAX
        if a.size and builtins.bool(big.any()):
            xl = xp.maximum(a, _SERIES_MAX)
            z = 1.0 / xl
            c = _ASYM[nu]
            acc = xp.full(xl.shape, c[0])
            for ck in c[1:]:
                acc *= z
                acc += ck
            scale = 1.0 if scaled else xp.exp(xl)
            s = xp.where(big, scale / xp.sqrt(2.0 * math.pi * xl) * acc, s)
        s = xp.where(xp.isnan(a), a, s)
        if nu:
            s = xp.copysign(s, x)
    return s.astype(dt, copy=False)


class I0(Function):
    _array_forward = True
    _node_name = "I0Backward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _bessel_i(x, 0)

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        return gy * _i1(x)


class I1(Function):
    _array_forward = True
    _node_name = "SpecialI1Backward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _bessel_i(x, 1)

    @staticmethod
    def backward(ctx, gy):
        from .pointwise import where

        x, = ctx.saved_tensors
        zero = x == 0
        safe = where(zero, 1.0, x)  # I1'(x) = I0(x) - I1(x)/x, -> 1/2 at 0
        return gy * where(zero, 0.5, i0(x) - _i1(safe) / safe)


def _i1(x):
    return _apply1(I1, x, (x._data,))


def i0(input, *, out=None):
    """Modified Bessel function of the first kind, order 0 (float result;
    its gradient is I1, computed internally).

    Example::

        >>> fabric.i0(fabric.tensor([0.0, 1.0]))
        tensor([1.0000, 1.2661])
    """
    r = _apply1(I0, input, (float_array(input._data),))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


def i0_(input):
    """In-place :func:`i0` (floating tensors)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_tname(input._data.dtype)}")
    return _inplace(input, I0, (input,), [input._data], True)


# --- mvlgamma -------------------------------------------------------------------------------------

def mvlgamma(input, p):
    """Multivariate log-gamma of dimension ``p``:
    ``p(p-1)/4 log(pi) + sum_{j<p} lgamma(input - j/2)``.

    Example::

        >>> fabric.mvlgamma(fabric.tensor([2.5]), 2)
        tensor([0.8570])
    """
    if isinstance(p, builtins.bool) or not isinstance(p, numbers.Integral):
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
    p = builtins.int(p)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input
    if x._data.dtype.kind != "f":
        x = x.to(D.get_default_dtype())
    xd = x._data
    offsets = _const(xp_of(xd).arange(p, dtype=xd.dtype) * xd.dtype.type(-0.5))
    r = _sum(lgamma(x.unsqueeze(-1) + offsets), -1)
    return r + (p * (p - 1) / 4.0) * math.log(math.pi)


def mvlgamma_(input, p):
    """In-place :func:`mvlgamma` (floating tensors)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"mvlgamma: result type {_tname(input._data.dtype)} can't be cast to the desired output "
                           "type Float")
    return _inplace_from(input, lambda t: mvlgamma(t, p), (), saves_self=True)


# --- slice_scatter / select_scatter / diagonal_scatter -------------------------------------------

def _size_error(src_shape, slice_shape):
    return RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src_shape)}, "
                        f"slice size = {list(slice_shape)}")


class _EmbedScatter(Function):
    """``input`` with the region ``where`` (a key or a diagonal spec)
    replaced by ``src``: backward gives ``input`` the gradient outside the
    region and ``src`` the region's gradient, both with differentiable ops."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, src, spec):
        ctx.spec = spec
        out = x.copy()
        _region_assign(out, spec, src)
        return out

    @staticmethod
    def backward(ctx, gy):
        spec = ctx.spec
        gx = gsrc = None
        region = _region_of(gy, spec)
        if ctx.needs_input_grad[0]:
            gx = _embed(gy, region * 0, spec)
        if ctx.needs_input_grad[1]:
            gsrc = clone(region)
        return gx, gsrc, None


def _region_assign(out, spec, src):
    kind, arg = spec
    if kind == "key":
        out[arg] = src
    else:
        offset, d1, d2 = arg
        xp = xp_of(out)
        moved = xp.moveaxis(out, (d1, d2), (-2, -1))
        n1, n2 = moved.shape[-2:]
        if offset >= 0:
            n = builtins.max(builtins.min(n1, n2 - offset), 0)
            r, c = xp.arange(n), xp.arange(n) + offset
        else:
            n = builtins.max(builtins.min(n1 + offset, n2), 0)
            r, c = xp.arange(n) - offset, xp.arange(n)
        moved[..., r, c] = src


def _region_of(t, spec):
    kind, arg = spec
    return t[arg] if kind == "key" else t.diagonal(*arg)


def _embed(input, src, spec):
    s = src._data
    if s.dtype != input._data.dtype:
        s = s.astype(input._data.dtype)
    return _apply(_EmbedScatter, (input, src, spec), (input._data, s, spec))


def _check_src(input, src, spec, name):
    if not isinstance(src, Tensor):
        raise TypeError(f"{name}(): argument 'src' (position 2) must be Tensor, not {type(src).__name__}")
    slice_shape = _region_of(input.detach(), spec)._data.shape
    if src._data.shape != slice_shape:
        raise _size_error(src._data.shape, slice_shape)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``input[..., start:end:step, ...]`` (along
    ``dim``) replaced by ``src``; differentiable in both.

    Example::

        >>> fabric.zeros(2, 4).slice_scatter(fabric.ones(2, 2), 1, 0, None, 2)
        tensor([[1., 0., 1., 0.],
                [1., 0., 1., 0.]])
    """
    if step is None:
        step = 1
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, input._data.ndim)
    spec = ("key", (slice(None),) * d + (slice(start, end, step),))
    _check_src(input, src, spec, "slice_scatter")
    return _embed(input, src, spec)


def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``input.select(dim, index)`` replaced by ``src``.

    Example::

        >>> fabric.zeros(2, 2).select_scatter(fabric.ones(2), 0, -1)
        tensor([[0., 0.],
                [1., 1.]])
    """
    x = input._data
    d = _wrap_dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension {d}")
    spec = ("key", (slice(None),) * d + (builtins.int(index) % n,))
    _check_src(input, src, spec, "select_scatter")
    return _embed(input, src, spec)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``input.diagonal(offset, dim1, dim2)``
    replaced by ``src``.

    Example::

        >>> fabric.zeros(2, 2).diagonal_scatter(fabric.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    nd = input._data.ndim
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    spec = ("diag", (builtins.int(offset), d1, d2))
    _check_src(input, src, spec, "diagonal_scatter")
    return _embed(input, src, spec)


# --- index_reduce -----------------------------------------------------------------------------------

class IndexReduce(ScatterReduce):
    """``index_reduce`` is ``scatter_reduce`` with the index broadcast along
    ``dim``: the forward and the gradient formulas are scatter_reduce's."""
    _node_name = "IndexReduceBackward0"


class IndexReduceInplace(ScatterReduceInplace):
    _node_name = "IndexReduceBackward0"


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce(input, dim, index, source, reduce, include_self, inplace):
    name = "index_reduce_"
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    x = input._data
    if not isinstance(source, Tensor):
        raise TypeError(f"index_reduce(): argument 'source' must be Tensor, not {type(source).__name__}")
    if isinstance(index, Tensor) and index._data.dtype.kind != "i" and index._data.dtype != np.uint8:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {index.dtype}".replace(
            "torch.", "").replace("float32", "Float").replace("float64", "Double"))
    a = _index(index, x, name)
    d = _wrap_dim(dim, x.ndim)
    s = source._data
    if s.__class__ is not x.__class__:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices!")
    if a.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, but got dim: {a.ndim} with type: "
                         f"{_tname(a.dtype)} and size: {list(a.shape)}")
    _index_dim_checks(x, d, a, s, name, exc=IndexError)
    xp = xp_of(x)
    a = a.reshape(-1).astype(np.int64, copy=False)
    a = xp.where(a < 0, a + (x.shape[d] if x.ndim else 1), a)
    if x.ndim:
        full = xp.ascontiguousarray(xp.broadcast_to(a.reshape((-1,) + (1,) * (x.ndim - d - 1)), s.shape))
    else:
        full = a.reshape(())
    cls = IndexReduceInplace if inplace else IndexReduce
    return _apply(cls, (input, d, full, source, reduce, include_self), (x, d, full, s, reduce, include_self))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of ``input`` where ``source``'s slices along ``dim`` are
    combined into the slices ``index`` names, with ``reduce`` in ``prod``,
    ``mean``, ``amax``, ``amin`` (``include_self=False`` leaves out the
    original values of the slices that receive something); differentiable.

    Example::

        >>> x = fabric.full((3, 2), 2.0)
        >>> x.index_reduce(0, fabric.tensor([0, 2, 0]), fabric.tensor([[1., 2.], [3., 4.], [5., 6.]]), "prod")
        tensor([[10., 24.],
                [ 2.,  2.],
                [ 6.,  8.]])
    """
    return _index_reduce(input, dim, index, source, reduce, include_self, False)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place :func:`index_reduce`."""
    return _index_reduce(self, dim, index, source, reduce, include_self, True)


# --- Tensor.new ---------------------------------------------------------------------------------------

def new(self, *args, device=None):
    """Legacy constructor of ``self``'s dtype and device: ``new()`` is empty,
    ``new(2, 3)`` / ``new(Size)`` zeros of that size (PyTorch: uninitialised),
    ``new(data)`` a tensor of the data, ``new(tensor)`` shares its memory.

    Example::

        >>> fabric.zeros(1, dtype=fabric.int32).new([1, 2])
        tensor([1, 2], dtype=fabric.int32)
    """
    from .._creation import tensor as _tensor
    from .._creation import zeros

    dev = self.device if device is None else device
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        if t._data.dtype != self._data.dtype:
            raise TypeError(f"expected {self.dtype} (got {t.dtype})")
        return Tensor._make(t._data, False, None, 0, t._shared_vc())
    if not args:
        return zeros(0, dtype=self.dtype, device=dev)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, builtins.bool) for a in args):
        return zeros(*args, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Size):
        return zeros(*args[0], dtype=self.dtype, device=dev)
    if len(args) == 1:
        return _tensor(args[0], dtype=self.dtype, device=dev)
    raise TypeError(f"new() received an invalid combination of arguments: {args!r}")


# ``output_nr`` is a read-only attribute, not a method: installed here.
if "output_nr" not in Tensor.__dict__:
    Tensor.output_nr = property(_output_nr, doc=_output_nr.__doc__)
