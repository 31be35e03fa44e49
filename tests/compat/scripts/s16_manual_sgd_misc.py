"""Classic tutorial patterns: manual gradient descent, in-place updates under no_grad, hooks, saving tensors."""
import io

import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.linspace(-3, 3, 50)
y = torch.sin(x)
a, b, c, d = (torch.randn((), requires_grad=True) for _ in range(4))
lr = 1e-3
for t in range(200):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 50 == 49:
        print(t, f"{loss.item():.5f}")
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= lr * p.grad
            p.grad = None
print(f"y = {a.item():.5f} + {b.item():.5f} x + {c.item():.5f} x^2 + {d.item():.5f} x^3")
print(a, a.requires_grad, a.is_leaf)

w = torch.randn(3, 2, requires_grad=True)
v = w[0]
out = (v * 2).sum() + w.sum()
out.backward()
print(w.grad)
m = torch.zeros(4, requires_grad=True)
m2 = m.clone()
m2[1:3] = torch.tensor([1.0, 2.0])
(m2 * torch.arange(4.0)).sum().backward()
print(m.grad, m2)
z = torch.ones(3, requires_grad=True)
q = z * 3
q.mul_(2)
q.sum().backward()
print(z.grad, q.grad_fn.name(), type(q.grad_fn).__name__)

lin = nn.Linear(3, 2)
acts = {}
lin.register_forward_hook(lambda mod, inp, outp: acts.__setitem__("out", outp.detach()))
grads = []
lin.register_full_backward_hook(lambda mod, gin, gout: grads.append(gout[0].clone()))
lin(torch.ones(2, 3)).pow(2).sum().backward()
print(acts["out"], grads[0], lin.weight.grad)
print(lin)
print(lin.weight)

buf = io.BytesIO()
torch.save([torch.arange(3), torch.ones(2, dtype=torch.float64)], buf)
buf.seek(0)
print(torch.load(buf))
buf = io.BytesIO()
torch.save(lin.state_dict(), buf)
buf.seek(0)
print(sorted(torch.load(buf).keys()))

t = torch.arange(6.0).view(2, 3)
t.add_(1).mul_(2)
print(t, t.sub(1).div(2).floor().long())
u = t.view(-1)
u[0] = 100
print(t, u.storage_offset(), t[1].storage_offset())
print(t.unsqueeze(1).expand(2, 2, 3).sum(1))
print(torch.vstack([t, t]).shape, t.clamp_(max=10), t)
e = torch.empty(2, 3)
e.fill_(0.5)
e.zero_()
e[0].fill_(3)
print(e, e.sum(dim=(0, 1)), e.mean(dim=[0]))
print(torch.autograd.functional.vjp(lambda s: s ** 2, torch.tensor([1.0, 2.0]), torch.ones(2)))
print(torch.autograd.functional.jvp(lambda s: s.sin(), torch.tensor([0.0, 1.0]), torch.ones(2)))
