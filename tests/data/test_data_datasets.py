"""Dataset classes and random_split (fabric.data.dataset)."""
import warnings

import numpy as np
import pytest

import fabric
from fabric.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not -self.n <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))

    def __len__(self):
        return self.end - self.start


def test_alias_module_is_fabric_data():
    import fabric.utils.data as tud
    from fabric.utils.data import DataLoader
    from fabric.utils.data.dataloader import default_collate
    from fabric.utils.data.sampler import RandomSampler

    assert tud is fabric.data and fabric.utils.data is fabric.data
    assert tud.Dataset is fabric.data.Dataset and DataLoader is fabric.data.DataLoader
    assert default_collate is fabric.data.default_collate and RandomSampler is fabric.data.RandomSampler


def test_base_dataset_getitem_raises():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        Dataset()[0]


def test_tensor_dataset():
    x, y = fabric.arange(12.0).reshape(4, 3), fabric.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6.0, 7.0, 8.0] and b.item() == 0
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, fabric.zeros(3))


def test_concat_dataset_and_add():
    a, b = Squares(3), Squares(2)
    ds = a + b
    assert isinstance(ds, ConcatDataset)
    assert [ds[i] for i in range(len(ds))] == [0, 1, 4, 0, 1]
    assert ds.cumulative_sizes == [3, 5]
    assert ds[-1] == 1 and ds[-5] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-6]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Stream(0, 2)])
    with pytest.warns(FutureWarning):
        assert ds.cummulative_sizes == [3, 5]


def test_chain_dataset():
    ds = Stream(0, 2) + Stream(5, 7)
    assert isinstance(ds, ChainDataset)
    assert list(ds) == [0, 1, 5, 6] and len(ds) == 4
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_subset():
    ds = Subset(Squares(10), [9, 2, 5])
    assert len(ds) == 3 and ds[0] == 81 and ds.__getitems__([2, 1]) == [25, 4]

    class Bad(Subset):
        def __getitem__(self, i):
            return 0

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Bad(Squares(3), [0])


def test_stack_dataset():
    a, b = Squares(3), TensorDataset(fabric.arange(3))
    t = StackDataset(a, b)
    assert t[2][0] == 4 and t[2][1][0].item() == 2
    assert [s[0] for s in t.__getitems__([0, 2])] == [0, 4]
    d = StackDataset(sq=a, sub=Subset(Squares(5), [4, 3, 2]))
    assert d[0] == {"sq": 0, "sub": 16}
    assert d.__getitems__([1, 2]) == [{"sq": 1, "sub": 9}, {"sq": 4, "sub": 4}]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, Squares(4))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(a, x=a)


def test_random_split_lengths_and_fractions():
    g = fabric.Generator().manual_seed(0)
    parts = random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    parts = random_split(range(11), [0.5, 0.3, 0.2], generator=g)
    assert [len(p) for p in parts] == [6, 3, 2]  # floor: 5, 3, 2; the remainder goes round-robin
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])


@pytest.mark.torch
@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [10]])
@pytest.mark.parametrize("seed", [0, 42])
def test_random_split_matches_torch(lengths, seed):
    import torch
    import torch.utils.data as tud

    ours = random_split(range(10), lengths, generator=fabric.Generator().manual_seed(seed))
    theirs = tud.random_split(range(10), lengths, generator=torch.Generator().manual_seed(seed))
    assert [list(s.indices) for s in ours] == [list(s.indices) for s in theirs]
    # default generator
    fabric.manual_seed(seed)
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = random_split(range(10), lengths)
        theirs = tud.random_split(range(10), lengths)
    assert [list(s.indices) for s in ours] == [list(s.indices) for s in theirs]


def test_datasets_in_numpy_land():
    ds = TensorDataset(fabric.from_numpy(np.arange(6).reshape(3, 2)))
    assert ds[1][0].tolist() == [2, 3]
