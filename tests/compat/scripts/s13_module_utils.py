"""nn.Module utilities: init, apply, named_modules, buffers, state_dict round trip, param groups."""
import io

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("tmp", torch.ones(2), persistent=False)

    def forward(self, x):
        self.steps += 1
        return self.norm(torch.relu(self.lin(x))) + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.blocks = nn.ModuleList([Block(8) for _ in range(2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 1)})
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x)
        return self.heads["a"](x) * self.scale, self.heads["b"](x)


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


torch.manual_seed(0)
net = Net()
net.apply(init_weights)
print(net)
print([n for n, _ in net.named_modules()])
print([type(c).__name__ for c in net.children()])
print([(n, tuple(p.shape)) for n, p in net.named_parameters()])
print([n for n, _ in net.named_buffers()])
print(sum(p.numel() for p in net.parameters()), sum(p.numel() for p in net.parameters() if p.requires_grad))
print(list(net.state_dict().keys()))
print(net.inp.weight[0])
w = torch.empty(3, 5)
nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
print(w)
nn.init.kaiming_uniform_(w, a=0.1)
print(w[0])
nn.init.normal_(w, 0.0, 0.02)
print(w[1])
nn.init.trunc_normal_(w, std=0.5)
print(w[2])
nn.init.orthogonal_(w)
print((w @ w.T).diagonal())
nn.init.constant_(w, 0.3)
nn.init.uniform_(w, -0.1, 0.1)
print(w[0], nn.init.calculate_gain("leaky_relu", 0.2))
nn.init.xavier_normal_(w)
print(w[1])

opt = torch.optim.SGD([
    {"params": net.inp.parameters(), "lr": 0.1},
    {"params": net.blocks.parameters()},
    {"params": list(net.heads.parameters()) + [net.scale], "lr": 0.01, "momentum": 0.5},
], lr=0.05)
x = torch.randn(5, 4)
for step in range(3):
    opt.zero_grad()
    a, b = net(x)
    loss = a.pow(2).mean() + (b - 1).abs().mean()
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.6f}")
print([g["lr"] for g in opt.param_groups], net.blocks[0].steps)

buf = io.BytesIO()
torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "epoch": 3}, buf)
buf.seek(0)
ck = torch.load(buf)
net2 = Net()
res = net2.load_state_dict(ck["model"])
print(res, ck["epoch"])
opt2 = torch.optim.SGD(net2.parameters(), lr=0.05)
print(all(torch.equal(p, q) for p, q in zip(net.parameters(), net2.parameters())), net2.blocks[1].steps)
with torch.no_grad():
    print(torch.allclose(net(x)[0], net2(x)[0]))
sd = net.state_dict()
sd.pop("scale")
sd["extra"] = torch.zeros(1)
r = net2.load_state_dict(sd, strict=False)
print(r.missing_keys, r.unexpected_keys)
net.eval()
print(net.training, net.blocks[0].training)
net.train()
print(net.blocks[1].norm.training)
net.requires_grad_(False)
print(any(p.requires_grad for p in net.parameters()))
for p in net.inp.parameters():
    p.requires_grad = True
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
print(seq[0], len(seq), seq[-1].out_features)
net.zero_grad()
print(net.inp.weight.grad)
hooks = []
handle = seq.register_forward_hook(lambda m, i, o: hooks.append(o.shape))
seq(torch.ones(4, 2))
handle.remove()
seq(torch.ones(4, 2))
print(hooks)
print(seq.state_dict()["0.weight"].dtype, seq.double()[0].weight.dtype)
print(nn.Flatten()(torch.ones(2, 3, 4)).shape, nn.Identity()(torch.ones(2)).shape, nn.Unflatten(1, (2, 2))(torch.ones(3, 4)).shape)
