# Imports by PyTorch's deep module paths, as library code and tutorials write them,
# and a model built from classes imported that way.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions.normal import Normal
from torch.nn.modules.container import Sequential
from torch.nn.modules.linear import Linear
from torch.nn.modules.module import Module
from torch.optim.adam import Adam
from torch.optim.lr_scheduler import StepLR
from torch.optim.optimizer import Optimizer
from torch.utils.data.dataloader import DataLoader
from torch.utils.data.dataset import TensorDataset
from torch.utils.data.sampler import RandomSampler, Sampler

print(Module is nn.Module, Linear is nn.Linear, Sequential is nn.Sequential)
print(Adam is torch.optim.Adam, issubclass(Adam, Optimizer), Normal is torch.distributions.Normal)
print(DataLoader is torch.utils.data.DataLoader, issubclass(RandomSampler, Sampler))


class Residual(Module):
    def __init__(self, width):
        super().__init__()
        self.inner = Linear(width, width)

    def forward(self, x):
        return x + F.relu(self.inner(x))


class EveryOther(Sampler):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(0, self.n, 2))

    def __len__(self):
        return (self.n + 1) // 2


torch.manual_seed(0)
model = nn.Sequential(Residual(4), Linear(4, 1))
print(sorted(model.state_dict()))
X = torch.randn(32, 4)
y = X.sum(1, keepdim=True)
opt = Adam(model.parameters(), lr=0.01)
sched = StepLR(opt, step_size=5, gamma=0.5)
loader = DataLoader(TensorDataset(X, y), batch_size=4, sampler=EveryOther(32))
for epoch in range(3):
    total = 0.0
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item()
    sched.step()
    print(epoch, round(total, 4))
print(Normal(torch.zeros(2), torch.ones(2)).log_prob(torch.tensor([0.5, -1.0])))
