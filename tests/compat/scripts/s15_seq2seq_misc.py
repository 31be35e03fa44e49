"""Misc research-code patterns: ReduceLROnPlateau/CosineAnnealing/OneCycle, custom Dataset, weight tying, ema."""
import copy

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, random_split


class Squares(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 3)
        self.y = (self.x ** 2).sum(1, keepdim=True)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "y": self.y[i]}


torch.manual_seed(0)
ds = Squares(40)
train, val = random_split(ds, [30, 10])
print(len(train), len(val), train.indices[:5])
loader = DataLoader(train, batch_size=8, shuffle=True)
model = nn.Sequential(nn.Linear(3, 32), nn.SiLU(), nn.Linear(32, 1))
ema = copy.deepcopy(model)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=1e-4)
for epoch in range(4):
    for batch in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(batch["x"]), batch["y"])
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.9).add_(pm, alpha=0.1)
    sched.step()
    with torch.no_grad():
        vx = torch.stack([val[i]["x"] for i in range(len(val))])
        vy = torch.stack([val[i]["y"] for i in range(len(val))])
        print(f"epoch {epoch} train {loss.item():.5f} val {nn.functional.mse_loss(model(vx), vy).item():.5f} "
              f"ema {nn.functional.mse_loss(ema(vx), vy).item():.5f} lr {opt.param_groups[0]['lr']:.6f}")

p = nn.Parameter(torch.ones(2))
opt = torch.optim.SGD([p], lr=1.0)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
for v in [1.0, 0.9, 0.95, 0.96, 0.97, 0.5]:
    plateau.step(v)
    print(opt.param_groups[0]["lr"], end=" ")
print()
opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
oc = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=6)
lrs = []
for _ in range(6):
    opt.step()
    lrs.append(round(oc.get_last_lr()[0], 6))
    oc.step()
print(lrs)
opt = torch.optim.SGD([p], lr=0.1)
ms = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.1)
ex = []
for _ in range(5):
    opt.step()
    ms.step()
    ex.append(opt.param_groups[0]["lr"])
print([f"{v:.6g}" for v in ex])
opt = torch.optim.SGD([p], lr=0.1)
lam = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e)
for _ in range(3):
    opt.step()
    lam.step()
print(lam.get_last_lr())

emb = nn.Embedding(10, 4)
dec = nn.Linear(4, 10, bias=False)
dec.weight = emb.weight
print(dec.weight is emb.weight, len(list(nn.ModuleList([emb, dec]).parameters())))
tok = torch.tensor([[1, 2, 3], [4, 5, 6]])
logits = dec(emb(tok))
loss = nn.functional.cross_entropy(logits.view(-1, 10), tok.view(-1))
loss.backward()
print(f"{loss.item():.6f}", emb.weight.grad.abs().sum())
print(torch.nn.utils.parameters_to_vector(dec.parameters()).shape)
x = torch.randn(4, 6)
bn = nn.BatchNorm1d(6, momentum=None)
for _ in range(3):
    bn(x + torch.randn(4, 6))
print(bn.running_mean, bn.num_batches_tracked)
bn.eval()
print(bn(x)[0])
ln = nn.InstanceNorm1d(3, affine=True)
print(ln(torch.randn(2, 3, 5))[0, 0])
