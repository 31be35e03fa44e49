"""Complex gradients follow PyTorch's convention: values and gradients of complex ops
against torch (complex128), and gradcheck/gradgradcheck of fabric alone (central
differences on the real and imaginary parts, fabric/autograd/gradcheck.py)."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(0)
A = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))) * 0.7
B = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))) * 0.7
M = (rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2)))
V = (rng.standard_normal(4) + 1j * rng.standard_normal(4))
CASES = {
 "add": (lambda T, a, b: a + b, (A, B)), "sub": (lambda T, a, b: a - b, (A, B)), "mul": (lambda T,a,b: a*b, (A,B)), "div": (lambda T,a,b: a/b, (A,B)),
 "pow_t": (lambda T,a,b: a**b, (A,B)), "pow_s": (lambda T,a: a**2.5, (A,)), "rpow": (lambda T,a: 2**a, (A,)), "pow_c": (lambda T,a: a**(1+1j), (A,)),
 "neg": (lambda T,a: -a, (A,)), "exp": (lambda T,a: a.exp(), (A,)), "log": (lambda T,a: a.log(), (A,)), "log2": (lambda T,a: a.log2(), (A,)),
 "sqrt": (lambda T,a: a.sqrt(), (A,)), "rsqrt": (lambda T,a: a.rsqrt(), (A,)), "reciprocal": (lambda T,a: a.reciprocal(), (A,)),
 "sin": (lambda T,a: a.sin(), (A,)), "cos": (lambda T,a: a.cos(), (A,)), "tan": (lambda T,a: a.tan(), (A,)),
 "asin": (lambda T,a: a.asin(), (A,)), "acos": (lambda T,a: a.acos(), (A,)), "atan": (lambda T,a: a.atan(), (A,)),
 "sinh": (lambda T,a: a.sinh(), (A,)), "cosh": (lambda T,a: a.cosh(), (A,)), "tanh": (lambda T,a: a.tanh(), (A,)),
 "asinh": (lambda T,a: a.asinh(), (A,)), "acosh": (lambda T,a: a.acosh(), (A,)), "atanh": (lambda T,a: a.atanh(), (A,)),
 "sigmoid": (lambda T,a: a.sigmoid(), (A,)), "expm1": (lambda T,a: a.expm1(), (A,)), "log1p": (lambda T,a: a.log1p(), (A,)), "exp2": (lambda T,a: a.exp2(), (A,)),
 "log10": (lambda T,a: a.log10(), (A,)), "sinc": (lambda T,a: a.sinc(), (A,)), "square": (lambda T,a: a.square(), (A,)),
 "abs": (lambda T,a: a.abs(), (A,)), "angle": (lambda T,a: a.angle(), (A,)), "sgn": (lambda T,a: a.sgn(), (A,)),
 "real": (lambda T,a: a.real, (A,)), "imag": (lambda T,a: a.imag, (A,)), "conj": (lambda T,a: a.conj() * a, (A,)),
 "sum": (lambda T,a: a.sum(), (A,)), "sum_dim": (lambda T,a: a.sum(1), (A,)), "mean": (lambda T,a: a.mean(0), (A,)), "prod": (lambda T,a: a.prod(1), (A,)), "prod_all": (lambda T,a: a.prod(), (A,)),
 "cumsum": (lambda T,a: a.cumsum(1), (A,)), "cumprod": (lambda T,a: a.cumprod(1), (A,)), "var": (lambda T,a: a.var(1), (A,)), "std": (lambda T,a: a.std(), (A,)),
 "norm": (lambda T,a: a.norm(), (A,)), "vector_norm": (lambda T,a: T.linalg.vector_norm(a, 3, dim=1), (A,)), "logsumexp": (lambda T,a: a.logsumexp(1), (A,)),
 "matmul": (lambda T,a,m: a @ m, (A, M)), "mm": (lambda T,a,m: T.mm(a, m), (A, M)), "mv": (lambda T,a,v: T.mv(a, v), (A, V)),
 "dot": (lambda T,a,b: T.dot(a, b), (V, V[::-1].copy())), "vdot": (lambda T,a,b: T.vdot(a, b), (V, V[::-1].copy())), "inner": (lambda T,a,b: T.inner(a, b), (A, B)),
 "outer": (lambda T,a,b: T.outer(a, b), (V, V)), "bmm": (lambda T,a,b: T.bmm(a.reshape(1,3,4), b.reshape(1,4,3)), (A, B)),
 "einsum": (lambda T,a,b: T.einsum("ij,kj->ik", a, b), (A, B)), "tensordot": (lambda T,a,b: T.tensordot(a, b, dims=([1],[1])), (A,B)),
 "trace": (lambda T,a: a[:, :3].trace(), (A,)), "diag": (lambda T,a: a.diagonal(), (A,)), "transpose": (lambda T,a: a.t() * 1, (A,)),
 "index": (lambda T,a: a[1:, ::2], (A,)), "cat": (lambda T,a,b: T.cat([a,b]), (A,B)), "stack": (lambda T,a,b: T.stack([a,b]), (A,B)), "where": (lambda T,a,b: T.where(a.abs() > 1, a, b), (A,B)),
 "flip": (lambda T,a: a.flip(0), (A,)), "roll": (lambda T,a: a.roll(1, 1), (A,)), "gather": (lambda T,a: a.gather(1, T.tensor([[0,1],[2,3],[1,1]])), (A,)),
 "view_as_real": (lambda T,a: T.view_as_real(a), (A,)), "view_as_complex": (lambda T,a: T.view_as_complex(T.view_as_real(a) * 2), (A,)),
 "lerp": (lambda T,a,b: T.lerp(a, b, 0.3), (A,B)), "addcmul": (lambda T,a,b: T.addcmul(a, a, b, value=0.5), (A,B)), "addcdiv": (lambda T,a,b: T.addcdiv(a, a, b, value=0.5), (A,B)),
 "addmm": (lambda T,a,m: T.addmm(a[:, :2], a, m), (A, M)), "kron": (lambda T,a,b: T.kron(a, b), (A[:2,:2].copy(), B[:2,:2].copy())),
 "logaddexp": (lambda T,a,b: T.logaddexp(a,b), (A,B)),
 "mul_real": (lambda T,a,b: a * b.real, (A,B)), "rsub": (lambda T,a: 1 - a, (A,)), "rdiv": (lambda T,a: (1+2j) / a, (A,)),
 "to_c128": (lambda T,a: a.to(T.complex128), (A,)), "polar": (lambda T,a: T.polar(a.abs(), a.angle()), (A,)),
 "complex": (lambda T,a,b: T.complex(a.real, b.imag), (A,B)),
 "flatten": (lambda T,a: a.flatten(), (A,)), "expand": (lambda T,a: a[:1].expand(3,4), (A,)), "repeat": (lambda T,a: a.repeat(2,1), (A,)),
 "masked_fill": (lambda T,a: a.masked_fill(a.real > 0, 1j), (A,)), "index_select": (lambda T,a: a.index_select(0, T.tensor([2,0])), (A,)),
 "dist": (lambda T,a,b: T.dist(a, b), (A,B)), "frobenius": (lambda T,a: T.linalg.norm(a), (A,)),
 "sub_alpha": (lambda T,a,b: T.sub(a, b, alpha=2), (A,B)), "pow_int": (lambda T,a: a**3, (A,)),
}


def _leaves(args):
    return [fabric.tensor(a, dtype=fabric.complex128, requires_grad=True) for a in args]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_and_gradgradcheck(name):
    fn, args = CASES[name]
    assert gradcheck(lambda *xs: fn(fabric, *xs), _leaves(args))
    assert gradgradcheck(lambda *xs: fn(fabric, *xs), _leaves(args))


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, args = CASES[name]
    ta = [torch.tensor(a, dtype=torch.complex128, requires_grad=True) for a in args]
    fa = _leaves(args)
    tr, fr = fn(torch, *ta), fn(fabric, *fa)
    assert str(fr.dtype).split(".")[1] == str(tr.dtype).split(".")[1]
    np.testing.assert_allclose(fr.detach().numpy(), tr.detach().numpy(), rtol=1e-9, atol=1e-12)
    g = np.random.default_rng(1).standard_normal(tuple(tr.shape))
    if tr.is_complex():
        g = g + 1j * np.random.default_rng(2).standard_normal(tuple(tr.shape))
    for ours, theirs in zip(fabric.autograd.grad(fr, fa, fabric.tensor(g)), torch.autograd.grad(tr, ta, torch.tensor(g))):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8, atol=1e-10)


def test_real_input_gets_the_real_part_of_a_complex_gradient():
    x = fabric.tensor([1.0, 2.0], requires_grad=True)
    (x * (2 + 3j)).imag.sum().backward()
    assert x.grad.dtype is fabric.float32 and x.grad.tolist() == [3.0, 3.0]


def test_backward_of_a_complex_output_needs_a_gradient():
    z = fabric.tensor([1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs"):
        (z * z).sum().backward()
    with pytest.raises(RuntimeError, match="^For complex Tensors, both grad_output and output are required"):
        (z * z).backward(fabric.ones(1))


def test_user_functions_receive_gradients_unchanged():
    class Double(fabric.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            return z * 2

        @staticmethod
        def backward(ctx, gy):
            return gy * 2

    z = fabric.tensor([1 + 1j], requires_grad=True)
    Double.apply(z).backward(fabric.tensor([1j]))
    assert z.grad.tolist() == [2j]
