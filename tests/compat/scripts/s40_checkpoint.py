"""Checkpoints as tutorials write them: a whole model, a training checkpoint dict, weights-only loading,
allow-listing a user class, map_location and mmap."""
import os
import tempfile

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Config:
    def __init__(self, lr, tag):
        self.lr, self.tag = lr, tag


torch.manual_seed(0)
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.randn(16, 4), torch.randn(16, 2)
for _ in range(3):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 5))

tmp = tempfile.mkdtemp()
whole = os.path.join(tmp, "model.pt")
torch.save(model, whole)
try:
    torch.load(whole)
except Exception as e:  # weights-only by default: a whole module is refused
    print(type(e).__name__, "Unsupported global" in str(e))
loaded = torch.load(whole, weights_only=False)
print(type(loaded).__name__, torch.equal(loaded(x), model(x)))

ck = os.path.join(tmp, "ck.pt")
torch.save({"epoch": 3, "model": model.state_dict(), "optim": opt.state_dict(), "loss": loss.item(),
            "cfg": Config(0.01, "run1")}, ck)
try:
    torch.load(ck)
except Exception as e:
    print(type(e).__name__, "GLOBAL __main__.Config was not an allowed global" in str(e))
with torch.serialization.safe_globals([Config]):
    state = torch.load(ck, map_location="cpu")
print(state["epoch"], state["cfg"].tag, round(state["loss"], 5))
model2 = Net()
print(model2.load_state_dict(state["model"]))
opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
opt2.load_state_dict(state["optim"])
print(torch.allclose(model2(x), model(x)))
for _ in range(2):
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        nn.functional.mse_loss(m(x), y).backward()
        o.step()
print("resumed", torch.equal(model2(x), model(x)), round(nn.functional.mse_loss(model2(x), y).item(), 5))

sd = os.path.join(tmp, "sd.pt")
torch.save(model.state_dict(), sd)
for loc in ("cpu", torch.device("cpu"), {"cpu": "cpu"}, lambda storage, loc: storage):
    w = torch.load(sd, map_location=loc, weights_only=True)["fc1.weight"]
    print(tuple(w.shape), round(w.sum().item(), 5))
mm = torch.load(sd, mmap=True, weights_only=True)
print(sorted(mm), round(mm["fc2.bias"].sum().item(), 5))
print(Config in torch.serialization.get_safe_globals())
