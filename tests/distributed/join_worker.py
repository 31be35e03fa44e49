"""Run under ``mpiexec -n N``: DDP's ``join()`` and the ``Join`` context with uneven inputs
(rank ``r`` has ``2 + r`` batches), checked against PyTorch's semantics simulated in one
process: at each step the gradient is the sum over the ranks still training, divided by the
initial world size (default) or by the number of ranks still training
(``divide_by_initial_world_size=False``); every rank ends with the same model.  Prints
``OK <rank>``.
"""
import os

import numpy as np

import fabric
import fabric.distributed as dist
from fabric import nn
from fabric.distributed.algorithms import Join, Joinable, JoinHook
from fabric.nn.parallel import DistributedDataParallel as DDP

LR = 0.1


def check(cond, what):
    if not cond:
        raise AssertionError(f"rank {dist.get_rank()}: {what}")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 3), nn.Linear(3, 1)
        self.register_buffer("steps", fabric.zeros(1, dtype=fabric.float64))

    def forward(self, x):
        self.steps += 1
        return self.fc2(fabric.tanh(self.fc1(x)))


def make_net():
    fabric.manual_seed(0)
    return Net().to(fabric.float64)


def batch(r, i):
    g = np.random.default_rng(1000 * r + i)
    return fabric.tensor(g.standard_normal((5, 4))), fabric.tensor(g.standard_normal((5, 1)))


def loss_of(model, r, i):
    x, y = batch(r, i)
    return ((model(x) - y) ** 2).mean()


def reference(n, batches, divide_by_initial_world_size):
    net = make_net()
    params = list(net.parameters())
    for i in range(max(batches)):
        active = [r for r in range(n) if i < batches[r]]
        total = [np.zeros(p.shape) for p in params]
        for r in active:
            for p in params:
                p.grad = None
            loss_of(net, r, i).backward()
            total = [t + p.grad.numpy() for t, p in zip(total, params)]
        div = n if divide_by_initial_world_size else len(active)
        with fabric.no_grad():
            for p, t in zip(params, total):
                p -= fabric.tensor(LR * t / div)
    return [p.detach().numpy() for p in params]


def train_with_join(r, n, batches, divide):
    model = DDP(make_net())
    opt = fabric.optim.SGD(model.parameters(), lr=LR)
    with model.join(divide_by_initial_world_size=divide):
        for i in range(batches[r]):
            opt.zero_grad()
            loss_of(model, r, i).backward()
            opt.step()
    want = reference(n, batches, divide)
    for p, w in zip(model.module.parameters(), want):
        check(np.allclose(p.detach().numpy(), w, rtol=1e-12, atol=1e-12), f"divide={divide}: {p} vs {w}")
    # buffers come from a rank still training at each step, and from a last joiner at the end
    check(model.module.steps.item() == max(batches), f"steps buffer {model.module.steps.item()}")


class Counter(Joinable):
    """PyTorch's documentation example: counts, over all ranks, the iterations run."""

    def __init__(self):
        super().__init__()
        self.count = 0.0

    def __call__(self):
        Join.notify_join_context(self)
        t = fabric.ones(1)
        dist.all_reduce(t)
        self.count += t.item()

    def join_hook(self, **kwargs):
        return CounterHook(self)

    @property
    def join_device(self):
        return fabric.device("cpu")

    @property
    def join_process_group(self):
        return dist.group.WORLD


class CounterHook(JoinHook):
    def __init__(self, counter):
        self.counter, self.last = counter, None

    def main_hook(self):
        t = fabric.zeros(1)
        dist.all_reduce(t)
        self.counter.count += t.item()

    def post_hook(self, is_last_joiner):
        self.last = is_last_joiner


def main():
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    batches = [2 + k for k in range(n)]
    train_with_join(r, n, batches, True)
    train_with_join(r, n, batches, False)

    counter = Counter()
    join = Join([counter])
    with join:
        for _ in range(batches[r]):
            counter()
    check(counter.count == sum(batches), f"counter {counter.count}")
    check(join._join_hooks[0].last == (r == n - 1), "is_last_joiner")

    # enable=False: a plain block (every rank has the same number of batches here)
    model = DDP(make_net())
    with model.join(enable=False):
        loss_of(model, r, 0).backward()

    # throw_on_early_termination: every rank raises once one has run out
    model = DDP(make_net())
    raised = None
    try:
        with model.join(throw_on_early_termination=True):
            for i in range(batches[r]):
                loss_of(model, r, i).backward()
    except RuntimeError as e:
        raised = str(e)
    expected = "Rank 0 exhausted all inputs." if r == 0 else \
        "Detected at least one rank that exhausted inputs. Throwing across all ranks."
    check(raised == expected, f"throw_on_early_termination: {raised!r}")
    try:
        Join([])
    except ValueError as e:
        check("at least one joinable" in str(e), str(e))
    os.write(1, f"OK {r}\n".encode())   # one write: ranks share the pipe


if __name__ == "__main__":
    main()
