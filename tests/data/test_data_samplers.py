"""Samplers: sequences, errors, and (marked torch) the same indices as PyTorch for the same seeds."""
import pytest

import fabric
from fabric.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_sequential_and_batch():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4 and len(BatchSampler(range(10), 3, True)) == 3
    assert list(BatchSampler(range(0), 3, False)) == []


def test_sampler_errors():
    with pytest.raises(TypeError):
        len(Sampler())
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(0))
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 1)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(5), num_replicas=3, rank=3)


def test_random_sampler_is_a_permutation_and_reproducible():
    g = fabric.Generator().manual_seed(1)
    a = list(RandomSampler(range(50), generator=g))
    assert sorted(a) == list(range(50))
    b = list(RandomSampler(range(50), generator=fabric.Generator().manual_seed(1)))
    assert a == b
    s = RandomSampler(range(7), replacement=True, num_samples=100)
    assert len(s) == 100 and len(list(s)) == 100 and set(s) <= set(range(7))
    s = RandomSampler(range(7), num_samples=17)
    out = list(s)
    assert len(out) == 17 and sorted(out[:7]) == list(range(7)) and sorted(out[7:14]) == list(range(7))


@pytest.mark.parametrize("n,replacement,num_samples,bs,drop_last", [
    (10, False, None, 5, False), (10, False, None, 3, True), (10, False, 25, 4, False), (7, True, 70, 5, False),
    (7, True, 64, 8, True), (7, True, 31, 32, False), (5, False, 3, 2, False)])
def test_batch_sampler_chunk_path_matches_one_by_one(n, replacement, num_samples, bs, drop_last):
    """BatchSampler slices RandomSampler's index lists; the batches and the moments at which the
    generator is drawn from must equal those of the one-by-one path (checked by drawing from the same
    generator between batches)."""

    class OneByOne:
        def __init__(self, s):
            self.s = s

        def __iter__(self):
            return iter(self.s)

        def __len__(self):
            return len(self.s)

    g1, g2 = fabric.Generator().manual_seed(0), fabric.Generator().manual_seed(0)
    fast = iter(BatchSampler(RandomSampler(range(n), replacement, num_samples, generator=g1), bs, drop_last))
    slow = iter(BatchSampler(OneByOne(RandomSampler(range(n), replacement, num_samples, generator=g2)), bs,
                             drop_last))
    while True:
        a, b = next(fast, None), next(slow, None)
        assert a == b
        assert fabric.randint(0, 1000, (1,), generator=g1).item() == fabric.randint(0, 1000, (1,), generator=g2).item()
        if a is None:
            break
    seq = BatchSampler(SequentialSampler(range(11)), 4, drop_last)
    assert list(seq) == list(BatchSampler(OneByOne(SequentialSampler(range(11))), 4, drop_last))


def test_distributed_sampler_partitions():
    for n, r, drop in [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False), (11, 4, True)]:
        shards = [list(DistributedSampler(range(n), num_replicas=r, rank=k, shuffle=False, drop_last=drop))
                  for k in range(r)]
        assert len({len(s) for s in shards}) == 1
        flat = sorted(sum(shards, []))
        if drop:
            assert len(set(flat)) == len(flat) <= n
        else:
            assert set(flat) == set(range(n))
    s = DistributedSampler(range(10), num_replicas=2, rank=0, seed=3)
    e0 = list(s)
    assert list(s) == e0
    s.set_epoch(1)
    assert list(s) != e0


def test_distributed_sampler_needs_world_without_distributed():
    try:
        import fabric.distributed  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
            DistributedSampler(range(4))
    else:  # a fabric.distributed without an initialised process group
        with pytest.raises((RuntimeError, ValueError)):
            DistributedSampler(range(4))


# --- against PyTorch -----------------------------------------------------------------------------
def _pair(seed):
    import torch

    return fabric.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)


@pytest.mark.torch
@pytest.mark.parametrize("n,replacement,num_samples", [(10, False, None), (10, False, 25), (7, True, None),
                                                       (7, True, 70), (5, True, 32), (100, False, 3)])
@pytest.mark.parametrize("seed", [0, 7])
def test_random_sampler_matches_torch(n, replacement, num_samples, seed):
    import torch
    import torch.utils.data as tud

    g, tg = _pair(seed)
    ours = RandomSampler(range(n), replacement, num_samples, generator=g)
    theirs = tud.RandomSampler(range(n), replacement, num_samples, generator=tg)
    for _ in range(2):  # the generator advances across passes the same way
        assert list(ours) == list(theirs)
    # no generator: a seed is drawn from the default generator per pass
    fabric.manual_seed(seed)
    torch.manual_seed(seed)
    ours = RandomSampler(range(n), replacement, num_samples)
    theirs = tud.RandomSampler(range(n), replacement, num_samples)
    for _ in range(2):
        assert list(ours) == list(theirs)
    assert fabric.rand(3).tolist() == torch.rand(3).tolist()  # the default streams stay in step


@pytest.mark.torch
@pytest.mark.parametrize("seed", [0, 3])
def test_subset_and_weighted_samplers_match_torch(seed):
    import torch.utils.data as tud

    g, tg = _pair(seed)
    idx = [5, 9, 2, 11, 40]
    assert list(SubsetRandomSampler(idx, generator=g)) == list(tud.SubsetRandomSampler(idx, generator=tg))
    w = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]
    for replacement, k in [(True, 5), (True, 40), (False, 5), (False, 6)]:
        assert (list(WeightedRandomSampler(w, k, replacement, generator=g))
                == list(tud.WeightedRandomSampler(w, k, replacement, generator=tg)))


@pytest.mark.torch
@pytest.mark.parametrize("n", [1, 10, 11, 3])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("shuffle,drop_last", [(True, False), (False, False), (True, True), (False, True)])
def test_distributed_sampler_matches_torch(n, replicas, shuffle, drop_last):
    import torch.utils.data as tud

    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=5, drop_last=drop_last)
        theirs = tud.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=5, drop_last=drop_last)
        assert len(ours) == len(theirs)
        for epoch in (0, 3):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)


@pytest.mark.torch
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_matches_torch(drop_last):
    import torch.utils.data as tud

    g, tg = _pair(11)
    ours = BatchSampler(RandomSampler(range(23), generator=g), 5, drop_last)
    theirs = tud.BatchSampler(tud.RandomSampler(range(23), generator=tg), 5, drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
