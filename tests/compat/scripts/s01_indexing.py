"""Indexing tutorial: basic, advanced, boolean, ellipsis/None, gather/scatter."""
import torch

torch.manual_seed(0)
x = torch.arange(24).reshape(2, 3, 4)
print(x)
print(x[1])
print(x[:, 1])
print(x[..., 2])
print(x[None, 0, :, None].shape)
print(x[0, [0, 2]])
print(x[[0, 1], [1, 2]])
print(x[[0, 1], :, [3, 0]])
print(x[:, [0, 2], 1:3])
print(x[x % 5 == 0])
print(x[-1, -1, -2:])
print(x[:, ::2, 1::2])
print(x[..., None].shape, x[:, None, ..., None].shape)

idx = torch.tensor([[0, 1], [1, 0]])
print(x[0][idx])
mask = torch.tensor([True, False, True])
print(x[:, mask])
print(x[1, mask, 0])

y = torch.zeros(3, 5)
y[1] = 1.5
y[:, 2] = torch.tensor([7.0, 8.0, 9.0])
y[y > 5] = -1
y[[0, 2], [4, 0]] = 3.25
y[..., -1] += 10
print(y)

src = torch.randn(3, 4)
print(src)
g = torch.gather(src, 1, torch.tensor([[0, 0], [1, 3], [2, 1]]))
print(g)
s = torch.zeros(3, 5).scatter_(1, torch.tensor([[0, 4], [1, 2], [3, 3]]), torch.ones(3, 2) * 2)
print(s)
sa = torch.zeros(3, 5).scatter_add(1, torch.tensor([[0, 0], [1, 2], [3, 3]]), torch.ones(3, 2))
print(sa)
ia = torch.zeros(5, 2).index_add(0, torch.tensor([0, 2, 2, 4]), torch.arange(8.).reshape(4, 2))
print(ia)
print(src.index_select(1, torch.tensor([3, 1])))
print(torch.where(src > 0, src, torch.zeros_like(src)))
print(torch.where(src > 0.5, 1.0, -1.0))
print(src.masked_fill(src < 0, float("-inf")))
print(torch.nonzero(src > 0))
print(torch.nonzero(src > 0, as_tuple=True))
print(torch.masked_select(src, src > 0))
print(src.argmax(), src.argmax(dim=1), src.max(dim=0))
t = torch.arange(10)
t[t > 5] = 0
print(t, t.dtype)
b = torch.tensor([[1, 2], [3, 4]])
b[b == 2] = 20
print(b.flip(0), b.roll(1, 1), torch.take(b, torch.tensor([0, 3])))
