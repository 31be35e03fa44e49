"""ZeroRedundancyOptimizer in one process (a world of one) and its partition against
PyTorch's; tests/distributed/test_mpi.py runs zero_worker.py under mpiexec for the
sharded trajectory and the consolidated state."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
import fabric.distributed as dist
from fabric.distributed.optim import ZeroRedundancyOptimizer


@pytest.fixture
def world_of_one():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _partition_numels(cls, groups, world_size):
    """Run ``cls``'s partition on bare objects (no process group needed)."""
    obj = cls.__new__(cls)
    obj.param_groups, obj.world_size, obj._partition_parameters_cache = groups, world_size, []
    return [[[p.numel() for p in g["params"]] for g in rank] for rank in obj._partition_parameters()]


@pytest.mark.torch
@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_partition_matches_pytorch(world_size):
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZeRO

    shapes = [[(7, 3), (5,), (4, 4), (1,)], [(3, 3), (9,), (2, 2, 2)], [(6,), (6,), (2, 3)]]
    ours = [{"params": [fabric.zeros(*s) for s in g], "lr": 0.1 * i} for i, g in enumerate(shapes)]
    theirs = [{"params": [torch.zeros(*s) for s in g], "lr": 0.1 * i} for i, g in enumerate(shapes)]
    assert _partition_numels(ZeroRedundancyOptimizer, ours, world_size) == \
        _partition_numels(TorchZeRO, theirs, world_size)


def test_a_world_of_one_steps_like_the_plain_optimizer(world_of_one):
    fabric.manual_seed(0)
    a = fabric.nn.Linear(3, 2)
    b = fabric.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    zero = ZeroRedundancyOptimizer(a.parameters(), optimizer_class=fabric.optim.SGD, lr=0.1, momentum=0.9)
    plain = fabric.optim.SGD(b.parameters(), lr=0.1, momentum=0.9)
    x = fabric.randn(4, 3)
    for _ in range(3):
        for model, opt in ((a, zero), (b, plain)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())
    zero.consolidate_state_dict()
    assert zero.state_dict()["param_groups"] == plain.state_dict()["param_groups"]
    extra = fabric.nn.Parameter(fabric.ones(2))
    zero.add_param_group({"params": [extra], "lr": 0.5})
    assert zero.optim.param_groups[-1]["params"] == [extra] and zero.optim.param_groups[-1]["lr"] == 0.5


def test_bad_arguments(world_of_one):
    with pytest.raises(TypeError, match="iterable of Tensors"):
        ZeroRedundancyOptimizer(fabric.ones(2), optimizer_class=fabric.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        ZeroRedundancyOptimizer([], optimizer_class=fabric.optim.SGD, lr=0.1)
    with pytest.raises(TypeError, match="Tensors or dicts"):
        ZeroRedundancyOptimizer([fabric.ones(2), {"params": []}], optimizer_class=fabric.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="'params' key"):
        ZeroRedundancyOptimizer([{"lr": 1}], optimizer_class=fabric.optim.SGD, lr=0.1)
    with pytest.raises(NotImplementedError, match="overlap_with_ddp"):
        ZeroRedundancyOptimizer([fabric.nn.Parameter(fabric.ones(2))], optimizer_class=fabric.optim.SGD,
                                overlap_with_ddp=True, lr=0.1)
    zero = ZeroRedundancyOptimizer([fabric.nn.Parameter(fabric.ones(2))], optimizer_class=fabric.optim.SGD, lr=0.1)
    with pytest.raises(RuntimeError, match=r"consolidate_state_dict\(to=0\)"):
        zero.state_dict()
