"""DataLoader in the main process: batching, ordering, arguments, errors, shuffling vs PyTorch."""
import warnings

import numpy as np
import pytest

import fabric
from fabric.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"i": i, "sq": np.array([i * i], dtype=np.int32)}


class Stream(IterableDataset):
    def __init__(self, n, length=None):
        self.n, self.length = n, length

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n if self.length is None else self.length


def _values(loader, key=None):
    return [(b[key] if key else b).tolist() for b in loader]


def test_batching_ordering_and_len():
    dl = DataLoader(Squares(10), batch_size=4)
    assert len(dl) == 3
    assert _values(dl, "i") == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert next(iter(dl))["sq"].dtype == fabric.int32
    dl = DataLoader(Squares(10), batch_size=4, drop_last=True)
    assert len(dl) == 2 and _values(dl, "i") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(DataLoader(Squares(10))) == 10


def test_batch_size_none_uses_default_convert():
    dl = DataLoader(Squares(3), batch_size=None)
    first = next(iter(dl))
    assert first["i"] == 0 and first["sq"].tolist() == [0]
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(Squares(3), batch_size=None, drop_last=True)


def test_batch_sampler_and_sampler_arguments():
    bs = BatchSampler(SequentialSampler(range(5)), 2, False)
    dl = DataLoader(Squares(5), batch_sampler=bs)
    assert dl.batch_size is None and _values(dl, "i") == [[0, 1], [2, 3], [4]]
    assert _values(DataLoader(Squares(5), sampler=[4, 0, 2], batch_size=2), "i") == [[4, 0], [2]]
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(Squares(5), batch_sampler=bs, batch_size=2)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(Squares(5), sampler=[0], shuffle=True)


