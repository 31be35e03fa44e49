"""Autograd: custom Function, hooks, retain_grad, higher-order grads, jacobian."""
import torch
from torch.autograd.functional import jacobian, hessian


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        g = grad_output.clone()
        g[x < 0] = 0
        return g


class ScaleBy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


torch.manual_seed(4)
x = torch.randn(5, requires_grad=True)
y = MyReLU.apply(x)
y.sum().backward()
print(x, y, x.grad)
x.grad.zero_()
ScaleBy.apply(x, 3.0).pow(2).sum().backward()
print(x.grad)

a = torch.tensor([2.0, 3.0], requires_grad=True)
b = a * a
b.retain_grad()
grads = []
h = b.register_hook(lambda g: grads.append(g.clone()))
c = (b * torch.tensor([1.0, 10.0])).sum()
c.backward()
print(a.grad, b.grad, grads, a.is_leaf, b.is_leaf, b.grad_fn is not None, a.grad_fn)
h.remove()
a.register_hook(lambda g: g * 2)
a.grad = None
(a ** 3).sum().backward()
print(a.grad)

x = torch.tensor(1.5, requires_grad=True)
y = x ** 4
(g1,) = torch.autograd.grad(y, x, create_graph=True)
(g2,) = torch.autograd.grad(g1, x, create_graph=True)
(g3,) = torch.autograd.grad(g2, x)
print(g1, g2, g3)

w = torch.randn(3, requires_grad=True)
loss = (w.sin() * w).sum()
(gw,) = torch.autograd.grad(loss, w, create_graph=True)
pen = gw.pow(2).sum()
pen.backward()
print(gw.detach(), w.grad)


def f(v):
    return torch.stack([v[0] * v[1], v[1].exp(), v.sum() ** 2])


v = torch.tensor([0.5, -1.0])
print(jacobian(f, v))
print(hessian(lambda v: (v ** 3).sum() + v[0] * v[1], v))

z = torch.ones(2, 2, requires_grad=True)
out = (z * 3).mean()
out.backward(retain_graph=True)
out.backward()
print(z.grad)
with torch.no_grad():
    q = z * 2
print(q.requires_grad, z.detach().requires_grad, z.requires_grad_(False).requires_grad)

t = torch.randn(3, requires_grad=True)
u = t * 2
u.backward(torch.tensor([1.0, 0.1, 0.01]))
print(t.grad)
m = torch.randn(2, 3, requires_grad=True)
r = torch.nn.functional.softmax(m, dim=1)
r[:, 0].sum().backward()
print(m.grad)
p = torch.randn(4, requires_grad=True)
torch.autograd.backward([p.sum(), (p * p).sum()])
print(p.grad, torch.is_grad_enabled())
with torch.enable_grad():
    print(torch.is_grad_enabled())
torch.set_grad_enabled(False)
print((p * 2).requires_grad)
torch.set_grad_enabled(True)
k = torch.tensor([1.0, 2.0], requires_grad=True)
l = k.detach()
l += 1
print(k)
