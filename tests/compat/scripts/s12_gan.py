"""A small GAN on 1-D data with two optimizers, BCEWithLogits, LeakyReLU, detach."""
import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
D = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
optG = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
optD = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for step in range(8):
    real = torch.randn(16, 1) * 0.5 + 2.0
    z = torch.randn(16, 2)
    fake = G(z)
    optD.zero_grad()
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    d_loss.backward()
    optD.step()
    optG.zero_grad()
    g_loss = bce(D(fake), torch.ones(16, 1))
    g_loss.backward()
    optG.step()
    print(f"{step} D={d_loss.item():.6f} G={g_loss.item():.6f}")
with torch.no_grad():
    s = G(torch.randn(5, 2))
print(s.squeeze(), s.mean())
p = torch.sigmoid(torch.tensor([-2.0, 0.0, 3.0]))
print(nn.BCELoss()(p, torch.tensor([0.0, 1.0, 1.0])), nn.BCELoss(reduction="sum")(p, torch.tensor([0.0, 0.5, 1.0])))
print(nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))(torch.tensor([[0.5], [-1.0]]), torch.tensor([[1.0], [0.0]])))
print(nn.KLDivLoss(reduction="batchmean")(torch.log_softmax(torch.randn(2, 3), 1), torch.softmax(torch.randn(2, 3), 1)))
opt = torch.optim.RMSprop(G.parameters(), lr=1e-3)
G(torch.randn(3, 2)).sum().backward()
opt.step()
print(G[0].weight[0])
opt = torch.optim.Adagrad(D.parameters(), lr=0.1)
D(torch.randn(3, 1)).sum().backward()
opt.step()
print(D[2].bias)