def test_argument_errors():
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(Squares(2), num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(Squares(2), timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(Squares(2), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Squares(2), persistent_workers=True)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        DataLoader(Squares(2), multiprocessing_context="fork")
    with pytest.raises(ValueError, match="should specify a valid start method"):
        DataLoader(Squares(2), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context object"):
        DataLoader(Squares(2), num_workers=1, multiprocessing_context=3)
    dl = DataLoader(Squares(2))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        dl.batch_size = 3
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Stream(3), batch_sampler=[[0]])
    assert DataLoader(Squares(2), num_workers=2).prefetch_factor == 2
    with pytest.raises(ValueError, match="prefetch_factor option should be non-negative"):
        DataLoader(Squares(2), num_workers=1, prefetch_factor=-1)
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(DataLoader(Squares(2), num_workers=1, prefetch_factor=0))


def test_iterable_dataset_batches_and_len_warning():
    dl = DataLoader(Stream(7), batch_size=3)
    assert len(dl) == 3 and _values(dl) == [[0, 1, 2], [3, 4, 5], [6]]
    assert _values(DataLoader(Stream(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert [b for b in DataLoader(Stream(3), batch_size=None)] == [0, 1, 2]
    dl = DataLoader(Stream(5, length=2), batch_size=None)
    assert len(dl) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(dl)


def test_pin_memory_without_cuda_warns_and_passes_batches_through():
    if fabric.cuda.is_available():
        pytest.skip("CUDA present: pinning really happens (tests/data covers it under the cuda marker)")
    with pytest.warns(UserWarning, match="no accelerator is found"):
        out = list(DataLoader(Squares(3), batch_size=3, pin_memory=True))
    assert out[0]["i"].tolist() == [0, 1, 2]


def test_pin_memory_walks_containers(monkeypatch):
    """The container logic of pin_memory, with the CuPy allocation replaced by a copy."""
    import collections

    from fabric.data import _pin

    pinned = []

    def fake_pin(arr):
        pinned.append(arr)
        return arr.copy()

    monkeypatch.setattr(_pin, "_pin_array", fake_pin)
    P = collections.namedtuple("P", "a b")

    class Custom:
        def pin_memory(self):
            return "pinned"

    t = fabric.arange(3)
    out = _pin.pin_memory({"x": [t, (t, "s")], "p": P(t, 1), "c": Custom()})
    assert len(pinned) == 3 and out["x"][0].tolist() == [0, 1, 2] and out["x"][0] is not t
    assert isinstance(out["x"][1], tuple) and out["x"][1][1] == "s"
    assert isinstance(out["p"], P) and out["p"].b == 1 and out["c"] == "pinned"


@pytest.mark.cuda
def test_pin_memory_with_cuda_gives_pinned_host_arrays():
    import cupy

    batch = next(iter(DataLoader(TensorDataset(fabric.arange(8.0)), batch_size=4, pin_memory=True)))
    arr = batch[0]._data
    assert isinstance(arr, np.ndarray) and batch[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    ptr = arr.ctypes.data
    attrs = cupy.cuda.runtime.pointerGetAttributes(ptr)
    assert attrs.type == cupy.cuda.runtime.memoryTypeHost


# --- the TensorDataset fast path agrees with the generic path ------------------------------------
class _Generic(Dataset):
    """The same samples as a TensorDataset, through the generic path."""

    def __init__(self, *tensors):
        self.tensors = tensors

    def __len__(self):
        return self.tensors[0].shape[0]

    def __getitem__(self, i):
        return tuple(t[i] for t in self.tensors)


def _same(a, b):
    assert type(a) is type(b) and len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tolist() == y.tolist()


def test_fast_path_matches_generic():
    x = fabric.randn(23, 3, 2)
    y = fabric.arange(23)
    z = fabric.rand(23) > 0.5
    fast = DataLoader(TensorDataset(x, y, z), batch_size=5, shuffle=True, generator=fabric.Generator().manual_seed(1))
    slow = DataLoader(_Generic(x, y, z), batch_size=5, shuffle=True, generator=fabric.Generator().manual_seed(1))
    for a, b in zip(fast, slow, strict=True):
        _same(a, b)
    # subsets (random_split) and negative indices
    parts = random_split(TensorDataset(x, y), [0.6, 0.4], generator=fabric.Generator().manual_seed(2))
    gen_parts = [Subset(_Generic(x, y), p.indices) for p in parts]
    for p, q in zip(parts, gen_parts):
        for a, b in zip(DataLoader(p, batch_size=4), DataLoader(q, batch_size=4), strict=True):
            _same(a, b)
    nested = Subset(Subset(TensorDataset(x, y), [-1, 3, 5, 7]), [2, -1, 0])
    ref = Subset(Subset(_Generic(x, y), [-1, 3, 5, 7]), [2, -1, 0])
    _same(next(iter(DataLoader(nested, batch_size=3))), next(iter(DataLoader(ref, batch_size=3))))
    _same(next(iter(DataLoader(TensorDataset(x, y), sampler=[-1, 2], batch_size=2))),
          default_collate([(x[-1], y[-1]), (x[2], y[2])]))


def test_fast_path_falls_back_for_autograd_and_errors():
    w = fabric.ones(4, 2, requires_grad=True)
    (xb,) = next(iter(DataLoader(TensorDataset(w), batch_size=4)))
    assert xb.requires_grad and xb.grad_fn is not None
    with pytest.raises(IndexError):
        next(iter(DataLoader(TensorDataset(fabric.zeros(3)), sampler=[7], batch_size=1)))


# --- shuffling equals PyTorch's for the same seeds ------------------------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("use_generator", [False, True])
def test_shuffled_batches_match_torch(use_generator):
    import torch
    import torch.utils.data as tud

    fabric.manual_seed(5)
    torch.manual_seed(5)
    kw_f = {"generator": fabric.Generator().manual_seed(9)} if use_generator else {}
    kw_t = {"generator": torch.Generator().manual_seed(9)} if use_generator else {}
    ours = DataLoader(list(range(30)), batch_size=7, shuffle=True, **kw_f)
    theirs = tud.DataLoader(list(range(30)), batch_size=7, shuffle=True, **kw_t)
    for _ in range(3):  # epochs
        assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    assert fabric.rand(2).tolist() == torch.rand(2).tolist()


@pytest.mark.torch
def test_dataloader_of_tensor_dataset_matches_torch():
    import torch
    import torch.utils.data as tud

    xs = np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32)
    ys = np.arange(20)
    fabric.manual_seed(0)
    torch.manual_seed(0)
    ours = DataLoader(TensorDataset(fabric.from_numpy(xs), fabric.from_numpy(ys)), batch_size=6, shuffle=True)
    theirs = tud.DataLoader(tud.TensorDataset(torch.from_numpy(xs), torch.from_numpy(ys)), batch_size=6, shuffle=True)
    for (a, b), (c, d) in zip(ours, theirs, strict=True):
        assert np.array_equal(a.numpy(), c.numpy()) and b.tolist() == d.tolist()


def test_no_worker_info_in_main_process():
    from fabric.data import get_worker_info

    assert get_worker_info() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(DataLoader(Squares(2)))
