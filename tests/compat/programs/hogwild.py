"""Hogwild training (PyTorch's mnist_hogwild example, in small): the model lives
in shared memory, two spawn workers train it at once, the parent sees the result."""
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def train(rank, model, X, y, steps):
    torch.manual_seed(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        idx = torch.randint(0, X.shape[0], (16,))
        opt.zero_grad()
        F.cross_entropy(model(X[idx]), y[idx]).backward()
        opt.step()


if __name__ == "__main__":
    torch.manual_seed(0)
    X = torch.randn(256, 8)
    y = (X[:, 0] + X[:, 1] > 0).long()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    model.share_memory()
    print("shared", all(p.is_shared() for p in model.parameters()))
    before = F.cross_entropy(model(X), y).item()
    w0 = [p.detach().clone() for p in model.parameters()]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=train, args=(rank, model, X, y, 60)) for rank in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    after = F.cross_entropy(model(X), y).item()
    print("exit codes", [p.exitcode for p in procs])
    print("parent's parameters trained", all(not torch.equal(p, q) for p, q in zip(model.parameters(), w0)))
    print("loss fell by half", after < before / 2)
