"""DataLoader with worker processes: order, errors with tracebacks, worker death, timeouts, iterable
splitting, seeding, persistent workers, shared-memory transport and clean shutdown."""
import gc
import mmap
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import fabric
from fabric import _shared_memory as shared_memory
from fabric.data import DataLoader, Dataset, IterableDataset, TensorDataset, _shm, get_worker_info

pytestmark = pytest.mark.skipif(not _shm.available or not os.path.isdir("/proc/self/fd"),
                                reason="these checks count this process's descriptors under /proc (Linux)")


def _fds():
    return len(os.listdir("/proc/self/fd"))


def _shm_names():
    """fabric's names in /dev/shm (other processes on the machine may add and remove their own meanwhile)."""
    if not os.path.isdir("/dev/shm"):
        return []
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(shared_memory.NAME_PREFIX))


@pytest.fixture(autouse=True)
def _no_leaks():
    """Every test ends with no worker process, no extra open descriptor (the shared memory lives in
    descriptors and mappings only) and no new fabric name in /dev/shm."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # spawn starts it once for the process: not a per-test descriptor
    gc.collect()
    fds, names = _fds(), _shm_names()
    _children_before[:] = multiprocessing.active_children()  # whatever other tests may have left running
    yield
    gc.collect()
    assert set(multiprocessing.active_children()) <= set(_children_before)
    # a stopped loader's pipes are closed by its finalizer and reader thread,
    # which may lag the test by a moment: wait briefly before calling it a leak
    deadline = time.monotonic() + 3.0
    while _fds() != fds and time.monotonic() < deadline:
        time.sleep(0.05)
        gc.collect()
    assert _fds() == fds, "open descriptors leaked"
    assert _shm_names() == names, "named shared memory left behind"


_children_before = []


def _assert_clean(pids=()):
    gc.collect()
    assert set(multiprocessing.active_children()) <= set(_children_before)
    for pid in pids:  # reaped: no zombie left behind
        assert not os.path.exists(f"/proc/{pid}"), f"process {pid} still exists"


class Jitter(Dataset):
    """Sample i after a short random delay, so workers finish out of order."""

    def __init__(self, n, delay=0.004):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(random.random() * self.delay)
        return {"i": i, "x": np.full((3,), i, np.float32), "pid": os.getpid()}


def _explode(i):
    raise ValueError(f"bad sample {i}")


class Exploding(Dataset):
    def __init__(self, exc=ValueError, at=5):
        self.exc, self.at = exc, at

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == self.at:
            if self.exc is ValueError:
                _explode(i)
            raise self.exc(f"bad sample {i}")
        return i


class Sleepy(Dataset):
    def __init__(self, n, seconds, exit_code=None):
        self.n, self.seconds, self.exit_code = n, seconds, exit_code

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.exit_code is not None and i == 3:
            os._exit(self.exit_code)
        time.sleep(self.seconds)
        return os.getpid()


class Range(IterableDataset):
    def __init__(self, start, end, shard=True):
        self.start, self.end, self.shard = start, end, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))


class Seeds(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id, info.seed, random.random(), float(np.random.rand()), fabric.rand(1).item())


class Counting(Dataset):
    """Counts, in each worker's own copy, how many samples it has served."""

    def __init__(self):
        self.served = 0

    def __len__(self):
        return 6

    def __getitem__(self, i):
        self.served += 1
        return (i, os.getpid(), self.served)


def test_in_order_and_values():
    dl = DataLoader(Jitter(40), batch_size=3, num_workers=2)
    batches = list(dl)
    assert [b["i"].tolist() for b in batches] == [list(range(k, min(k + 3, 40))) for k in range(0, 40, 3)]
    assert batches[1]["x"].tolist() == [[3.0] * 3, [4.0] * 3, [5.0] * 3]
    assert len({p for b in batches for p in b["pid"].tolist()}) == 2
    _assert_clean()


def test_out_of_order_gives_every_batch():
    dl = DataLoader(Jitter(30, delay=0.01), batch_size=2, num_workers=2, in_order=False)
    got = sorted(i for b in dl for i in b["i"].tolist())
    assert got == list(range(30))
    _assert_clean()


