"""Forward AD through the ops' jvp rules: custom ``autograd.Function.jvp`` (ctx and setup_context
styles, ``save_for_forward``), the fallback to double backward, and PyTorch parity of hand-written rules."""
import numpy as np
import pytest

import fabric
import fabric.autograd.forward_ad as fwAD
from fabric.autograd import Function
from fabric.autograd.function import once_differentiable

RS = np.random.RandomState(3)


def t64(a):
    return fabric.tensor(np.asarray(a, dtype=np.float64))


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, gy):   # not differentiable: the double-backward fallback could not use it
        x, = ctx.saved_tensors
        return gy * 3 * x ** 2

    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return 3 * x ** 2 * t


class ScaledAdd(Function):
    """setup_context style, two inputs and a non-tensor argument."""

    @staticmethod
    def forward(x, y, alpha):
        return x + alpha * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    @staticmethod
    def backward(ctx, gy):
        return gy, ctx.alpha * gy, None

    @staticmethod
    def jvp(ctx, tx, ty, _):
        return tx + ctx.alpha * ty


class NoJvp(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, gy):
        return gy * 2


def test_custom_function_jvp_is_called():
    x, t = t64(RS.randn(4)), t64(RS.randn(4))
    with fwAD.dual_level():
        y = Cube.apply(fwAD.make_dual(x, t)).sin()
        got = fwAD.unpack_dual(y).tangent
        assert fwAD.last_path[0] == "rules"
    np.testing.assert_allclose(got.numpy(), np.cos(x.numpy() ** 3) * 3 * x.numpy() ** 2 * t.numpy(), rtol=1e-12)


def test_setup_context_style_and_untangented_inputs():
    x, y, tx = t64(RS.randn(3)), t64(RS.randn(3)), t64(RS.randn(3))
    with fwAD.dual_level():
        out = ScaledAdd.apply(fwAD.make_dual(x, tx), y.requires_grad_(), 2.5)   # y has no tangent: zeros
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), tx.numpy())
        ty = t64(RS.randn(3))
        out = ScaledAdd.apply(fwAD.make_dual(x, tx), fwAD.make_dual(y.detach(), ty), 2.5)
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), tx.numpy() + 2.5 * ty.numpy())


def test_function_without_jvp_takes_the_double_backward_fallback():
    x, t = t64(RS.randn(3)), t64(RS.randn(3))
    with fwAD.dual_level():
        y = NoJvp.apply(fwAD.make_dual(x, t)).exp()
        got = fwAD.unpack_dual(y).tangent
        assert fwAD.last_path[0] == "double backward"
    np.testing.assert_allclose(got.numpy(), 2 * np.exp(2 * x.numpy()) * t.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="must implement the jvp function"):
        Function.jvp(None, t)


def test_rules_and_fallback_agree_on_a_network():
    x, t = t64(RS.randn(5, 3)), t64(RS.randn(5, 3))
    w, b = t64(RS.randn(4, 3)), t64(RS.randn(4))

    def f(x):
        h = fabric.nn.functional.linear(x, w, b).tanh()
        return (h.softmax(-1) * h.log_softmax(0)).reshape(-1)[2:].sum() / h.mean()

    with fwAD.dual_level():
        got = fwAD.unpack_dual(f(fwAD.make_dual(x, t))).tangent
        assert fwAD.last_path[0] == "rules"
    _, ref = fabric.func.jvp(f, (x,), (t,))   # double vjp
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10)


@pytest.mark.torch
def test_rules_match_torch_forward_ad():
    import torch
    import torch.autograd.forward_ad as tfw

    xn, tn = RS.randn(4, 3), RS.randn(4, 3)
    wn, bn, twn = RS.randn(2, 3), RS.randn(2), RS.randn(2, 3)

    def f(L, x, w):
        F = L.nn.functional
        h = F.linear(x, w, L.tensor(bn)).permute(1, 0)
        return (L.cat([F.softmax(h, 0), F.log_softmax(h, dim=1), L.stack([h[0], h[1]])], 0) @ x[:, :2]).transpose(0, 1)

    with tfw.dual_level():
        ref = tfw.unpack_dual(f(torch, tfw.make_dual(torch.tensor(xn), torch.tensor(tn)),
                                tfw.make_dual(torch.tensor(wn), torch.tensor(twn)))).tangent.numpy()
    with fwAD.dual_level():
        got = fwAD.unpack_dual(f(fabric, fwAD.make_dual(t64(xn), t64(tn)), fwAD.make_dual(t64(wn), t64(twn))))
        assert fwAD.last_path[0] == "rules"
    np.testing.assert_allclose(got.tangent.numpy(), ref, rtol=1e-10)

    class TCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * t

    with tfw.dual_level():
        ref = tfw.unpack_dual(TCube.apply(tfw.make_dual(torch.tensor(xn), torch.tensor(tn)))).tangent.numpy()
    with fwAD.dual_level():
        got = fwAD.unpack_dual(Cube.apply(fwAD.make_dual(t64(xn), t64(tn)))).tangent.numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12)
