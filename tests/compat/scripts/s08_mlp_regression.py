"""MLP regression: TensorDataset/DataLoader(shuffle), SGD+momentum, StepLR, clip_grad_norm_, grad accumulation."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.linspace(-2, 2, 64).unsqueeze(1)
Y = X.pow(3) - X + 0.1 * torch.randn(X.size())
ds = TensorDataset(X, Y)
loader = DataLoader(ds, batch_size=16, shuffle=True)
print(len(ds), len(loader), ds[3])

model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
loss_fn = nn.MSELoss()
accum = 2
for epoch in range(5):
    total = 0.0
    for step, (xb, yb) in enumerate(loader):
        loss = loss_fn(model(xb), yb) / accum
        loss.backward()
        total += loss.item() * accum
        if (step + 1) % accum == 0:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            opt.step()
            opt.zero_grad()
    sched.step()
    print(f"epoch {epoch} loss {total / len(loader):.6f} lr {sched.get_last_lr()[0]:.4f} norm {norm.item():.5f}")

model.eval()
with torch.no_grad():
    pred = model(torch.tensor([[-1.0], [0.0], [1.5]]))
print(pred)
print(sum(p.numel() for p in model.parameters()))
print(opt.state_dict()["param_groups"][0]["lr"], len(opt.state_dict()["state"]))

# L1 + smooth L1 + Huber losses with a manual loop
torch.manual_seed(1)
lin = nn.Linear(3, 1)
data = torch.randn(10, 3)
target = data @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
opt2 = torch.optim.SGD(lin.parameters(), lr=0.1)
for it in range(4):
    opt2.zero_grad()
    out = lin(data)
    l = nn.L1Loss()(out, target) + nn.SmoothL1Loss()(out, target) + nn.HuberLoss(delta=0.5)(out, target)
    l.backward()
    opt2.step()
    print(it, round(l.item(), 6))
print(lin.weight.data, lin.bias.data)
dl = DataLoader(TensorDataset(torch.arange(10)), batch_size=4, drop_last=True)
print([b[0].tolist() for b in dl])
dl = DataLoader(list(range(7)), batch_size=3, shuffle=True)
print([b.tolist() for b in dl])