def test_batches_arrive_in_shared_memory():
    x = fabric.arange(64.0).reshape(16, 4)
    dl = DataLoader(TensorDataset(x, fabric.arange(16)), batch_size=8, num_workers=2)
    batches = list(dl)
    xb = batches[0][0]
    lease = xb._data.base  # the batch's view of its worker's shared slot: the main process copied nothing
    assert isinstance(lease.base, memoryview) and isinstance(lease.base.obj, mmap.mmap)
    del lease
    xb.add_(1)  # writable, like a torch tensor from shared memory
    assert xb.tolist()[0] == [1.0, 2.0, 3.0, 4.0]
    assert [b[1].tolist() for b in batches] == [list(range(8)), list(range(8, 16))]
    del batches, xb
    _assert_clean()


def test_workers_match_single_process():
    x, y = fabric.randn(37, 5), fabric.arange(37)
    kw = dict(batch_size=6, shuffle=True)
    a = list(DataLoader(TensorDataset(x, y), generator=fabric.Generator().manual_seed(3), **kw))
    b = list(DataLoader(TensorDataset(x, y), generator=fabric.Generator().manual_seed(3), num_workers=2, **kw))
    assert len(a) == len(b)
    for (p, q), (r, s) in zip(a, b):
        assert p.tolist() == r.tolist() and q.tolist() == s.tolist() and p.dtype == r.dtype
    _assert_clean()


