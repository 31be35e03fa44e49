"""A tiny define-by-run demo: fit y = 3x + 2 by gradient descent with
fabric's autograd (run: python examples/autograd_demo.py)."""
import fabric as torch

torch.manual_seed(0)
x = torch.linspace(-1, 1, 64).reshape(64, 1)
y = 3 * x + 2
w = torch.zeros(1, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(200):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
        w.grad = None
        b.grad = None
    if step % 50 == 0:
        print(f"step {step:3d}  loss {loss.item():.6f}")
print(f"w = {w.item():.4f}, b = {b.item():.4f} (expected 3, 2)")
