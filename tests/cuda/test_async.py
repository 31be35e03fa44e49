"""Host-side asynchrony of the CUDA path, on the fake CuPy's honest model of it
(tests/cuda/fake_cupy.py): asynchronous copies run only when their stream is
synchronized or waited on, and freed pinned blocks are handed to the next
allocation.  Each test here failed on the code before its fix."""
from __future__ import annotations

import gc

import fake_cupy
import numpy as np
import pytest

import fabric

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture
def fake():
    with fake_cupy.installed(n_devices=2) as be:
        yield be


# ---- the model itself ----------------------------------------------------------------------
def test_the_fake_defers_async_copies_and_reuses_pinned_blocks(fake):
    import cupy
    import cupyx

    a = cupyx.empty_pinned((4,), np.float32)
    a[...] = 1
    d = cupy.empty((4,), np.float32)
    d.set(a, stream=cupy.cuda.get_current_stream())
    a[...] = 2                                      # the copy has not run: it will read 2
    ev = cupy.cuda.Event()
    ev.record()
    assert not ev.done
    ev.synchronize()
    assert ev.done and d.tolist() == [2.0] * 4
    addr = a.__array_interface__["data"][0]
    del a
    gc.collect()
    b = cupyx.empty_pinned((4,), np.float32)
    assert b.__array_interface__["data"][0] == addr   # the freed block came back


def test_other_streams_run_only_when_waited_on(fake):
    import cupy

    s = cupy.cuda.Stream(non_blocking=True)
    host = fake.pin(np.arange(3.0))
    d = cupy.zeros((3,), np.float64)
    d.set(host, stream=s)
    assert d.tolist() == [0.0, 0.0, 0.0]            # the current stream does not wait for s
    cupy.cuda.get_current_stream().wait_event(s.record())
    assert d.tolist() == [0.0, 1.0, 2.0]            # now it does


# ---- bug 1: pinned source buffers reused before their copy ran ------------------------------
def test_non_blocking_copies_from_pinned_batches_keep_their_buffers(fake):
    """`x = x.to("cuda", non_blocking=True)` over pinned batches (DataLoader(pin_memory=True)):
    each batch's pinned buffer must outlive its copy, or the pool hands it to the next batch
    and every copy reads the last batch's data."""
    outs = []
    for i in range(8):
        batch = fabric.full((1000,), float(i)).pin_memory()
        outs.append(batch.to("cuda", non_blocking=True))
        del batch
        gc.collect()
    fabric.cuda.synchronize()
    assert [float(o[0].item()) for o in outs] == [float(i) for i in range(8)]
    assert all(bool((o == float(i)).all()) for i, o in enumerate(outs))


def test_dataloader_pin_memory_non_blocking_loop(fake):
    from fabric.data import DataLoader, TensorDataset

    x = fabric.arange(64.0).reshape(16, 4)
    dl = DataLoader(TensorDataset(x), batch_size=2, pin_memory=True)
    got = [xb.to("cuda", non_blocking=True) for (xb,) in dl]
    fabric.cuda.synchronize()
    np.testing.assert_array_equal(np.concatenate([g.cpu().numpy() for g in got]), x.numpy())


def test_non_blocking_device_to_host_keeps_the_destination(fake):
    """`.to("cpu", non_blocking=True)` dropped before the copy ran must not let the pool give
    its pinned block to someone else while the copy still writes it."""
    d = fabric.arange(6.0, device="cuda")
    d.to("cpu", non_blocking=True)                   # result dropped at once
    gc.collect()
    other = fabric.zeros(6).pin_memory()
    fabric.cuda.synchronize()
    assert other.tolist() == [0.0] * 6


# ---- bug 4: cross-device copies not ordered after the source's stream ------------------------
def test_cross_device_copy_waits_for_the_source_stream(fake):
    host = fabric.arange(5.0).pin_memory()
    a = host.to("cuda:0", non_blocking=True)           # queued on cuda:0's stream
    b = a.to("cuda:1")                                # must see the data a will hold
    fabric.cuda.synchronize(1)
    assert b.device.index == 1 and b.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


# ---- Tensor.record_stream -------------------------------------------------------------------
def test_record_stream_keeps_memory_until_the_stream_is_done(fake):
    import cupy

    s = fabric.cuda.Stream()
    pool = cupy.get_default_memory_pool()
    x = fabric.empty(1 << 10, device="cuda")
    with fabric.cuda.stream(s):
        x.record_stream(s)
        y = fabric.zeros(1 << 10, device="cuda")
        y._data.set(np.ones(1 << 10, np.float32), stream=s._s)   # pending work on s
    used = pool.used_bytes()
    del x
    gc.collect()
    assert pool.used_bytes() == used                  # s has not run: x's block is still held
    s.synchronize()
    fabric.cuda.memory_allocated()                    # the backend lets go of finished blocks
    gc.collect()
    assert pool.used_bytes() == used - 4 * (1 << 10)


def test_record_stream_argument_checks(fake):
    x = fabric.zeros(3, device="cuda")
    with pytest.raises(RuntimeError, match="unknown parameter type"):      # PyTorch's class and message
        x.record_stream("not a stream")
    with pytest.raises(NotImplementedError, match="Could not run 'aten::record_stream' with arguments from the "
                                                  "'CPU' backend"):
        fabric.zeros(3).record_stream(fabric.cuda.current_stream())