def test_worker_exception_carries_its_traceback():
    with pytest.raises(ValueError) as e:
        list(DataLoader(Exploding(), batch_size=2, num_workers=2))
    msg = str(e.value)
    assert "Caught ValueError in DataLoader worker process" in msg
    assert "Original Traceback (most recent call last)" in msg
    assert "in _explode" in msg and "ValueError: bad sample 5" in msg
    with pytest.raises(KeyError) as e:
        list(DataLoader(Exploding(KeyError), num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0" in str(e.value)
    del e  # the traceback holds the iterator; once it is gone the workers are stopped
    _assert_clean()


def test_exception_without_message_constructor_becomes_runtime_error():
    class Odd(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    class Raiser(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            raise Odd(1, 2)

    with pytest.raises(RuntimeError, match="Caught Odd in DataLoader worker process"):
        list(DataLoader(Raiser(), num_workers=1, multiprocessing_context="fork"))
    _assert_clean()


def test_iterator_goes_on_after_a_worker_exception():
    it = iter(DataLoader(Exploding(at=1), batch_size=1, num_workers=1))
    assert next(it).tolist() == [0]
    with pytest.raises(ValueError):
        next(it)
    assert [b.item() for b in it] == [2, 3, 4, 5, 6, 7, 8, 9]
    _assert_clean()


def _bad_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


def test_worker_init_fn_error_is_reraised():
    with pytest.raises(RuntimeError, match="init failed in 0"):
        list(DataLoader(Jitter(4), num_workers=1, worker_init_fn=_bad_init))
    _assert_clean()


def test_killed_worker_is_named_promptly():
    it = iter(DataLoader(Sleepy(200, 0.02), batch_size=2, num_workers=2))
    next(it)
    pids = [w.pid for w in it._workers]
    victim = it._workers[1].pid
    t0 = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(RuntimeError) as e:
        for _ in it:
            pass
    assert time.monotonic() - t0 < 3.0
    assert f"DataLoader worker 1 (pid {victim}) is killed by signal: Killed" in str(e.value)
    del it
    _assert_clean(pids)


def test_worker_that_exits_is_reported_with_exit_code():
    with pytest.raises(RuntimeError, match=r"DataLoader worker 1 \(pid \d+\) exited unexpectedly with exit code 7"):
        list(DataLoader(Sleepy(8, 0.0, exit_code=7), batch_size=3, num_workers=2))
    _assert_clean()


def test_timeout():
    # the first sample takes 0.8 s: raising at all shows the 0.1 s timeout fired first
    it = iter(DataLoader(Sleepy(4, 0.8), num_workers=1, timeout=0.1))
    pids = [w.pid for w in it._workers]
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.1 seconds"):
        next(it)
    del it
    _assert_clean(pids)


@pytest.mark.filterwarnings("ignore:This DataLoader will create 3 worker processes")
def test_iterable_dataset_split_across_workers():
    out = [b.tolist() for b in DataLoader(Range(0, 20), batch_size=3, num_workers=3)]
    assert sorted(sum(out, [])) == list(range(20))
    # worker w's first batch holds its first three items (tasks go round-robin)
    assert out[:3] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # every worker iterates its own copy: without sharding each sample comes num_workers times
    dup = sorted(b.item() for b in DataLoader(Range(0, 5, shard=False), num_workers=2))
    assert dup == sorted(list(range(5)) * 2)
    # more workers than items, and drop_last per worker
    assert sorted(b.item() for b in DataLoader(Range(0, 2), num_workers=3)) == [0, 1]
    assert [len(b) for b in DataLoader(Range(0, 7), batch_size=2, num_workers=2, drop_last=True)] == [2, 2, 2]
    _assert_clean()


def test_worker_seeding_is_deterministic():
    def run():
        fabric.manual_seed(123)
        return [tuple(v.tolist() if hasattr(v, "tolist") else v for v in b)
                for b in DataLoader(Seeds(), batch_size=2, num_workers=2)]

    a, b = run(), run()
    assert a == b
    ids = [x[0] for batch in a for x in zip(*batch)]
    seeds = {wid: s for batch in a for wid, s in zip(batch[0], batch[1])}
    assert sorted(set(ids)) == [0, 1] and seeds[1] == seeds[0] + 1
    # a fresh iterator draws a fresh base seed
    fabric.manual_seed(123)
    dl = DataLoader(Seeds(), batch_size=2, num_workers=2)
    first, second = [b[1].tolist() for b in dl], [b[1].tolist() for b in dl]
    assert first != second
    _assert_clean()


@pytest.mark.torch
def test_worker_seeds_and_streams_match_torch():
    import torch
    import torch.utils.data as tud

    class TorchSeeds(tud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = tud.get_worker_info()
            return (info.id, info.seed, random.random(), float(np.random.rand()), torch.rand(1).item())

    fabric.manual_seed(77)
    torch.manual_seed(77)
    ours = [tuple(x) for b in DataLoader(Seeds(), batch_size=None, num_workers=2) for x in [b]][:4]
    theirs = [tuple(x) for b in tud.DataLoader(TorchSeeds(), batch_size=None, num_workers=2,
                                               multiprocessing_context="fork") for x in [b]]
    assert ours == theirs
    _assert_clean()


def test_persistent_workers_keep_processes_and_state():
    fabric.manual_seed(0)
    dl = DataLoader(Counting(), batch_size=None, num_workers=2, persistent_workers=True, shuffle=True)
    e1 = [tuple(b) for b in dl]
    e2 = [tuple(b) for b in dl]
    assert sorted(i for i, _, _ in e1) == sorted(i for i, _, _ in e2) == list(range(6))
    assert {p for _, p, _ in e1} == {p for _, p, _ in e2}  # the same two processes served both epochs
    assert max(c for _, _, c in e2) == 6  # each worker's dataset copy kept counting: 3 + 3
    assert [i for i, _, _ in e1] != [i for i, _, _ in e2]  # reshuffled
    # an abandoned epoch followed by a new one
    it = iter(dl)
    next(it)
    assert sorted(b[0] for b in dl) == list(range(6))
    pids = [w.pid for w in dl._iterator._workers]
    dl._iterator._shutdown_workers()
    del dl, it
    _assert_clean(pids)


def test_persistent_iterable_dataset_restarts_each_epoch():
    dl = DataLoader(Range(0, 6), batch_size=2, num_workers=2, persistent_workers=True)
    assert sorted(sum((b.tolist() for b in dl), [])) == list(range(6))
    assert sorted(sum((b.tolist() for b in dl), [])) == list(range(6))
    dl._iterator._shutdown_workers()
    _assert_clean()


def test_early_break_cleans_up():
    dl = DataLoader(Jitter(100), batch_size=2, num_workers=2, prefetch_factor=4)
    it = iter(dl)
    next(it)
    time.sleep(0.1)  # let the workers fill their prefetch: those segments must not leak
    pids = [w.pid for w in it._workers]
    del it
    _assert_clean(pids)


def test_spawn_start_method():
    x = fabric.arange(12.0).reshape(6, 2)
    dl = DataLoader(TensorDataset(x), batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert [b[0].tolist() for b in dl] == [x[:4].tolist(), x[4:].tolist()]
    _assert_clean()


def _run_script(body, check):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = f"import sys\nsys.path.insert(0, {root!r})\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=check)


def test_workers_exit_when_the_parent_dies():
    names = _shm_names()
    proc = _run_script("""
        import os, signal, time
        import fabric
        from fabric.data import DataLoader, TensorDataset
        dl = DataLoader(TensorDataset(fabric.zeros(1000, 64)), batch_size=10, num_workers=2, prefetch_factor=4)
        it = iter(dl)
        next(it)
        time.sleep(0.3)
        print(" ".join(str(w.pid) for w in it._workers), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """, check=False)
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{p}") for p in pids), "orphaned workers kept running"
    assert _shm_names() == names


def test_interpreter_exit_stops_live_workers():
    """Persistent workers, and an iterator abandoned mid-epoch, are stopped when the interpreter
    exits normally."""
    proc = _run_script("""
        import fabric
        from fabric.data import DataLoader, TensorDataset
        ds = TensorDataset(fabric.zeros(100, 8))
        persistent = DataLoader(ds, batch_size=10, num_workers=1, persistent_workers=True)
        list(persistent)
        it = iter(DataLoader(ds, batch_size=10, num_workers=1))
        batch = next(it)
        print(" ".join(str(w.pid) for w in persistent._iterator._workers + it._workers))
    """, check=True)
    for pid in map(int, proc.stdout.split()):
        assert not os.path.exists(f"/proc/{pid}")
    assert "Traceback" not in proc.stderr


# --- the shared-memory transport itself ---------------------------------------------------------
@pytest.fixture
def link():
    """A Receiver and a SlotWriter in this process, joined by a socket pair."""
    import types

    ns = types.SimpleNamespace()
    ns.main_end, worker_end = multiprocessing.Pipe()
    ns.rx = _shm.Receiver(1, 2)
    ns.rx.send_control(ns.main_end, os.getpid())
    ns.tx = _shm.SlotWriter(worker_end, 0, 2)

    def through(obj):
        ns.tx.send(0, obj)
        return ns.rx.unpack(ns.main_end, ns.main_end.recv()[1])

    ns.through = through
    yield ns
    ns.tx.close()
    ns.rx.close()
    ns.main_end.close()
    worker_end.close()
    ns.__dict__.clear()  # pytest keeps the fixture value until after the leak check


@pytest.mark.parametrize("arr", [np.arange(7, dtype=np.int8), np.ones((3, 4), np.float16)[:, ::2],
                                 np.array([True, False]), np.zeros((0, 3)), np.float64(2.5) * np.ones(()),
                                 np.arange(12, dtype=">i4"), np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")])])
def test_shm_round_trip(link, arr):
    through = link.through
    t = fabric.from_numpy(np.arange(6.0).reshape(2, 3)).requires_grad_(True)
    obj = {"a": arr, "t": t, "again": t, "s": "text", "o": np.array([{"k": 1}], dtype=object)}
    out = through(obj)
    assert out["a"].dtype == arr.dtype and np.array_equal(out["a"], arr)
    assert out["t"].requires_grad and out["t"].tolist() == t.tolist() and out["again"] is out["t"]
    assert out["s"] == "text" and out["o"][0] == {"k": 1}
    del out
    assert through([]) == []  # nothing in shared memory


def test_shm_slots_are_reused_and_never_overwritten_while_held(link):
    rx, tx, through, main_end = link.rx, link.tx, link.through, link.main_end
    held = []
    for i in range(6):  # more batches held at once than there are slots: one-shot blocks take over
        held.append(through(np.full(1000, i)))
    assert len(tx.slots) == 2
    assert [int(h[0]) for h in held] == list(range(6)) and all((h == h[0]).all() for h in held)
    del held
    keep = through(np.full(1000, 42))[10:20].reshape(2, 5)  # only a view of a view survives: its slot stays busy
    tkeep = through(fabric.full((10, 10), 7.0))[2].view(2, 5)  # and a Tensor view
    for i in range(10):
        through(np.full(1000, i))
        through(fabric.full((10, 10), float(i)))
    assert (keep == 42).all() and (tkeep.numpy() == 7.0).all()
    del keep, tkeep
    for i in range(20):  # released batches give their slot back: no new blocks
        assert int(through(np.full(1000, i))[-1]) == i
    assert len(tx.slots) == 2
    big = through(np.arange(100_000))  # a batch larger than the slots: one grows
    assert int(big[-1]) == 99_999 and len(tx.slots) == 2
    del big
    tx.send(1, np.ones(10))
    idx, message = main_end.recv()
    rx.discard(main_end, message)  # an abandoned batch frees its slot too
    assert idx == 1 and rx.flags[message[1]] == 0


def test_leak_check_ignores_other_programs_shared_memory():
    from multiprocessing import shared_memory as mp_shared_memory
    other = mp_shared_memory.SharedMemory(create=True, size=16)  # a name some other program owns
    try:
        assert other.name.lstrip("/") not in _shm_names()
    finally:
        other.close()
        other.unlink()
