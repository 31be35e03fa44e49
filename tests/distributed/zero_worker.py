"""Run under ``mpiexec -n N``: ZeroRedundancyOptimizer shards the optimizer state (PyTorch's
partition: largest parameter first, to the rank with the smallest shard so far), follows the
unsharded optimizer's trajectory exactly, and saves/loads a consolidated state.  Prints
``OK <rank>``."""
import os

import numpy as np

import fabric
import fabric.distributed as dist
from fabric import nn
from fabric.distributed.optim import ZeroRedundancyOptimizer


def check(cond, what):
    if not cond:
        raise AssertionError(f"rank {dist.get_rank()}: {what}")


def make():
    fabric.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1)).to(fabric.float64)


def groups(model):
    ps = list(model.parameters())     # numels: 24, 4, 12, 3 | 3, 1
    return [{"params": ps[:4]}, {"params": ps[4:], "lr": 0.02}]


def loss_of(model, step):
    g = np.random.default_rng(step)
    x, y = fabric.tensor(g.standard_normal((8, 6))), fabric.tensor(g.standard_normal((8, 1)))
    return ((model(x) - y) ** 2).mean()


def train(model, opt, steps):
    for s in steps:
        opt.zero_grad()
        loss_of(model, s).backward()      # the same data on every rank: the replicas must stay equal
        opt.step()


def params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def main():
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    ref = make()
    ref_opt = fabric.optim.Adam(groups(ref), lr=0.05)
    model = make()
    zero = ZeroRedundancyOptimizer(groups(model), optimizer_class=fabric.optim.Adam, lr=0.05)

    # PyTorch's partition, by element counts, computed by hand for 2 and 3 ranks
    numels = [[p.numel() for p in g["params"]] for g in zero._partition_parameters()[r]]
    want = {2: [[[24], []], [[12, 4, 3], [3, 1]]], 3: [[[24], []], [[12], []], [[4, 3], [3, 1]]]}[n][r]
    check(numels == want, f"partition {numels} != {want}")
    mine = {id(p) for g in zero._partition_parameters()[r] for p in g["params"]}
    train(model, zero, range(3))
    check({id(p) for p in zero.optim.state} == mine and len(zero.optim.state) < 6, "state only for this shard")
    train(ref, ref_opt, range(3))
    check(all(np.array_equal(a, b) for a, b in zip(params(model), params(ref))), "trajectory after 3 steps")

    # hyperparameters set on the wrapper reach the local optimizer
    zero.param_groups[0]["lr"] = ref_opt.param_groups[0]["lr"] = 0.01
    train(model, zero, range(3, 5))
    train(ref, ref_opt, range(3, 5))
    check(all(np.array_equal(a, b) for a, b in zip(params(model), params(ref))), "trajectory after lr change")

    try:
        zero.state_dict()
        raise AssertionError("state_dict before consolidation")
    except RuntimeError as e:
        check("has not been consolidated" in str(e), str(e))
    zero.consolidate_state_dict(to=0)
    state = [zero.state_dict() if r == 0 else None]
    if r == 0:
        full = state[0]
        plain = ref_opt.state_dict()
        check(full["param_groups"] == plain["param_groups"], f"{full['param_groups']} != {plain['param_groups']}")
        check(sorted(full["state"]) == list(range(6)), "state indices")
        for i, st in plain["state"].items():
            for k, v in st.items():
                check(np.array_equal(full["state"][i][k].numpy(), v.numpy()), f"state {i} {k}")
    else:
        try:
            zero.state_dict()
            raise AssertionError("state_dict on a rank that did not consolidate")
        except RuntimeError:
            pass
    dist.broadcast_object_list(state, src=0)

    # a fresh model + ZeRO loading the consolidated state continues the same trajectory
    model2 = make()
    with fabric.no_grad():
        for p, q in zip(model2.parameters(), model.parameters()):
            p.copy_(q)
    zero2 = ZeroRedundancyOptimizer(groups(model2), optimizer_class=fabric.optim.Adam, lr=0.05)
    zero2.load_state_dict(state[0])
    check(zero2.param_groups[0]["lr"] == 0.01 and zero2.optim.param_groups[0]["lr"] == 0.01, "lr restored")
    train(model2, zero2, range(5, 7))
    train(ref, ref_opt, range(5, 7))
    check(all(np.array_equal(a, b) for a, b in zip(params(model2), params(ref))), "trajectory after load")

    try:
        ZeroRedundancyOptimizer([], optimizer_class=fabric.optim.SGD, lr=0.1)
    except ValueError as e:
        check("empty parameter list" in str(e), str(e))
    os.write(1, f"OK {r}\n".encode())   # one write: ranks share the pipe


if __name__ == "__main__":
    main()
